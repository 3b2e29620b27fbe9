//! The task-store world as the sandbox's pool runs it ([`TaskStoreWorld`]): how a fresh
//! instance is set up (its exports loaded, `config.configure` called with the store's
//! settings), and what a component's own errors mean.

use crate::message::sanitize;
use crate::sandbox::pool::{SandboxConfig, World};
use crate::sandbox::state::InstanceState;
use crate::task_store::contract::{Api, Exports, WitError};
use std::path::PathBuf;
use toolnexus_core::StoreError;
use wasmtime::Store;
use wasmtime::component::Instance as ComponentInstance;

/// A store component's exports and its settings.
pub(crate) struct TaskStoreWorld {
    pub(crate) exports: Exports,
    /// Passed to `config.configure` of every fresh instance, if the component exports it.
    pub(crate) settings: Vec<(String, String)>,
    /// The directory granted to the component (a store always has one), named in errors.
    pub(crate) dir: PathBuf,
}

impl World for TaskStoreWorld {
    type Api = Api;
    type Error = WitError;

    async fn setup(
        &self,
        store: &mut Store<InstanceState>,
        instance: &ComponentInstance,
    ) -> wasmtime::Result<Result<Api, String>> {
        self.exports.setup(store, instance, &self.settings).await
    }

    /// A component's own error, its message made safe to show ([`sanitize`]).
    fn answer_error(&self, sandbox: &SandboxConfig, err: WitError) -> StoreError {
        match err {
            // The host checked the input before the call, so a refusal is the component's own
            // rule (a policy such as lifecycle-guard's), not malformed input.
            WitError::InvalidInput(msg) => StoreError::Rejected {
                store: format!("store component {}", sandbox.name),
                reason: sanitize(&msg),
            },
            WitError::Corrupt(msg) => StoreError::Corrupt {
                location: format!("{} (store component {})", self.dir.display(), sandbox.name),
                reason: sanitize(&msg),
            },
            WitError::Io(msg) => StoreError::io(
                format!(
                    "store component {} over {}",
                    sandbox.name,
                    self.dir.display()
                ),
                std::io::Error::other(sanitize(&msg)),
            ),
            WitError::OutcomeUnknown(msg) => StoreError::OutcomeUnknown {
                store: format!(
                    "store component {} over {}",
                    sandbox.name,
                    self.dir.display()
                ),
                reason: sanitize(&msg),
            },
            WitError::Other(msg) => sandbox.component_error(sanitize(&msg)),
            // Only a conditional `save` can conflict, and its caller takes that answer before
            // it gets here (`WasmTaskStore::save_versioned`).
            WitError::Conflict(conflict) => sandbox.component_error(format!(
                "answered \"conflict\" to a call that has no condition: {}",
                sanitize(&conflict.message)
            )),
        }
    }
}

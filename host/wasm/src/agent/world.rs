//! The agent world as the sandbox's pool runs it ([`AgentWorld`]): a fresh instance's exports
//! loaded and `config.configure` called with the operator's settings. An agent's functions
//! have no error of their own: what goes wrong is a trap or a limit, which the pool reports.

use crate::agent::contract::{AgentApi, AgentExports};
use crate::sandbox::pool::{SandboxConfig, World};
use crate::sandbox::state::InstanceState;
use std::convert::Infallible;
use toolnexus_core::StoreError;
use wasmtime::Store;
use wasmtime::component::Instance as ComponentInstance;

/// An agent component's exports and its settings.
pub(crate) struct AgentWorld {
    pub(crate) exports: AgentExports,
    /// Passed to `config.configure` of every fresh instance, if the component exports it.
    pub(crate) settings: Vec<(String, String)>,
}

impl World for AgentWorld {
    type Api = AgentApi;
    type Error = Infallible;

    async fn setup(
        &self,
        store: &mut Store<InstanceState>,
        instance: &ComponentInstance,
    ) -> wasmtime::Result<Result<AgentApi, String>> {
        self.exports.setup(store, instance, &self.settings).await
    }

    fn answer_error(&self, _sandbox: &SandboxConfig, err: Infallible) -> StoreError {
        match err {}
    }
}

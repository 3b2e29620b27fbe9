//! The `wasi:http/proxy` world as the sandbox's pool runs it ([`HttpWorld`]): a fresh
//! instance's `incoming-handler` export loaded, nothing configured. Its `handle` has no error
//! of its own: what goes wrong is a trap or a limit, or an error code the component sets as its
//! response, which the request's handler reports.

use crate::sandbox::pool::{SandboxConfig, World};
use crate::sandbox::state::InstanceState;
use std::convert::Infallible;
use toolnexus_core::StoreError;
use wasmtime::component::{Component, Instance as ComponentInstance, InstancePre};
use wasmtime::{Engine, Store};
use wasmtime_wasi_http::p2::bindings::{Proxy, ProxyIndices};

/// The interface a served component must export (any 0.2.x).
pub(crate) const INCOMING_HANDLER: &str = "wasi:http/incoming-handler@0.2.x";

/// Where a fresh instance's `wasi:http/incoming-handler.handle` is.
pub(crate) struct HttpWorld {
    indices: ProxyIndices,
}

impl HttpWorld {
    /// Finds the export in `pre`, checking its type against the one this host calls.
    pub(crate) fn new(pre: &InstancePre<InstanceState>) -> wasmtime::Result<Self> {
        Ok(HttpWorld {
            indices: ProxyIndices::new(pre)?,
        })
    }
}

impl World for HttpWorld {
    type Api = Proxy;
    type Error = Infallible;

    async fn setup(
        &self,
        store: &mut Store<InstanceState>,
        instance: &ComponentInstance,
    ) -> wasmtime::Result<Result<Proxy, String>> {
        self.indices.load(store, instance).map(Ok)
    }

    fn answer_error(&self, _sandbox: &SandboxConfig, err: Infallible) -> StoreError {
        match err {}
    }
}

/// Whether `component` exports `wasi:http/incoming-handler` at a 0.2 version; the error says
/// what it exports instead.
pub(crate) fn check_exports(engine: &Engine, component: &Component) -> Result<(), String> {
    let exports: Vec<String> = component
        .component_type()
        .exports(engine)
        .map(|(name, _)| name.to_owned())
        .collect();
    let handler = |name: &&String| {
        name.strip_prefix("wasi:http/incoming-handler@")
            .is_some_and(|version| version.starts_with("0.2."))
    };
    if exports.iter().any(|name| handler(&name)) {
        return Ok(());
    }
    let shown = if exports.is_empty() {
        "nothing".to_owned()
    } else {
        exports.join(", ")
    };
    Err(format!(
        "not an HTTP component: it does not export {INCOMING_HANDLER} (the wasi:http/proxy \
         world's handler); it exports {shown}"
    ))
}

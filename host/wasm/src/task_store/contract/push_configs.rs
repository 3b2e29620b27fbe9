//! The contract's optional `push-configs` interface: where a component exports it, and its
//! four calls in one instance. The answers are checked by the caller
//! (`task_store::push_calls`), not here.

use crate::sandbox::state::InstanceState;
use crate::task_store::contract::answer::Answer;
use crate::task_store::contract::bindings::wit::push_configs;
use wasmtime::Store;
use wasmtime::component::{Instance as ComponentInstance, InstancePre};

/// Where a component's `push-configs` export is, found once per loaded component.
pub(crate) struct PushExports(push_configs::GuestIndices);

impl PushExports {
    /// `None` when the component does not export `push-configs` (or not with the contract's
    /// types): it then keeps no push configs.
    pub(crate) fn find(pre: &InstancePre<InstanceState>) -> Option<Self> {
        push_configs::GuestIndices::new(pre).ok().map(PushExports)
    }

    pub(crate) fn load(
        &self,
        store: &mut Store<InstanceState>,
        instance: &ComponentInstance,
    ) -> wasmtime::Result<PushApi> {
        self.0.load(store, instance).map(PushApi)
    }
}

/// The `push-configs` functions of one instance.
pub(crate) struct PushApi(push_configs::Guest);

impl PushApi {
    pub(crate) async fn set(
        &self,
        store: &mut Store<InstanceState>,
        task_id: &str,
        config: &str,
    ) -> Answer<()> {
        self.0.call_set(store, task_id, config).await
    }

    pub(crate) async fn get(
        &self,
        store: &mut Store<InstanceState>,
        task_id: &str,
        config_id: &str,
    ) -> Answer<Option<String>> {
        self.0.call_get(store, task_id, config_id).await
    }

    pub(crate) async fn list(
        &self,
        store: &mut Store<InstanceState>,
        task_id: &str,
    ) -> Answer<Vec<String>> {
        self.0.call_list(store, task_id).await
    }

    pub(crate) async fn delete(
        &self,
        store: &mut Store<InstanceState>,
        task_id: &str,
        config_id: &str,
    ) -> Answer<bool> {
        self.0.call_delete(store, task_id, config_id).await
    }
}

//! The contract this host speaks, `toolnexus:task-store@0.4.0` (`wit/`): its bindings
//! ([`bindings`]), where a component's exports are ([`Exports`], found once at load), and its
//! functions in one instance ([`Api`]), answering in the shapes of [`answer`]. The optional
//! `push-configs` interface is its own module ([`push_configs`]).
//!
//! Earlier versions of the contract are not spoken: a component of one is refused at load
//! (`task_store::version::check_world`), and `docs/write-your-own-store.md` says why.

mod answer;
mod bindings;
mod push_configs;

pub(crate) use answer::{Answer, ListArgs, Page, VersionConflict, WitError};
pub(crate) use push_configs::PushApi;

use crate::sandbox::state::InstanceState;
use bindings::wit;
use push_configs::PushExports;
use toolnexus_core::Expect;
use wasmtime::Store;
use wasmtime::component::{Instance as ComponentInstance, InstancePre};

/// Where a component's exports are, found once per loaded component.
pub(crate) struct Exports {
    store: wit::store::GuestIndices,
    config: Option<wit::config::GuestIndices>,
    catalog: Option<wit::catalog::GuestIndices>,
    lean: Option<wit::lean::GuestIndices>,
    push_configs: Option<PushExports>,
}

impl Exports {
    /// `store` must match the contract; the optional interfaces are present or not, never an
    /// error by themselves.
    pub(crate) fn new(pre: &InstancePre<InstanceState>) -> wasmtime::Result<Self> {
        Ok(Exports {
            store: wit::store::GuestIndices::new(pre)?,
            config: wit::config::GuestIndices::new(pre).ok(),
            catalog: wit::catalog::GuestIndices::new(pre).ok(),
            lean: wit::lean::GuestIndices::new(pre).ok(),
            push_configs: PushExports::find(pre),
        })
    }

    pub(crate) fn has_catalog(&self) -> bool {
        self.catalog.is_some()
    }

    pub(crate) fn has_lean(&self) -> bool {
        self.lean.is_some()
    }

    pub(crate) fn has_push_configs(&self) -> bool {
        self.push_configs.is_some()
    }

    /// Loads the functions of a fresh instance and, if the component exports `config`, passes
    /// it `settings`. The inner `Err` is the component refusing its settings.
    pub(crate) async fn setup(
        &self,
        store: &mut Store<InstanceState>,
        instance: &ComponentInstance,
        settings: &[(String, String)],
    ) -> wasmtime::Result<Result<Api, String>> {
        let api = self.store.load(&mut *store, instance)?;
        if let Some(config) = &self.config {
            let config = config.load(&mut *store, instance)?;
            if let Err(refused) = config.call_configure(&mut *store, settings).await? {
                return Ok(Err(refused));
            }
        }
        let catalog = match &self.catalog {
            Some(indices) => Some(indices.load(&mut *store, instance)?),
            None => None,
        };
        let lean = match &self.lean {
            Some(indices) => Some(indices.load(&mut *store, instance)?),
            None => None,
        };
        let push_configs = match &self.push_configs {
            Some(exports) => Some(exports.load(&mut *store, instance)?),
            None => None,
        };
        Ok(Ok(Api {
            store: api,
            catalog,
            lean,
            push_configs,
        }))
    }
}

/// The contract's functions in one instance.
pub(crate) struct Api {
    store: wit::store::Guest,
    catalog: Option<wit::catalog::Guest>,
    lean: Option<wit::lean::Guest>,
    push_configs: Option<PushApi>,
}

impl Api {
    /// `get`: the Task's text and its version, unless the version is not `wanted` and the
    /// component exports `lean`: then `lean.get-text`, and no version.
    pub(crate) async fn get(
        &self,
        store: &mut Store<InstanceState>,
        id: &str,
        wanted: bool,
    ) -> Answer<Option<(String, Option<u64>)>> {
        Ok(match &self.lean {
            Some(lean) if !wanted => lean
                .call_get_text(store, id)
                .await?
                .map(|found| found.map(|text| (text, None))),
            _ => self
                .store
                .call_get(store, id)
                .await?
                .map(|found| found.map(|stored| (stored.task, Some(stored.version)))),
        })
    }

    /// `save` on the condition `expect` of `task`, a Task the caller checked whose id is `id`
    /// (`lean.save` is told so): the new version.
    pub(crate) async fn save(
        &self,
        store: &mut Store<InstanceState>,
        id: &str,
        task: &str,
        expect: Expect,
    ) -> Answer<u64> {
        let condition = match expect {
            Expect::Any => wit::store::Condition::Any,
            Expect::Absent => wit::store::Condition::Absent,
            Expect::Version(v) => wit::store::Condition::Version(v),
        };
        match &self.lean {
            Some(lean) => lean.call_save(store, id, task, condition).await,
            None => self.store.call_save(store, task, condition).await,
        }
    }

    /// `catalog.list`, for a component that exports `catalog` (the caller checked).
    pub(crate) async fn list(
        &self,
        store: &mut Store<InstanceState>,
        query: ListArgs,
    ) -> Answer<Page> {
        let Some(catalog) = &self.catalog else {
            wasmtime::bail!("host error: the component does not export catalog")
        };
        let query = wit::catalog::ListQuery {
            context_id: query.context_id,
            state: query.state,
            status_timestamp_after: query.status_timestamp_after,
            page_size: query.page_size,
            page_token: query.page_token,
        };
        Ok(catalog.call_list(store, &query).await?.map(|page| Page {
            tasks: page.tasks,
            next_page_token: page.next_page_token,
            total_size: page.total_size,
        }))
    }

    /// `catalog.delete`, for a component that exports `catalog` (the caller checked).
    pub(crate) async fn delete(&self, store: &mut Store<InstanceState>, id: &str) -> Answer<bool> {
        let Some(catalog) = &self.catalog else {
            wasmtime::bail!("host error: the component does not export catalog")
        };
        catalog.call_delete(store, id).await
    }

    /// The `push-configs` functions, for a component that exports them; a host error
    /// otherwise (the caller checked first).
    pub(crate) fn push_configs(&self) -> wasmtime::Result<&PushApi> {
        match &self.push_configs {
            Some(api) => Ok(api),
            None => wasmtime::bail!("host error: the component does not export push-configs"),
        }
    }
}

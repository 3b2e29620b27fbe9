//! Contract 0.1.0 (frozen): `store` without versions, and the optional `config` and `catalog`
//! without the timestamp filter or total size. What 0.1 cannot do is never faked: callers ask
//! [`ContractVersion`](crate::task_store::version::ContractVersion) first and answer
//! "unsupported" themselves; a 0.1 instance asked for a condition or a timestamp filter anyway
//! fails the call with a host error rather than dropping it.

use crate::sandbox::state::InstanceState;
use crate::task_store::contract::answer::{Answer, ListArgs, Page, WitError};
use crate::task_store::contract::bindings::v0_1 as wit;
use toolnexus_core::Expect;
use wasmtime::Store;
use wasmtime::component::{Instance as ComponentInstance, InstancePre};

/// Where a component's exports are, found once per loaded component.
pub(crate) struct Exports {
    store: wit::store::GuestIndices,
    config: Option<wit::config::GuestIndices>,
    catalog: Option<wit::catalog::GuestIndices>,
}

impl Exports {
    /// `store` must match the contract; the optional interfaces are present or not, never an
    /// error by themselves.
    pub(crate) fn new(pre: &InstancePre<InstanceState>) -> wasmtime::Result<Self> {
        Ok(Exports {
            store: wit::store::GuestIndices::new(pre)?,
            config: wit::config::GuestIndices::new(pre).ok(),
            catalog: wit::catalog::GuestIndices::new(pre).ok(),
        })
    }

    pub(crate) fn has_catalog(&self) -> bool {
        self.catalog.is_some()
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
        Ok(Ok(Api {
            store: api,
            catalog,
        }))
    }
}

/// The functions of one instance.
pub(crate) struct Api {
    store: wit::store::Guest,
    catalog: Option<wit::catalog::Guest>,
}

impl Api {
    /// `get`: the Task's text, never a version.
    pub(crate) async fn get(
        &self,
        store: &mut Store<InstanceState>,
        id: &str,
    ) -> Answer<Option<(String, Option<u64>)>> {
        Ok(self
            .store
            .call_get(store, id)
            .await?
            .map(|found| found.map(|text| (text, None)))
            .map_err(current))
    }

    /// A plain `save`: 0.1 takes only [`Expect::Any`].
    pub(crate) async fn save(
        &self,
        store: &mut Store<InstanceState>,
        task: &str,
        expect: Expect,
    ) -> Answer<()> {
        if expect != Expect::Any {
            wasmtime::bail!("host error: a contract 0.1 component cannot save on a condition")
        }
        Ok(self.store.call_save(store, task).await?.map_err(current))
    }

    /// `catalog.list`, for a component that exports `catalog`, without a timestamp filter.
    pub(crate) async fn list(
        &self,
        store: &mut Store<InstanceState>,
        query: ListArgs,
    ) -> Answer<Page> {
        let Some(catalog) = &self.catalog else {
            wasmtime::bail!("host error: the component does not export catalog")
        };
        if query.status_timestamp_after.is_some() {
            wasmtime::bail!(
                "host error: a contract 0.1 component cannot filter by status timestamp"
            )
        }
        let query = wit::catalog::ListQuery {
            context_id: query.context_id,
            state: query.state,
            page_size: query.page_size,
            page_token: query.page_token,
        };
        Ok(catalog
            .call_list(store, &query)
            .await?
            .map(|page| Page {
                tasks: page.tasks,
                next_page_token: page.next_page_token,
                total_size: None,
            })
            .map_err(current))
    }

    /// `catalog.delete`, for a component that exports `catalog`.
    pub(crate) async fn delete(&self, store: &mut Store<InstanceState>, id: &str) -> Answer<bool> {
        let Some(catalog) = &self.catalog else {
            wasmtime::bail!("host error: the component does not export catalog")
        };
        Ok(catalog.call_delete(store, id).await?.map_err(current))
    }
}

/// A 0.1 error as the same case of the current shape (which has every case 0.1 has).
fn current(err: wit::store::StoreError) -> WitError {
    use wit::store::StoreError as Old;
    match err {
        Old::InvalidInput(msg) => WitError::InvalidInput(msg),
        Old::Corrupt(msg) => WitError::Corrupt(msg),
        Old::Io(msg) => WitError::Io(msg),
        Old::Other(msg) => WitError::Other(msg),
    }
}

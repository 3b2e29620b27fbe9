//! The two versions of the contract this host speaks, `toolnexus:task-store@0.2.0` (the
//! current one, `wit/`) and `@0.1.0` (frozen, `wit/0.1.0/`): the bindings for each, which one a
//! component exports ([`Exports`], found once at load), and its functions in one instance
//! ([`Api`]), with the answers of both brought to one shape.
//!
//! What 0.1 cannot do is never faked: callers ask [`ContractVersion`] first and answer
//! "unsupported" themselves; a 0.1 instance asked for versions or a timestamp filter anyway
//! fails the call with a host error rather than dropping the condition or the filter.

use crate::sandbox::state::InstanceState;
use crate::task_store::version::ContractVersion;
use wasmtime::Store;
use wasmtime::component::{Instance as ComponentInstance, InstancePre};

/// The bindings for contract 0.2.0, generated for the world with every interface. Only
/// `store` is required of a component; `config`, `catalog` and `lean` are each looked up on
/// their own and used when present.
mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "lean-full-task-store",
        exports: { default: async },
    });
}

/// The bindings for contract 0.1.0, the same way (`wit/0.1.0/` holds its frozen text).
mod bindings_0_1 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.1.0",
        world: "full-task-store",
        exports: { default: async },
    });
}

use bindings::exports::toolnexus::task_store as v2;
use bindings_0_1::exports::toolnexus::task_store as v1;

use toolnexus_core::Expect;
/// A component's own error, in the 0.2 shape (0.1's cases are a subset of it).
pub(crate) use v2::store::StoreError as WitError;
pub(crate) use v2::store::VersionConflict;

/// What a call answered: a trap (outer `Err`) or the component's answer, whose `Err` is its own
/// error.
pub(crate) type Answer<T> = wasmtime::Result<Result<T, WitError>>;

/// Where a component's exports of one contract version are, found once per loaded component.
pub(crate) enum Exports {
    V0_2 {
        store: v2::store::GuestIndices,
        config: Option<v2::config::GuestIndices>,
        catalog: Option<v2::catalog::GuestIndices>,
        lean: Option<v2::lean::GuestIndices>,
    },
    V0_1 {
        store: v1::store::GuestIndices,
        config: Option<v1::config::GuestIndices>,
        catalog: Option<v1::catalog::GuestIndices>,
    },
}

impl Exports {
    /// The exports of `version` ([`check_world`](crate::task_store::version::check_world)
    /// found which one the component targets). `store` must match the contract; the optional
    /// interfaces are present or not, never an error by themselves.
    pub(crate) fn new(
        version: ContractVersion,
        pre: &InstancePre<InstanceState>,
    ) -> wasmtime::Result<Self> {
        Ok(match version {
            ContractVersion::V0_2 => Exports::V0_2 {
                store: v2::store::GuestIndices::new(pre)?,
                config: v2::config::GuestIndices::new(pre).ok(),
                catalog: v2::catalog::GuestIndices::new(pre).ok(),
                lean: v2::lean::GuestIndices::new(pre).ok(),
            },
            ContractVersion::V0_1 => Exports::V0_1 {
                store: v1::store::GuestIndices::new(pre)?,
                config: v1::config::GuestIndices::new(pre).ok(),
                catalog: v1::catalog::GuestIndices::new(pre).ok(),
            },
        })
    }

    pub(crate) fn version(&self) -> ContractVersion {
        match self {
            Exports::V0_2 { .. } => ContractVersion::V0_2,
            Exports::V0_1 { .. } => ContractVersion::V0_1,
        }
    }

    /// Whether the component exports `lean` (0.2 only).
    pub(crate) fn has_lean(&self) -> bool {
        matches!(self, Exports::V0_2 { lean: Some(_), .. })
    }

    pub(crate) fn has_catalog(&self) -> bool {
        match self {
            Exports::V0_2 { catalog, .. } => catalog.is_some(),
            Exports::V0_1 { catalog, .. } => catalog.is_some(),
        }
    }

    /// Loads the functions of a fresh instance and, if the component exports `config`, passes
    /// it `settings`. The inner `Err` is the component refusing its settings.
    pub(crate) async fn setup(
        &self,
        store: &mut Store<InstanceState>,
        instance: &ComponentInstance,
        settings: &[(String, String)],
    ) -> wasmtime::Result<Result<Api, String>> {
        Ok(Ok(match self {
            Exports::V0_2 {
                store: api,
                config,
                catalog,
                lean,
            } => {
                let api = api.load(&mut *store, instance)?;
                if let Some(config) = config {
                    let config = config.load(&mut *store, instance)?;
                    if let Err(refused) = config.call_configure(&mut *store, settings).await? {
                        return Ok(Err(refused));
                    }
                }
                let catalog = match catalog {
                    Some(indices) => Some(indices.load(&mut *store, instance)?),
                    None => None,
                };
                let lean = match lean {
                    Some(indices) => Some(indices.load(&mut *store, instance)?),
                    None => None,
                };
                Api::V0_2 {
                    store: api,
                    catalog,
                    lean,
                }
            }
            Exports::V0_1 {
                store: api,
                config,
                catalog,
            } => {
                let api = api.load(&mut *store, instance)?;
                if let Some(config) = config {
                    let config = config.load(&mut *store, instance)?;
                    if let Err(refused) = config.call_configure(&mut *store, settings).await? {
                        return Ok(Err(refused));
                    }
                }
                let catalog = match catalog {
                    Some(indices) => Some(indices.load(&mut *store, instance)?),
                    None => None,
                };
                Api::V0_1 {
                    store: api,
                    catalog,
                }
            }
        }))
    }
}

/// The contract's functions in one instance.
pub(crate) enum Api {
    V0_2 {
        store: v2::store::Guest,
        catalog: Option<v2::catalog::Guest>,
        lean: Option<v2::lean::Guest>,
    },
    V0_1 {
        store: v1::store::Guest,
        catalog: Option<v1::catalog::Guest>,
    },
}

/// A list query as the component receives it (the status timestamp already RFC 3339 text).
#[derive(Debug, Clone)]
pub(crate) struct ListArgs {
    pub(crate) context_id: Option<String>,
    pub(crate) state: Option<String>,
    pub(crate) status_timestamp_after: Option<String>,
    pub(crate) page_size: u32,
    pub(crate) page_token: Option<String>,
}

/// A page as the component answered it, not yet checked.
#[derive(Debug)]
pub(crate) struct Page {
    pub(crate) tasks: Vec<String>,
    pub(crate) next_page_token: Option<String>,
    /// `None` from a 0.1 component, which cannot tell.
    pub(crate) total_size: Option<u64>,
}

impl Api {
    /// `get`: the Task's text and, from a 0.2 component, its version, unless the version is
    /// not `wanted` and the component exports `lean`: then `lean.get-text`, and no version.
    pub(crate) async fn get(
        &self,
        store: &mut Store<InstanceState>,
        id: &str,
        wanted: bool,
    ) -> Answer<Option<(String, Option<u64>)>> {
        Ok(match self {
            Api::V0_2 {
                lean: Some(lean), ..
            } if !wanted => lean
                .call_get_text(store, id)
                .await?
                .map(|found| found.map(|text| (text, None))),
            Api::V0_2 { store: api, .. } => api
                .call_get(store, id)
                .await?
                .map(|found| found.map(|stored| (stored.task, Some(stored.version)))),
            Api::V0_1 { store: api, .. } => api
                .call_get(store, id)
                .await?
                .map(|found| found.map(|text| (text, None)))
                .map_err(from_0_1),
        })
    }

    /// `save` on the condition `expect` of `task`, a Task the caller checked whose id is `id`
    /// (`lean.save` is told so): the new version from a 0.2 component, `None` from a 0.1 one,
    /// which takes only [`Expect::Any`].
    pub(crate) async fn save(
        &self,
        store: &mut Store<InstanceState>,
        id: &str,
        task: &str,
        expect: Expect,
    ) -> Answer<Option<u64>> {
        Ok(match self {
            Api::V0_2 {
                store: api, lean, ..
            } => {
                let condition = match expect {
                    Expect::Any => v2::store::Condition::Any,
                    Expect::Absent => v2::store::Condition::Absent,
                    Expect::Version(v) => v2::store::Condition::Version(v),
                };
                match lean {
                    Some(lean) => lean.call_save(store, id, task, condition).await?,
                    None => api.call_save(store, task, condition).await?,
                }
                .map(Some)
            }
            Api::V0_1 { .. } if expect != Expect::Any => {
                wasmtime::bail!("host error: a contract 0.1 component cannot save on a condition")
            }
            Api::V0_1 { store: api, .. } => api
                .call_save(store, task)
                .await?
                .map(|()| None)
                .map_err(from_0_1),
        })
    }

    /// `catalog.list`. The caller checked that the component exports `catalog` and, for 0.1,
    /// that no timestamp filter is asked for.
    pub(crate) async fn list(
        &self,
        store: &mut Store<InstanceState>,
        query: ListArgs,
    ) -> Answer<Page> {
        Ok(match self {
            Api::V0_2 {
                catalog: Some(catalog),
                ..
            } => {
                let query = v2::catalog::ListQuery {
                    context_id: query.context_id,
                    state: query.state,
                    status_timestamp_after: query.status_timestamp_after,
                    page_size: query.page_size,
                    page_token: query.page_token,
                };
                catalog.call_list(store, &query).await?.map(|page| Page {
                    tasks: page.tasks,
                    next_page_token: page.next_page_token,
                    total_size: Some(page.total_size),
                })
            }
            Api::V0_1 {
                catalog: Some(catalog),
                ..
            } => {
                if query.status_timestamp_after.is_some() {
                    wasmtime::bail!(
                        "host error: a contract 0.1 component cannot filter by status timestamp"
                    )
                }
                let query = v1::catalog::ListQuery {
                    context_id: query.context_id,
                    state: query.state,
                    page_size: query.page_size,
                    page_token: query.page_token,
                };
                catalog
                    .call_list(store, &query)
                    .await?
                    .map(|page| Page {
                        tasks: page.tasks,
                        next_page_token: page.next_page_token,
                        total_size: None,
                    })
                    .map_err(from_0_1)
            }
            _ => wasmtime::bail!("host error: the component does not export catalog"),
        })
    }

    /// `catalog.delete`, for a component that exports `catalog`.
    pub(crate) async fn delete(&self, store: &mut Store<InstanceState>, id: &str) -> Answer<bool> {
        Ok(match self {
            Api::V0_2 {
                catalog: Some(catalog),
                ..
            } => catalog.call_delete(store, id).await?,
            Api::V0_1 {
                catalog: Some(catalog),
                ..
            } => catalog.call_delete(store, id).await?.map_err(from_0_1),
            _ => wasmtime::bail!("host error: the component does not export catalog"),
        })
    }
}

/// A 0.1 error as the same case of 0.2 (which has every case 0.1 has).
fn from_0_1(err: v1::store::StoreError) -> WitError {
    use v1::store::StoreError as Old;
    match err {
        Old::InvalidInput(msg) => WitError::InvalidInput(msg),
        Old::Corrupt(msg) => WitError::Corrupt(msg),
        Old::Io(msg) => WitError::Io(msg),
        Old::Other(msg) => WitError::Other(msg),
    }
}

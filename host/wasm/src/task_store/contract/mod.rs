//! The three versions of the contract this host speaks, `toolnexus:task-store@0.3.0` (the
//! current one, `wit/`), `@0.2.0` (`wit/0.2.0/`) and `@0.1.0` (`wit/0.1.0/`), both frozen: the
//! bindings for each ([`bindings`]), which one a component exports ([`Exports`], found once at
//! load), and its functions in one instance ([`Api`]), with the answers of all three brought
//! to one shape ([`answer`]).
//!
//! 0.3 is 0.2 with the optional `push-configs` interface, so the two share their code
//! ([`versioned_store`]); `push-configs` is its own module ([`push_configs`]), and 0.1 too
//! ([`v0_1`]).

mod answer;
mod bindings;
mod push_configs;
mod v0_1;
mod versioned_store;

pub(crate) use answer::{Answer, ListArgs, Page, VersionConflict, WitError};
pub(crate) use push_configs::PushApi;

use crate::sandbox::state::InstanceState;
use crate::task_store::version::ContractVersion;
use push_configs::PushExports;
use toolnexus_core::Expect;
use versioned_store::{v0_2, v0_3};
use wasmtime::Store;
use wasmtime::component::{Instance as ComponentInstance, InstancePre};

/// Where a component's exports of one contract version are, found once per loaded component.
pub(crate) enum Exports {
    V0_3 {
        common: v0_3::Exports,
        push_configs: Option<PushExports>,
    },
    V0_2(v0_2::Exports),
    V0_1(v0_1::Exports),
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
            ContractVersion::V0_3 => Exports::V0_3 {
                common: v0_3::Exports::new(pre)?,
                push_configs: PushExports::find(pre),
            },
            ContractVersion::V0_2 => Exports::V0_2(v0_2::Exports::new(pre)?),
            ContractVersion::V0_1 => Exports::V0_1(v0_1::Exports::new(pre)?),
        })
    }

    pub(crate) fn version(&self) -> ContractVersion {
        match self {
            Exports::V0_3 { .. } => ContractVersion::V0_3,
            Exports::V0_2(_) => ContractVersion::V0_2,
            Exports::V0_1(_) => ContractVersion::V0_1,
        }
    }

    /// Whether the component exports `lean` (0.2 on).
    pub(crate) fn has_lean(&self) -> bool {
        match self {
            Exports::V0_3 { common, .. } => common.has_lean(),
            Exports::V0_2(exports) => exports.has_lean(),
            Exports::V0_1(_) => false,
        }
    }

    pub(crate) fn has_catalog(&self) -> bool {
        match self {
            Exports::V0_3 { common, .. } => common.has_catalog(),
            Exports::V0_2(exports) => exports.has_catalog(),
            Exports::V0_1(exports) => exports.has_catalog(),
        }
    }

    /// Whether the component exports `push-configs` (0.3 on).
    pub(crate) fn has_push_configs(&self) -> bool {
        matches!(
            self,
            Exports::V0_3 {
                push_configs: Some(_),
                ..
            }
        )
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
            Exports::V0_3 {
                common,
                push_configs,
            } => {
                let common = match common.setup(store, instance, settings).await? {
                    Ok(api) => api,
                    Err(refused) => return Ok(Err(refused)),
                };
                let push_configs = match push_configs {
                    Some(exports) => Some(exports.load(store, instance)?),
                    None => None,
                };
                Api::V0_3 {
                    common,
                    push_configs,
                }
            }
            Exports::V0_2(exports) => match exports.setup(store, instance, settings).await? {
                Ok(api) => Api::V0_2(api),
                Err(refused) => return Ok(Err(refused)),
            },
            Exports::V0_1(exports) => match exports.setup(store, instance, settings).await? {
                Ok(api) => Api::V0_1(api),
                Err(refused) => return Ok(Err(refused)),
            },
        }))
    }
}

/// The contract's functions in one instance.
pub(crate) enum Api {
    V0_3 {
        common: v0_3::Api,
        push_configs: Option<PushApi>,
    },
    V0_2(v0_2::Api),
    V0_1(v0_1::Api),
}

impl Api {
    /// `get`: the Task's text and, from a 0.2 or later component, its version, unless the
    /// version is not `wanted` and the component exports `lean`: then `lean.get-text`, and no
    /// version.
    pub(crate) async fn get(
        &self,
        store: &mut Store<InstanceState>,
        id: &str,
        wanted: bool,
    ) -> Answer<Option<(String, Option<u64>)>> {
        match self {
            Api::V0_3 { common, .. } => common.get(store, id, wanted).await,
            Api::V0_2(api) => api.get(store, id, wanted).await,
            Api::V0_1(api) => api.get(store, id).await,
        }
    }

    /// `save` on the condition `expect` of `task`, a Task the caller checked whose id is `id`
    /// (`lean.save` is told so): the new version from a 0.2 or later component, `None` from a
    /// 0.1 one, which takes only [`Expect::Any`].
    pub(crate) async fn save(
        &self,
        store: &mut Store<InstanceState>,
        id: &str,
        task: &str,
        expect: Expect,
    ) -> Answer<Option<u64>> {
        Ok(match self {
            Api::V0_3 { common, .. } => common.save(store, id, task, expect).await?.map(Some),
            Api::V0_2(api) => api.save(store, id, task, expect).await?.map(Some),
            Api::V0_1(api) => api.save(store, task, expect).await?.map(|()| None),
        })
    }

    /// `catalog.list`. The caller checked that the component exports `catalog` and, for 0.1,
    /// that no timestamp filter is asked for.
    pub(crate) async fn list(
        &self,
        store: &mut Store<InstanceState>,
        query: ListArgs,
    ) -> Answer<Page> {
        match self {
            Api::V0_3 { common, .. } => common.list(store, query).await,
            Api::V0_2(api) => api.list(store, query).await,
            Api::V0_1(api) => api.list(store, query).await,
        }
    }

    /// `catalog.delete`, for a component that exports `catalog`.
    pub(crate) async fn delete(&self, store: &mut Store<InstanceState>, id: &str) -> Answer<bool> {
        match self {
            Api::V0_3 { common, .. } => common.delete(store, id).await,
            Api::V0_2(api) => api.delete(store, id).await,
            Api::V0_1(api) => api.delete(store, id).await,
        }
    }

    /// The `push-configs` functions, for a component that exports them; a host error
    /// otherwise (the caller checked first).
    pub(crate) fn push_configs(&self) -> wasmtime::Result<&PushApi> {
        match self {
            Api::V0_3 {
                push_configs: Some(api),
                ..
            } => Ok(api),
            _ => wasmtime::bail!("host error: the component does not export push-configs"),
        }
    }
}

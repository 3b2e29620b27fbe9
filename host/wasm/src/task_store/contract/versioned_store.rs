//! `store`, `config`, `catalog` and `lean` of the contract versions with Task versions: 0.2.0
//! and 0.3.0, where they are the same interfaces with the same types under two package
//! versions. One macro writes their exports and calls for both ([`v0_2`], [`v0_3`]), each
//! answer brought to the current shape ([`WitError`]).

/// The exports (`Exports`, found once per component) and functions in one instance (`Api`)
/// of `store`, `config`, `catalog` and `lean` for the bindings module `$wit` (the generated
/// `exports::toolnexus::task_store` of one version).
macro_rules! versioned_store {
    ($wit:ident) => {
        use crate::sandbox::state::InstanceState;
        use crate::task_store::contract::answer::{
            Answer, ListArgs, Page, VersionConflict, WitError,
        };
        use toolnexus_core::Expect;
        use wasmtime::Store;
        use wasmtime::component::{Instance as ComponentInstance, InstancePre};

        /// Where a component's exports are, found once per loaded component.
        pub(crate) struct Exports {
            store: $wit::store::GuestIndices,
            config: Option<$wit::config::GuestIndices>,
            catalog: Option<$wit::catalog::GuestIndices>,
            lean: Option<$wit::lean::GuestIndices>,
        }

        impl Exports {
            /// `store` must match the contract; the optional interfaces are present or not,
            /// never an error by themselves.
            pub(crate) fn new(pre: &InstancePre<InstanceState>) -> wasmtime::Result<Self> {
                Ok(Exports {
                    store: $wit::store::GuestIndices::new(pre)?,
                    config: $wit::config::GuestIndices::new(pre).ok(),
                    catalog: $wit::catalog::GuestIndices::new(pre).ok(),
                    lean: $wit::lean::GuestIndices::new(pre).ok(),
                })
            }

            pub(crate) fn has_catalog(&self) -> bool {
                self.catalog.is_some()
            }

            pub(crate) fn has_lean(&self) -> bool {
                self.lean.is_some()
            }

            /// Loads the functions of a fresh instance and, if the component exports `config`,
            /// passes it `settings`. The inner `Err` is the component refusing its settings.
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
                Ok(Ok(Api {
                    store: api,
                    catalog,
                    lean,
                }))
            }
        }

        /// The functions of one instance.
        pub(crate) struct Api {
            store: $wit::store::Guest,
            catalog: Option<$wit::catalog::Guest>,
            lean: Option<$wit::lean::Guest>,
        }

        impl Api {
            /// `get`: the Task's text and its version, unless the version is not `wanted` and
            /// the component exports `lean`: then `lean.get-text`, and no version.
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
                        .map(|found| found.map(|text| (text, None)))
                        .map_err(current),
                    _ => self
                        .store
                        .call_get(store, id)
                        .await?
                        .map(|found| found.map(|stored| (stored.task, Some(stored.version))))
                        .map_err(current),
                })
            }

            /// `save` on the condition `expect` of `task`, a Task the caller checked whose id
            /// is `id` (`lean.save` is told so): the new version.
            pub(crate) async fn save(
                &self,
                store: &mut Store<InstanceState>,
                id: &str,
                task: &str,
                expect: Expect,
            ) -> Answer<u64> {
                let condition = match expect {
                    Expect::Any => $wit::store::Condition::Any,
                    Expect::Absent => $wit::store::Condition::Absent,
                    Expect::Version(v) => $wit::store::Condition::Version(v),
                };
                Ok(match &self.lean {
                    Some(lean) => lean.call_save(store, id, task, condition).await?,
                    None => self.store.call_save(store, task, condition).await?,
                }
                .map_err(current))
            }

            /// `catalog.list`, for a component that exports `catalog`.
            pub(crate) async fn list(
                &self,
                store: &mut Store<InstanceState>,
                query: ListArgs,
            ) -> Answer<Page> {
                let Some(catalog) = &self.catalog else {
                    wasmtime::bail!("host error: the component does not export catalog")
                };
                let query = $wit::catalog::ListQuery {
                    context_id: query.context_id,
                    state: query.state,
                    status_timestamp_after: query.status_timestamp_after,
                    page_size: query.page_size,
                    page_token: query.page_token,
                };
                Ok(catalog
                    .call_list(store, &query)
                    .await?
                    .map(|page| Page {
                        tasks: page.tasks,
                        next_page_token: page.next_page_token,
                        total_size: Some(page.total_size),
                    })
                    .map_err(current))
            }

            /// `catalog.delete`, for a component that exports `catalog`.
            pub(crate) async fn delete(
                &self,
                store: &mut Store<InstanceState>,
                id: &str,
            ) -> Answer<bool> {
                let Some(catalog) = &self.catalog else {
                    wasmtime::bail!("host error: the component does not export catalog")
                };
                Ok(catalog.call_delete(store, id).await?.map_err(current))
            }
        }

        /// This version's error as the same case of the current shape.
        fn current(err: $wit::store::StoreError) -> WitError {
            use $wit::store::StoreError as Theirs;
            match err {
                Theirs::InvalidInput(msg) => WitError::InvalidInput(msg),
                Theirs::Corrupt(msg) => WitError::Corrupt(msg),
                Theirs::Io(msg) => WitError::Io(msg),
                Theirs::Conflict(conflict) => WitError::Conflict(VersionConflict {
                    current: conflict.current,
                    message: conflict.message,
                }),
                Theirs::Other(msg) => WitError::Other(msg),
            }
        }
    };
}

/// Contract 0.2.0.
pub(crate) mod v0_2 {
    use crate::task_store::contract::bindings::v0_2 as wit;
    versioned_store!(wit);
}

/// Contract 0.3.0 (its `push-configs` is in `contract::push_configs`).
pub(crate) mod v0_3 {
    use crate::task_store::contract::bindings::v0_3 as wit;
    versioned_store!(wit);
}

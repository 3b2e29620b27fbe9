//! Any [`TaskStore`] served as the `toolnexus:task-store` imports `store` and `catalog`
//! of an embedder's own components ([`add_task_store_to_linker`]).
//!
//! What the backend answers is trusted host data and passed on as it is; what a component
//! passes is hostile input: every Task, id and query is checked here before the backend sees it,
//! and a bad one is `invalid-input` naming what was wrong. Nothing here panics on any input.

use std::sync::Arc;
use toolnexus_core::{Expect, ListQuery, StoreError, Task, TaskStore, Timestamp, check_id};
use wasmtime::component::{HasData, Linker};

/// The largest Task text a component may pass to `save`, in bytes: the store components'
/// default `max-task`. Larger is `invalid-input`, before it is parsed.
pub const MAX_IMPORTED_TASK_BYTES: usize = 16 << 20;

/// The most Task JSON, in bytes, one `list` page hands a component: a page that would hold more
/// is cut before the Task that would go over (at least one Task per page) and continues with
/// its `next-page-token`, as the A2A server's `ListTasks` does.
pub const MAX_IMPORTED_PAGE_BYTES: usize = 16 << 20;

/// The bindings of a world that imports the contract's interfaces: only the `store` and
/// `catalog` imports are used, at the current contract (`wit/`); push configs are the A2A
/// server's business, not an agent's.
mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "task-store-middleware",
        imports: { default: async },
        exports: { default: async },
    });
}

use bindings::toolnexus::task_store::{catalog, store};

/// What an embedder's store data (the `T` of its `Store<T>` and `Linker<T>`) holds for
/// [`add_task_store_to_linker`]: the [`TaskStore`] its components' imports are served from.
pub trait HasTaskStore: Send {
    /// The store the `toolnexus:task-store` imports of this instance read and write.
    fn task_store(&mut self) -> &Arc<dyn TaskStore>;
}

/// Adds the `toolnexus:task-store/store@0.4.0` and `toolnexus:task-store/catalog@0.4.0` imports
/// to `linker`, each call served by the [`TaskStore`] that [`HasTaskStore::task_store`] gives
/// for the calling instance: memory, a directory, PostgreSQL, or a store component
/// ([`WasmTaskStore`](crate::WasmTaskStore)).
///
/// The imports are async host functions: instantiate and call with wasmtime's `*_async`
/// methods. Versions, conditions, list pages and deletes are the backend's; its errors become
/// the contract's `store-error` by whose fault they are: a Task, id or query the caller got
/// wrong (or a store refused by a rule of its own) is `invalid-input`, a failed condition is
/// `conflict` with the stored version, bad stored data is `corrupt`, storage and connection
/// failures are `io`, a write whose outcome the backend cannot know is `outcome-unknown`, and
/// everything else (a failing store component, a backend without versions or listing) is
/// `other`, each with the backend's message.
pub fn add_task_store_to_linker<T: HasTaskStore + 'static>(
    linker: &mut Linker<T>,
) -> wasmtime::Result<()> {
    store::add_to_linker::<T, ServedStore>(linker, served::<T>)?;
    catalog::add_to_linker::<T, ServedStore>(linker, served::<T>)?;
    Ok(())
}

/// The backend of one call.
struct ServedStore(Arc<dyn TaskStore>);

impl HasData for ServedStore {
    type Data<'a> = ServedStore;
}

fn served<T: HasTaskStore>(data: &mut T) -> ServedStore {
    ServedStore(Arc::clone(data.task_store()))
}

impl store::Host for ServedStore {
    async fn get(&mut self, id: String) -> Result<Option<store::StoredTask>, store::StoreError> {
        check_id(&id).map_err(to_wit)?;
        let found = self.0.get_versioned(&id).await.map_err(to_wit)?;
        Ok(found.map(|(task, version)| store::StoredTask {
            task: task.as_json().to_owned(),
            version,
        }))
    }

    async fn save(
        &mut self,
        task: String,
        condition: store::Condition,
    ) -> Result<u64, store::StoreError> {
        if task.len() > MAX_IMPORTED_TASK_BYTES {
            return Err(store::StoreError::InvalidInput(format!(
                "a Task of {} bytes is over the {MAX_IMPORTED_TASK_BYTES} bytes a save takes",
                task.len()
            )));
        }
        let task = Task::from_json_text(task).map_err(to_wit)?;
        let expect = match condition {
            store::Condition::Any => Expect::Any,
            store::Condition::Absent => Expect::Absent,
            store::Condition::Version(version) => Expect::Version(version),
        };
        self.0.save_versioned(&task, expect).await.map_err(to_wit)
    }
}

impl catalog::Host for ServedStore {
    async fn list(
        &mut self,
        query: catalog::ListQuery,
    ) -> Result<catalog::TaskPage, store::StoreError> {
        let status_timestamp_after = match query.status_timestamp_after {
            Some(text) => Some(Timestamp::parse(&text).map_err(|e| {
                store::StoreError::InvalidInput(format!("status-timestamp-after: {e}"))
            })?),
            None => None,
        };
        let mut query = ListQuery {
            context_id: query.context_id,
            state: query.state,
            status_timestamp_after,
            page_size: usize::try_from(query.page_size).unwrap_or(usize::MAX),
            page_token: query.page_token,
        };
        // A page over the byte cap is asked again, smaller, so that its next-page token is the
        // backend's own (tokens are opaque: a page cannot be cut and continued otherwise).
        let page = loop {
            let page = self.0.list(&query).await.map_err(to_wit)?;
            let fit = page.fitting(MAX_IMPORTED_PAGE_BYTES);
            // (A backend answering more than asked is trusted host data: passed on.)
            if fit == page.tasks.len() || fit >= query.limit() {
                break page;
            }
            query.page_size = fit;
        };
        // A backend that cannot count (only a `TaskStore` of the embedder's own can be one)
        // reports no total: the page's own length is the most that can be said without walking
        // every page.
        let total_size = page.total_size.unwrap_or(page.tasks.len() as u64);
        Ok(catalog::TaskPage {
            tasks: page
                .tasks
                .iter()
                .map(|task| task.as_json().to_owned())
                .collect(),
            next_page_token: page.next_page_token,
            total_size,
        })
    }

    async fn delete(&mut self, id: String) -> Result<bool, store::StoreError> {
        check_id(&id).map_err(to_wit)?;
        self.0.delete(&id).await.map_err(to_wit)
    }
}

/// A backend's error as the contract's `store-error`, by whose fault it is.
fn to_wit(err: StoreError) -> store::StoreError {
    let message = err.to_string();
    match err {
        StoreError::Conflict { current, .. } => {
            store::StoreError::Conflict(store::VersionConflict { current, message })
        }
        StoreError::InvalidTask(_)
        | StoreError::InvalidId { .. }
        | StoreError::InvalidQuery { .. }
        | StoreError::TaskTooLarge { .. }
        | StoreError::Rejected { .. } => store::StoreError::InvalidInput(message),
        StoreError::Corrupt { .. } => store::StoreError::Corrupt(message),
        StoreError::Io { .. } | StoreError::Unavailable { .. } => store::StoreError::Io(message),
        StoreError::OutcomeUnknown { .. } => store::StoreError::OutcomeUnknown(message),
        _ => store::StoreError::Other(message),
    }
}

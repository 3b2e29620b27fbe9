//! The [`TaskStore`] trait: the persistence seam of an A2A runtime.

use crate::error::StoreError;
use crate::task::Task;
use std::any::Any;
pub use toolnexus_format::ListQuery;

/// Where an A2A runtime keeps its Tasks.
///
/// Two operations, both async, both safe to call concurrently from many tasks:
/// - [`get`](TaskStore::get): the current version of a Task, or `None` on a miss (a miss is
///   never an error);
/// - [`save`](TaskStore::save): upsert by the Task's `id`.
///
/// Use stores as `Arc<dyn TaskStore>`; implement the trait to supply your own backend. A store
/// never blocks the async worker thread it is called on: file I/O and component calls run on
/// Tokio's blocking pool, so the file and component stores need a Tokio runtime.
///
/// Stores are `Any`, so a caller can recover the concrete type:
/// `(&*store as &dyn Any).downcast_ref::<FileTaskStore>()`.
#[async_trait::async_trait]
pub trait TaskStore: Any + Send + Sync {
    /// The current version of the Task with this id, or `None` if there is none.
    ///
    /// Errors only when the id is invalid (empty) or the store cannot answer (I/O failure,
    /// corrupt data, a failing component), never for a plain miss.
    async fn get(&self, id: &str) -> Result<Option<Task>, StoreError>;

    /// Saves the Task, replacing any earlier version with the same id. Once this returns `Ok`,
    /// every later `get` of the id (through this store or, for durable stores, a fresh one over
    /// the same storage) returns this version until the next save.
    async fn save(&self, task: &Task) -> Result<(), StoreError>;

    /// One page of the Tasks matching `query`, in id order (see [`ListQuery`]). Optional:
    /// stores that cannot enumerate their Tasks keep this default, which answers
    /// [`StoreError::Unsupported`].
    async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
        let _ = query;
        Err(StoreError::Unsupported {
            store: self.describe(),
            operation: "list",
        })
    }

    /// Removes the Task with this id: `true` if there was one. Optional, like
    /// [`list`](TaskStore::list).
    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let _ = id;
        Err(StoreError::Unsupported {
            store: self.describe(),
            operation: "delete",
        })
    }

    /// Saves `task` only if the stored version of its id is still `expected` (`None`: no Task
    /// with that id yet), as one atomic step against every other writer of the storage, in
    /// this process or another: `Ok(true)` if it saved, `Ok(false)` if the stored version was
    /// something else (then nothing was written). "Still" means equal as JSON.
    ///
    /// This is what lets several replicas of a runtime read-modify-write one Task without
    /// losing each other's updates (a cancel racing a completion, say). Optional: stores that
    /// cannot do it atomically keep this default, which answers [`StoreError::Unsupported`];
    /// the memory and PostgreSQL stores implement it.
    async fn save_if(&self, task: &Task, expected: Option<&Task>) -> Result<bool, StoreError> {
        let _ = (task, expected);
        Err(StoreError::Unsupported {
            store: self.describe(),
            operation: "save_if",
        })
    }

    /// A short description for logs and errors, such as `file:/var/tasks`.
    fn describe(&self) -> String;
}

/// One page of a [`TaskStore::list`].
#[derive(Debug, Clone, PartialEq)]
pub struct TaskPage {
    /// The Tasks, in id order.
    pub tasks: Vec<Task>,
    /// Pass as [`ListQuery::page_token`] for the next page; `None` on the last page.
    pub next_page_token: Option<String>,
}

/// For implementers of [`TaskStore::save_if`]: `expected` must be a version of the same Task as
/// `task`.
pub fn check_expected(task: &Task, expected: Option<&Task>) -> Result<(), StoreError> {
    match expected {
        Some(expected) if expected.id() != task.id() => Err(StoreError::InvalidId {
            id: expected.id().to_owned(),
            reason: format!(
                "the expected version is of another Task than the one saved ({:?})",
                task.id()
            ),
        }),
        _ => Ok(()),
    }
}

/// For implementers of [`TaskStore`]: the id must be able to name a Task (it is not empty).
pub fn check_id(id: &str) -> Result<(), StoreError> {
    if id.is_empty() {
        return Err(StoreError::InvalidId {
            id: String::new(),
            reason: "task id is empty".into(),
        });
    }
    Ok(())
}

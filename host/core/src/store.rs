//! The [`TaskStore`] trait: the persistence seam of an A2A runtime.

use crate::error::StoreError;
use crate::task::Task;
use std::any::Any;
pub use toolnexus_format::{Expect, ListQuery};

/// Where an A2A runtime keeps its Tasks.
///
/// Two operations, both async, both safe to call concurrently from many tasks:
/// - [`get`](TaskStore::get): the current version of a Task, or `None` on a miss (a miss is
///   never an error);
/// - [`save`](TaskStore::save): upsert by the Task's `id`.
///
/// Stores that keep **versions** (every built-in store and every store component) also answer
/// [`get_versioned`](TaskStore::get_versioned) and
/// [`save_versioned`](TaskStore::save_versioned): each stored Task has a version, a counter
/// that starts at 1 and grows by one with every successful save of that id, and a save can be
/// made conditional on it (compare-and-set), so concurrent writers never lose each other's
/// updates.
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

    /// Whether this store keeps versions: [`get_versioned`](TaskStore::get_versioned) and
    /// [`save_versioned`](TaskStore::save_versioned) work, and a conditional save is atomic
    /// against every writer of the storage. Callers use it to choose between compare-and-set
    /// and a lock of their own; a store that answers `false` is still used correctly, only
    /// with that lock, which holds in one process. A store that implements versions should
    /// say so here (every built-in store does).
    fn supports_versions(&self) -> bool {
        false
    }

    /// The current version of the Task with this id and its version number, or `None`.
    /// Optional: stores without versions keep this default, which answers
    /// [`StoreError::Unsupported`].
    async fn get_versioned(&self, id: &str) -> Result<Option<(Task, u64)>, StoreError> {
        let _ = id;
        Err(StoreError::Unsupported {
            store: self.describe(),
            operation: "versions",
        })
    }

    /// Saves the Task if what is stored for its id is what `expect` says, as one atomic step
    /// against every other writer of the storage (in this process or another), and returns
    /// the new version. [`Expect::Any`] is a plain upsert that still returns the version;
    /// [`Expect::Absent`] creates only if there is no Task with that id; [`Expect::Version`]
    /// saves only over exactly that version. On a mismatch nothing is written and the error is
    /// [`StoreError::Conflict`], carrying the current version.
    ///
    /// Optional, like [`get_versioned`](TaskStore::get_versioned).
    async fn save_versioned(&self, task: &Task, expect: Expect) -> Result<u64, StoreError> {
        let _ = (task, expect);
        Err(StoreError::Unsupported {
            store: self.describe(),
            operation: "versions",
        })
    }

    /// One page of the Tasks matching `query`, newest status timestamp first (see
    /// [`ListQuery`]). Optional:
    /// stores that cannot enumerate their Tasks keep this default, which answers
    /// [`StoreError::Unsupported`].
    async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
        let _ = query;
        Err(StoreError::Unsupported {
            store: self.describe(),
            operation: "list",
        })
    }

    /// How many Tasks the store holds and the bytes they take as stored, where the store can
    /// tell without reading every Task back (one pass over its metadata, one query): the
    /// built-in memory, file and PostgreSQL stores can. `None` (the default): it cannot; a
    /// server then counts Tasks through [`list`](TaskStore::list)'s `total_size` and bounds
    /// no bytes. Servers use it to hold each namespace to its quota.
    async fn usage(&self) -> Result<Option<StoreUsage>, StoreError> {
        Ok(None)
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
    /// The default does it with versions: it reads the current version, compares it with
    /// `expected`, and saves conditionally on that version; a store without versions answers
    /// [`StoreError::Unsupported`]. Prefer [`save_versioned`](TaskStore::save_versioned),
    /// which does not compare documents.
    async fn save_if(&self, task: &Task, expected: Option<&Task>) -> Result<bool, StoreError> {
        check_expected(task, expected)?;
        let expect = match (self.get_versioned(task.id()).await?, expected) {
            (None, None) => Expect::Absent,
            (Some((current, version)), Some(expected)) if current == *expected => {
                Expect::Version(version)
            }
            _ => return Ok(false),
        };
        match self.save_versioned(task, expect).await {
            Ok(_) => Ok(true),
            Err(StoreError::Conflict { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Whether this store keeps push-notification configs: the four `*_push_config*` methods
    /// work. The A2A layer offers push notifications only over a store that says so.
    fn supports_push_configs(&self) -> bool {
        false
    }

    /// Saves a push-notification config of the Task `task_id`, replacing the config of that
    /// Task with the same config id. Once this returns `Ok`, it survives as the Tasks do
    /// (a durable store keeps it across restarts), and a crash mid-save leaves the old config
    /// or the new one, never a mix. The store does not check that the Task exists (the A2A
    /// layer does). Optional: the default answers [`StoreError::Unsupported`].
    async fn save_push_config(
        &self,
        task_id: &str,
        config: &crate::PushConfig,
    ) -> Result<(), StoreError> {
        let _ = (task_id, config);
        Err(self.push_unsupported())
    }

    /// The config `config_id` of the Task `task_id`, or `None` (a miss is never an error).
    async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<crate::PushConfig>, StoreError> {
        let _ = (task_id, config_id);
        Err(self.push_unsupported())
    }

    /// Every config of the Task `task_id`, by config id ascending (byte order; see
    /// [`sort_push_configs`](crate::sort_push_configs)); empty when there is none.
    async fn list_push_configs(&self, task_id: &str) -> Result<Vec<crate::PushConfig>, StoreError> {
        let _ = task_id;
        Err(self.push_unsupported())
    }

    /// Removes the config `config_id` of the Task `task_id`: `true` if there was one.
    /// [`delete`](TaskStore::delete) of a Task removes its configs too.
    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<bool, StoreError> {
        let _ = (task_id, config_id);
        Err(self.push_unsupported())
    }

    /// The error of the push-config defaults.
    fn push_unsupported(&self) -> StoreError {
        StoreError::Unsupported {
            store: self.describe(),
            operation: "push notification configs",
        }
    }

    /// A short description for logs and errors, such as `file:/var/tasks`.
    fn describe(&self) -> String;
}

/// What a store holds, as [`TaskStore::usage`] reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreUsage {
    /// How many Tasks.
    pub tasks: u64,
    /// Their bytes as stored: the JSON text (the file store: the Task files' sizes;
    /// PostgreSQL: `jsonb`'s text form, which spaces members out a little).
    pub bytes: u64,
}

/// One page of a [`TaskStore::list`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskPage {
    /// The Tasks, newest status timestamp first.
    pub tasks: Vec<Task>,
    /// Pass as [`ListQuery::page_token`] for the next page; `None` on the last page.
    pub next_page_token: Option<String>,
    /// How many Tasks match the query's filters across all pages; `None` when the store cannot
    /// tell (every built-in store and store component can; a backend of your own may not).
    pub total_size: Option<u64>,
}

impl TaskPage {
    /// How many of its Tasks, from the first, fit in `max` bytes of JSON (commas between them
    /// included); at least one, so that paging always moves on. A page cut to fewer must be
    /// asked of the store again with that page size: page tokens are the store's own.
    pub fn fitting(&self, max: usize) -> usize {
        let mut total = 0usize;
        for (i, task) in self.tasks.iter().enumerate() {
            total = total.saturating_add(task.as_json().len() + usize::from(i > 0));
            if total > max {
                return i.max(1);
            }
        }
        self.tasks.len()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn page(sizes: &[usize]) -> TaskPage {
        let tasks = sizes
            .iter()
            .enumerate()
            .map(|(i, size)| {
                // `{"id":"N","p":"…"}`: 17 bytes around the padding for a one-digit id.
                let pad = "x".repeat(size - 17);
                Task::from_json_text(format!(r#"{{"id":"{i}","p":"{pad}"}}"#)).unwrap()
            })
            .collect();
        TaskPage {
            tasks,
            ..TaskPage::default()
        }
    }

    #[test]
    fn a_page_is_cut_before_the_task_that_would_pass_the_bytes_and_keeps_at_least_one() {
        let three = page(&[100, 100, 100]);
        assert_eq!(three.tasks[0].as_json().len(), 100);
        assert_eq!(three.fitting(302), 3, "two commas between three");
        assert_eq!(three.fitting(301), 2);
        assert_eq!(three.fitting(201), 2);
        assert_eq!(three.fitting(200), 1);
        assert_eq!(three.fitting(10), 1, "at least one, so paging moves on");
        assert_eq!(page(&[]).fitting(0), 0);
    }
}

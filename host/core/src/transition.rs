//! Moving a Task to its next version without losing anyone else's: read → decide →
//! compare-and-set, retried on a fresh read when another writer got there first.
//!
//! Any runtime that updates a stored Task (a worker finishing it, a client cancelling it, a
//! replica of the same runtime doing either) needs this loop: a plain read-modify-`save` lets a
//! completion silently overwrite a cancel that landed in between. [`transition`] runs the loop
//! against any [`TaskStore`]; the A2A server (`toolnexus-a2a`) uses it for every state change.
//!
//! ```
//! use toolnexus_core::{InMemoryTaskStore, Step, Task, TaskStore, state, task_state, transition};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = InMemoryTaskStore::new();
//! store.save(&r#"{"id": "t1", "status": {"state": "working"}}"#.parse::<Task>()?).await?;
//! // Complete the Task unless it is already terminal (cancelled meanwhile, say).
//! let saved = transition(&store, "t1", None, |current: &Task| {
//!     if state::is_terminal_state(task_state(current)) {
//!         return Ok::<_, std::convert::Infallible>(Step::Stop);
//!     }
//!     let mut next = current.clone().into_value();
//!     next["status"]["state"] = "completed".into();
//!     Ok(Step::Save(Task::try_from(next).expect("still a Task")))
//! })
//! .await?;
//! assert_eq!(task_state(&saved.expect("it was working")), "completed");
//! # Ok(()) }
//! ```

use crate::error::StoreError;
use crate::store::{Expect, TaskStore};
use crate::task::Task;
use std::fmt;

/// How many times [`transition`] reads again after losing a race. Each lost race means another
/// writer's update landed, so this only runs out under pathological contention on one Task.
pub const ATTEMPTS: usize = 16;

/// What the decision made of the current version.
#[derive(Debug, Clone)]
pub enum Step {
    /// Save this as the next version.
    Save(Task),
    /// Leave the Task as it is (it is terminal already, say).
    Stop,
}

/// Why a [`transition`] did not happen.
#[derive(Debug)]
pub enum TransitionError<E> {
    /// There is no Task with this id, and no fallback version was given.
    NotFound { id: String },
    /// The decision refused the move (its own error, passed through).
    Refused(E),
    /// The store failed.
    Store(StoreError),
    /// Other writers changed the Task under every one of [`ATTEMPTS`] tries.
    Contended { id: String, attempts: usize },
}

impl<E: fmt::Display> fmt::Display for TransitionError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransitionError::NotFound { id } => write!(f, "task not found: {id}"),
            TransitionError::Refused(e) => e.fmt(f),
            TransitionError::Store(e) => e.fmt(f),
            TransitionError::Contended { id, attempts } => write!(
                f,
                "task {id} kept changing under this update; gave up after {attempts} attempts"
            ),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for TransitionError<E> {}

impl<E> From<StoreError> for TransitionError<E> {
    fn from(err: StoreError) -> Self {
        TransitionError::Store(err)
    }
}

/// One read-modify-write of the Task `id`: read the current version (or use `fallback` when
/// the store has none, for a Task whose first save is still in flight), let `decide` pick the
/// next one, and save it with [`TaskStore::save_versioned`] on the version read, so it lands
/// only if the Task is still the version `decide` looked at; if another writer changed it
/// meanwhile, read again and decide again. Returns the saved Task, or `None` when `decide` said
/// [`Step::Stop`]. A store without versions gets [`TaskStore::save_if`] (compare as JSON).
///
/// A store that cannot compare-and-set at all (its `save_if` answers [`StoreError::Unsupported`]) gets
/// a plain `save` of the decided version: then the caller must keep other writers of this Task
/// out while the transition runs (the A2A server holds a per-Task lock in its process).
pub async fn transition<E>(
    store: &(impl TaskStore + ?Sized),
    id: &str,
    fallback: Option<&Task>,
    decide: impl FnMut(&Task) -> Result<Step, E>,
) -> Result<Option<Task>, TransitionError<E>> {
    let start = match fallback {
        Some(task) => Start::Fallback(task),
        None => Start::Read,
    };
    let saved = transition_from(store, id, start, decide).await?;
    Ok(saved.map(|(task, _)| task))
}

/// Where [`transition_from`] starts.
#[derive(Debug, Clone, Copy)]
pub enum Start<'a> {
    /// Read the current version.
    Read,
    /// Read the current version; use this Task when the store has none (a Task whose first
    /// save is still in flight).
    Fallback(&'a Task),
    /// The version the caller saved last (the Task, and the version its save returned): the
    /// first try saves on it without reading, and only a lost race reads.
    Known(&'a Task, u64),
}

/// [`transition`] from `start`, also returning the saved version's number (`None` from a
/// store without versions), for the next transition to start from
/// ([`Start::Known`]). A writer that alone moves a Task through several versions (an agent's
/// run) so saves each without reading it first.
pub async fn transition_from<E>(
    store: &(impl TaskStore + ?Sized),
    id: &str,
    start: Start<'_>,
    mut decide: impl FnMut(&Task) -> Result<Step, E>,
) -> Result<Option<(Task, Option<u64>)>, TransitionError<E>> {
    let fallback = match start {
        Start::Fallback(task) => Some(task),
        Start::Read | Start::Known(..) => None,
    };
    let mut known = match start {
        Start::Known(task, version) => Some((task.clone(), version)),
        Start::Read | Start::Fallback(_) => None,
    };
    for _ in 0..ATTEMPTS {
        // Stores with versions: compare-and-set on the version read (or known).
        let (stored, expect) = match known.take() {
            Some((task, version)) => (Some(task), Some(Expect::Version(version))),
            None => match store.get_versioned(id).await {
                Ok(Some((task, version))) => (Some(task), Some(Expect::Version(version))),
                Ok(None) => (None, Some(Expect::Absent)),
                Err(StoreError::Unsupported { .. }) => (store.get(id).await?, None),
                Err(e) => return Err(e.into()),
            },
        };
        let Some(current) = stored.as_ref().or(fallback) else {
            return Err(TransitionError::NotFound { id: id.to_owned() });
        };
        let next = match decide(current).map_err(TransitionError::Refused)? {
            Step::Save(next) => next,
            Step::Stop => return Ok(None),
        };
        if let Some(expect) = expect {
            match store.save_versioned(&next, expect).await {
                Ok(version) => return Ok(Some((next, Some(version)))),
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        match store.save_if(&next, stored.as_ref()).await {
            Ok(true) => return Ok(Some((next, None))),
            Ok(false) => continue,
            Err(StoreError::Unsupported { .. }) => {
                store.save(&next).await?;
                return Ok(Some((next, None)));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(TransitionError::Contended {
        id: id.to_owned(),
        attempts: ATTEMPTS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InMemoryTaskStore, ListQuery, TaskPage, task_state};
    use serde_json::json;
    use std::convert::Infallible;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn task(value: serde_json::Value) -> Task {
        Task::try_from(value).unwrap()
    }

    fn with_state(current: &Task, state: &str) -> Task {
        let mut value = current.clone().into_value();
        value["status"] = json!({"state": state});
        task(value)
    }

    /// A store whose Task `t` another writer cancels right after each of the first `races`
    /// reads, the way a second replica would.
    struct Racing {
        inner: InMemoryTaskStore,
        races: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl TaskStore for Racing {
        async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
            let read = self.inner.get(id).await?;
            if self.races.load(Ordering::SeqCst) > 0 {
                let left = self.races.fetch_sub(1, Ordering::SeqCst);
                // Each of its writes is a new version (`n`), as a real writer's would be.
                let cancels =
                    json!({"id": id, "status": {"state": "canceled"}, "by": "other", "n": left});
                self.inner.save(&task(cancels)).await?;
            }
            Ok(read)
        }
        async fn save(&self, task: &Task) -> Result<(), StoreError> {
            self.inner.save(task).await
        }
        async fn save_if(&self, task: &Task, expected: Option<&Task>) -> Result<bool, StoreError> {
            self.inner.save_if(task, expected).await
        }
        async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
            self.inner.list(query).await
        }
        fn describe(&self) -> String {
            "racing".into()
        }
    }

    /// Only `get` and `save`: no compare-and-set.
    struct PlainOnly(InMemoryTaskStore);

    #[async_trait::async_trait]
    impl TaskStore for PlainOnly {
        async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
            self.0.get(id).await
        }
        async fn save(&self, task: &Task) -> Result<(), StoreError> {
            self.0.save(task).await
        }
        fn describe(&self) -> String {
            "plain".into()
        }
    }

    fn complete_unless_terminal(current: &Task) -> Result<Step, Infallible> {
        if crate::state::is_terminal_state(task_state(current)) {
            return Ok(Step::Stop);
        }
        Ok(Step::Save(with_state(current, "completed")))
    }

    #[tokio::test]
    async fn a_write_that_lands_in_between_is_seen_not_overwritten() {
        let store = Racing {
            inner: InMemoryTaskStore::new(),
            races: AtomicUsize::new(0),
        };
        store
            .save(&task(json!({"id": "t", "status": {"state": "working"}})))
            .await
            .unwrap();
        store.races.store(1, Ordering::SeqCst);
        let decided = AtomicUsize::new(0);
        let saved = transition(&store, "t", None, |current| {
            decided.fetch_add(1, Ordering::SeqCst);
            complete_unless_terminal(current)
        })
        .await
        .unwrap();
        assert!(saved.is_none(), "the cancel won; nothing was saved over it");
        assert_eq!(
            decided.load(Ordering::SeqCst),
            2,
            "decided again on a fresh read"
        );
        let stored = store.get("t").await.unwrap().unwrap();
        assert_eq!(task_state(&stored), "canceled");
        assert_eq!(stored.get("by"), Some(&json!("other")));
    }

    #[tokio::test]
    async fn endless_contention_gives_up_with_a_named_error() {
        let store = Racing {
            inner: InMemoryTaskStore::new(),
            races: AtomicUsize::new(usize::MAX),
        };
        store
            .save(&task(json!({"id": "t", "status": {"state": "working"}})))
            .await
            .unwrap();
        let err = transition(&store, "t", None, |current| {
            Ok::<_, Infallible>(Step::Save(with_state(current, "failed")))
        })
        .await
        .unwrap_err();
        assert!(
            matches!(&err, TransitionError::Contended { id, attempts } if id == "t" && *attempts == ATTEMPTS),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "task t kept changing under this update; gave up after 16 attempts"
        );
    }

    #[tokio::test]
    async fn a_missing_task_is_not_found_unless_a_fallback_is_given() {
        let store = InMemoryTaskStore::new();
        let err = transition(&store, "nope", None, complete_unless_terminal)
            .await
            .unwrap_err();
        assert!(matches!(&err, TransitionError::NotFound { id } if id == "nope"));
        assert!(store.is_empty());

        let first = task(json!({"id": "new", "status": {"state": "submitted"}}));
        let saved = transition(&store, "new", Some(&first), complete_unless_terminal)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(store.get("new").await.unwrap(), Some(saved));
    }

    #[tokio::test]
    async fn a_refusal_is_passed_through_and_changes_nothing() {
        let store = InMemoryTaskStore::new();
        let done = task(json!({"id": "t", "status": {"state": "completed"}}));
        store.save(&done).await.unwrap();
        let err = transition(&store, "t", None, |_| Err::<Step, _>("not cancelable"))
            .await
            .unwrap_err();
        assert!(matches!(err, TransitionError::Refused("not cancelable")));
        assert_eq!(store.get("t").await.unwrap(), Some(done));
    }

    #[tokio::test]
    async fn stores_without_compare_and_set_get_a_plain_save() {
        let store = PlainOnly(InMemoryTaskStore::new());
        store
            .save(&task(json!({"id": "t", "status": {"state": "working"}})))
            .await
            .unwrap();
        let saved = transition(&store, "t", None, complete_unless_terminal)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(task_state(&saved), "completed");
        assert_eq!(store.get("t").await.unwrap(), Some(saved));
    }
}

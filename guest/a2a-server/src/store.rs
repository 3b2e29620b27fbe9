//! The composed store, as the protocol's [`TaskStore`]: `toolnexus:task-store/store` and
//! `catalog` 0.4.0, imported from the store component the composition plugged in. Its answers
//! are hostile input, checked here as the host checks a `wasm:` store's (a `get` answers the
//! Task asked for, a page no larger than asked), since no host stands between the two.

use crate::bindings::toolnexus::task_store::{catalog, store};
use toolnexus_core::{Expect, ListQuery, StoreError, Task, TaskPage, TaskStore, check_id};

const STORE: &str = "the composed store component";

/// The store component this component was composed with.
pub struct ImportedStore;

fn store_error(e: store::StoreError) -> StoreError {
    match e {
        store::StoreError::InvalidInput(reason) => StoreError::Rejected {
            store: STORE.into(),
            reason,
        },
        store::StoreError::Corrupt(reason) => StoreError::Corrupt {
            location: STORE.into(),
            reason,
        },
        store::StoreError::Io(reason) | store::StoreError::Other(reason) => StoreError::Backend {
            store: STORE.into(),
            reason,
        },
        store::StoreError::OutcomeUnknown(reason) => StoreError::OutcomeUnknown {
            store: STORE.into(),
            reason,
        },
        store::StoreError::Conflict(conflict) => StoreError::Backend {
            store: STORE.into(),
            reason: format!("unexpected conflict: {}", conflict.message),
        },
    }
}

fn corrupt(reason: String) -> StoreError {
    StoreError::Corrupt {
        location: STORE.into(),
        reason,
    }
}

/// A Task the component answered: JSON with a string id (`expected`, when it answered a get).
fn answered_task(text: String, expected: Option<&str>) -> Result<Task, StoreError> {
    let task = Task::from_json_text(text)
        .map_err(|e| corrupt(format!("it answered a Task that is not one: {e}")))?;
    if let Some(id) = expected
        && task.id() != id
    {
        return Err(corrupt(format!(
            "asked for Task {id:?}, it answered Task {:?}",
            task.id()
        )));
    }
    Ok(task)
}

#[async_trait::async_trait]
impl TaskStore for ImportedStore {
    async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
        Ok(self.get_versioned(id).await?.map(|(task, _)| task))
    }

    async fn save(&self, task: &Task) -> Result<(), StoreError> {
        self.save_versioned(task, Expect::Any).await.map(drop)
    }

    fn supports_versions(&self) -> bool {
        true
    }

    async fn get_versioned(&self, id: &str) -> Result<Option<(Task, u64)>, StoreError> {
        check_id(id)?;
        match store::get(id).map_err(store_error)? {
            None => Ok(None),
            Some(stored) => Ok(Some((
                answered_task(stored.task, Some(id))?,
                stored.version,
            ))),
        }
    }

    async fn save_versioned(&self, task: &Task, expect: Expect) -> Result<u64, StoreError> {
        let condition = match expect {
            Expect::Any => store::Condition::Any,
            Expect::Absent => store::Condition::Absent,
            Expect::Version(v) => store::Condition::Version(v),
        };
        match store::save(task.as_json(), condition) {
            Ok(version) => Ok(version),
            Err(store::StoreError::Conflict(conflict)) => Err(StoreError::Conflict {
                id: task.id().to_owned(),
                expected: expect,
                current: conflict.current,
            }),
            Err(e) => Err(store_error(e)),
        }
    }

    async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
        let status_timestamp_after = query
            .status_timestamp_after
            .map(|at| at.to_rfc3339())
            .transpose()
            .map_err(|e| StoreError::InvalidQuery {
                reason: format!("status-timestamp-after cannot be written as RFC 3339: {e}"),
            })?;
        let limit = query.limit();
        let page = catalog::list(&catalog::ListQuery {
            context_id: query.context_id.clone(),
            state: query.state.clone(),
            status_timestamp_after,
            page_size: u32::try_from(limit).unwrap_or(u32::MAX),
            page_token: query.page_token.clone(),
        })
        .map_err(|e| match e {
            store::StoreError::InvalidInput(reason) => StoreError::InvalidQuery { reason },
            e => store_error(e),
        })?;
        if page.tasks.len() > limit {
            return Err(corrupt(format!(
                "list answered {} Tasks for a page of {limit}",
                page.tasks.len()
            )));
        }
        let tasks = page
            .tasks
            .into_iter()
            .map(|text| answered_task(text, None))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TaskPage {
            tasks,
            next_page_token: page.next_page_token,
            total_size: Some(page.total_size),
        })
    }

    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        check_id(id)?;
        catalog::delete(id).map_err(store_error)
    }

    fn describe(&self) -> String {
        STORE.into()
    }
}

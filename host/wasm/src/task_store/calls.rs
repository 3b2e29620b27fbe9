//! The [`TaskStore`] methods of a [`WasmTaskStore`]: each runs one call of the component on
//! the sandbox's pool and checks its answer before it is believed: the Task asked for, within
//! the size limit, versions as the condition implies, pages no larger than asked.

use crate::message::sanitize;
use crate::sandbox::call::Run;
use crate::task_store::contract::{ListArgs, VersionConflict, WitError};
use crate::task_store::store::WasmTaskStore;
use crate::task_store::store_op::op;
use toolnexus_core::{
    Expect, Limit, ListQuery, PushConfig, StoreError, Task, TaskPage, TaskStore, Timestamp,
    check_id,
};

impl WasmTaskStore {
    /// `get`, its answer checked: the Task asked for, no larger than the limit, and its version
    /// (never 0) unless it was not `version_wanted` and the component answered through `lean`.
    async fn get_checked(
        &self,
        id: &str,
        version_wanted: bool,
    ) -> Result<Option<(Task, Option<u64>)>, StoreError> {
        check_id(id)?;
        let id_owned = id.to_owned();
        let found = self
            .pool
            .call(
                Run::Inline,
                op(move |i| {
                    let id = id_owned.clone();
                    Box::pin(async move { i.api.get(&mut i.store, &id, version_wanted).await })
                }),
            )
            .await?;
        let Some((text, version)) = found else {
            return Ok(None);
        };
        let max = self.limits.max_task_bytes;
        if text.len() > max {
            return Err(self.limit_error(Limit::AnswerSize {
                size: text.len(),
                max,
            }));
        }
        // Checked in full (syntax, object, id) without building the document: the only scan
        // of these bytes, since the component was told so (`answers-checked`). The built-in
        // file store passes its Task file through unread, so what fails here is that file's
        // content, named as the native store names it; any other component's answer is its own.
        let not_the_task = |file_reason: String, answer: String| {
            if self.names_task_files {
                let name = toolnexus_format::id::encode_id(id).unwrap_or_default();
                StoreError::Corrupt {
                    location: self.pool.world.dir.join(name).display().to_string(),
                    reason: file_reason,
                }
            } else {
                self.component_error(format!("get({id:?}) returned {answer}"))
            }
        };
        let task = Task::from_json_text(text).map_err(|e| {
            not_the_task(e.to_string(), format!("something that is not a Task: {e}"))
        })?;
        if task.id() != id {
            return Err(not_the_task(
                format!("holds task {:?}, not {id:?}", task.id()),
                format!("the Task with id {:?}", task.id()),
            ));
        }
        if version == Some(0) {
            return Err(self.component_error(format!(
                "get({id:?}) returned version 0 (versions start at 1)"
            )));
        }
        Ok(Some((task, version)))
    }

    /// `save` on the condition `expect`, its answer checked: the new version, or
    /// [`StoreError::Conflict`].
    async fn save_checked(&self, task: &Task, expect: Expect) -> Result<u64, StoreError> {
        let id = task.id().to_owned();
        let size = task.as_json().len();
        let max = self.limits.max_task_bytes;
        if size > max {
            return Err(StoreError::TaskTooLarge { id, size, max });
        }
        let task = task.clone(); // shares the document; no copy
        // A conflict is an answer, not a failure: it comes back apart from the errors.
        let answer = self
            .pool
            .call(
                Run::Blocking,
                op(move |i| {
                    let task = task.clone();
                    Box::pin(async move {
                        Ok(
                            match i
                                .api
                                .save(&mut i.store, task.id(), task.as_json(), expect)
                                .await?
                            {
                                Ok(version) => Ok(Ok(version)),
                                Err(WitError::Conflict(conflict)) => Ok(Err(conflict)),
                                Err(e) => Err(e),
                            },
                        )
                    })
                }),
            )
            .await
            .map_err(|e| self.write_error(&format!("the save of {id:?}"), e))?;
        let version = match answer {
            Ok(version) => version,
            Err(conflict) => return Err(self.conflict_error(id, expect, conflict)),
        };
        let expected = match expect {
            Expect::Any => (1..=u64::MAX).contains(&version),
            Expect::Absent => version == 1,
            Expect::Version(v) => version == v.saturating_add(1),
        };
        if !expected {
            return Err(self.component_error(format!(
                "save of {id:?} expecting {expect} returned version {version} \
                 (a first save is version 1, each later one the version before plus one)"
            )));
        }
        Ok(version)
    }

    /// A `conflict` answer to a save expecting `expected`, as [`StoreError::Conflict`]; a
    /// conflict the condition rules out (none can arise for [`Expect::Any`], or the version it
    /// reports is the one expected) is a component error.
    fn conflict_error(
        &self,
        id: String,
        expected: Expect,
        conflict: VersionConflict,
    ) -> StoreError {
        let current = conflict.current;
        // A plain save cannot conflict; a conditional one only with what it did not expect.
        let possible = current != Some(0) && expected != Expect::Any && !expected.holds(current);
        if !possible {
            let stored = match current {
                Some(v) => format!("version {v}"),
                None => "no task".to_owned(),
            };
            return self.component_error(format!(
                "save of {id:?} expecting {expected} answered a conflict with {stored} stored, \
                 which that condition cannot conflict with: {}",
                sanitize(&conflict.message)
            ));
        }
        StoreError::Conflict {
            id,
            expected,
            current,
        }
    }
}

/// A status timestamp as RFC 3339 text for a component.
fn rfc3339(at: Timestamp) -> Result<String, StoreError> {
    at.to_rfc3339().map_err(|e| StoreError::InvalidQuery {
        reason: format!("status-timestamp-after cannot be written as RFC 3339: {e}"),
    })
}

#[async_trait::async_trait]
impl TaskStore for WasmTaskStore {
    async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
        Ok(self.get_checked(id, false).await?.map(|(task, _)| task))
    }

    async fn save(&self, task: &Task) -> Result<(), StoreError> {
        self.save_checked(task, Expect::Any).await.map(|_| ())
    }

    fn supports_versions(&self) -> bool {
        true
    }

    async fn get_versioned(&self, id: &str) -> Result<Option<(Task, u64)>, StoreError> {
        match self.get_checked(id, true).await? {
            None => Ok(None),
            Some((task, Some(version))) => Ok(Some((task, version))),
            // `store.get` answers a version by its type; only `lean.get-text` does not, and it
            // is not called when the version is wanted.
            Some((_, None)) => {
                Err(self.component_error(format!("get({id:?}) answered without a version")))
            }
        }
    }

    /// By the component's conditional `save`.
    async fn save_versioned(&self, task: &Task, expect: Expect) -> Result<u64, StoreError> {
        self.save_checked(task, expect).await
    }

    /// Newest status timestamp first, with the total size, as the component answers it.
    async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
        self.require_catalog("list")?;
        let status_timestamp_after = match query.status_timestamp_after {
            None => None,
            Some(at) => Some(rfc3339(at)?),
        };
        let args = ListArgs {
            context_id: query.context_id.clone(),
            state: query.state.clone(),
            status_timestamp_after,
            page_size: u32::try_from(query.limit()).unwrap_or(u32::MAX),
            page_token: query.page_token.clone(),
        };
        // `invalid-input` to `list` is the query's fault (a page token the store did not make):
        // it comes back apart from the other errors.
        let answer = self
            .pool
            .call(
                Run::Blocking,
                op(move |i| {
                    let args = args.clone();
                    Box::pin(async move {
                        Ok(match i.api.list(&mut i.store, args).await? {
                            Ok(page) => Ok(Ok(page)),
                            Err(WitError::InvalidInput(reason)) => Ok(Err(reason)),
                            Err(e) => Err(e),
                        })
                    })
                }),
            )
            .await?;
        let page = answer.map_err(|reason| StoreError::InvalidQuery {
            reason: sanitize(&reason),
        })?;
        let limits = self.limits;
        if page.tasks.len() > query.limit() {
            return Err(self.component_error(format!(
                "list returned {} Tasks for a page of {}",
                page.tasks.len(),
                query.limit()
            )));
        }
        if page.total_size < page.tasks.len() as u64 {
            return Err(self.component_error(format!(
                "list returned {} Tasks and a total size of {}",
                page.tasks.len(),
                page.total_size
            )));
        }
        let mut tasks = Vec::with_capacity(page.tasks.len());
        for text in page.tasks {
            if text.len() > limits.max_task_bytes {
                return Err(self.limit_error(Limit::AnswerSize {
                    size: text.len(),
                    max: limits.max_task_bytes,
                }));
            }
            let task = Task::from_json_text(text).map_err(|e| {
                self.component_error(format!("list returned something that is not a Task: {e}"))
            })?;
            tasks.push(task);
        }
        Ok(TaskPage {
            tasks,
            next_page_token: page.next_page_token,
            total_size: Some(page.total_size),
        })
    }

    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        check_id(id)?;
        self.require_catalog("delete")?;
        let id = id.to_owned();
        let task_id = id.clone();
        self.pool
            .call(
                Run::Blocking,
                op(move |i| {
                    let id = id.clone();
                    Box::pin(async move { i.api.delete(&mut i.store, &id).await })
                }),
            )
            .await
            .map_err(|e| self.write_error(&format!("the delete of {task_id:?}"), e))
    }

    /// A component that exports `push-configs` keeps them; for one that does not, the four
    /// methods answer [`StoreError::Unsupported`] (operation `push notification configs`).
    fn supports_push_configs(&self) -> bool {
        WasmTaskStore::supports_push_configs(self)
    }

    async fn save_push_config(&self, task_id: &str, config: &PushConfig) -> Result<(), StoreError> {
        self.set_push_config_checked(task_id, config).await
    }

    async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<PushConfig>, StoreError> {
        self.get_push_config_checked(task_id, config_id).await
    }

    async fn list_push_configs(&self, task_id: &str) -> Result<Vec<PushConfig>, StoreError> {
        self.list_push_configs_checked(task_id).await
    }

    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<bool, StoreError> {
        self.delete_push_config_checked(task_id, config_id).await
    }

    fn describe(&self) -> String {
        format!(
            "wasm:{}?dir={}",
            self.pool.config.name,
            self.pool.world.dir.display()
        )
    }
}

//! A run's updates, each one transition of its Task: checked against the limits, saved, then
//! published to the Task's live subscribers.

use crate::agent::{Artifact, EmitError, Message, Sink};
use crate::error::{A2aError, ErrorKind};
use crate::live_events::{Event, TaskEvents};
use crate::namespace_usage::growth;
use crate::scope::At;
use crate::service_state::{LastSaved, ServiceState};
use crate::task_json::{apply_artifact_update, with_status};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use toolnexus_core::state::is_terminal_state;
use toolnexus_core::transition::Step;
use toolnexus_core::{Task, task_state};

/// Where a run's updates go.
pub(crate) struct RunSink {
    inner: Arc<ServiceState>,
    at: At,
    id: String,
    live: Arc<TaskEvents>,
    /// Shared with the run: each update saves on the version the run saved last.
    last_saved: Arc<LastSaved>,
    updates: AtomicUsize,
}

/// Why a transition of an update was refused (carried through the transition's error).
const STOPPED: &str = "stopped";

impl RunSink {
    pub(crate) fn new(
        inner: Arc<ServiceState>,
        at: At,
        id: String,
        live: Arc<TaskEvents>,
        last_saved: Arc<LastSaved>,
    ) -> Self {
        RunSink {
            inner,
            at,
            id,
            live,
            last_saved,
            updates: AtomicUsize::new(0),
        }
    }

    /// Whether the run emitted an update that was saved.
    pub(crate) fn emitted(&self) -> bool {
        self.updates.load(Ordering::Acquire) > 0
    }

    fn count(&self, bytes: usize) -> Result<(), EmitError> {
        let limits = self.inner.config.agent_limits;
        if bytes > limits.max_update_bytes {
            return Err(EmitError::Limit(format!(
                "an update of {bytes} bytes is over the limit of {} bytes",
                limits.max_update_bytes
            )));
        }
        if self.updates.load(Ordering::Acquire) >= limits.max_updates {
            return Err(EmitError::Limit(format!(
                "a run may emit at most {} updates",
                limits.max_updates
            )));
        }
        Ok(())
    }

    /// One update: `change` applied to the Task (unless it is terminal), checked, saved, and
    /// its event published.
    async fn apply(
        &self,
        change: impl Fn(&Task) -> Result<Task, EmitError> + Send + Sync,
        event: Event,
    ) -> Result<(), EmitError> {
        let max_task_bytes = self.inner.config.agent_limits.max_task_bytes;
        let refused = std::sync::Mutex::new(None);
        let grew = std::sync::atomic::AtomicI64::new(0);
        let step = |current: &Task| {
            if is_terminal_state(task_state(current)) {
                return Err(A2aError::new(ErrorKind::UnsupportedOperation, STOPPED));
            }
            let refuse = |e: EmitError| {
                *refused.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                Err(A2aError::new(ErrorKind::UnsupportedOperation, STOPPED))
            };
            let next = match change(current) {
                Ok(next) => next,
                Err(e) => return refuse(e),
            };
            // The text the store saves, made once here and kept by the Task.
            let size = next.as_json().len();
            if size > max_task_bytes {
                return refuse(EmitError::Limit(format!(
                    "the task would be {size} bytes, over the limit of {max_task_bytes}"
                )));
            }
            let delta = growth(current.as_json().len(), size);
            grew.store(delta, Ordering::Release);
            let limits = &self.inner.config.owner_limits;
            if let Some(why) = u64::try_from(delta)
                .ok()
                .and_then(|more| self.inner.usage.over_bytes(&self.at, limits, more))
            {
                return refuse(EmitError::Limit(why));
            }
            Ok(Step::Save(next))
        };
        let saved = self
            .inner
            .transition(&self.at, &self.id, None, Some(&self.last_saved), step)
            .await;
        if let Some(e) = refused.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(e);
        }
        match saved {
            Ok(Some(task)) => {
                self.updates.fetch_add(1, Ordering::AcqRel);
                self.inner
                    .usage
                    .add_bytes(&self.at, grew.load(Ordering::Acquire));
                let event = match event {
                    Event::Status { final_, .. } => Event::Status {
                        status: task.get("status").cloned().unwrap_or_default(),
                        final_,
                    },
                    other => other,
                };
                self.live.publish(task, vec![event]);
                Ok(())
            }
            Ok(None) => Err(EmitError::Stopped),
            Err(e) if e.kind == ErrorKind::UnsupportedOperation && e.message == STOPPED => {
                Err(EmitError::Stopped)
            }
            Err(e) if e.kind == ErrorKind::TaskNotFound => Err(EmitError::Stopped),
            Err(e) => {
                tracing::warn!(target: "toolnexus::server", task_id = %self.id,
                    error = %e.detail(), "saving an agent's update failed");
                Err(EmitError::Unavailable(e.detail().to_owned()))
            }
        }
    }
}

fn json_len(value: &Value) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |v| v.len())
}

#[async_trait::async_trait]
impl Sink for RunSink {
    async fn update_status(&self, message: Option<Message>) -> Result<(), EmitError> {
        let id = self.id.clone();
        // The message's id is made once, so a retried transition saves the same message.
        let stored = message.map(|m| {
            let mut m = m;
            m.message_id = Some(m.message_id.unwrap_or_else(crate::task_json::new_id));
            m
        });
        let bytes = stored
            .as_ref()
            .map_or(0, |m| json_len(&m.to_stored(&id, &Value::Null)));
        self.count(bytes)?;
        let change = |current: &Task| {
            let context_id = current.get("contextId").cloned().unwrap_or_default();
            let message = stored.as_ref().map(|m| m.to_stored(&id, &context_id));
            with_status(current, "working", message)
                .map_err(|e| EmitError::Invalid(e.detail().to_owned()))
        };
        let event = Event::Status {
            status: Value::Null,
            final_: false,
        };
        self.apply(change, event).await
    }

    async fn update_artifact(
        &self,
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    ) -> Result<(), EmitError> {
        if artifact.artifact_id.is_empty() {
            return Err(EmitError::Invalid(
                "an artifact needs a non-empty artifactId".into(),
            ));
        }
        let update = artifact.to_stored();
        self.count(json_len(&update))?;
        let change = |current: &Task| {
            let mut task = current.clone().into_value();
            apply_artifact_update(&mut task, &update, append).map_err(EmitError::Invalid)?;
            Task::try_from(task).map_err(|e| EmitError::Invalid(e.to_string()))
        };
        let event = Event::Artifact {
            artifact: update.clone(),
            append,
            last_chunk,
        };
        self.apply(change, event).await
    }
}

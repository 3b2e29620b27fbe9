//! An agent's run in the background: `submitted → working →` its outcome, each a transition,
//! its partial output saved as it comes, and its cancel signal.

use crate::agent::{Reply, Sink, Stopped, Work};
use crate::error::{A2aError, ErrorKind};
use crate::scope::At;
use crate::service_state::ServiceState;
use crate::task_json::{agent_message, append_reply, has_artifact, new_id, with_status};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::{OwnedSemaphorePermit, watch};
use toolnexus_core::state::is_terminal_state;
use toolnexus_core::transition::Step;
use toolnexus_core::{Task, task_state};

impl ServiceState {
    pub(crate) fn start_agent(
        self: &Arc<Self>,
        at: &At,
        task: Task,
        message: Value,
        permit: OwnedSemaphorePermit,
        finished: Arc<AtomicBool>,
    ) {
        let inner = Arc::clone(self);
        let at = at.clone();
        let (cancel_tx, cancel_rx) = watch::channel(false);
        self.lock_map(&self.cancels)
            .insert(at.key(task.id()), cancel_tx);
        self.spawn.spawn(Box::pin(async move {
            let _permit = permit;
            let id = task.id().to_owned();
            if let Err(e) = inner.run_agent(&at, task, message, cancel_rx).await {
                tracing::warn!(target: "toolnexus::server", task_id = %id, error = %e.detail(),
                    "background transition failed");
            }
            inner.lock_map(&inner.cancels).remove(&at.key(&id));
            inner.forget_lock(&at, &id);
            finished.store(true, Ordering::Release);
            // Whatever happened, waiters read the Task once more.
            inner.wake_always(&at, &id);
        }));
    }

    fn wake_always(&self, at: &At, id: &str) {
        self.announce_save(at, id);
    }

    /// `submitted → working →` the agent's outcome, each saved, unless the Task was canceled
    /// meanwhile (here, or through another replica).
    async fn run_agent(
        self: &Arc<Self>,
        at: &At,
        task: Task,
        message: Value,
        cancel: watch::Receiver<bool>,
    ) -> Result<(), A2aError> {
        let id = task.id().to_owned();
        let step = |current: &Task| {
            if is_terminal_state(task_state(current)) {
                return Ok(Step::Stop);
            }
            Ok(Step::Save(with_status(current, "working", None)?))
        };
        let Some(working) = self.transition(at, &id, Some(&task), step).await? else {
            return Ok(());
        };
        let artifact_id = new_id();
        let sink = Arc::new(ReplySink {
            inner: Arc::clone(self),
            at: at.clone(),
            id: id.clone(),
            artifact_id: artifact_id.clone(),
        });
        let mut work = Work {
            task: working.clone(),
            message,
            cancel,
            sink,
        };
        let outcome = self.config.agent.run(&mut work).await;
        let stage = self.config.finish_read_to_write_delay;
        let step = |current: &Task| {
            if is_terminal_state(task_state(current)) {
                return Ok(Step::Stop);
            }
            if !stage.is_zero() {
                // The test hook: blocks this worker thread, which only tests ever ask for.
                std::thread::sleep(stage);
            }
            let done = match &outcome {
                Ok(Reply::Completed(text)) => {
                    let mut value = with_status(current, "completed", None)?.into_value();
                    if !text.is_empty() || !has_artifact(&value, &artifact_id) {
                        append_reply(&mut value, &artifact_id, text);
                    }
                    Task::try_from(value)?
                }
                Ok(Reply::InputRequired(question)) => with_status(
                    current,
                    "input-required",
                    Some(agent_message(current, question)),
                )?,
                Err(reason) => {
                    with_status(current, "failed", Some(agent_message(current, reason)))?
                }
            };
            Ok(Step::Save(done))
        };
        self.transition(at, &id, Some(&working), step)
            .await
            .map(drop)
    }
}

/// Saves an agent's partial output: each piece appended to its reply artifact.
struct ReplySink {
    inner: Arc<ServiceState>,
    at: At,
    id: String,
    artifact_id: String,
}

#[async_trait::async_trait]
impl Sink for ReplySink {
    async fn append_text(&self, text: &str) -> Result<(), Stopped> {
        let step = |current: &Task| {
            if is_terminal_state(task_state(current)) {
                return Err(A2aError::new(ErrorKind::UnsupportedOperation, "stopped"));
            }
            let mut value = current.clone().into_value();
            append_reply(&mut value, &self.artifact_id, text);
            Ok(Step::Save(Task::try_from(value)?))
        };
        match self.inner.transition(&self.at, &self.id, None, step).await {
            Ok(_) => Ok(()),
            Err(e) => {
                if e.kind != ErrorKind::UnsupportedOperation {
                    tracing::warn!(target: "toolnexus::server", task_id = %self.id,
                        error = %e.detail(), "saving an agent's partial reply failed");
                }
                Err(Stopped)
            }
        }
    }
}

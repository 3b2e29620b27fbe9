//! An agent's run in the background: `submitted → working →` its outcome, each a transition
//! whose event goes to the Task's live subscribers once saved, and its cancel signal. A panic
//! of the agent fails the Task; a stop of the service (`run_stop`) drops the agent's run and
//! fails the Task too.

use crate::agent::{Message, Outcome, Request, Work};
use crate::error::A2aError;
use crate::live_events::{Event, TaskEvents};
use crate::run_stop::RUN_STOPPED_MESSAGE;
use crate::run_updates::RunSink;
use crate::scope::{At, Scope};
use crate::service_state::{LastSaved, ServiceState};
use crate::task_json::with_status;
use futures_util::FutureExt;
use serde_json::{Value, json};
use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::sync::{OwnedSemaphorePermit, watch};
use toolnexus_core::state::is_terminal_state;
use toolnexus_core::transition::Step;
use toolnexus_core::{Task, task_state};

/// What a `SendMessage` passes on to its run besides the Task and the message.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunContext {
    pub(crate) scope: Scope,
    pub(crate) continued: bool,
    pub(crate) metadata: Option<Value>,
    pub(crate) accepted_output_modes: Vec<String>,
    pub(crate) extensions: Vec<String>,
}

/// What a run works on: the Task (saved `submitted`), the message it answers, and the rest
/// of the request.
pub(crate) struct RunInput {
    pub(crate) task: Task,
    pub(crate) message: Value,
    pub(crate) context: RunContext,
    /// The Task as the send saved it, with its version: where the run's saves start from.
    pub(crate) last_saved: Arc<LastSaved>,
}

/// How a run ended, for a `SendMessage` that waits for it.
#[derive(Default)]
pub(crate) struct RunEnd {
    /// Set once the run is over (whatever it saved).
    pub(crate) finished: AtomicBool,
    /// The agent's direct answer, set before the Task is saved `completed` with it.
    pub(crate) reply: OnceLock<Value>,
    /// The Task as the run's outcome saved it, set before [`RunEnd::finished`] (unset when
    /// the run did not save an outcome: canceled meanwhile, a store failure).
    pub(crate) saved: OnceLock<Task>,
}

impl ServiceState {
    /// Runs the agent on `task` (saved `submitted`) in the background; its events go to `live`.
    pub(crate) fn start_agent(
        self: &Arc<Self>,
        at: &At,
        input: RunInput,
        permit: OwnedSemaphorePermit,
        live: Arc<TaskEvents>,
        end: Arc<RunEnd>,
    ) {
        let inner = Arc::clone(self);
        let at = at.clone();
        let (cancel_tx, cancel_rx) = watch::channel(false);
        // Kept to tell this run's entry from a later run's of the same Task (continued once
        // this one saved it waiting for input, possibly before this one's cleanup below).
        let own_signal = cancel_tx.clone();
        self.lock_map(&self.cancels)
            .insert(at.key(input.task.id()), cancel_tx);
        // A send taken just before the service stopped starts a run that is stopped at once
        // (after the insert: `stop_runs` raises every signal it finds after closing).
        if self.runs_stopped() {
            own_signal.send_replace(true);
        }
        self.spawn.spawn(Box::pin(async move {
            let _permit = permit;
            let id = input.task.id().to_owned();
            let key = at.key(&id);
            let run = inner.run_agent(&at, input, cancel_rx, &live, &end);
            if let Err(e) = run.await {
                tracing::warn!(target: "toolnexus::server", task_id = %id, error = %e.detail(),
                    "background transition failed");
            }
            {
                let mut cancels = inner.lock_map(&inner.cancels);
                if cancels
                    .get(&key)
                    .is_some_and(|signal| signal.same_channel(&own_signal))
                {
                    cancels.remove(&key);
                }
            }
            inner.forget_lock(&at, &id);
            inner.live.close(&key, &live);
            end.finished.store(true, Ordering::Release);
            // Whatever happened, waiters read the Task once more.
            inner.announce_save(&at, &id);
        }));
    }

    /// `submitted → working →` the agent's outcome, each saved, unless the Task was canceled
    /// meanwhile (here, or through another replica).
    async fn run_agent(
        self: &Arc<Self>,
        at: &At,
        RunInput {
            task,
            message,
            context,
            last_saved,
        }: RunInput,
        cancel: watch::Receiver<bool>,
        live: &Arc<TaskEvents>,
        end: &RunEnd,
    ) -> Result<(), A2aError> {
        let id = task.id().to_owned();
        let step = |current: &Task| {
            if is_terminal_state(task_state(current)) {
                return Ok(Step::Stop);
            }
            Ok(Step::Save(with_status(current, "working", None)?))
        };
        let working = self
            .transition(at, &id, Some(&task), Some(&last_saved), step)
            .await?;
        let Some(working) = working else {
            return Ok(());
        };
        let status = working.get("status").cloned().unwrap_or_default();
        live.publish(
            working.clone(),
            vec![Event::Status {
                status,
                final_: false,
            }],
        );
        let request = request_of(&working, &message, context);
        let sink = Arc::new(RunSink::new(
            Arc::clone(self),
            at.clone(),
            id.clone(),
            Arc::clone(live),
            Arc::clone(&last_saved),
        ));
        let mut stop = cancel.clone();
        let mut work = Work::new(
            working.clone(),
            message,
            request,
            Arc::clone(&sink) as _,
            cancel,
        );
        let outcome = {
            // A panic is the agent's failure, as a component's trap is: caught here, the
            // Task is failed and its subscribers get that end (else the executor would drop
            // the run with the Task left `working` and its streams open).
            let ran = AssertUnwindSafe(self.config.agent.run(&mut work)).catch_unwind();
            tokio::select! {
                biased;
                () = self.stop_requested(&mut stop) => {
                    tracing::info!(target: "toolnexus::server", task_id = %id,
                        "the server stops: the agent's run is dropped");
                    Ok(Outcome::Failed(Some(Message::agent_text(RUN_STOPPED_MESSAGE))))
                }
                ran = ran => ran.unwrap_or_else(|panic| {
                    tracing::error!(target: "toolnexus::server", task_id = %id,
                        panic = panic_text(&*panic), "the agent panicked");
                    Err(AGENT_PANICKED.to_owned())
                }),
            }
        };
        // An agent that gave up because it saw the stop's signal (as a cancel) before the run
        // saw it stopped ends as stopped; work it finished meanwhile is kept.
        let stopped = self.runs_stopped() && *stop.borrow();
        let outcome = match outcome {
            Ok(Outcome::Failed(_) | Outcome::Canceled(_)) | Err(_) if stopped => {
                Outcome::Failed(Some(Message::agent_text(RUN_STOPPED_MESSAGE)))
            }
            Ok(Outcome::Reply(_)) if sink.emitted() => Outcome::Failed(Some(Message::agent_text(
                "the agent answered with a message after emitting updates",
            ))),
            Ok(outcome) => outcome,
            Err(reason) => Outcome::Failed(Some(Message::agent_text(reason))),
        };
        let context_id = working.get("contextId").cloned().unwrap_or_default();
        let (state, status_message, reply) = match outcome {
            Outcome::Completed(m) => ("completed", m, None),
            Outcome::Failed(m) => ("failed", m, None),
            Outcome::Rejected(m) => ("rejected", m, None),
            Outcome::Canceled(m) => ("canceled", m, None),
            Outcome::InputRequired(m) => ("input-required", m, None),
            Outcome::AuthRequired(m) => ("auth-required", m, None),
            Outcome::Reply(m) => ("completed", None, Some(m.to_stored(&id, &context_id))),
        };
        let status_message = status_message.map(|m| m.to_stored(&id, &context_id));
        if let Some(reply) = &reply {
            // Before the save: a waiter that sees the Task completed finds the reply set.
            let _ = end.reply.set(reply.clone());
        }
        let stage = self.config.finish_read_to_write_delay;
        let step = |current: &Task| {
            if is_terminal_state(task_state(current)) {
                return Ok(Step::Stop);
            }
            if !stage.is_zero() {
                // The test hook: blocks this worker thread, which only tests ever ask for.
                std::thread::sleep(stage);
            }
            let mut done = with_status(current, state, status_message.clone())?.into_value();
            if let Some(reply) = &reply {
                match done.get_mut("history") {
                    Some(Value::Array(history)) => history.push(reply.clone()),
                    _ => done["history"] = json!([reply]),
                }
            }
            Ok(Step::Save(Task::try_from(done)?))
        };
        let saved = self
            .transition(at, &id, Some(&working), Some(&last_saved), step)
            .await?;
        if let Some(saved) = saved {
            let _ = end.saved.set(saved.clone());
            let mut events = Vec::with_capacity(2);
            if let Some(reply) = reply {
                events.push(Event::Message(reply));
            }
            events.push(Event::Status {
                status: saved.get("status").cloned().unwrap_or_default(),
                final_: true,
            });
            live.publish(saved, events);
        }
        Ok(())
    }
}

/// The status message of a Task whose native agent panicked (what it said is logged, not
/// shown to clients: it may carry anything of the host's).
pub(crate) const AGENT_PANICKED: &str = "the agent failed: it panicked";

/// A panic's payload as text, for the log.
fn panic_text(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(not text)")
}

/// What the agent is asked, from the Task as saved `working` and the message it answers.
fn request_of(working: &Task, message: &Value, context: RunContext) -> Request {
    let text = |key: &str| {
        working
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let mut history: Vec<Message> = working
        .get("history")
        .and_then(Value::as_array)
        .map(|h| h.iter().map(Message::from_stored).collect())
        .unwrap_or_default();
    // The history ends with the message this run answers.
    let message = Message::from_stored(message);
    if history.last() == Some(&message) {
        history.pop();
    }
    Request {
        task_id: working.id().to_owned(),
        context_id: text("contextId"),
        continued: context.continued,
        message,
        history,
        metadata: context.metadata.and_then(|m| m.as_object().cloned()),
        accepted_output_modes: context.accepted_output_modes,
        owner: context.scope.owner,
        tenant: context.scope.tenant,
        extensions: context.extensions,
    }
}

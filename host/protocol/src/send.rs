//! `SendMessage` (and its streaming form): a new Task, or the next message of one that waits
//! for input; the agent started in the background; answered at once, when settled, or as a
//! stream.

use crate::agent_run::{RunContext, RunEnd, RunInput};
use crate::answer::Answer;
use crate::call::SendParams;
use crate::error::{A2aError, ErrorKind};
use crate::namespace_usage::growth;
use crate::save_listeners::{SaveListener, wait_for_change};
use crate::scope::{At, Scope};
use crate::service_state::{LastSaved, ServiceState};
use crate::subscription::Subscription;
use crate::task_json::{is_interrupted, is_settled, new_id, now, task_answer, with_status};
use crate::wire::{self, Version, message_in};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;
use toolnexus_core::state::{TaskState, is_terminal_state};
use toolnexus_core::transition::Step;
use toolnexus_core::{Expect, StoreError, Task, task_state};

impl ServiceState {
    fn check_output_modes(&self, accepted: &[String]) -> Result<(), A2aError> {
        if accepted.is_empty() {
            return Ok(());
        }
        let admits = |mode: &str| {
            let mode = mode
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            self.config.output_modes.iter().any(|ours| {
                mode == "*/*"
                    || mode == *ours
                    || mode
                        .strip_suffix("/*")
                        .is_some_and(|major| ours.split('/').next() == Some(major))
            })
        };
        if accepted.iter().any(|m| admits(m)) {
            Ok(())
        } else {
            Err(A2aError::new(
                ErrorKind::ContentTypeNotSupported,
                format!(
                    "none of the accepted output modes {:?} is produced by this agent ({})",
                    accepted
                        .iter()
                        .take(8)
                        .map(|m| wire::truncate(m, 64))
                        .collect::<Vec<_>>(),
                    self.config.output_modes.join(", ")
                ),
            ))
        }
    }

    pub(crate) async fn send(
        self: &Arc<Self>,
        at: &At,
        scope: &Scope,
        params: SendParams,
        version: Version,
    ) -> Result<Answer, A2aError> {
        // A config where push is not offered is refused before anything else (-32003).
        let push = match &params.push_config {
            None => None,
            Some(config) => {
                let notifier = self.push_notifier(at).await?;
                Some((notifier, config.as_ref().map_err(Clone::clone)?))
            }
        };
        self.check_output_modes(&params.accepted_output_modes)?;
        let mut message = message_in(Some(&params.message), "message")?;
        let permit = self.permit()?;
        let continued_id = message
            .get("taskId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let continued = continued_id.is_some();
        let id = continued_id.clone().unwrap_or_else(new_id);
        // Counted before anything is saved: a stream over the bounds changes nothing.
        let slot = if params.streaming {
            Some(
                self.open_streams
                    .open(&self.config.owner_limits, &at.ns, &at.key(&id))?,
            )
        } else {
            None
        };
        // The version each save of the Task by this send and its run returns, for the next.
        let last_saved = Arc::new(LastSaved::default());
        let task = match continued_id {
            Some(id) => {
                // Stored before the Task moves on, so the notice of its next save sees it.
                if let Some((notifier, config)) = &push {
                    self.check_task(at, &id).await?;
                    self.save_send_config(at, &**notifier, &id, config).await?;
                }
                self.continue_task(at, &id, &mut message, &last_saved)
                    .await?
            }
            None => {
                let context_id = message
                    .get("contextId")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(new_id);
                message["taskId"] = json!(id);
                message["contextId"] = json!(context_id);
                let task = Task::try_from(json!({
                    "id": id,
                    "contextId": context_id,
                    "kind": "task",
                    "status": {"state": "submitted", "timestamp": now()},
                    "history": [message.clone()],
                }))?;
                // Checked and stored first: a refused config saves nothing, and the notice of
                // the Task's first save already finds it.
                if let Some((notifier, config)) = &push {
                    self.save_send_config(at, &**notifier, &id, config).await?;
                }
                // Counted against the owner's bounds before it is saved, taken back if not.
                let limits = &self.config.owner_limits;
                let size = task.as_json().len() as u64;
                self.usage.reserve(at, limits, 1, size).await?;
                self.creating(at, &id).await;
                // A fresh id: created only if absent, where the store can say so.
                let saved = match at.store.save_versioned(&task, Expect::Absent).await {
                    Err(StoreError::Unsupported { .. }) => {
                        at.store.save(&task).await.map(|()| None)
                    }
                    other => other.map(Some),
                };
                match saved {
                    Ok(version) => last_saved.set(&task, version),
                    Err(e) => {
                        self.not_created(at, &id).await;
                        self.usage.release(at, 1, size);
                        return Err(e.into());
                    }
                }
                self.created(at, &task).await;
                task
            }
        };
        let id = task.id().to_owned();
        // Listening before the agent starts: no save or event of its can be missed.
        let saves = self.listen_for_saves(at, &id);
        let snapshot = task.clone().into_value();
        let live = self.live.open(
            at.key(&id),
            snapshot.clone(),
            self.config.owner_limits.max_stream_backlog_bytes,
        );
        let stream = slot.map(|slot| (live.attach(), slot));
        let end = Arc::new(RunEnd::default());
        let context = RunContext {
            scope: scope.clone(),
            continued,
            metadata: params.metadata,
            accepted_output_modes: params.accepted_output_modes,
            extensions: params.extensions,
        };
        let input = RunInput {
            task,
            message,
            context,
            last_saved,
        };
        self.start_agent(at, input, permit, live, Arc::clone(&end));
        if let Some(((snapshot, events), slot)) = stream {
            return Ok(Answer::Stream(Subscription::new(
                Arc::clone(self),
                at.clone(),
                id,
                version,
                saves,
                (snapshot, Some(events), slot),
                true,
            )));
        }
        let task = if params.return_immediately {
            snapshot
        } else {
            match self.settled(at, &id, saves, &end).await? {
                Settled::Task(task) => task,
                Settled::Reply(message) => {
                    let message = wire::message_out(&message, version);
                    return Ok(Answer::Value(match version {
                        Version::V1_0 => json!({"message": message}),
                        Version::V0_3 => message,
                    }));
                }
            }
        };
        let answer = task_answer(task, params.history_length, version);
        Ok(Answer::Value(match version {
            Version::V1_0 => json!({"task": answer}),
            Version::V0_3 => answer,
        }))
    }

    /// The next message of Task `id`, which must wait for input: appended to its history and
    /// the Task saved `submitted` again (a compare-and-set on what was read).
    async fn continue_task(
        &self,
        at: &At,
        id: &str,
        message: &mut Value,
        last_saved: &LastSaved,
    ) -> Result<Task, A2aError> {
        let context = message
            .get("contextId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut stored_message = None;
        let mut grew = 0;
        let max_task_bytes = self.config.agent_limits.max_task_bytes;
        let step = |task: &Task| {
            let current = task_state(task);
            if is_terminal_state(current) {
                return Err(A2aError::new(
                    ErrorKind::UnsupportedOperation,
                    format!(
                        "task {id} is in a terminal state ({current}): it takes no more messages"
                    ),
                ));
            }
            if !is_interrupted(TaskState::parse(current)) {
                return Err(A2aError::new(
                    ErrorKind::UnsupportedOperation,
                    format!(
                        "task {id} is {current}: it takes a message only when it asks for input"
                    ),
                ));
            }
            let task_context = task.get("contextId").and_then(Value::as_str).unwrap_or("");
            if let Some(context) = &context
                && context != task_context
            {
                return Err(A2aError::invalid(format!(
                    "message.contextId {:?} is not the context of task {id}",
                    wire::truncate(context, 64)
                )));
            }
            let mut m = message.clone();
            m["contextId"] = json!(task_context);
            let mut value = with_status(task, "submitted", None)?.into_value();
            match value.get_mut("history") {
                Some(Value::Array(history)) => history.push(m.clone()),
                _ => value["history"] = json!([m.clone()]),
            }
            let next = Task::try_from(value)?;
            // The bound an agent's updates meet holds for a client's messages too: a Task
            // continued without end would otherwise outgrow what any read can carry.
            let size = next.as_json().len();
            if size > max_task_bytes {
                return Err(A2aError::invalid_field(
                    "message",
                    &format!(
                        "would take task {id} to {size} bytes, over the limit of \
                         {max_task_bytes}: it is not added"
                    ),
                ));
            }
            grew = growth(task.as_json().len(), size);
            if let Some(why) = u64::try_from(grew)
                .ok()
                .and_then(|more| self.usage.over_bytes(at, &self.config.owner_limits, more))
            {
                return Err(A2aError::new(ErrorKind::LimitReached, why));
            }
            stored_message = Some(m);
            Ok(Step::Save(next))
        };
        let saved = self
            .transition(at, id, None, Some(last_saved), step)
            .await?;
        if saved.is_some() {
            self.usage.add_bytes(at, grew);
        }
        if let Some(m) = stored_message {
            *message = m;
        }
        saved.ok_or_else(|| A2aError::internal(format!("task {id} was not continued")))
    }

    /// Waits until Task `id` is terminal or waits for input (or its agent ended without
    /// getting it there: a store failure, logged), then answers it: as the run saved it last,
    /// else as stored; or the agent's direct answer. While the run goes on here, the store is
    /// read only once per poll interval, for a change made elsewhere (a cancel through another
    /// replica) that settles the Task while the agent is still busy.
    async fn settled(
        &self,
        at: &At,
        id: &str,
        mut saves: SaveListener,
        end: &RunEnd,
    ) -> Result<Settled, A2aError> {
        let poll = self.config.poll_interval;
        let mut last_read = Instant::now();
        loop {
            if end.finished.load(Ordering::Acquire) {
                // The reply is set before the Task is saved with it.
                if let Some(message) = end.reply.get() {
                    return Ok(Settled::Reply(message.clone()));
                }
                return Ok(Settled::Task(match end.saved.get() {
                    Some(task) => task.clone().into_value(),
                    None => self.stored(at, id).await?,
                }));
            }
            if last_read.elapsed() >= poll {
                let task = self.stored(at, id).await?;
                if is_settled(&task) {
                    return Ok(Settled::Task(task));
                }
                last_read = Instant::now();
            }
            wait_for_change(&mut saves, poll).await;
        }
    }

    /// Task `id` as stored.
    async fn stored(&self, at: &At, id: &str) -> Result<Value, A2aError> {
        let task = at.store.get(id).await?;
        Ok(task.ok_or_else(|| A2aError::not_found(id))?.into_value())
    }
}

/// What a waiting `SendMessage` answers.
enum Settled {
    /// The Task, settled (or as it was left).
    Task(Value),
    /// The agent's direct answer.
    Reply(Value),
}

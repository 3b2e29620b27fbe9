//! A stream of one Task's events: the Task as it was, then every change.
//!
//! While the Task's run is in this process the stream carries its events exactly as emitted
//! (`live_events`): in order, none merged or left out, the same for every subscriber. When the
//! run is elsewhere (another replica sharing the store) or over, the stream reads the store
//! after every save in this process and at the poll interval, and sends what changed between
//! two reads (status and artifact updates): saves that land between two reads then arrive as
//! one change. A stream that reads the store attaches to a run that starts here later.

use crate::error::{A2aError, ErrorKind};
use crate::event_queue::{QueueReceiver, Recv};
use crate::live_events::Event;
use crate::open_streams::StreamSlot;
use crate::save_listeners::{SaveListener, wait_for_change};
use crate::scope::At;
use crate::service_state::ServiceState;
use crate::task_json::{apply_artifact_update, is_interrupted, is_terminal, state_of};
use crate::wire::{self, Version, task_out};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::Arc;

/// The events of one Task, each already in the request's version: the Task as it was first,
/// then its updates. It ends after a terminal state (and, for a streaming send, when the Task
/// waits for input), or when the Task is deleted.
pub struct Subscription {
    state: Arc<ServiceState>,
    at: At,
    id: String,
    version: Version,
    saves: SaveListener,
    /// The Task as of the last event sent.
    last: Value,
    pending: VecDeque<Value>,
    done: bool,
    end_on_interrupt: bool,
    /// The run's events, while it runs here.
    live: Option<QueueReceiver<Event>>,
    /// Read the store before waiting (the run's events just ended).
    read_now: bool,
    /// Counts this stream against its owner's and its Task's bounds while it lives (boxed:
    /// it is only held, and an `Answer` carries the stream by value).
    _slot: Box<StreamSlot>,
}

impl Subscription {
    pub(crate) fn new(
        state: Arc<ServiceState>,
        at: At,
        id: String,
        version: Version,
        saves: SaveListener,
        (snapshot, live, slot): (Value, Option<QueueReceiver<Event>>, StreamSlot),
        end_on_interrupt: bool,
    ) -> Self {
        let mut pending = VecDeque::new();
        pending.push_back(match version {
            Version::V1_0 => json!({"task": task_out(&snapshot, version)}),
            Version::V0_3 => task_out(&snapshot, version),
        });
        Subscription {
            state,
            at,
            id,
            version,
            saves,
            done: is_terminal(&snapshot),
            last: snapshot,
            pending,
            end_on_interrupt,
            live,
            read_now: false,
            _slot: Box::new(slot),
        }
    }

    /// The Task's id.
    pub fn task_id(&self) -> &str {
        &self.id
    }

    /// The next event, `None` after the last; an error (the store failing) ends the stream.
    pub async fn next(&mut self) -> Option<Result<Value, A2aError>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            if self.done {
                return None;
            }
            if let Some(live) = &mut self.live {
                match live.recv().await {
                    Recv::Event(published) => self.on_event(published),
                    // The run is over: the store says where it is.
                    Recv::Closed => {
                        self.live = None;
                        self.read_now = true;
                    }
                    // Fell too far behind: ended, so what the reader missed is not merged
                    // away unseen; subscribing again starts from the Task as it is.
                    Recv::Cut => {
                        self.live = None;
                        self.done = true;
                        return Some(Err(A2aError::new(
                            ErrorKind::LimitReached,
                            format!(
                                "this stream fell more than {} bytes of events behind the \
                                 task and was ended; subscribe to the task again to go on \
                                 from where it is",
                                self.state.config.owner_limits.max_stream_backlog_bytes
                            ),
                        )));
                    }
                }
                continue;
            }
            if self.attach_to_run() {
                continue;
            }
            if !std::mem::take(&mut self.read_now) {
                wait_for_change(&mut self.saves, self.state.config.poll_interval).await;
                if self.attach_to_run() {
                    continue;
                }
            }
            match self.at.store.get(&self.id).await {
                Ok(Some(task)) => self.advance_to(task.into_value()),
                Ok(None) => self.done = true,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e.into()));
                }
            }
        }
    }

    /// Follows the Task's run from here on, if it runs in this process (and the stream is
    /// not following it already).
    fn attach_to_run(&mut self) -> bool {
        let Some(events) = self.state.live.get(&self.at.key(&self.id)) else {
            return false;
        };
        let (snapshot, receiver) = events.attach();
        self.live = Some(receiver);
        self.advance_to(snapshot);
        true
    }

    /// One event of the run, as emitted. `self.last` follows it (its status and artifacts,
    /// what later reads of the store are compared with), so the stream knows where it is
    /// without the event carrying the Task.
    fn on_event(&mut self, event: Event) {
        let task_id = json!(self.id);
        let context_id = self.last["contextId"].clone();
        let was_interrupted = is_interrupted(state_of(&self.last));
        let event = match event {
            Event::Status { status, final_ } => {
                self.last["status"] = status.clone();
                let state = status["state"]
                    .as_str()
                    .and_then(toolnexus_core::state::TaskState::parse);
                let terminal = state.is_some_and(toolnexus_core::state::TaskState::is_terminal);
                let interrupted = is_interrupted(state);
                self.done =
                    terminal || (interrupted && (self.end_on_interrupt || !was_interrupted));
                status_event(&task_id, &context_id, &status, final_, self.version)
            }
            Event::Artifact {
                artifact,
                append,
                last_chunk,
            } => {
                // The run applied it to the Task it saved: it applies here too.
                let _ = apply_artifact_update(&mut self.last, &artifact, append);
                artifact_event(
                    &task_id,
                    &context_id,
                    &artifact,
                    append,
                    last_chunk,
                    self.version,
                )
            }
            Event::Message(message) => {
                let message = wire::message_out(&message, self.version);
                match self.version {
                    Version::V1_0 => json!({"message": message}),
                    Version::V0_3 => message,
                }
            }
        };
        self.pending.push_back(event);
    }

    /// Queues the changes from the last Task sent to `current` (read from the store, or where
    /// a run's events start), and decides whether the stream ends there.
    fn advance_to(&mut self, current: Value) {
        let was_interrupted = is_interrupted(state_of(&self.last));
        self.diff(&current);
        let interrupted = is_interrupted(state_of(&current));
        self.done =
            is_terminal(&current) || (interrupted && (self.end_on_interrupt || !was_interrupted));
        self.last = current;
    }

    /// Queues the events that take `self.last` to `current`: artifact updates first, then the
    /// status.
    fn diff(&mut self, current: &Value) {
        let task_id = json!(self.id);
        let context_id = current["contextId"].clone();
        let terminal = is_terminal(current);
        let before: Vec<&Value> = self.last["artifacts"]
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        for artifact in current["artifacts"].as_array().into_iter().flatten() {
            let old = before
                .iter()
                .find(|a| a["artifactId"] == artifact["artifactId"]);
            let (sent, append) = match old {
                Some(old) if *old == artifact => continue,
                Some(old) => appended_parts(old, artifact)
                    .map_or_else(|| (artifact.clone(), false), |chunk| (chunk, true)),
                None => (artifact.clone(), false),
            };
            self.pending.push_back(artifact_event(
                &task_id,
                &context_id,
                &sent,
                append,
                terminal,
                self.version,
            ));
        }
        if current["status"] != self.last["status"] {
            let final_ = terminal || is_interrupted(state_of(current));
            self.pending.push_back(status_event(
                &task_id,
                &context_id,
                &current["status"],
                final_,
                self.version,
            ));
        }
    }
}

/// `new` as an append to `old`: the artifact with only the parts after `old`'s, when `new` is
/// `old` with parts added at the end and nothing else changed.
fn appended_parts(old: &Value, new: &Value) -> Option<Value> {
    let old_parts = old["parts"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let new_parts = new["parts"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if new_parts.len() <= old_parts.len() || !new_parts.starts_with(old_parts) {
        return None;
    }
    let mut same = old.clone();
    same["parts"] = new["parts"].clone();
    if same != *new {
        return None;
    }
    let mut chunk = new.clone();
    chunk["parts"] = Value::Array(new_parts[old_parts.len()..].to_vec());
    Some(chunk)
}

fn status_event(
    task_id: &Value,
    context_id: &Value,
    status: &Value,
    final_: bool,
    version: Version,
) -> Value {
    let status = wire::status_out(status, version);
    match version {
        Version::V1_0 => {
            json!({"statusUpdate": {"taskId": task_id, "contextId": context_id, "status": status}})
        }
        Version::V0_3 => json!({"kind": "status-update", "taskId": task_id,
            "contextId": context_id, "status": status, "final": final_}),
    }
}

fn artifact_event(
    task_id: &Value,
    context_id: &Value,
    artifact: &Value,
    append: bool,
    last_chunk: bool,
    version: Version,
) -> Value {
    let artifact = wire::artifact_out(artifact, version);
    match version {
        Version::V1_0 => json!({"artifactUpdate": {"taskId": task_id, "contextId": context_id,
            "artifact": artifact, "append": append, "lastChunk": last_chunk}}),
        Version::V0_3 => json!({"kind": "artifact-update", "taskId": task_id,
            "contextId": context_id, "artifact": artifact, "append": append,
            "lastChunk": last_chunk}),
    }
}

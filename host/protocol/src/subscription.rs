//! A stream of one Task's events (status and artifact updates), read from the store.

use crate::error::A2aError;
use crate::save_listeners::{SaveListener, wait_for_change};
use crate::scope::At;
use crate::task_json::{is_interrupted, is_terminal, state_of};
use crate::wire::{self, Version, task_out};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::time::Duration;

/// The events of one Task, each already in the request's version: the Task as it was first,
/// then what changed in the store (status and artifact updates), read after every save in this
/// process and at the poll interval (saves by other replicas). It ends after a terminal state
/// (and, for a streaming send, when the Task waits for input), or when the Task is deleted.
pub struct Subscription {
    at: At,
    id: String,
    version: Version,
    saves: SaveListener,
    last: Value,
    pending: VecDeque<Value>,
    done: bool,
    end_on_interrupt: bool,
    poll: Duration,
}

impl Subscription {
    pub(crate) fn new(
        at: At,
        id: String,
        version: Version,
        saves: SaveListener,
        snapshot: Value,
        end_on_interrupt: bool,
        poll: Duration,
    ) -> Self {
        let mut pending = VecDeque::new();
        pending.push_back(match version {
            Version::V1_0 => json!({"task": task_out(&snapshot, version)}),
            Version::V0_3 => task_out(&snapshot, version),
        });
        Subscription {
            at,
            id,
            version,
            saves,
            done: is_terminal(&snapshot),
            last: snapshot,
            pending,
            end_on_interrupt,
            poll,
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
            wait_for_change(&mut self.saves, self.poll).await;
            let current = match self.at.store.get(&self.id).await {
                Ok(Some(task)) => task.into_value(),
                Ok(None) => {
                    self.done = true;
                    continue;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e.into()));
                }
            };
            let was_interrupted = is_interrupted(state_of(&self.last));
            self.diff(&current);
            let interrupted = is_interrupted(state_of(&current));
            self.done = is_terminal(&current)
                || (interrupted && (self.end_on_interrupt || !was_interrupted));
            self.last = current;
        }
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
                Some(old) => {
                    let old_parts = old["parts"].as_array().map(Vec::as_slice).unwrap_or(&[]);
                    let new_parts = artifact["parts"]
                        .as_array()
                        .map(Vec::as_slice)
                        .unwrap_or(&[]);
                    if new_parts.len() > old_parts.len() && new_parts.starts_with(old_parts) && {
                        let mut a = (*old).clone();
                        a["parts"] = artifact["parts"].clone();
                        a == *artifact
                    } {
                        let mut chunk = artifact.clone();
                        chunk["parts"] = Value::Array(new_parts[old_parts.len()..].to_vec());
                        (chunk, true)
                    } else {
                        (artifact.clone(), false)
                    }
                }
                None => (artifact.clone(), false),
            };
            let artifact = wire::artifact_out(&sent, self.version);
            self.pending.push_back(match self.version {
                Version::V1_0 => {
                    json!({"artifactUpdate": {"taskId": task_id, "contextId": context_id,
                    "artifact": artifact, "append": append, "lastChunk": terminal}})
                }
                Version::V0_3 => {
                    json!({"kind": "artifact-update", "taskId": task_id, "contextId": context_id,
                    "artifact": artifact, "append": append, "lastChunk": terminal})
                }
            });
        }
        if current["status"] != self.last["status"] {
            let status = wire::status_out(&current["status"], self.version);
            let final_ = terminal || is_interrupted(state_of(current));
            self.pending.push_back(match self.version {
                Version::V1_0 => {
                    json!({"statusUpdate": {"taskId": task_id, "contextId": context_id,
                    "status": status}})
                }
                Version::V0_3 => {
                    json!({"kind": "status-update", "taskId": task_id, "contextId": context_id,
                    "status": status, "final": final_})
                }
            });
        }
    }
}

//! Checks of a `text/event-stream` answer, one `data:` line at a time.

use crate::answer_checks::{check_reply, rpc_result};
use crate::cli::Protocol;
use crate::outcome::{Done, Failure, shape, truncate};
use serde_json::Value;

/// Checks a stream's events one `data:` line at a time.
pub struct StreamCheck<'a> {
    protocol: Protocol,
    method: &'a str,
    id: u64,
    events: u64,
    saw_reply: bool,
    last_state: Option<String>,
}

impl<'a> StreamCheck<'a> {
    pub fn new(protocol: Protocol, method: &'a str, id: u64) -> Self {
        StreamCheck {
            protocol,
            method,
            id,
            events: 0,
            saw_reply: false,
            last_state: None,
        }
    }

    pub fn line(&mut self, line: &[u8]) -> Result<(), Failure> {
        let line = String::from_utf8_lossy(line);
        let line = line.trim_end_matches(['\r', '\n']);
        let Some(data) = line.strip_prefix("data:") else {
            // Blank lines end events; comments (`:`), `event:`, `id:` and `retry:` carry
            // nothing checked here.
            return Ok(());
        };
        let value: Value = serde_json::from_str(data.trim_start()).map_err(|e| {
            shape(
                "event not JSON",
                format!(
                    "{}: event data is not JSON ({e}): {}",
                    self.method,
                    truncate(data, 200)
                ),
            )
        })?;
        let result = rpc_result(self.method, self.id, value)?;
        self.events += 1;
        let (kind, event) = match self.protocol {
            Protocol::V1_0 => {
                let keys: Vec<&str> = result
                    .as_object()
                    .map(|o| o.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                match keys.as_slice() {
                    [k @ ("task" | "statusUpdate" | "artifactUpdate" | "message")] => {
                        (k.to_string(), result[*k].clone())
                    }
                    _ => {
                        return Err(shape(
                            "event not task/statusUpdate/artifactUpdate",
                            format!(
                                "{}: event result is not one of task, statusUpdate, artifactUpdate: {}",
                                self.method,
                                truncate(&result.to_string(), 200)
                            ),
                        ));
                    }
                }
            }
            Protocol::V0_3 => {
                let kind = match result["kind"].as_str() {
                    Some("task") => "task",
                    Some("status-update") => "statusUpdate",
                    Some("artifact-update") => "artifactUpdate",
                    Some("message") => "message",
                    _ => {
                        return Err(shape(
                            "event of unknown kind",
                            format!(
                                "{}: event without a known kind: {}",
                                self.method,
                                truncate(&result.to_string(), 200)
                            ),
                        ));
                    }
                };
                (kind.to_owned(), result)
            }
        };
        match kind.as_str() {
            "task" | "statusUpdate" => {
                if let Some(state) = event["status"]["state"].as_str() {
                    self.last_state = Some(state.to_owned());
                }
                if kind == "task" && check_reply(&event, self.method).is_ok() {
                    self.saw_reply = true;
                }
            }
            "artifactUpdate" => {
                let artifact = &event["artifact"];
                if artifact["name"] == "reply" && artifact["parts"][0]["text"] == "hello" {
                    self.saw_reply = true;
                }
            }
            _ => {
                return Err(shape(
                    "Message instead of Task",
                    format!("{}: the agent answered a Message, not a Task", self.method),
                ));
            }
        }
        Ok(())
    }

    pub fn finish(self) -> Result<Done, Failure> {
        let completed = match self.protocol {
            Protocol::V1_0 => "TASK_STATE_COMPLETED",
            Protocol::V0_3 => "completed",
        };
        if self.events == 0 {
            return Err(shape(
                "empty stream",
                format!("{}: empty stream", self.method),
            ));
        }
        if self.last_state.as_deref() != Some(completed) {
            return Err(shape(
                "stream not completed",
                format!(
                    "{}: stream ended in state {:?}, not {completed}",
                    self.method, self.last_state
                ),
            ));
        }
        if !self.saw_reply {
            return Err(shape(
                "stream without reply artifact",
                format!("{}: stream without the \"reply\" artifact", self.method),
            ));
        }
        Ok(Done {
            events: self.events,
            ..Done::default()
        })
    }
}

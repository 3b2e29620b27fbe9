//! Reading and shaping Tasks as JSON: their state, a new status,
//! and a Task as an answer (history cut, in the request's version).

use crate::error::A2aError;
use crate::wire::{Version, task_out};
use serde_json::{Value, json};
use std::time::SystemTime;
use toolnexus_core::Task;
use toolnexus_core::state::TaskState;

/// The current time as RFC 3339 in UTC, to the millisecond.
pub fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// A fresh version-4 UUID, 122 random bits from the operating system.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// `task` with a new status (`state`, now, and the message if any). The status message it
/// replaces, if any, moves to the end of the history, as the official SDKs keep a
/// conversation (unless the history has it already).
pub fn with_status(task: &Task, state: &str, message: Option<Value>) -> Result<Task, A2aError> {
    let mut value = task.clone().into_value();
    if let Some(old) = value["status"].get("message").cloned() {
        let seen = value["history"]
            .as_array()
            .is_some_and(|h| h.iter().any(|m| m["messageId"] == old["messageId"]));
        if !seen {
            match value.get_mut("history") {
                Some(Value::Array(history)) => history.push(old),
                _ => value["history"] = json!([old]),
            }
        }
    }
    let mut status = json!({"state": state, "timestamp": now()});
    if let Some(message) = message {
        status["message"] = message;
    }
    value["status"] = status;
    Task::try_from(value).map_err(A2aError::from)
}

pub(crate) fn state_of(task: &Value) -> Option<TaskState> {
    task["status"]["state"].as_str().and_then(TaskState::parse)
}

/// Whether a Task in this state waits for the user (1.0's "interrupted" states).
pub(crate) fn is_interrupted(state: Option<TaskState>) -> bool {
    matches!(
        state,
        Some(TaskState::InputRequired | TaskState::AuthRequired)
    )
}

pub(crate) fn is_settled(task: &Value) -> bool {
    let state = state_of(task);
    state.is_some_and(TaskState::is_terminal) || is_interrupted(state)
}

/// The Task in `version`, its history cut to `history_length` (the last ones), in 1.0 wrapped
/// as `{"task": …}` where the caller asks for it.
pub(crate) fn task_answer(
    mut task: Value,
    history_length: Option<usize>,
    version: Version,
) -> Value {
    cut_history(&mut task, history_length);
    task_out(&task, version)
}

pub(crate) fn cut_history(task: &mut Value, history_length: Option<usize>) {
    let Some(n) = history_length else { return };
    if let Some(Value::Array(history)) = task.get_mut("history") {
        let drop = history.len().saturating_sub(n);
        history.drain(..drop);
        if history.is_empty()
            && let Some(object) = task.as_object_mut()
        {
            object.remove("history");
        }
    }
}

pub(crate) fn is_terminal(task: &Value) -> bool {
    state_of(task).is_some_and(TaskState::is_terminal)
}

/// Applies an artifact update to `task` as A2A defines it: `append` adds the update's parts to
/// the end of the artifact with its id (its other members replace the artifact's), otherwise
/// the update replaces that artifact or is added after the others. `Err` says why it cannot
/// apply (no such artifact to append to, `artifacts` not an array). The one place this rule
/// lives: a run saves it, and a stream follows it.
pub(crate) fn apply_artifact_update(
    task: &mut Value,
    update: &Value,
    append: bool,
) -> Result<(), String> {
    if !task["artifacts"].is_array() {
        task["artifacts"] = json!([]);
    }
    let artifacts = task["artifacts"]
        .as_array_mut()
        .ok_or("the task's artifacts are not an array")?;
    let artifact_id = &update["artifactId"];
    let existing = artifacts
        .iter_mut()
        .find(|a| a["artifactId"] == *artifact_id);
    match (existing, append) {
        (Some(old), true) => {
            let parts = update["parts"].as_array().cloned().unwrap_or_default();
            match old["parts"].as_array_mut() {
                Some(old_parts) => old_parts.extend(parts),
                None => old["parts"] = Value::Array(parts),
            }
            for (key, value) in update.as_object().into_iter().flatten() {
                if key != "parts" {
                    old[key] = value.clone();
                }
            }
        }
        (None, true) => {
            return Err(format!(
                "append to artifact {artifact_id}, which this task does not have"
            ));
        }
        (Some(old), false) => *old = update.clone(),
        (None, false) => artifacts.push(update.clone()),
    }
    Ok(())
}

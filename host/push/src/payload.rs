//! The body of a delivery, held to the operator's size bound: the whole Task in the config's
//! protocol version when it fits, else the Task's status only (A2A 1.0: a `statusUpdate`
//! StreamResponse; 0.3: the Task without `history` and `artifacts`), and, should even that not
//! fit (a huge status message), the state and timestamp alone.

use serde_json::{Map, Value, json};
use toolnexus_a2a_protocol::push::payload;
use toolnexus_a2a_protocol::wire::{Version, status_out, task_out};
use toolnexus_core::Task;

/// The JSON text to post for `task` to a config of `version`, at most `max_bytes` long when
/// the Task's status alone allows it. A `trimmed` Task (the outbox kept only its status) goes
/// as its status whatever its size.
pub fn body(task: &Task, version: Version, max_bytes: usize, trimmed: bool) -> String {
    if !trimmed {
        let whole = payload(task, version).to_string();
        if whole.len() <= max_bytes {
            return whole;
        }
    }
    let map = task.as_map();
    let slim = status_only(map, version, false).to_string();
    if slim.len() <= max_bytes {
        return slim;
    }
    status_only(map, version, true).to_string()
}

/// The Task's status as a body of its own; `bare` keeps only the state and timestamp.
fn status_only(task: &Map<String, Value>, version: Version, bare: bool) -> Value {
    let mut status = task.get("status").cloned().unwrap_or_else(|| json!({}));
    if bare && let Value::Object(map) = &mut status {
        map.retain(|name, _| name == "state" || name == "timestamp");
    }
    match version {
        Version::V1_0 => json!({"statusUpdate": {
            "taskId": task.get("id").cloned().unwrap_or(Value::Null),
            "contextId": task.get("contextId").cloned().unwrap_or(Value::Null),
            "status": status_out(&status, Version::V1_0),
        }}),
        Version::V0_3 => {
            let mut slim: Map<String, Value> = task
                .iter()
                .filter(|(name, _)| !matches!(name.as_str(), "history" | "artifacts"))
                .filter(|(name, _)| !bare || name.as_str() != "metadata")
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect();
            slim.insert("status".into(), status);
            task_out(&Value::Object(slim), Version::V0_3)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(extra: &str) -> Task {
        Task::from_json(&format!(
            r#"{{"id":"t1","contextId":"c1","kind":"task",
                "status":{{"state":"working","timestamp":"2026-01-01T00:00:00Z",
                  "message":{{"role":"agent","messageId":"m","parts":[{{"kind":"text","text":"hi"}}]}}}},
                "history":[],"artifacts":[{{"artifactId":"a","parts":[{{"kind":"text","text":"{extra}"}}]}}]}}"#
        ))
        .unwrap()
    }

    fn parsed(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn a_task_that_fits_is_sent_whole() {
        let v1 = parsed(&body(&task("x"), Version::V1_0, 1 << 20, false));
        assert_eq!(v1["task"]["id"], "t1");
        assert_eq!(v1["task"]["status"]["state"], "TASK_STATE_WORKING");
        let v03 = parsed(&body(&task("x"), Version::V0_3, 1 << 20, false));
        assert_eq!(v03["id"], "t1");
        assert_eq!(v03["status"]["state"], "working");
        assert!(v03["artifacts"].is_array());
    }

    #[test]
    fn a_larger_task_goes_as_its_status() {
        let big = task(&"y".repeat(10_000));
        let v1_text = body(&big, Version::V1_0, 2000, false);
        assert!(v1_text.len() <= 2000, "{}", v1_text.len());
        let v1 = parsed(&v1_text);
        assert_eq!(v1["statusUpdate"]["taskId"], "t1");
        assert_eq!(v1["statusUpdate"]["contextId"], "c1");
        assert_eq!(v1["statusUpdate"]["status"]["state"], "TASK_STATE_WORKING");
        assert!(v1["statusUpdate"]["status"]["message"].is_object());
        let v03 = parsed(&body(&big, Version::V0_3, 2000, false));
        assert_eq!(v03["id"], "t1");
        assert_eq!(v03["status"]["state"], "working");
        assert!(v03.get("artifacts").is_none() && v03.get("history").is_none());
        let small_but_trimmed = parsed(&body(&task("x"), Version::V1_0, 1 << 20, true));
        assert_eq!(small_but_trimmed["statusUpdate"]["taskId"], "t1");
    }

    #[test]
    fn a_huge_status_message_is_left_out_last() {
        let big = task(&"y".repeat(10_000));
        let v1 = parsed(&body(&big, Version::V1_0, 100, false));
        assert_eq!(v1["statusUpdate"]["status"]["state"], "TASK_STATE_WORKING");
        assert!(v1["statusUpdate"]["status"].get("message").is_none());
        let v03 = parsed(&body(&big, Version::V0_3, 100, false));
        assert!(v03["status"].get("message").is_none());
        assert_eq!(v03["status"]["timestamp"], "2026-01-01T00:00:00Z");
    }
}

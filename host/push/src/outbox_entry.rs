//! One outbox entry file: how it is written and read back.
//!
//! Format 2 (written since): one entry per save, holding the Task once and the configs it is
//! delivered to, `{"outbox": 2, "seq", "namespace", "taskId", "configIds": […], "trimmed",
//! "task"}`. Format 1 (written by earlier versions, still read): one entry per delivery,
//! `{"outbox": 1, "seq", "namespace", "taskId", "configId", "trimmed", "task"}`. Both hold the
//! Task as saved (its `history` and `artifacts` left out when it was over the payload bound:
//! `"trimmed": true`), never a config or its secrets, which are read from the store at
//! delivery.

use serde_json::{Map, Value, json};
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use toolnexus_core::Task;

/// The format written.
pub const FORMAT: u64 = 2;
/// The format of earlier versions' entries: one per delivery.
pub const FORMAT_PER_DELIVERY: u64 = 1;
pub const SUFFIX: &str = ".json";
pub const TEMP_PREFIX: &str = ".tmp-";

/// An entry as read back.
#[derive(Debug, Clone)]
pub struct Entry {
    pub namespace: Option<String>,
    pub task_id: String,
    /// The configs it is delivered to, in queue order (one for a format 1 entry).
    pub config_ids: Vec<String>,
    pub task: Task,
    pub trimmed: bool,
}

/// The file name of entry `seq`: 20 decimal digits, so name order is queue order.
pub fn file_name(seq: u64) -> String {
    format!("{seq:020}{SUFFIX}")
}

/// The sequence number a file name gives, if it is an entry's.
pub fn seq_of(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(SUFFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The Task without its history and artifacts: what is kept of a Task over the payload bound.
pub fn trim(task: &Task) -> Task {
    let slim: Map<String, Value> = task
        .as_map()
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "history" | "artifacts"))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    // The id is kept, so this is a Task still.
    Task::try_from(Value::Object(slim)).unwrap_or_else(|_| task.clone())
}

/// Writes entry `seq` (format 2) by renaming a complete, flushed temporary file over its name;
/// the caller flushes the directory.
pub fn write(dir: &Path, seq: u64, entry: &Entry) -> Result<(), String> {
    let text = json!({
        "outbox": FORMAT,
        "seq": seq,
        "namespace": entry.namespace,
        "taskId": entry.task_id,
        "configIds": entry.config_ids,
        "trimmed": entry.trimmed,
        "task": entry.task.as_map(),
    })
    .to_string();
    let fail = |e: std::io::Error| format!("cannot write push outbox entry {seq}: {e}");
    // tempfile creates the file 0600 with a unique name; flushing it and the directory is ours.
    let mut temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)
        .map_err(fail)?;
    temp.write_all(text.as_bytes()).map_err(fail)?;
    temp.as_file().sync_all().map_err(fail)?;
    temp.persist(dir.join(file_name(seq)))
        .map_err(|e| fail(e.error))?;
    Ok(())
}

/// Reads entry `seq` (either format); `Err` says why it cannot be delivered.
pub fn read(path: &Path, seq: u64) -> Result<Entry, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot be read: {e}"))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))?;
    let entry = value.as_object().ok_or("not a JSON object")?;
    let format = entry.get("outbox").and_then(Value::as_u64);
    if format != Some(FORMAT) && format != Some(FORMAT_PER_DELIVERY) {
        return Err(format!(
            "not an outbox entry of format {FORMAT_PER_DELIVERY} or {FORMAT}"
        ));
    }
    if entry.get("seq").and_then(Value::as_u64) != Some(seq) {
        return Err("its seq is not the one its name says".into());
    }
    let text_of = |value: Option<&Value>, name: &str| match value {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(format!("`{name}` is not a non-empty string")),
    };
    let namespace = match entry.get("namespace") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("`namespace` is not a string or null".into()),
    };
    let task_id = text_of(entry.get("taskId"), "taskId")?;
    let config_ids = if format == Some(FORMAT_PER_DELIVERY) {
        vec![text_of(entry.get("configId"), "configId")?]
    } else {
        let ids = entry
            .get("configIds")
            .and_then(Value::as_array)
            .filter(|ids| !ids.is_empty())
            .ok_or("`configIds` is not a non-empty array")?;
        let ids = ids
            .iter()
            .map(|id| text_of(Some(id), "configIds"))
            .collect::<Result<Vec<_>, _>>()?;
        if ids.iter().collect::<HashSet<_>>().len() != ids.len() {
            return Err("`configIds` names a config twice".into());
        }
        ids
    };
    let trimmed = entry
        .get("trimmed")
        .and_then(Value::as_bool)
        .ok_or("`trimmed` is not a boolean")?;
    let task = entry
        .get("task")
        .cloned()
        .ok_or("it has no `task`".to_owned())
        .and_then(|t| Task::try_from(t).map_err(|e| format!("`task`: {e}")))?;
    if task.id() != task_id {
        return Err("its task is not the one `taskId` names".into());
    }
    Ok(Entry {
        namespace,
        task_id,
        config_ids,
        task,
        trimmed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_2_round_trips_and_format_1_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let task = Task::from_json(r#"{"id":"t","status":{"state":"working"}}"#).unwrap();
        let entry = Entry {
            namespace: Some("o.x".into()),
            task_id: "t".into(),
            config_ids: vec!["a".into(), "b".into()],
            task: task.clone(),
            trimmed: false,
        };
        write(dir.path(), 7, &entry).unwrap();
        let back = read(&dir.path().join(file_name(7)), 7).unwrap();
        assert_eq!(back.config_ids, ["a", "b"]);
        assert_eq!(back.namespace.as_deref(), Some("o.x"));
        assert_eq!(back.task, task);

        let old = json!({"outbox": 1, "seq": 8, "namespace": null, "taskId": "t",
            "configId": "c", "trimmed": true, "task": task.as_map()});
        let path = dir.path().join(file_name(8));
        std::fs::write(&path, old.to_string()).unwrap();
        let back = read(&path, 8).unwrap();
        assert_eq!(back.config_ids, ["c"]);
        assert!(back.trimmed && back.namespace.is_none());
    }

    #[test]
    fn malformed_entries_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file_name(1));
        for (text, why) in [
            (r#"{"outbox":3,"seq":1}"#, "format"),
            (
                r#"{"outbox":2,"seq":1,"taskId":"t","configIds":[],"trimmed":false}"#,
                "configIds",
            ),
            (
                r#"{"outbox":2,"seq":1,"taskId":"t","configIds":["a","a"],"trimmed":false}"#,
                "twice",
            ),
        ] {
            std::fs::write(&path, text).unwrap();
            let error = read(&path, 1).unwrap_err();
            assert!(error.contains(why), "{text}: {error}");
        }
    }
}

//! Intents: a save about to happen, recorded in the outbox slot before the Task is saved, so
//! that a crash between the save and its deliveries' entries loses no notification. After the
//! save the deliveries are written and the intent goes; at start every intent left means a
//! save whose deliveries may never have been written, and the sender queues a delivery of the
//! Task as its store now holds it (`saves.rs`).
//!
//! On disk: `intent-<64 hex digits>.json` in the slot (the SHA-256 of the namespace and Task
//! id, so one file per Task however often it is saved), 0600, holding
//! `{"intent": 1, "namespace": …, "taskId": …}`, written like an entry (a flushed temporary
//! file renamed over its name, then the directory flushed).

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

const FORMAT: u64 = 1;
const PREFIX: &str = "intent-";
const SUFFIX: &str = ".json";
const TEMP_PREFIX: &str = ".tmp-";

/// A save that was about to happen: the Task's namespace and id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Intent {
    pub namespace: Option<String>,
    pub task_id: String,
}

fn path_of(dir: &Path, intent: &Intent) -> PathBuf {
    let key = json!([intent.namespace, intent.task_id]).to_string();
    dir.join(format!(
        "{PREFIX}{:x}{SUFFIX}",
        Sha256::digest(key.as_bytes())
    ))
}

/// Records `intent` durably (file and directory flushed) before it returns.
pub fn record(dir: &Path, intent: &Intent) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("cannot record the intent to save: {e}");
    let text = json!({"intent": FORMAT, "namespace": intent.namespace, "taskId": intent.task_id})
        .to_string();
    let mut temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)
        .map_err(fail)?;
    temp.write_all(text.as_bytes()).map_err(fail)?;
    temp.as_file().sync_all().map_err(fail)?;
    temp.persist(path_of(dir, intent))
        .map_err(|e| fail(e.error))?;
    fs::File::open(dir).and_then(|d| d.sync_all()).map_err(fail)
}

/// Drops `intent` (its deliveries are written, or there was no save). Not flushed: an intent
/// that comes back after a crash only queues the Task's latest state once more.
pub fn forget(dir: &Path, intent: &Intent) {
    let path = path_of(dir, intent);
    if let Err(e) = fs::remove_file(&path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(
            "push outbox: cannot remove {}: {e}; the Task's latest state will be delivered \
             again after a restart",
            path.display()
        );
    }
}

/// Every intent left in `dir`. One that cannot be read is removed with a log line (a save
/// whose Task cannot be named cannot be recovered).
pub fn scan(dir: &Path) -> Result<Vec<Intent>, String> {
    let listing = fs::read_dir(dir)
        .map_err(|e| format!("cannot read the push outbox {}: {e}", dir.display()))?;
    let mut intents = Vec::new();
    for item in listing.filter_map(Result::ok) {
        let name = item.file_name();
        let Some(name) = name.to_str() else { continue };
        if !(name.starts_with(PREFIX) && name.ends_with(SUFFIX)) {
            continue;
        }
        let path = item.path();
        match read(&path) {
            Ok(intent) if path_of(dir, &intent) == path => intents.push(intent),
            Ok(_) => unreadable(&path, "its name is not the one its Task gives"),
            Err(why) => unreadable(&path, &why),
        }
    }
    Ok(intents)
}

fn unreadable(path: &Path, why: &str) {
    tracing::warn!(
        "push outbox intent {} {why}; removed, its save cannot be recovered",
        path.display()
    );
    let _ = fs::remove_file(path);
}

fn read(path: &Path) -> Result<Intent, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("cannot be read: {e}"))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| format!("is not JSON: {e}"))?;
    if value.get("intent").and_then(Value::as_u64) != Some(FORMAT) {
        return Err(format!("is not an intent of format {FORMAT}"));
    }
    let namespace = match value.get("namespace") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("has a `namespace` that is not a string or null".into()),
    };
    match value.get("taskId") {
        Some(Value::String(id)) if !id.is_empty() => Ok(Intent {
            namespace,
            task_id: id.clone(),
        }),
        _ => Err("has no `taskId` string".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intent(namespace: Option<&str>, id: &str) -> Intent {
        Intent {
            namespace: namespace.map(str::to_owned),
            task_id: id.into(),
        }
    }

    #[test]
    fn intents_are_recorded_read_back_and_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (intent(None, "t1"), intent(Some("o.x"), "t1"));
        record(dir.path(), &a).unwrap();
        record(dir.path(), &a).unwrap();
        record(dir.path(), &b).unwrap();
        let mut found = scan(dir.path()).unwrap();
        found.sort_by_key(|i| i.namespace.clone());
        assert_eq!(found, [a.clone(), b.clone()]);
        forget(dir.path(), &a);
        forget(dir.path(), &a);
        assert_eq!(scan(dir.path()).unwrap(), [b]);
    }

    #[test]
    fn an_unreadable_intent_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(format!("{PREFIX}00{SUFFIX}")), "{").unwrap();
        fs::write(
            dir.path().join(format!("{PREFIX}01{SUFFIX}")),
            r#"{"intent":1,"taskId":"t"}"#,
        )
        .unwrap();
        assert!(scan(dir.path()).unwrap().is_empty());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

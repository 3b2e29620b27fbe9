//! The outbox: deliveries not yet done, kept so that a restart delivers them (at least once).
//!
//! On disk (`docs/push-notifications.md`): one file per delivery in the outbox directory
//! (0700), named by its sequence number, 20 decimal digits, and `.json`
//! (`00000000000000000042.json`), so that the name order is the order the deliveries were
//! queued in. Each is a JSON object `{"outbox": 1, "seq", "namespace", "taskId", "configId",
//! "trimmed", "task"}`: the Task as saved (its `history` and `artifacts` left out when it was
//! over the payload bound: `"trimmed": true`), never a config or its secrets, which are read
//! from the store at delivery. A file appears by renaming a complete, flushed temporary file
//! (`.tmp-*`) over its name, and goes once the delivery succeeded or was given up. At start
//! temporary files are removed, entries are read in name order, and an entry that cannot be
//! read is moved to `corrupt/` with a log line.
//!
//! Without a directory the entries live in memory (lost with the process).

use crate::outbox_slot::{self, Slot, create_private_dir};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use toolnexus_core::Task;

const FORMAT: u64 = 1;
const SUFFIX: &str = ".json";
const TEMP_PREFIX: &str = ".tmp-";
/// Where entries that cannot be read are moved.
pub const CORRUPT_DIR: &str = "corrupt";

/// Which lane a delivery is in: deliveries of one Task to one config, in order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LaneKey {
    pub namespace: Option<String>,
    pub task_id: String,
    pub config_id: String,
}

/// A delivery waiting in the outbox: its sequence number and lane (the Task stays on disk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub seq: u64,
    pub lane: LaneKey,
}

/// A delivery as read back: the Task to send, and whether it was trimmed to its status.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub task: Task,
    pub trimmed: bool,
}

/// The pending deliveries, on disk or in memory.
#[derive(Debug)]
pub struct Outbox {
    dir: Option<PathBuf>,
    /// The slot held (on disk), released when the outbox goes.
    _slot: Option<Slot>,
    /// The next sequence number, and (without a directory) the entries.
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    next_seq: u64,
    memory: HashMap<u64, Loaded>,
}

impl Outbox {
    /// The outbox in a slot of `root` (created 0700 if missing; see [`outbox_slot`]) for the
    /// store `store_name`, and the deliveries the slot holds in the order they were queued;
    /// `None`: an empty outbox in memory.
    ///
    /// [`outbox_slot`]: crate::outbox_slot
    pub fn open(root: Option<&Path>, store_name: &str) -> Result<(Outbox, Vec<Pending>), String> {
        let Some(root) = root else {
            let outbox = Outbox {
                dir: None,
                _slot: None,
                state: Mutex::new(State {
                    next_seq: 1,
                    memory: HashMap::new(),
                }),
            };
            return Ok((outbox, Vec::new()));
        };
        let slot = outbox_slot::claim(root, store_name)?;
        let dir = slot.dir.clone();
        let pending = scan(&dir)?;
        let next_seq = pending.last().map_or(1, |p| p.seq + 1);
        let outbox = Outbox {
            dir: Some(dir),
            _slot: Some(slot),
            state: Mutex::new(State {
                next_seq,
                memory: HashMap::new(),
            }),
        };
        Ok((outbox, pending))
    }

    /// The directory entries are written to (the slot's), when on disk.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Whether entries survive a restart.
    pub fn is_durable(&self) -> bool {
        self.dir.is_some()
    }

    /// Queues one delivery of `task` per lane, in order, durably before it returns (on disk:
    /// each file flushed, renamed, then the directory flushed once). Blocking I/O: call it off
    /// the async workers. Entries written before an error stay queued and are returned too.
    pub fn append(
        &self,
        lanes: Vec<LaneKey>,
        task: &Task,
        max_task_bytes: usize,
    ) -> (Vec<Pending>, Option<String>) {
        let trimmed = task.as_json().len() > max_task_bytes;
        let task = if trimmed { trim(task) } else { task.clone() };
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut written = Vec::with_capacity(lanes.len());
        let mut error = None;
        for lane in lanes {
            let seq = state.next_seq;
            match &self.dir {
                None => {
                    let loaded = Loaded {
                        task: task.clone(),
                        trimmed,
                    };
                    state.memory.insert(seq, loaded);
                }
                Some(dir) => {
                    if let Err(e) = write_entry(dir, seq, &lane, &task, trimmed) {
                        error = Some(e);
                        break;
                    }
                }
            }
            state.next_seq += 1;
            written.push(Pending { seq, lane });
        }
        if let Some(dir) = &self.dir
            && !written.is_empty()
            && let Err(e) = fs::File::open(dir).and_then(|d| d.sync_all())
        {
            error.get_or_insert(format!("cannot flush {}: {e}", dir.display()));
        }
        (written, error)
    }

    /// The delivery `pending`, read back. An entry that cannot be read is moved aside (`Err`
    /// says why); it is delivered no more.
    pub fn load(&self, pending: &Pending) -> Result<Loaded, String> {
        let Some(dir) = &self.dir else {
            let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            return state
                .memory
                .get(&pending.seq)
                .cloned()
                .ok_or_else(|| format!("outbox entry {} is gone", pending.seq));
        };
        let path = dir.join(file_name(pending.seq));
        match read_entry(&path, pending.seq) {
            Ok((_, loaded)) => Ok(loaded),
            Err(why) => {
                move_aside(dir, &path, &why);
                Err(why)
            }
        }
    }

    /// Forgets a delivery: done, or given up.
    pub fn remove(&self, seq: u64) {
        match &self.dir {
            None => {
                let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                state.memory.remove(&seq);
            }
            Some(dir) => {
                let path = dir.join(file_name(seq));
                if let Err(e) = fs::remove_file(&path)
                    && e.kind() != std::io::ErrorKind::NotFound
                {
                    tracing::warn!(
                        "push outbox: cannot remove {}: {e}; it will be delivered again after a \
                         restart",
                        path.display()
                    );
                }
            }
        }
    }
}

/// The file name of entry `seq`.
pub fn file_name(seq: u64) -> String {
    format!("{seq:020}{SUFFIX}")
}

fn seq_of(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(SUFFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The Task without its history and artifacts: what is kept of a Task over the payload bound.
fn trim(task: &Task) -> Task {
    let slim: Map<String, Value> = task
        .as_map()
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "history" | "artifacts"))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    // The id is kept, so this is a Task still.
    Task::try_from(Value::Object(slim)).unwrap_or_else(|_| task.clone())
}

fn write_entry(
    dir: &Path,
    seq: u64,
    lane: &LaneKey,
    task: &Task,
    trimmed: bool,
) -> Result<(), String> {
    let entry = json!({
        "outbox": FORMAT,
        "seq": seq,
        "namespace": lane.namespace,
        "taskId": lane.task_id,
        "configId": lane.config_id,
        "trimmed": trimmed,
        "task": task.as_map(),
    });
    let fail = |e: std::io::Error| format!("cannot write push outbox entry {seq}: {e}");
    // tempfile creates the file 0600 with a unique name; flushing it and the directory is ours.
    let mut temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)
        .map_err(fail)?;
    temp.write_all(entry.to_string().as_bytes()).map_err(fail)?;
    temp.as_file().sync_all().map_err(fail)?;
    temp.persist(dir.join(file_name(seq)))
        .map_err(|e| fail(e.error))?;
    Ok(())
}

fn read_entry(path: &Path, seq: u64) -> Result<(LaneKey, Loaded), String> {
    let text = fs::read_to_string(path).map_err(|e| format!("cannot be read: {e}"))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))?;
    let entry = value.as_object().ok_or("not a JSON object")?;
    if entry.get("outbox").and_then(Value::as_u64) != Some(FORMAT) {
        return Err(format!("not an outbox entry of format {FORMAT}"));
    }
    if entry.get("seq").and_then(Value::as_u64) != Some(seq) {
        return Err("its seq is not the one its name says".into());
    }
    let text_of = |name: &str| match entry.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(format!("`{name}` is not a non-empty string")),
    };
    let namespace = match entry.get("namespace") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("`namespace` is not a string or null".into()),
    };
    let lane = LaneKey {
        namespace,
        task_id: text_of("taskId")?,
        config_id: text_of("configId")?,
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
    if task.id() != lane.task_id {
        return Err("its task is not the one `taskId` names".into());
    }
    Ok((lane, Loaded { task, trimmed }))
}

/// Every entry in `dir`, in sequence order; temporary files removed, unreadable entries moved
/// aside.
fn scan(dir: &Path) -> Result<Vec<Pending>, String> {
    let listing = fs::read_dir(dir)
        .map_err(|e| format!("cannot read the push outbox {}: {e}", dir.display()))?;
    let mut found = Vec::new();
    for item in listing {
        let item =
            item.map_err(|e| format!("cannot read the push outbox {}: {e}", dir.display()))?;
        let name = item.file_name();
        let Some(name) = name.to_str() else { continue };
        let path = item.path();
        if name.starts_with(TEMP_PREFIX) {
            // A write cut short: its delivery was never acknowledged as queued.
            let _ = fs::remove_file(&path);
        } else if let Some(seq) = seq_of(name) {
            found.push((seq, path));
        }
    }
    found.sort_by_key(|(seq, _)| *seq);
    let mut pending = Vec::with_capacity(found.len());
    for (seq, path) in found {
        match read_entry(&path, seq) {
            Ok((lane, _)) => pending.push(Pending { seq, lane }),
            Err(why) => move_aside(dir, &path, &why),
        }
    }
    Ok(pending)
}

fn move_aside(dir: &Path, path: &Path, why: &str) {
    let corrupt = dir.join(CORRUPT_DIR);
    let target = corrupt.join(path.file_name().unwrap_or_default());
    let moved = create_private_dir(&corrupt)
        .and_then(|()| fs::rename(path, &target).map_err(|e| e.to_string()));
    match moved {
        Ok(()) => tracing::warn!(
            "push outbox entry {} {why}; moved to {}, not delivered",
            path.display(),
            target.display()
        ),
        Err(e) => tracing::warn!(
            "push outbox entry {} {why}; not delivered, and it could not be moved aside: {e}",
            path.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(task: &str, config: &str) -> LaneKey {
        LaneKey {
            namespace: None,
            task_id: task.into(),
            config_id: config.into(),
        }
    }

    fn open(root: &Path) -> (Outbox, Vec<Pending>, PathBuf) {
        let (outbox, pending) = Outbox::open(Some(root), "file:/tasks").unwrap();
        let dir = outbox.dir().unwrap().to_owned();
        (outbox, pending, dir)
    }

    fn task(id: &str, state: &str) -> Task {
        Task::from_json(&format!(
            r#"{{"id":"{id}","status":{{"state":"{state}"}}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn entries_come_back_in_order_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("outbox");
        let (outbox, pending, path) = open(&root);
        assert!(pending.is_empty());
        for state in ["submitted", "working", "completed"] {
            let (written, err) = outbox.append(
                vec![lane("t1", "a"), lane("t1", "b")],
                &task("t1", state),
                1 << 20,
            );
            assert!(err.is_none());
            assert_eq!(written.len(), 2);
        }
        outbox.remove(2);
        drop(outbox);
        let (outbox, pending, again) = open(&root);
        assert_eq!(again, path);
        let seqs: Vec<u64> = pending.iter().map(|p| p.seq).collect();
        assert_eq!(seqs, [1, 3, 4, 5, 6]);
        assert_eq!(pending[1].lane, lane("t1", "a"));
        let third = outbox.load(&pending[1]).unwrap();
        assert_eq!(third.task.as_map()["status"]["state"], "working");
        // New entries continue after the highest.
        let (written, _) = outbox.append(vec![lane("t2", "a")], &task("t2", "working"), 1 << 20);
        assert_eq!(written[0].seq, 7);
        assert!(path.join(file_name(7)).exists());
    }

    #[cfg(unix)]
    #[test]
    fn the_directory_and_entries_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("outbox");
        let (outbox, _, path) = open(&root);
        outbox.append(vec![lane("t", "c")], &task("t", "working"), 1 << 20);
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&path), 0o700);
        assert_eq!(mode(&path.join(file_name(1))), 0o600);
    }

    #[test]
    fn corrupt_entries_are_moved_aside_and_the_rest_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("outbox");
        let (outbox, _, path) = open(&root);
        for id in ["t1", "t2", "t3", "t4"] {
            outbox.append(vec![lane(id, "c")], &task(id, "working"), 1 << 20);
        }
        drop(outbox);
        fs::write(path.join(file_name(2)), "{not json").unwrap();
        fs::write(path.join(file_name(3)), r#"{"outbox":1,"seq":99}"#).unwrap();
        fs::write(path.join(".tmp-half"), "{").unwrap();
        fs::write(path.join("notes.txt"), "ignored").unwrap();
        let (_, pending, _) = open(&root);
        let seqs: Vec<u64> = pending.iter().map(|p| p.seq).collect();
        assert_eq!(seqs, [1, 4]);
        assert!(path.join(CORRUPT_DIR).join(file_name(2)).exists());
        assert!(path.join(CORRUPT_DIR).join(file_name(3)).exists());
        assert!(!path.join(".tmp-half").exists());
        assert!(path.join("notes.txt").exists());
    }

    #[test]
    fn an_entry_damaged_while_queued_is_moved_aside_at_delivery() {
        let dir = tempfile::tempdir().unwrap();
        let (outbox, _, path) = open(dir.path());
        let (written, _) = outbox.append(vec![lane("t", "c")], &task("t", "working"), 1 << 20);
        fs::write(path.join(file_name(1)), "[]").unwrap();
        let why = outbox.load(&written[0]).unwrap_err();
        assert!(why.contains("not a JSON object"), "{why}");
        assert!(path.join(CORRUPT_DIR).join(file_name(1)).exists());
    }

    #[test]
    fn large_tasks_are_kept_as_their_status() {
        let (outbox, _) = Outbox::open(None, "memory").unwrap();
        let big = Task::from_json(&format!(
            r#"{{"id":"t","status":{{"state":"working"}},"artifacts":[{{"x":"{}"}}],"history":[]}}"#,
            "y".repeat(1000)
        ))
        .unwrap();
        let (written, _) = outbox.append(vec![lane("t", "c")], &big, 100);
        let loaded = outbox.load(&written[0]).unwrap();
        assert!(loaded.trimmed);
        assert!(loaded.task.get("artifacts").is_none());
        assert_eq!(loaded.task.as_map()["status"]["state"], "working");
        outbox.remove(written[0].seq);
        assert!(outbox.load(&written[0]).is_err());
    }
}

//! The outbox: deliveries not yet done, kept so that a restart delivers them (at least once).
//!
//! On disk (`docs/push-notifications.md`): one entry file per save in the outbox directory
//! (0700), named by its sequence number, 20 decimal digits, and `.json`
//! (`00000000000000000042.json`), so that the name order is the order the saves were queued
//! in; it holds the Task once and the configs it goes to ([`outbox_entry`]). A file appears
//! by renaming a complete, flushed temporary file (`.tmp-*`) over its name. A delivery done
//! (succeeded or given up) while others of its entry are not leaves an empty marker
//! `<seq>.done-<n>` (the entry's `n`th config, counted from 0; not flushed: a lost marker only
//! means a delivery made again after a restart); the entry and its markers go once every
//! delivery of it is done. At start temporary files are removed, markers of entries no longer
//! there too, entries are read in name order (format 1 ones, one per delivery, left by earlier
//! versions, too), and an entry that cannot be read is moved to `corrupt/` with a log line.
//!
//! Without a directory the entries live in memory (lost with the process).
//!
//! [`outbox_entry`]: crate::outbox_entry

use crate::capacity::Share;
use crate::outbox_entry::{self, Entry, TEMP_PREFIX, file_name, seq_of};
use crate::outbox_intent::{self, Intent};
use crate::outbox_slot::{self, Slot, create_private_dir};
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use toolnexus_core::Task;

pub use crate::outbox_entry::trim;

/// Where entries that cannot be read are moved.
pub const CORRUPT_DIR: &str = "corrupt";
const DONE_MARK: &str = ".done-";

/// Which lane a delivery is in: deliveries of one Task to one config, in order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LaneKey {
    pub namespace: Option<String>,
    pub task_id: String,
    pub config_id: String,
}

/// A delivery waiting in the outbox: its entry's sequence number, its place among the entry's
/// configs, and its lane (the Task stays on disk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub seq: u64,
    pub part: usize,
    pub lane: LaneKey,
    /// The webhook's scheme, host and port when it was queued (which capacity share it
    /// counts against); `None` for what was found in the outbox at start, which keeps no URL.
    pub destination: Option<String>,
}

impl Pending {
    /// The share of the sender's capacity this delivery counts against.
    pub fn share(&self) -> Share {
        Share {
            namespace: self.lane.namespace.clone(),
            destination: self.destination.clone(),
        }
    }
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
    /// The next sequence number, what is left of each entry, and (without a directory) the
    /// entries.
    state: Mutex<State>,
}

/// Per entry: its deliveries not yet done, and how many configs it names.
type Left = HashMap<u64, (usize, usize)>;

#[derive(Debug)]
struct State {
    next_seq: u64,
    left: Left,
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
                    left: HashMap::new(),
                    memory: HashMap::new(),
                }),
            };
            return Ok((outbox, Vec::new()));
        };
        let slot = outbox_slot::claim(root, store_name)?;
        let dir = slot.dir.clone();
        let (pending, left) = scan(&dir)?;
        let next_seq = pending.last().map_or(1, |p| p.seq + 1);
        let outbox = Outbox {
            dir: Some(dir),
            _slot: Some(slot),
            state: Mutex::new(State {
                next_seq,
                left,
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

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues one delivery of `task` per lane (each with its destination; all lanes of one
    /// Task), in order, as one entry, durably before it returns (on disk: the file flushed,
    /// renamed, then the directory flushed). The sequence number is taken under a short lock
    /// and the file written after it, so appends of different Tasks do not wait for each
    /// other's writes; the caller keeps appends of one Task in order. Blocking I/O: call it
    /// off the async workers. On an error nothing is queued.
    pub fn append(
        &self,
        lanes: Vec<(LaneKey, Option<String>)>,
        task: &Task,
        max_task_bytes: usize,
    ) -> (Vec<Pending>, Option<String>) {
        let Some((first, _)) = lanes.first() else {
            return (Vec::new(), None);
        };
        let trimmed = task.as_json().len() > max_task_bytes;
        let task = if trimmed { trim(task) } else { task.clone() };
        let entry = Entry {
            namespace: first.namespace.clone(),
            task_id: task.id().to_owned(),
            config_ids: lanes
                .iter()
                .map(|(lane, _)| lane.config_id.clone())
                .collect(),
            task,
            trimmed,
        };
        let seq = {
            let mut state = self.state();
            let seq = state.next_seq;
            state.next_seq += 1;
            state.left.insert(seq, (lanes.len(), lanes.len()));
            if self.dir.is_none() {
                let loaded = Loaded {
                    task: entry.task.clone(),
                    trimmed,
                };
                state.memory.insert(seq, loaded);
            }
            seq
        };
        if let Some(dir) = &self.dir {
            let written = outbox_entry::write(dir, seq, &entry).and_then(|()| {
                fs::File::open(dir)
                    .and_then(|d| d.sync_all())
                    .map_err(|e| format!("cannot flush {}: {e}", dir.display()))
            });
            if let Err(e) = written {
                self.state().left.remove(&seq);
                let _ = fs::remove_file(dir.join(file_name(seq)));
                return (Vec::new(), Some(e));
            }
        }
        let pending = lanes
            .into_iter()
            .enumerate()
            .map(|(part, (lane, destination))| Pending {
                seq,
                part,
                lane,
                destination,
            })
            .collect();
        (pending, None)
    }
    /// Records that Task `intent` is about to be saved (on disk only: flushed before it
    /// returns; in memory an intent would die with the Tasks). Blocking I/O.
    pub fn record_intent(&self, intent: &Intent) -> Result<(), String> {
        match &self.dir {
            Some(dir) => outbox_intent::record(dir, intent),
            None => Ok(()),
        }
    }

    /// Drops an intent (the save's deliveries are written, or nothing was saved).
    pub fn forget_intent(&self, intent: &Intent) {
        if let Some(dir) = &self.dir {
            outbox_intent::forget(dir, intent);
        }
    }

    /// The intents left by an earlier run (none in memory).
    pub fn intents(&self) -> Result<Vec<Intent>, String> {
        match &self.dir {
            Some(dir) => outbox_intent::scan(dir),
            None => Ok(Vec::new()),
        }
    }

    /// The delivery `pending`, read back. An entry that cannot be read is moved aside (`Err`
    /// says why); it is delivered no more.
    pub fn load(&self, pending: &Pending) -> Result<Loaded, String> {
        let Some(dir) = &self.dir else {
            return self
                .state()
                .memory
                .get(&pending.seq)
                .cloned()
                .ok_or_else(|| format!("outbox entry {} is gone", pending.seq));
        };
        let path = dir.join(file_name(pending.seq));
        match outbox_entry::read(&path, pending.seq) {
            Ok(entry) if entry.config_ids.get(pending.part) == Some(&pending.lane.config_id) => {
                Ok(Loaded {
                    task: entry.task,
                    trimmed: entry.trimmed,
                })
            }
            Ok(_) => Err(format!(
                "outbox entry {} no longer names config {:?}",
                pending.seq, pending.lane.config_id
            )),
            Err(why) => {
                move_aside(dir, &path, &why);
                Err(why)
            }
        }
    }

    /// Forgets a delivery, done or given up: its entry goes with the last of its deliveries;
    /// until then a marker says this one is done.
    pub fn done(&self, pending: &Pending) {
        let last = {
            let mut state = self.state();
            match state.left.get(&pending.seq).copied() {
                Some((left, total)) if left > 1 => {
                    state.left.insert(pending.seq, (left - 1, total));
                    None
                }
                Some((_, total)) => {
                    state.left.remove(&pending.seq);
                    state.memory.remove(&pending.seq);
                    Some(total)
                }
                None => Some(0),
            }
        };
        let Some(dir) = &self.dir else { return };
        match last {
            None => {
                let mark = dir.join(mark_name(pending.seq, pending.part));
                if let Err(e) = fs::File::create(&mark) {
                    tracing::warn!(
                        "push outbox: cannot write {}: {e}; the delivery will be made again \
                         after a restart",
                        mark.display()
                    );
                }
            }
            Some(total) => {
                let path = dir.join(file_name(pending.seq));
                if let Err(e) = fs::remove_file(&path)
                    && e.kind() != std::io::ErrorKind::NotFound
                {
                    tracing::warn!(
                        "push outbox: cannot remove {}: {e}; it will be delivered again after a \
                         restart",
                        path.display()
                    );
                }
                for part in 0..total {
                    let _ = fs::remove_file(dir.join(mark_name(pending.seq, part)));
                }
            }
        }
    }
}

/// The marker of entry `seq`'s delivery `part` done.
fn mark_name(seq: u64, part: usize) -> String {
    format!("{seq:020}{DONE_MARK}{part}")
}

fn mark_of(name: &str) -> Option<(u64, usize)> {
    let (seq, part) = name.split_once(DONE_MARK)?;
    if seq.len() != 20 || !seq.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((seq.parse().ok()?, part.parse().ok()?))
}

/// Every delivery not done in `dir`, in queue order, and what is left of each entry;
/// temporary files and markers of entries no longer there removed, unreadable entries moved
/// aside.
fn scan(dir: &Path) -> Result<(Vec<Pending>, Left), String> {
    let listing = fs::read_dir(dir)
        .map_err(|e| format!("cannot read the push outbox {}: {e}", dir.display()))?;
    let mut found = BTreeMap::new();
    let mut marks: Vec<(u64, usize, PathBuf)> = Vec::new();
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
            found.insert(seq, path);
        } else if let Some((seq, part)) = mark_of(name) {
            marks.push((seq, part, path));
        }
    }
    let mut pending = Vec::new();
    let mut left = HashMap::new();
    let mut entries = HashMap::new();
    for (seq, path) in found {
        match outbox_entry::read(&path, seq) {
            Ok(entry) => drop(entries.insert(seq, entry)),
            Err(why) => move_aside(dir, &path, &why),
        }
    }
    let mut done: HashMap<u64, Vec<usize>> = HashMap::new();
    for (seq, part, path) in marks {
        if entries.contains_key(&seq) {
            done.entry(seq).or_default().push(part);
        } else {
            let _ = fs::remove_file(path);
        }
    }
    let mut seqs: Vec<u64> = entries.keys().copied().collect();
    seqs.sort_unstable();
    for seq in seqs {
        let entry = &entries[&seq];
        let done = done.get(&seq).map(Vec::as_slice).unwrap_or_default();
        let before = pending.len();
        for (part, config_id) in entry.config_ids.iter().enumerate() {
            if done.contains(&part) {
                continue;
            }
            pending.push(Pending {
                seq,
                part,
                lane: LaneKey {
                    namespace: entry.namespace.clone(),
                    task_id: entry.task_id.clone(),
                    config_id: config_id.clone(),
                },
                destination: None,
            });
        }
        let count = pending.len() - before;
        if count == 0 {
            // Every delivery was done: the entry's removal was cut short.
            let _ = fs::remove_file(dir.join(file_name(seq)));
            for part in done {
                let _ = fs::remove_file(dir.join(mark_name(seq, *part)));
            }
        } else {
            left.insert(seq, (count, entry.config_ids.len()));
        }
    }
    Ok((pending, left))
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
                vec![(lane("t1", "a"), None), (lane("t1", "b"), None)],
                &task("t1", state),
                1 << 20,
            );
            assert!(err.is_none());
            assert_eq!(written.len(), 2);
        }
        // One entry per save, whatever the number of configs.
        let entries = |path: &Path| {
            fs::read_dir(path)
                .unwrap()
                .filter(|e| seq_of(e.as_ref().unwrap().file_name().to_str().unwrap()).is_some())
                .count()
        };
        assert_eq!(entries(&path), 3);
        // The first save delivered to `a`, the second to both.
        let first_a = Pending {
            seq: 1,
            part: 0,
            lane: lane("t1", "a"),
            destination: None,
        };
        outbox.done(&first_a);
        for part in [0, 1] {
            let config = ["a", "b"][part];
            outbox.done(&Pending {
                seq: 2,
                part,
                lane: lane("t1", config),
                destination: None,
            });
        }
        assert_eq!(entries(&path), 2);
        drop(outbox);
        let (outbox, pending, again) = open(&root);
        assert_eq!(again, path);
        let got: Vec<(u64, &str)> = pending
            .iter()
            .map(|p| (p.seq, p.lane.config_id.as_str()))
            .collect();
        assert_eq!(got, [(1, "b"), (3, "a"), (3, "b")]);
        let third = outbox.load(&pending[2]).unwrap();
        assert_eq!(third.task.as_map()["status"]["state"], "completed");
        // New entries continue after the highest; the last delivery of an entry removes it
        // and its markers.
        let (written, _) = outbox.append(
            vec![(lane("t2", "a"), None)],
            &task("t2", "working"),
            1 << 20,
        );
        assert_eq!(written[0].seq, 4);
        assert!(path.join(file_name(4)).exists());
        outbox.done(&pending[0]);
        assert!(!path.join(file_name(1)).exists());
        assert!(!path.join(mark_name(1, 0)).exists());
    }

    #[test]
    fn entries_of_format_1_left_by_an_earlier_version_are_delivered() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("outbox");
        let (outbox, _, path) = open(&root);
        drop(outbox);
        for (seq, config) in [(5, "a"), (6, "b")] {
            let old = serde_json::json!({"outbox": 1, "seq": seq, "namespace": "o.x",
                "taskId": "t", "configId": config, "trimmed": false,
                "task": task("t", "completed").as_map()});
            fs::write(path.join(file_name(seq)), old.to_string()).unwrap();
        }
        let (outbox, pending, _) = open(&root);
        let got: Vec<(u64, &str)> = pending
            .iter()
            .map(|p| (p.seq, p.lane.config_id.as_str()))
            .collect();
        assert_eq!(got, [(5, "a"), (6, "b")]);
        assert_eq!(pending[0].lane.namespace.as_deref(), Some("o.x"));
        let loaded = outbox.load(&pending[1]).unwrap();
        assert_eq!(loaded.task.as_map()["status"]["state"], "completed");
        outbox.done(&pending[0]);
        assert!(!path.join(file_name(5)).exists());
        assert!(path.join(file_name(6)).exists());
    }

    #[cfg(unix)]
    #[test]
    fn the_directory_and_entries_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("outbox");
        let (outbox, _, path) = open(&root);
        outbox.append(vec![(lane("t", "c"), None)], &task("t", "working"), 1 << 20);
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
            outbox.append(vec![(lane(id, "c"), None)], &task(id, "working"), 1 << 20);
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
        let (written, _) =
            outbox.append(vec![(lane("t", "c"), None)], &task("t", "working"), 1 << 20);
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
        let (written, _) = outbox.append(vec![(lane("t", "c"), None)], &big, 100);
        let loaded = outbox.load(&written[0]).unwrap();
        assert!(loaded.trimmed);
        assert!(loaded.task.get("artifacts").is_none());
        assert_eq!(loaded.task.as_map()["status"]["state"], "working");
        outbox.done(&written[0]);
        assert!(outbox.load(&written[0]).is_err());
    }
}

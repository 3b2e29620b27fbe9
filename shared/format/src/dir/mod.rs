//! A directory of Task files: atomic writes, verified reads, crash clean-up.
//!
//! Invariants (see `docs/on-disk-format.md`):
//! - A Task file is only ever created by renaming a complete, flushed file over its name, so a
//!   reader sees either the previous Task or the new one, never a prefix of either. That file
//!   is the Task's lock (`.~<stem>.l`, [`lock`]), created with `create_new`: one writer at a
//!   time, in any number of threads, instances or processes, writes it; its rename releases the
//!   lock.
//! - Other temp files (a version record's first write, a lock moved aside while being broken)
//!   have a random hidden name (`.tmp-<32 hex>`, [`temp`]), created with `create_new`.
//! - A read returns a Task only if the file parses as a Task whose `id` is the id asked for
//!   ([`read`]).
//! - Beside each Task file, its version record ([`record`]) says which version it is.
//!
//! This module is the [`DirStore`] itself: what a get, a save, a listing, a delete and a sweep
//! do, in which order. A Task's push-notification configs, files in its own directory under
//! `.push/`, are the store's too ([`push`]: saved, read, listed and deleted there). The file operations differ between a native process and a component and
//! are one module per platform, with the same functions: `unix.rs` (natively), `wasi.rs`
//! (inside a `wasm32-wasip2` component, through `wasi:filesystem` directly) and `portable.rs`
//! (`std::fs` alone, natively on any other system).

mod error;
mod lock;
mod options;
mod push;
mod read;
mod record;
mod stat;
mod temp;
#[cfg(test)]
mod tests;

// The file operations of the platform this is built for, one module per platform with the
// same functions.
#[cfg_attr(unix, path = "unix.rs")]
#[cfg_attr(all(target_os = "wasi", target_env = "p2"), path = "wasi.rs")]
#[cfg_attr(
    not(any(unix, all(target_os = "wasi", target_env = "p2"))),
    path = "portable.rs"
)]
mod platform;
// What `std::fs` tells of a file, for the platforms that read it so (all but a component's).
#[cfg(not(all(target_os = "wasi", target_env = "p2")))]
mod std_meta;

pub use error::DirError;
pub use options::{Durability, Expect};
pub use platform::create_private_dir;
#[cfg(all(target_os = "wasi", target_env = "p2"))]
pub use platform::set_host_refuses_special_files;
pub use read::{MAX_TASK_FILE_BYTES, NOWAIT_READ_MAX_BYTES};
pub use temp::{STALE_TEMP_AGE, TEMP_PREFIX, write_atomically};

use crate::id;
use crate::query::{ListQuery, PageCollector, SortKey};
use crate::task;
use lock::Lock;
use record::{Record, RecordRead};
use stat::Stamp;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How long a writer's lock on one Task stands before another writer may break it: the
/// longest a crash in the middle of a save keeps that Task from being saved. A writer never
/// holds a lock for more than half of this (it gives up first), so a live lock is never broken.
pub const DEFAULT_LOCK_LEASE: Duration = Duration::from_secs(4);

/// One page of a listing.
#[derive(Debug, Default)]
pub struct TextPage {
    /// `(id, JSON text)` per Task, in list order.
    pub tasks: Vec<(String, String)>,
    /// The token for the next page; `None` on the last page.
    pub next_page_token: Option<String>,
    /// How many Tasks match the query's filters in all pages.
    pub total_size: u64,
}

/// One directory holding one `<encoded-id>.json` file per Task, with a version record and a
/// lock file beside each (see `docs/on-disk-format.md`, "Versions").
#[derive(Debug, Clone)]
pub struct DirStore {
    root: PathBuf,
    durability: Durability,
    lease: Duration,
    /// Whether [`DirStore::get_text`] and [`DirStore::get_versioned`] check the text they read
    /// (off only by [`DirStore::with_gets_checked_by_caller`]).
    check_gets: bool,
    /// The directory flushes of saves (of this store and its clones).
    dir_flush: platform::DirFlush,
    /// How long each flush of a save's text takes longer than the disk makes it (tests of
    /// slow disks only).
    #[cfg(test)]
    slow_flush: Duration,
    /// Takes no kernel locks and ignores others' (tests of what the lease alone guarantees,
    /// as on a platform without kernel locks).
    #[cfg(test)]
    lease_only: bool,
    /// Runs between a save's last check of its lock and its rename (tests of a writer paused
    /// there).
    #[cfg(test)]
    before_rename: Option<fn(&Path)>,
    /// The directories push-config saves and deletes flushed (tests of what is made durable).
    #[cfg(test)]
    push_flushes: std::sync::Arc<std::sync::Mutex<Vec<PathBuf>>>,
}

/// The files of one Task: `<stem>.json`, and beside it its version record and its lock.
struct TaskFiles {
    task: PathBuf,
    record: PathBuf,
    lock: PathBuf,
}

/// Whether the upper-case spelling of the lower-case file name `probe` (whose identity is
/// `mine`, where it can be told) names that same file: the file system folds case.
fn folds_case(probe: &Path, mine: Option<(u64, u64)>) -> bool {
    let name = probe
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let folded = probe.with_file_name(name.to_uppercase());
    match platform::identity_at(&folded) {
        Ok(there) => mine.is_none_or(|mine| mine == there),
        Err(_) => mine.is_none() && platform::stamp_at(&folded).is_ok(),
    }
}

/// The names beside a Task file `<stem>.json`: its version record and its lock.
fn side_names(task_file: &str) -> (String, String) {
    let stem = task_file.strip_suffix(id::EXTENSION).unwrap_or(task_file);
    (format!(".~{stem}.v"), format!(".~{stem}.l"))
}

impl DirStore {
    /// A store over `root`, which must already exist. Nothing is read or written.
    pub fn new(root: impl Into<PathBuf>, durability: Durability) -> Self {
        DirStore {
            root: root.into(),
            durability,
            lease: DEFAULT_LOCK_LEASE,
            check_gets: true,
            dir_flush: Default::default(),
            #[cfg(test)]
            slow_flush: Duration::ZERO,
            #[cfg(test)]
            lease_only: false,
            #[cfg(test)]
            before_rename: None,
            #[cfg(test)]
            push_flushes: Default::default(),
        }
    }

    /// The same store, for a caller that checks every Task text it gets in full itself: its
    /// [`DirStore::get_text`] and [`DirStore::get_versioned`] return what the Task file holds
    /// without scanning it for being a Task with the id asked for. Everything else is still
    /// checked: a link, a FIFO or anything but a regular file, a file over
    /// [`MAX_TASK_FILE_BYTES`] and text that is not UTF-8 are [`DirError::Corrupt`] naming the
    /// file; listings check every Task they read.
    ///
    /// For the file-store component, whose host checks every answer (the contract's
    /// `answers-checked` setting): so a Task's bytes are scanned once on the way from disk to
    /// the caller, not twice. A caller that does not check gets whatever the file holds.
    pub fn with_gets_checked_by_caller(mut self) -> Self {
        self.check_gets = false;
        self
    }

    /// The same store with another lock lease (see [`DEFAULT_LOCK_LEASE`]). Every writer of one
    /// directory must use the same lease.
    pub fn with_lock_lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(10));
        self
    }

    /// The lock lease.
    pub fn lock_lease(&self) -> Duration {
        self.lease
    }

    /// The directory this store writes to.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The durability saves are made with.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// The path of the file that holds (or would hold) the Task with this id.
    pub fn path_of(&self, id: &str) -> Result<PathBuf, DirError> {
        Ok(self
            .root
            .join(id::encode_id(id).map_err(DirError::InvalidId)?))
    }

    /// Reads the Task with this id as JSON text: `None` if there is no file for it.
    ///
    /// The text is checked to be a Task whose `id` is `id`; anything else is
    /// [`DirError::Corrupt`], never `None` and never someone else's Task (unless the store was
    /// made [`DirStore::with_gets_checked_by_caller`]).
    pub fn get_text(&self, id: &str) -> Result<Option<String>, DirError> {
        let name = id::encode_id(id).map_err(DirError::InvalidId)?;
        Ok(self.read_task(id, &name)?.map(|(text, _)| text))
    }

    /// Like [`DirStore::get_text`], with the Task's version.
    ///
    /// Lock-free: the version record is read before the Task file, and writers rename the Task
    /// file before the record, so the version returned is never newer than the text returned
    /// (it may be older, which makes a conditional save on it fail, never wrongly succeed).
    pub fn get_versioned(&self, id: &str) -> Result<Option<(String, u64)>, DirError> {
        let name = id::encode_id(id).map_err(DirError::InvalidId)?;
        let (record_name, _) = side_names(&name);
        let record_path = self.root.join(record_name);
        let mut record = record::read_record(&record_path);
        // A record that does not read whole is, almost always, being written in place by a
        // save right now: read it again. One that stays unsettled counts as none (version 1,
        // never newer than the text), and reads never wait for a lock.
        for _ in 0..3 {
            if record != RecordRead::Unsettled {
                break;
            }
            std::thread::yield_now();
            record = record::read_record(&record_path);
        }
        let found = self.read_task(id, &name)?;
        Ok(found.map(|(text, stamp)| (text, Record::version_of(record, stamp))))
    }

    /// [`DirStore::get_text`] if it can be done without waiting for the disk: `None` if the
    /// file's name or any of its bytes are not in the kernel's caches (or the file is over
    /// [`NOWAIT_READ_MAX_BYTES`], or this kernel cannot tell), and then nothing was decided and
    /// the caller does the blocking read. For an async caller that wants to skip the hand-off
    /// to a blocking thread when the Task is a page-cache read. Linux only.
    ///
    /// The name is resolved with `openat2(RESOLVE_CACHED)` (`O_NOFOLLOW | O_NONBLOCK`, as
    /// every read) and the bytes read with `preadv2(RWF_NOWAIT)`; what is read is checked
    /// exactly as [`DirStore::get_text`] checks it.
    #[cfg(target_os = "linux")]
    pub fn try_get_text_cached(&self, id: &str) -> Option<Result<Option<String>, DirError>> {
        let name = match id::encode_id(id) {
            Ok(name) => name,
            Err(e) => return Some(Err(DirError::InvalidId(e))),
        };
        let path = self.root.join(&name);
        Some(match read::read_text_cached(&path)? {
            Ok(Some(text)) => self.checked_text(id, &path, text).map(Some),
            other => other,
        })
    }

    /// The Task file `name`, checked to hold the Task `id`, with its stamp; `None` if missing.
    fn read_task(&self, id: &str, name: &str) -> Result<Option<(String, Stamp)>, DirError> {
        let path = self.root.join(name);
        let Some((text, stamp)) = read::read_text(&path)? else {
            return Ok(None);
        };
        Ok(Some((self.checked_text(id, &path, text)?, stamp)))
    }

    /// A Task file's text as a get returns it: checked to be the Task `id`
    /// ([`read::check_task_file`]) unless the caller checks it
    /// ([`DirStore::with_gets_checked_by_caller`]).
    fn checked_text(&self, id: &str, path: &Path, text: String) -> Result<String, DirError> {
        if self.check_gets {
            read::check_task_file(id, path, text)
        } else {
            Ok(text)
        }
    }

    /// One page of the Tasks matching `query`, newest status timestamp first (see
    /// [`crate::query`]).
    ///
    /// Reads every Task file in the directory (temp and foreign files are skipped) but keeps
    /// only the page's texts: memory is bounded by the page, not by the directory. A Task file
    /// that cannot be read as a Task is an error naming it, never silently left out. Stale temp
    /// files the walk passes are removed ([`DirStore::sweep_temp_files`]).
    pub fn list_texts(&self, query: &ListQuery) -> Result<TextPage, DirError> {
        let mut page = PageCollector::new(query).map_err(DirError::InvalidQuery)?;
        let names = platform::read_names(&self.root).map_err(|source| DirError::Io {
            op: "list",
            file: self.root.clone(),
            source,
        })?;
        temp::remove_stale_among(&self.root, &names);
        for name in names.iter().filter(|n| id::is_task_file_name(n)) {
            let path = self.root.join(name);
            let Some((text, _)) = read::read_text(&path)? else {
                continue;
            }; // deleted meanwhile
            let corrupt = |reason: String| DirError::Corrupt {
                file: path.clone(),
                reason,
            };
            let (stored_id, head) =
                task::check_list_head(&text).map_err(|e| corrupt(e.to_string()))?;
            if id::encode_id(&stored_id).ok().as_deref() != Some(name.as_str()) {
                return Err(corrupt(format!(
                    "holds task {stored_id:?}, which belongs in another file"
                )));
            }
            let key = SortKey::of(stored_id, &head);
            if query.matches_with(&head, key.timestamp) {
                page.count();
                if page.wants(&key) {
                    page.offer(key, text);
                }
            }
        }
        let cut = page.finish();
        Ok(TextPage {
            tasks: cut
                .items
                .into_iter()
                .map(|(k, text)| (k.id, text))
                .collect(),
            next_page_token: cut.next_page_token,
            total_size: cut.total_size,
        })
    }

    /// How many Task files the directory holds and their bytes, from one pass over its
    /// entries' metadata (no Task is read or checked, unlike a listing). A file removed
    /// meanwhile is left out; a directory not made yet holds nothing.
    pub fn usage(&self) -> Result<(u64, u64), DirError> {
        let io = |source| DirError::Io {
            op: "usage",
            file: self.root.clone(),
            source,
        };
        let names = match platform::read_names(&self.root) {
            Ok(names) => names,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((0, 0)),
            Err(e) => return Err(io(e)),
        };
        let (mut tasks, mut bytes) = (0u64, 0u64);
        for name in names.iter().filter(|n| id::is_task_file_name(n)) {
            match fs::symlink_metadata(self.root.join(name)) {
                Ok(meta) if meta.is_file() => {
                    tasks += 1;
                    bytes += meta.len();
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(e)),
            }
        }
        Ok((tasks, bytes))
    }

    /// Removes the Task with this id: `true` if there was one. Takes the Task's lock, so it
    /// never interleaves with a save of the same id. Then removes the Task's push configs
    /// (whether or not there was a Task), an error if they cannot be.
    pub fn delete(&self, id: &str) -> Result<bool, DirError> {
        let files = self.files_of(id)?;
        let lock = self.lock(files.lock.clone())?;
        if let Err(lost) = lock.check_held() {
            lock.release();
            return Err(lost);
        }
        let existed = match fs::remove_file(&files.task) {
            Ok(()) => true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(source) => {
                lock.release();
                return Err(DirError::Io {
                    op: "delete",
                    file: files.task,
                    source,
                });
            }
        };
        // The record goes after the Task file: a crash in between leaves a record without a
        // Task, which reads as no Task.
        let _ = fs::remove_file(&files.record);
        let synced = if existed && self.durability == Durability::Full {
            platform::sync_dir(&self.root).map_err(|source| DirError::Io {
                op: "sync directory",
                file: self.root.clone(),
                source,
            })
        } else {
            Ok(())
        };
        lock.release();
        synced?;
        // Its push configs go once the Task is gone (a crash in between leaves configs of no
        // Task, which the next delete of that id removes).
        self.delete_push_configs(id)?;
        Ok(existed)
    }

    /// Saves a Task whose text the caller already checked to be a Task with this `id` (with
    /// [`task::check_task_text`] or by building it), written exactly as given. Returns the new
    /// version.
    pub fn save_checked(&self, id: &str, text: &str) -> Result<u64, DirError> {
        self.save_checked_if(id, text, Expect::Any)
    }

    /// Saves a Task given as JSON text, which is checked and then written exactly as given.
    /// Returns the new version.
    pub fn save_text(&self, text: &str) -> Result<u64, DirError> {
        let id = task::check_task_text(text).map_err(DirError::InvalidTask)?;
        self.save_checked_if(&id, text, Expect::Any)
    }

    /// Saves a checked Task only if what is stored for its id is what `expect` says, as one
    /// atomic step against every writer of the directory that follows this protocol (threads,
    /// instances, processes, the native store and the component alike). Returns the new
    /// version; on a mismatch nothing is written and the error is [`DirError::Conflict`] with
    /// the stored version.
    ///
    /// The Task's lock is its temp file: created exclusively, the version checked, the text
    /// written into it and flushed, the version record written (in place once it exists), and
    /// then the lock renamed over the Task file, which installs the text and releases the lock
    /// in one step. Then a directory sync (natively shared with the saves into the same
    /// directory that are waiting for one at the same time).
    pub fn save_checked_if(&self, id: &str, text: &str, expect: Expect) -> Result<u64, DirError> {
        let files = self.files_of(id)?;
        let mut lock = self.lock(files.lock.clone())?;
        let saved = {
            // What the look at the Task file this save replaces holds (natively, that file,
            // open across the rename: see `look_for_replace`), let go after the rename, at the
            // end of this block.
            let mut replaced = None;
            let saved = self.save_under_lock(&mut lock, &mut replaced, &files, text, expect, id);
            lock.release();
            saved
        };
        let (version, written_in_place) = saved?;
        // The rename is done: a flush that fails now leaves the new text in place, perhaps not
        // for good, so the outcome is said to be unknown rather than failed.
        if self.durability == Durability::Full {
            let flush_record = || match &written_in_place {
                Some(file) => file.sync_data().map_err(|source| DirError::AfterRename {
                    op: "flush",
                    file: files.record.clone(),
                    source,
                }),
                None => Ok(()),
            };
            self.dir_flush
                .sync_with(&self.root, flush_record)?
                .map_err(|source| DirError::AfterRename {
                    op: "sync directory",
                    file: self.root.clone(),
                    source,
                })?;
        }
        Ok(version)
    }

    /// A save's steps under its lock, up to the rename that installs the Task and releases the
    /// lock: the new version, and the version record when it was written in place (flushed by
    /// the caller, beside the directory flush). `replaced` gets what the look at the Task file
    /// being replaced holds.
    fn save_under_lock(
        &self,
        lock: &mut Lock,
        replaced: &mut Option<platform::Held>,
        files: &TaskFiles,
        text: &str,
        expect: Expect,
        id: &str,
    ) -> Result<(u64, Option<platform::Writer>), DirError> {
        let io_err = |op, file: &Path, source| DirError::Io {
            op,
            file: file.to_path_buf(),
            source,
        };
        let (record, in_place) = record::open_record_for_save(&files.record);
        let (found, held) = platform::look_for_replace(&files.task);
        *replaced = Some(held);
        let found = match found {
            Ok((_, true)) => {
                let source = io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "is a directory, which no Task file can replace",
                );
                return Err(io_err("replace", &files.task, source));
            }
            Ok((stamp, false)) => Some(stamp),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(source) => return Err(io_err("replace", &files.task, source)),
        };
        // Under the lock no one writes the record, so one that does not read whole was torn
        // by a crash or a disk fault: the version is unknown, and counting from 1 again would
        // let an old compare-and-set win. Nothing is written until someone looks.
        if let (RecordRead::Unsettled, Some(_)) = (record, found) {
            return Err(DirError::Corrupt {
                file: files.record.clone(),
                reason: "the version record does not read whole, so the Task's version is \
                         unknown; remove it to count versions from 1 again"
                    .into(),
            });
        }
        let current = found.map(|stamp| Record::version_of(record, stamp));
        if !expect.holds(current) {
            return Err(DirError::Conflict {
                id: id.to_owned(),
                file: files.task.clone(),
                expected: expect,
                current,
            });
        }
        let version = current.map_or(1, |v| v.saturating_add(1));
        let stamp = lock.write_task(text.as_bytes(), found, self.durability)?;
        let record_text = Record {
            version,
            stamp,
            prev: found,
        }
        .to_text();
        // Nothing has changed yet; from here on, the record and then the Task file.
        lock.check_young()?;
        // The record first, in place when this store wrote it (one short write, no new file); a
        // missing or foreign one is replaced by a rename. A reader between this and the rename
        // below sees the record and the file it replaces: one version less. A record written in
        // place is flushed after the rename, beside the directory flush (see
        // `DirFlush::sync_with`): the acknowledgement waits for both.
        // A brand-new Task's record (no record, no Task file) is created in place too: if a
        // power loss keeps the Task file and not the record's text, it reads as version 1,
        // which it is. A record that replaces another is written whole and flushed before it is
        // renamed into place, so the old one is never lost for nothing.
        let in_place = match (in_place, record, found) {
            (None, RecordRead::Missing, None) => platform::create_new(&files.record).ok(),
            (in_place, ..) => in_place,
        };
        let written_in_place = match in_place {
            Some(mut file) => {
                file.write_from_start(record_text.as_bytes())
                    .map_err(|e| io_err("write", &files.record, e))?;
                Some(file)
            }
            None => {
                temp::replace_by_temp(
                    &self.root,
                    &files.record,
                    record_text.as_bytes(),
                    self.durability,
                )?;
                None
            }
        };
        lock.check_held()?;
        #[cfg(test)]
        if let Some(pause) = self.before_rename {
            pause(&lock.path);
        }
        lock.rename_over(&files.task)?;
        Ok((version, written_in_place))
    }

    /// The files of the Task with this id.
    fn files_of(&self, id: &str) -> Result<TaskFiles, DirError> {
        let name = id::encode_id(id).map_err(DirError::InvalidId)?;
        let (record, lock) = side_names(&name);
        Ok(TaskFiles {
            record: self.root.join(record),
            lock: self.root.join(lock),
            task: self.root.join(name),
        })
    }

    /// Takes the lock at `path` (see [`Lock::take`]).
    fn lock(&self, path: PathBuf) -> Result<Lock, DirError> {
        #[cfg(not(test))]
        let lock = Lock::take(path, self.lease, true)?;
        #[cfg(test)]
        let lock = Lock::take(path, self.lease, !self.lease_only)?.with_slow_flush(self.slow_flush);
        Ok(lock)
    }

    /// Fails if the directory's file system folds case (default macOS and Windows volumes):
    /// there the Tasks `A` and `a` would share one Task file, one lock and one version record,
    /// so that a save of one could be taken for the other's. Creates a temp file with a
    /// lower-case name, looks for it under the upper-case spelling, and removes it.
    pub fn check_case_sensitive(&self) -> Result<(), DirError> {
        let probe = temp::temp_path(&self.root);
        // A directory this store cannot write to (read-only) saves nothing to be confused.
        let Ok(created) = platform::create_new(&probe) else {
            return Ok(());
        };
        let found = folds_case(&probe, created.identity());
        drop(created);
        let _ = fs::remove_file(&probe);
        if !found {
            return Ok(());
        }
        Err(DirError::Io {
            op: "open",
            file: self.root.clone(),
            source: io::Error::new(
                io::ErrorKind::Unsupported,
                "the directory's file system folds upper and lower case into one name, so Tasks \
                 whose ids differ only in case would share one file, lock and version record; \
                 use a directory on a case-sensitive file system",
            ),
        })
    }

    /// Removes temp files left by writers that crashed before their rename: those whose last
    /// change is older than `older_than`. Younger ones may belong to a live writer and stay.
    /// The temp files of push-config saves in `.push/*/` are swept the same way. Locks are
    /// not: one look cannot tell a crashed writer's lock from a live one's (a lock is broken
    /// only by a writer that watched it unchanged for a lease), and a lock is never read as a
    /// Task; the next save of its Task breaks it.
    /// Returns how many temp files were removed; errors on single entries are skipped.
    pub fn sweep_temp_files(&self, older_than: Duration) -> Result<usize, DirError> {
        let names = platform::read_names(&self.root).map_err(|source| DirError::Io {
            op: "list",
            file: self.root.clone(),
            source,
        })?;
        let now = SystemTime::now();
        let mut removed = 0;
        for name in &names {
            if name.starts_with(".~") && name.ends_with(".l") {
                continue;
            }
            // Anything else that is not a temp file stays: Task files, version records, the
            // `.push` directory (swept below) and foreign files.
            if temp::remove_if_stale_temp(&self.root, name, older_than, now) {
                removed += 1;
            }
        }
        Ok(removed + self.sweep_push_temp_files(older_than, now))
    }
}

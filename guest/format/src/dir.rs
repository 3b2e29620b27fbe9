//! A directory of Task files: atomic writes, verified reads, crash clean-up.
//!
//! Invariants (see `docs/on-disk-format.md`):
//! - A Task file is only ever created by renaming a complete, flushed file over its name, so a
//!   reader sees either the previous Task or the new one, never a prefix of either. That file
//!   is the Task's lock (`.~<stem>.l`), created with `create_new`: one writer at a time, in any
//!   number of threads, instances or processes, writes it; its rename releases the lock.
//! - Other temp files (a version record's first write, a lock moved aside while being broken)
//!   have a random hidden name (`.tmp-<32 hex>`), created with `create_new`.
//! - A read returns a Task only if the file parses as a Task whose `id` is the id asked for.

use crate::group::SharedFlush;
use crate::id::{self, IdError};
use crate::query::{ListQuery, PageCollector, QueryError, SortKey};
use crate::task::{self, TaskError};
use std::collections::hash_map::RandomState;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::hash::BuildHasher;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// Prefix of every temp file name. Hidden, so never mistaken for a Task file.
pub const TEMP_PREFIX: &str = ".tmp-";

/// A temp file older than this is a leftover from a crashed writer and may be removed.
/// Real writes hold a temp file for milliseconds; an hour leaves room for a stalled disk.
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(60 * 60);

/// The largest Task file a store reads: a larger one is [`DirError::Corrupt`], never read into
/// memory.
pub const MAX_TASK_FILE_BYTES: u64 = 64 << 20;

/// How long a writer's lock on one Task stands before another writer may break it: the
/// longest a crash in the middle of a save keeps that Task from being saved. A writer never
/// holds a lock for more than half of this (it gives up first), so a live lock is never broken.
pub const DEFAULT_LOCK_LEASE: Duration = Duration::from_secs(4);

/// The largest Task file [`DirStore::try_get_text_cached`] reads: checking a larger one takes
/// long enough (about 50 µs per 32 KiB) to belong on a blocking thread, not an async worker.
pub const NOWAIT_READ_MAX_BYTES: u64 = 32 << 10;

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

/// What a save expects to find stored for the Task's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Expect {
    /// Anything: an unconditional upsert.
    #[default]
    Any,
    /// No Task with this id yet (create if absent).
    Absent,
    /// The Task at exactly this version.
    Version(u64),
}

impl Expect {
    /// Whether a store holding `current` (the stored version; `None`: no Task) satisfies it.
    pub fn holds(self, current: Option<u64>) -> bool {
        match self {
            Expect::Any => true,
            Expect::Absent => current.is_none(),
            Expect::Version(v) => current == Some(v),
        }
    }
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expect::Any => f.write_str("any version"),
            Expect::Absent => f.write_str("no task"),
            Expect::Version(v) => write!(f, "version {v}"),
        }
    }
}

/// How hard a save works to survive power loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Flush the temp file's data before the rename and the directory after it: an
    /// acknowledged save survives a crash of the process and of the machine.
    #[default]
    Full,
    /// Skip both flushes: an acknowledged save survives a crash of the process (the rename is
    /// still atomic) but may be lost, as a whole, if the machine loses power.
    Relaxed,
}

/// What went wrong with a directory operation. Every variant names the file involved.
#[derive(Debug)]
pub enum DirError {
    /// The id cannot name a Task.
    InvalidId(IdError),
    /// The document to save is not a Task.
    InvalidTask(TaskError),
    /// A Task file exists but does not hold the Task it should.
    Corrupt { file: PathBuf, reason: String },
    /// The file system refused.
    Io {
        op: &'static str,
        file: PathBuf,
        source: io::Error,
    },
    /// A conditional save found something else stored than it expected; nothing was written.
    Conflict {
        id: String,
        file: PathBuf,
        expected: Expect,
        /// The stored version (`None`: no Task).
        current: Option<u64>,
    },
    /// A list query that cannot be run (a page token or timestamp that is not valid).
    InvalidQuery(QueryError),
}

impl fmt::Display for DirError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DirError::InvalidId(e) => e.fmt(f),
            DirError::InvalidTask(e) => e.fmt(f),
            DirError::Corrupt { file, reason } => {
                write!(f, "corrupt task file {}: {reason}", file.display())
            }
            DirError::Io { op, file, source } => {
                write!(f, "cannot {op} {}: {source}", file.display())
            }
            DirError::Conflict {
                file,
                expected,
                current,
                ..
            } => {
                write!(f, "{} changed: expected {expected}, found ", file.display())?;
                match current {
                    Some(v) => write!(f, "version {v}"),
                    None => f.write_str("no task"),
                }
            }
            DirError::InvalidQuery(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for DirError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DirError::InvalidId(e) => Some(e),
            DirError::InvalidTask(e) => Some(e),
            DirError::Corrupt { .. } | DirError::Conflict { .. } => None,
            DirError::InvalidQuery(e) => Some(e),
            DirError::Io { source, .. } => Some(source),
        }
    }
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
    /// The directory flushes of saves, shared by the saves (of this store and its clones)
    /// waiting for one at the same time.
    dir_syncs: Arc<SharedFlush>,
    /// How long each flush of a save's text takes longer than the disk makes it (tests of
    /// slow disks only).
    #[cfg(test)]
    slow_flush: Duration,
}

/// A Task file's identity as the version record remembers it: length and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) size: u64,
    pub(crate) mtime_ns: i128,
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Stamp {
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|m| m.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as i128)
            .unwrap_or(-1);
        Stamp {
            size: meta.len(),
            mtime_ns,
        }
    }
}

/// The version record `.~<stem>.v`: which version the Task file with this stamp is, and (when
/// the save that wrote it replaced a Task file) the stamp of the file it replaced, which is one
/// version less. A saver writes the record before it renames its Task file into place, so a
/// reader between the two sees the record and the file it replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Record {
    version: u64,
    stamp: Stamp,
    /// The Task file this version replaced (`None` for a first save, and in records of format
    /// 1, which savers wrote after their rename).
    prev: Option<Stamp>,
}

/// The length of every version record this store writes: one line of JSON padded with spaces.
/// A record of exactly this length is overwritten in place by the next save (one write, well
/// inside the first 512-byte sector); any other is replaced by a rename.
const RECORD_LEN: usize = 256;

/// What reading a version record found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RecordRead {
    /// No record, or one that is not a regular file: no version known.
    Missing,
    Found(Record),
    /// A record that does not parse or fails its check: torn by a save writing it at this very
    /// moment (a reader without the lock), or left unreadable by a crash.
    Unsettled,
}

impl Record {
    /// The record's line: JSON with a check over its fields, padded to [`RECORD_LEN`].
    fn to_text(self) -> String {
        let mut text = format!(
            "{{\"format\":2,\"version\":{},\"size\":{},\"mtime_ns\":{}",
            self.version, self.stamp.size, self.stamp.mtime_ns,
        );
        if let Some(prev) = self.prev {
            text.push_str(&format!(
                ",\"prev_size\":{},\"prev_mtime_ns\":{}",
                prev.size, prev.mtime_ns
            ));
        }
        text.push_str(&format!(",\"check\":\"{}\"}}", self.check(2)));
        // Always shorter in practice (about 150 bytes); a longer one (a clock centuries off)
        // is written unpadded, and replaced by a rename at the next save.
        text.extend(std::iter::repeat_n(
            ' ',
            (RECORD_LEN - 1).saturating_sub(text.len()),
        ));
        text.push('\n');
        text
    }

    /// The first 64 bits of the SHA-256 of the fields, in hex: a record torn by a concurrent
    /// in-place write fails it. Format 1: `"<version> <size> <mtime_ns>"`; format 2 adds
    /// `" <prev_size> <prev_mtime_ns>"` when there is a previous file.
    fn check(self, format: u64) -> String {
        use sha2::{Digest, Sha256};
        use std::fmt::Write as _;
        let mut fields = format!(
            "{} {} {}",
            self.version, self.stamp.size, self.stamp.mtime_ns
        );
        if let (2, Some(prev)) = (format, self.prev) {
            let _ = write!(fields, " {} {}", prev.size, prev.mtime_ns);
        }
        let digest = Sha256::digest(fields.as_bytes());
        digest[..8]
            .iter()
            .fold(String::with_capacity(16), |mut hex, b| {
                let _ = write!(hex, "{b:02x}");
                hex
            })
    }

    /// A record's text: `None` unless it parses and (when it has one, as every record since
    /// in-place writes does) its check holds. Formats 1 and 2 are read.
    fn parse(text: &str) -> Option<Record> {
        /// The record's fields, read straight into their types (no JSON tree). Unknown members
        /// are ignored; a `check` that is present must be a string.
        #[derive(serde::Deserialize)]
        struct Line {
            format: u64,
            version: u64,
            size: u64,
            mtime_ns: i64,
            prev_size: Option<u64>,
            prev_mtime_ns: Option<i64>,
            #[serde(default, deserialize_with = "present_string")]
            check: Option<String>,
        }
        fn present_string<'de, D: serde::Deserializer<'de>>(
            d: D,
        ) -> Result<Option<String>, D::Error> {
            <String as serde::Deserialize>::deserialize(d).map(Some)
        }
        let line: Line = serde_json::from_str(text).ok()?;
        let prev = match (line.format, line.prev_size, line.prev_mtime_ns) {
            (1, None, None) | (2, None, None) => None,
            (2, Some(size), Some(mtime_ns)) => Some(Stamp {
                size,
                mtime_ns: i128::from(mtime_ns),
            }),
            _ => return None,
        };
        let record = Record {
            version: line.version,
            stamp: Stamp {
                size: line.size,
                mtime_ns: i128::from(line.mtime_ns),
            },
            prev,
        };
        match (line.format, line.check) {
            (1, None) => Some(record),
            (format, Some(check)) => (check == record.check(format)).then_some(record),
            (_, None) => None,
        }
    }

    /// The version of a Task file with this stamp, given the record (if any) read before it.
    ///
    /// - The file the record describes is the record's version.
    /// - The file the record's save replaced is one version less: that save has written its
    ///   record and not yet renamed its Task file into place (or crashed in between).
    /// - Any other file was written after the record: by a writer that crashed before writing
    ///   its record (format 1), or by one that knows nothing of versions (a seed store, an
    ///   older component). It is one version past the record.
    ///
    /// An unsettled record (unreadable, or failing its check) counts as none: version 1, the
    /// lowest there is, so a conditional save on it fails rather than wrongly succeeds.
    fn version_of(record: RecordRead, stamp: Stamp) -> u64 {
        match record {
            RecordRead::Found(r) if r.stamp == stamp => r.version,
            RecordRead::Found(r) if r.prev == Some(stamp) => r.version.saturating_sub(1).max(1),
            RecordRead::Found(r) => r.version.saturating_add(1),
            RecordRead::Missing | RecordRead::Unsettled => 1,
        }
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
            dir_syncs: Arc::default(),
            #[cfg(test)]
            slow_flush: Duration::ZERO,
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
        let mut record = read_record(&record_path);
        // A record that does not read whole is, almost always, being written in place by a
        // save right now: read it again. One that stays unsettled counts as none (version 1,
        // never newer than the text), and reads never wait for a lock.
        for _ in 0..3 {
            if record != RecordRead::Unsettled {
                break;
            }
            std::thread::yield_now();
            record = read_record(&record_path);
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
        use rustix::fs::{Mode, OFlags, ResolveFlags};
        use rustix::io::{Errno, ReadWriteFlags};
        let name = match id::encode_id(id) {
            Ok(name) => name,
            Err(e) => return Some(Err(DirError::InvalidId(e))),
        };
        let path = self.root.join(&name);
        let corrupt = |reason: String| {
            Some(Err(DirError::Corrupt {
                file: path.clone(),
                reason,
            }))
        };
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat2(
            rustix::fs::CWD,
            &path,
            flags,
            Mode::empty(),
            ResolveFlags::CACHED,
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Some(Ok(None)),
            Err(Errno::LOOP) => return corrupt(not_regular(Kind::Link)),
            // EAGAIN: not all cached. ENOSYS, EINVAL: a kernel before 5.12. Anything else:
            // the blocking read reports it the way it always does.
            Err(_) => return None,
        };
        let file = File::from(fd);
        let meta = file.metadata().ok()?;
        if !meta.is_file() {
            return corrupt(not_regular(Kind::of(meta.file_type())));
        }
        if meta.len() > NOWAIT_READ_MAX_BYTES {
            return None;
        }
        // The length `stat` saw, in one read: a Task file is never written once in place (it
        // appears by a rename), so nothing is asked for past it to find the end.
        let mut bytes = vec![0u8; meta.len() as usize];
        let mut filled = 0;
        while filled < bytes.len() {
            match rustix::io::preadv2(
                &file,
                &mut [io::IoSliceMut::new(&mut bytes[filled..])],
                filled as u64,
                ReadWriteFlags::NOWAIT,
            ) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(Errno::INTR) => {}
                Err(_) => return None, // EAGAIN: some page is not cached
            }
        }
        bytes.truncate(filled);
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => return corrupt(format!("not UTF-8 ({e})")),
        };
        Some(self.checked_text(id, &path, text).map(Some))
    }

    /// The Task file `name`, checked to hold the Task `id`, with its stamp; `None` if missing.
    fn read_task(&self, id: &str, name: &str) -> Result<Option<(String, Stamp)>, DirError> {
        let path = self.root.join(name);
        let Some((text, stamp)) = read_text(&path)? else {
            return Ok(None);
        };
        Ok(Some((self.checked_text(id, &path, text)?, stamp)))
    }

    /// A Task file's text as a get returns it: checked to be the Task `id`
    /// ([`check_task_file`]) unless the caller checks it ([`DirStore::with_gets_checked_by_caller`]).
    fn checked_text(&self, id: &str, path: &Path, text: String) -> Result<String, DirError> {
        if self.check_gets {
            check_task_file(id, path, text)
        } else {
            Ok(text)
        }
    }

    /// One page of the Tasks matching `query`, newest status timestamp first (see
    /// [`crate::query`]).
    ///
    /// Reads every Task file in the directory (temp and foreign files are skipped) but keeps
    /// only the page's texts: memory is bounded by the page, not by the directory. A Task file
    /// that cannot be read as a Task is an error naming it, never silently left out.
    pub fn list_texts(&self, query: &ListQuery) -> Result<TextPage, DirError> {
        let mut page = PageCollector::new(query).map_err(DirError::InvalidQuery)?;
        let entries = fs::read_dir(&self.root).map_err(|source| DirError::Io {
            op: "list",
            file: self.root.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| DirError::Io {
                op: "list",
                file: self.root.clone(),
                source,
            })?;
            let name = entry.file_name();
            let Some(name) = name.to_str().filter(|n| id::is_task_file_name(n)) else {
                continue;
            };
            let path = entry.path();
            let Some((text, _)) = read_text(&path)? else {
                continue;
            }; // deleted meanwhile
            let corrupt = |reason: String| DirError::Corrupt {
                file: path.clone(),
                reason,
            };
            let (stored_id, head) =
                task::check_list_head(&text).map_err(|e| corrupt(e.to_string()))?;
            if id::encode_id(&stored_id).ok().as_deref() != Some(name) {
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

    /// Removes the Task with this id: `true` if there was one. Takes the Task's lock, so it
    /// never interleaves with a save of the same id.
    pub fn delete(&self, id: &str) -> Result<bool, DirError> {
        let name = id::encode_id(id).map_err(DirError::InvalidId)?;
        let (record_name, lock_name) = side_names(&name);
        let path = self.root.join(&name);
        let lock = self.lock(&lock_name)?;
        let existed = match fs::remove_file(&path) {
            Ok(()) => true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(source) => {
                self.unlock(lock);
                return Err(DirError::Io {
                    op: "delete",
                    file: path,
                    source,
                });
            }
        };
        // The record goes after the Task file: a crash in between leaves a record without a
        // Task, which reads as no Task.
        let _ = fs::remove_file(self.root.join(&record_name));
        let synced = if existed && self.durability == Durability::Full {
            sync_dir(&self.root).map_err(|source| DirError::Io {
                op: "sync directory",
                file: self.root.clone(),
                source,
            })
        } else {
            Ok(())
        };
        self.unlock(lock);
        synced.map(|()| existed)
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
    /// in one step. Then a directory sync (shared with the saves into the same directory that
    /// are waiting for one at the same time).
    pub fn save_checked_if(&self, id: &str, text: &str, expect: Expect) -> Result<u64, DirError> {
        let name = id::encode_id(id).map_err(DirError::InvalidId)?;
        let (record_name, lock_name) = side_names(&name);
        let target = self.root.join(&name);
        let record_path = self.root.join(&record_name);
        let mut lock = self.lock(&lock_name)?;
        // The Task file this save replaces, held open across the rename (see
        // [`hold_for_replace`]) and let go only after it.
        let mut replaced = None;
        let result = (|| {
            let io_err = |op, file: &Path, source| DirError::Io {
                op,
                file: file.to_path_buf(),
                source,
            };
            let (record, in_place) = open_record_for_save(&record_path);
            let (found, held) = hold_for_replace(&target);
            replaced = held;
            let found = match found {
                Ok(stamp) => Some(stamp),
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(source) => return Err(io_err("replace", &target, source)),
            };
            let current = found.map(|stamp| Record::version_of(record, stamp));
            if !expect.holds(current) {
                return Err(DirError::Conflict {
                    id: id.to_owned(),
                    file: target.clone(),
                    expected: expect,
                    current,
                });
            }
            let version = current.map_or(1, |v| v.saturating_add(1));
            let stamp = self.write_lock(&mut lock, text.as_bytes(), found)?;
            let record_text = Record {
                version,
                stamp,
                prev: found,
            }
            .to_text();
            // Nothing has changed yet; from here on, the record and then the Task file.
            self.check_young(&lock)?;
            // The record first, in place when this store wrote it (one short write, no new
            // file); a missing or foreign one is replaced by a rename. A reader between this
            // and the rename below sees the record and the file it replaces: one version less.
            // A record written in place is flushed after the rename, beside the directory
            // flush (see `sync_meanwhile`): the acknowledgement waits for both.
            // A brand-new Task's record (no record, no Task file) is created in place too: if
            // a power loss keeps the Task file and not the record's text, it reads as version
            // 1, which it is. A record that replaces another is written whole and flushed
            // before it is renamed into place, so the old one is never lost for nothing.
            let in_place = match (in_place, record, found) {
                (None, RecordRead::Missing, None) => create_new(&record_path).ok(),
                (in_place, ..) => in_place,
            };
            let written_in_place = match in_place {
                Some(mut file) => {
                    file.write_from_start(record_text.as_bytes())
                        .map_err(|e| io_err("write", &record_path, e))?;
                    Some(file)
                }
                None => {
                    self.replace_by_temp(&record_path, record_text.as_bytes())?;
                    None
                }
            };
            self.check_held(&lock)?;
            fs::rename(&lock.path, &target).map_err(|e| io_err("rename into", &target, e))?;
            lock.renamed = true;
            Ok((version, written_in_place))
        })();
        self.unlock(lock);
        drop(replaced);
        let (version, written_in_place) = result?;
        if self.durability == Durability::Full {
            let flush_record = || match &written_in_place {
                Some(file) => file.sync_data().map_err(|source| DirError::Io {
                    op: "write",
                    file: record_path.clone(),
                    source,
                }),
                None => Ok(()),
            };
            sync_meanwhile(&self.dir_syncs, &self.root, flush_record)?;
        }
        Ok(version)
    }

    /// Writes the Task text into the lock just taken and flushes it (full durability): the
    /// stamp the Task file will have. The stamp must differ from that of the Task file it
    /// replaces (`replacing`), which readers tell from it by the stamp alone: when the two
    /// agree (the same length, written within one tick of the file system's clock), the
    /// modification time is moved on by the least the file system keeps, before the flush,
    /// which then writes it to disk with the file's length.
    ///
    /// A lock renewed after a flush that outlasted the lease may have been broken and taken
    /// meanwhile: it is renewed first and then looked at, and if it is no longer ours the save
    /// gives up here ([`lock_lost`]), before it writes the record another writer's save relies
    /// on. Looking after the renewal is what makes this sound: a breaker moves a lock aside
    /// and removes it only if it is still stale there, and puts back one that was renewed.
    fn write_lock(
        &self,
        lock: &mut Lock,
        text: &[u8],
        replacing: Option<Stamp>,
    ) -> Result<Stamp, DirError> {
        // Captures `lock.path` alone, so `lock.file` stays free to write.
        let io = |source| DirError::Io {
            op: "write",
            file: lock.path.clone(),
            source,
        };
        lock.file.write_from_start(text).map_err(io)?;
        let first = text.first().copied().unwrap_or(b'{');
        let stamp_of = |file: &Writable| match replacing {
            Some(old) => stamp_apart(file, old, first),
            None => file.stamp(),
        };
        let mut stamp = stamp_of(&lock.file).map_err(io)?;
        if self.durability == Durability::Full {
            lock.file.sync_data().map_err(io)?;
            #[cfg(test)]
            std::thread::sleep(self.slow_flush);
        }
        // Breakers age a lock by its modification time, which the flush did not move: after a
        // slow flush (a loaded disk) the lock is renewed, its time moved to now (its first byte
        // written again, `stamp_apart`), so that the save
        // is not given up at half the lease for the disk's slowness alone. The new time is not
        // flushed (that would be another flush, as slow): a power loss before the file system
        // writes it back leaves the old time, and the Task then reads one version past the
        // record, which is never older than it is.
        if lock.acquired.elapsed() > self.lease / 4 {
            let renewed = std::time::Instant::now();
            lock.file.rewrite_first(first).map_err(io)?;
            stamp = stamp_of(&lock.file).map_err(io)?;
            if !lock.is_ours() {
                return Err(lock_lost(lock, self.lease));
            }
            lock.acquired = renewed;
        }
        Ok(stamp)
    }

    /// Replaces `target` with `contents`: a fresh temp file, written, flushed under full
    /// durability and renamed over it (the directory is flushed by the save, after). On failure
    /// the temp file is removed and `target` is untouched.
    fn replace_by_temp(&self, target: &Path, contents: &[u8]) -> Result<(), DirError> {
        let (path, mut file) = create_temp(&self.root)?;
        let replaced = file
            .write_from_start(contents)
            .and_then(|()| match self.durability {
                Durability::Full => file.sync_data(),
                Durability::Relaxed => Ok(()),
            })
            .map_err(|source| DirError::Io {
                op: "write",
                file: path.clone(),
                source,
            })
            .and_then(|()| {
                fs::rename(&path, target).map_err(|source| DirError::Io {
                    op: "rename into",
                    file: target.to_path_buf(),
                    source,
                })
            });
        if replaced.is_err() {
            let _ = fs::remove_file(&path);
        }
        replaced
    }

    /// Takes the lock `name`: a file created exclusively (and kept open: a save writes its Task
    /// text into it). A lock whose file was last changed longer than the lease ago was left by
    /// a crashed writer and is broken. Waits (backing off up to 20 ms) while a live writer
    /// holds it, at most three leases.
    fn lock(&self, name: &str) -> Result<Lock, DirError> {
        let path = self.root.join(name);
        let started = std::time::Instant::now();
        let mut pause = Duration::from_micros(200);
        loop {
            match create_new(&path) {
                Ok(file) => {
                    return Ok(Lock {
                        identity: file.identity(),
                        path,
                        acquired: std::time::Instant::now(),
                        file,
                        renamed: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(source) => {
                    return Err(DirError::Io {
                        op: "create lock",
                        file: path,
                        source,
                    });
                }
            }
            if self.is_stale(&path) {
                self.break_lock(&path);
                continue;
            }
            if started.elapsed() > self.lease * 3 {
                return Err(DirError::Io {
                    op: "lock",
                    file: path,
                    source: io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "another writer kept the task locked for over {:?}",
                            self.lease * 3
                        ),
                    ),
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// Whether what is at `path` (not followed) was last changed longer than the lease ago.
    fn is_stale(&self, path: &Path) -> bool {
        let Ok(stamp) = stamp_at(path) else {
            return false;
        };
        let modified = SystemTime::UNIX_EPOCH
            + Duration::from_nanos(u64::try_from(stamp.mtime_ns).unwrap_or_default());
        SystemTime::now()
            .duration_since(modified)
            .is_ok_and(|age| age > self.lease)
    }

    /// Breaks a stale lock: moves it aside (one breaker wins the rename) and removes it if
    /// what it moved is still stale; a lock that is not (the stale one was broken and retaken
    /// meanwhile) is put back.
    fn break_lock(&self, path: &Path) {
        let aside = self
            .root
            .join(format!("{TEMP_PREFIX}{:032x}", random_u128()));
        if fs::rename(path, &aside).is_err() {
            return; // gone already
        }
        if self.is_stale(&aside) {
            let _ = fs::remove_file(&aside);
        } else {
            let _ = fs::rename(&aside, path);
        }
    }

    /// Fails unless `lock` was taken less than half the lease ago, so that no one may have
    /// broken it yet (breakers wait for a whole lease since its last change).
    fn check_young(&self, lock: &Lock) -> Result<(), DirError> {
        if lock.acquired.elapsed() < self.lease / 2 {
            return Ok(());
        }
        Err(lock_lost(lock, self.lease))
    }

    /// Fails unless `lock` is still ours and young enough that no one may break it before the
    /// rename that follows: the last check before a save changes the Task file.
    fn check_held(&self, lock: &Lock) -> Result<(), DirError> {
        if lock.is_ours() && lock.acquired.elapsed() < self.lease / 2 {
            return Ok(());
        }
        Err(lock_lost(lock, self.lease))
    }

    /// Releases a lock a save did not rename over its Task file (a delete, a refused or failed
    /// save): removed if it is still ours.
    fn unlock(&self, lock: Lock) {
        if !lock.renamed && lock.is_ours() {
            let _ = fs::remove_file(&lock.path);
        }
    }

    /// Removes temp files left by writers that crashed before their rename: those whose last
    /// change is older than `older_than`. Younger ones may belong to a live writer and stay.
    /// Locks left by crashed writers (older than the lease) are broken too.
    /// Returns how many temp files were removed; errors on single entries are skipped.
    pub fn sweep_temp_files(&self, older_than: Duration) -> Result<usize, DirError> {
        let entries = fs::read_dir(&self.root).map_err(|source| DirError::Io {
            op: "list",
            file: self.root.clone(),
            source,
        })?;
        let now = SystemTime::now();
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            if name.starts_with(".~") && name.ends_with(".l") {
                if self.is_stale(&entry.path()) {
                    self.break_lock(&entry.path());
                }
                continue;
            }
            if !name.starts_with(TEMP_PREFIX) {
                continue;
            }
            let stale = entry
                .metadata()
                .and_then(|m| m.modified())
                .map(|modified| now.duration_since(modified).unwrap_or_default() >= older_than)
                .unwrap_or(false);
            if stale && fs::remove_file(entry.path()).is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
    }
}

/// A held lock: its file, kept open (a save writes its Task text into it).
struct Lock {
    path: PathBuf,
    acquired: std::time::Instant,
    /// The lock file's identity (device and inode), if it could be told when it was created.
    identity: Option<(u64, u64)>,
    /// Open until the lock is released, so that no other file can be given its identity: the
    /// name still naming that identity means the lock is still ours.
    file: Writable,
    /// Renamed over its Task file by the save: released, nothing left to remove.
    renamed: bool,
}

impl Lock {
    /// Whether the lock file is still ours: not broken by a saver that judged it stale (and
    /// perhaps retaken since). By the identity of the file at its name, which is one look
    /// (`statx`); where that cannot be told, by its stamp (length and modification time).
    fn is_ours(&self) -> bool {
        let by_identity = self
            .identity
            .and_then(|mine| match identity_at(&self.path)? {
                Ok(there) => Some(there == mine),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Some(false),
                Err(_) => None,
            });
        by_identity.unwrap_or_else(|| {
            matches!((stamp_at(&self.path), self.file.stamp()), (Ok(there), Ok(mine)) if there == mine)
        })
    }
}

/// The error of a save that held its lock past half the lease, or lost it.
fn lock_lost(lock: &Lock, lease: Duration) -> DirError {
    DirError::Io {
        op: "save under lock",
        file: lock.path.clone(),
        source: io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the lock was held past half its lease ({:?}) or taken over; nothing was saved",
                lease / 2
            ),
        ),
    }
}

/// The stamp of `file`, made to differ from `old` if it does not. Natively its modification
/// time is first set 1 ns past `old`'s (`futimens`); where that does not part them (a file
/// system with coarser times) and inside a component, its first byte (`first`, as written) is
/// written again, which moves its modification time to now, after a pause that lets the file
/// system's clock tick (1 ms, doubling). Components do not use WASI `set-times`: jco's
/// preview2-shim sets those times in the wrong unit.
fn stamp_apart(file: &Writable, old: Stamp, first: u8) -> io::Result<Stamp> {
    let stamp = file.stamp()?;
    if stamp != old {
        return Ok(stamp);
    }
    #[cfg(not(target_os = "wasi"))]
    if let (Writable::Std(std_file), Ok(ns)) = (file, u64::try_from(old.mtime_ns + 1)) {
        std_file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_nanos(ns))?;
        return rewrite_until_apart(file, old, first, file.stamp()?);
    }
    rewrite_until_apart(file, old, first, stamp)
}

/// [`stamp_apart`] by writing the first byte again, after pauses, until the stamp (`stamp`
/// now) differs from `old`.
fn rewrite_until_apart(
    file: &Writable,
    old: Stamp,
    first: u8,
    mut stamp: Stamp,
) -> io::Result<Stamp> {
    let mut pause = Duration::from_millis(1);
    while stamp == old {
        if pause > Duration::from_secs(2) {
            return Err(io::Error::other(
                "the file system keeps no modification time that tells this save from the last one",
            ));
        }
        std::thread::sleep(pause);
        pause *= 2;
        file.rewrite_first(first)?;
        stamp = file.stamp()?;
    }
    Ok(stamp)
}

/// The stamp of what `path` names, not followed.
fn stamp_at(path: &Path) -> io::Result<Stamp> {
    #[cfg(all(target_os = "wasi", target_env = "p2"))]
    if let Some(found) = crate::wasi_fs::stamp_of(path) {
        return found;
    }
    fs::symlink_metadata(path).map(|meta| Stamp::of(&meta))
}

/// At most `limit` bytes from the start of `file`, of which `expected` are expected (its length
/// when looked at): in one read when `limit` is `expected` (reading ends at the limit without
/// asking the system), else with one more read to see the end.
fn read_prefix(mut file: &File, limit: u64, expected: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(expected.min(limit) as usize);
    (&mut file).take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The version record at `path`: `Missing` if there is none (or it is not a regular file),
/// `Unsettled` if it does not read as a record whose check holds (torn by a save writing it in
/// place right now, or cut short by a power loss under relaxed durability).
fn read_record(path: &Path) -> RecordRead {
    match open_for_read(path) {
        Ok(file) => record_in(file.read_up_to(RECORD_READ_BYTES as u64)),
        Err(_) => RecordRead::Missing,
    }
}

/// The most of a version record that is read: twice the length of one this store writes.
const RECORD_READ_BYTES: usize = 2 * RECORD_LEN;

/// What the regular file `file` holds, read as a version record.
fn record_text_in(file: &mut File) -> RecordRead {
    record_in(read_prefix(
        file,
        RECORD_READ_BYTES as u64,
        RECORD_LEN as u64,
    ))
}

/// The first bytes of a version record, read as one.
fn record_in(bytes: io::Result<Vec<u8>>) -> RecordRead {
    let Some(text) = bytes.ok().and_then(|bytes| String::from_utf8(bytes).ok()) else {
        return RecordRead::Unsettled;
    };
    match Record::parse(&text) {
        Some(record) => RecordRead::Found(record),
        None => RecordRead::Unsettled,
    }
}

/// The version record at `path` as a saver holding the lock reads it, opened once: what it
/// holds, and the file itself, back at its start, when the save may overwrite it in place (a
/// regular file of exactly [`RECORD_LEN`] bytes, one this store wrote; never through a link and
/// never blocking on a FIFO). Without a file the save replaces the record by a rename.
fn open_record_for_save(path: &Path) -> (RecordRead, Option<Writable>) {
    #[cfg(all(target_os = "wasi", target_env = "p2"))]
    if let Some(opened) = crate::wasi_fs::open_for_update(path) {
        let Ok(file) = opened else {
            // Missing, a link, or not writable here: read it as any reader would.
            return (read_record(path), None);
        };
        let record = record_in(file.read_up_to(RECORD_READ_BYTES as u64));
        let rewritable = file.stat.size == RECORD_LEN as u64;
        return (
            record,
            rewritable.then(|| Writable::Wasi(file.into_writer())),
        );
    }
    let mut options = OpenOptions::new();
    options.read(true).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NOFOLLOW | libc::O_NONBLOCK,
    );
    #[cfg(not(unix))]
    if !fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return (read_record(path), None);
    }
    let Ok(mut file) = options.open(path) else {
        // Missing, a link, or not writable here: read it as any reader would.
        return (read_record(path), None);
    };
    let meta = match file.metadata() {
        Ok(meta) if meta.is_file() => meta,
        _ => return (RecordRead::Missing, None),
    };
    let record = record_text_in(&mut file);
    let rewritable = meta.len() == RECORD_LEN as u64 && file.seek(io::SeekFrom::Start(0)).is_ok();
    (record, rewritable.then_some(Writable::Std(file)))
}

/// The stamp of what is at `path` (not followed), and on Linux a handle on it (`O_PATH`:
/// nothing is opened for reading, so a FIFO or a device behaves as a file) to be kept past a
/// rename over it. A directory there is an error (`IsADirectory`): no rename could replace it.
///
/// A rename that replaces the last name of a file frees that file inside the rename, while the
/// kernel holds the directory's lock: its blocks are released there, and on a file system that
/// discards freed blocks at once (ext4 mounted with `discard`, without a journal) that is a
/// synchronous device command, which every other save into the directory then waits behind.
/// Held open, the file is freed when the handle is closed, after the rename, outside that lock.
fn hold_for_replace(path: &Path) -> (io::Result<Stamp>, Option<File>) {
    let not_dir = |(stamp, is_dir): (Stamp, bool)| {
        if is_dir {
            Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "is a directory, which no Task file can replace",
            ))
        } else {
            Ok(stamp)
        }
    };
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        match fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_NOFOLLOW)
            .open(path)
        {
            Ok(file) => {
                let stamp = file
                    .metadata()
                    .and_then(|meta| not_dir((Stamp::of(&meta), meta.is_dir())));
                return (stamp, Some(file));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return (Err(e), None),
            // Anything else: look without holding, as elsewhere.
            Err(_) => {}
        }
    }
    // Inside a component the host holds it ([`crate::wasi_fs`] looks in one host call).
    #[cfg(all(target_os = "wasi", target_env = "p2"))]
    if let Some(found) = crate::wasi_fs::stamp_and_dir_of(path) {
        return (found.and_then(not_dir), None);
    }
    (
        fs::symlink_metadata(path).and_then(|meta| not_dir((Stamp::of(&meta), meta.is_dir()))),
        None,
    )
}

/// Atomically replaces `dir/name` with `contents`: a unique temp file in `dir`, written, flushed
/// (under [`Durability::Full`]), renamed over `name`, then the directory flushed. On failure the
/// temp file is removed and `dir/name` is untouched.
pub fn write_atomically(
    dir: &Path,
    name: &str,
    contents: &[u8],
    durability: Durability,
) -> Result<(), DirError> {
    let target = dir.join(name);
    let (temp_path, mut temp) = create_temp(dir)?;
    let io_err = |op, file: &Path, source| DirError::Io {
        op,
        file: file.to_path_buf(),
        source,
    };
    let result = temp
        .write_from_start(contents)
        .and_then(|()| match durability {
            Durability::Full => temp.sync_data(),
            Durability::Relaxed => Ok(()),
        })
        .map_err(|e| io_err("write", &temp_path, e))
        .and_then(|()| {
            drop(temp);
            fs::rename(&temp_path, &target).map_err(|e| io_err("rename into", &target, e))
        });
    if let Err(e) = result {
        // Best effort: the temp file is hidden and swept later if this fails too.
        let _ = fs::remove_file(&temp_path);
        return Err(e);
    }
    if durability == Durability::Full {
        sync_dir(dir).map_err(|e| io_err("sync directory", dir, e))?;
    }
    Ok(())
}

/// Creates `dir` and any missing parents readable by their owner only (0700 on Unix); a
/// directory that exists keeps its mode, which is its owner's choice.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

fn create_temp(dir: &Path) -> Result<(PathBuf, Writable), DirError> {
    let mut last_err = None;
    for _ in 0..16 {
        let path = dir.join(format!("{TEMP_PREFIX}{:032x}", random_u128()));
        match create_new(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_err = Some((path, e)),
            Err(source) => {
                return Err(DirError::Io {
                    op: "create temp file",
                    file: path,
                    source,
                });
            }
        }
    }
    let (file, source) = last_err.expect("the loop ran at least once");
    Err(DirError::Io {
        op: "create temp file",
        file,
        source,
    })
}

/// The file's text: `None` if it does not exist; `Corrupt` if it is not a regular file (a
/// symbolic link, which is never followed, a FIFO, a device, a directory), is larger than
/// [`MAX_TASK_FILE_BYTES`] or is not UTF-8. Whoever else writes the directory (another program,
/// a store component), reading a Task file never blocks and never reads without bound.
/// Also returns the stamp (length, modification time) of the file it read.
fn read_text(path: &Path) -> Result<Option<(String, Stamp)>, DirError> {
    let corrupt = |reason: String| DirError::Corrupt {
        file: path.to_path_buf(),
        reason,
    };
    let io_error = |source: io::Error| match source.kind() {
        io::ErrorKind::NotFound => Ok(None),
        _ => Err(DirError::Io {
            op: "read",
            file: path.to_path_buf(),
            source,
        }),
    };
    let file = match open_for_read(path) {
        Ok(file) => file,
        Err(Refused::Io(e)) => return io_error(e),
        Err(Refused::Kind(kind)) => return Err(corrupt(not_regular(kind))),
    };
    let stamp = file.stamp;
    if stamp.size > MAX_TASK_FILE_BYTES {
        return Err(corrupt(too_large(stamp.size)));
    }
    // The length `stat` saw (within the cap); a file it saw empty is read to its end, and one
    // byte past the cap at the most.
    let bytes = match file.read_up_to(MAX_TASK_FILE_BYTES + 1) {
        Ok(bytes) => bytes,
        Err(e) => return io_error(e),
    };
    if bytes.len() as u64 > MAX_TASK_FILE_BYTES {
        return Err(corrupt(too_large(bytes.len() as u64)));
    }
    String::from_utf8(bytes)
        .map(|text| Some((text, stamp)))
        .map_err(|e| corrupt(format!("not UTF-8 ({e})")))
}

/// The text of the Task file at `path`, checked to be a Task whose `id` is `id`.
fn check_task_file(id: &str, path: &Path, text: String) -> Result<String, DirError> {
    let stored_id = task::check_task_text(&text).map_err(|e| DirError::Corrupt {
        file: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    if stored_id != id {
        return Err(DirError::Corrupt {
            file: path.to_path_buf(),
            reason: id_mismatch(id, &stored_id),
        });
    }
    Ok(text)
}

fn not_regular(kind: Kind) -> String {
    let what = match kind {
        Kind::Link => "a symbolic link, which is never followed",
        Kind::Dir => "a directory",
        Kind::Other => "not a regular file (a FIFO, a socket or a device)",
    };
    format!("is {what}")
}

fn too_large(size: u64) -> String {
    format!("is {size} bytes, over the largest Task file read ({MAX_TASK_FILE_BYTES} bytes)")
}

/// What a name that is not a regular file is instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Link,
    Dir,
    Other,
}

impl Kind {
    fn of(kind: fs::FileType) -> Kind {
        if kind.is_symlink() {
            Kind::Link
        } else if kind.is_dir() {
            Kind::Dir
        } else {
            Kind::Other
        }
    }
}

/// Why [`open_for_read`] did not open a file.
pub(crate) enum Refused {
    Io(io::Error),
    /// Not a regular file.
    Kind(Kind),
}

/// A regular file opened for reading, with its stamp when it was opened.
struct Readable {
    stamp: Stamp,
    file: ReadableFile,
}

enum ReadableFile {
    Std(File),
    #[cfg(all(target_os = "wasi", target_env = "p2"))]
    Wasi(crate::wasi_fs::WasiFile),
}

impl Readable {
    /// At most `limit` bytes from the start of the file: the length its `stat` saw when it
    /// was opened, in one read. The files read this way are never written once in place (a
    /// Task file appears by a rename; a version record is overwritten at its fixed length), so
    /// that length is the file's: one that shrank since is read to its end, one that grew as it
    /// was. A file `stat` saw empty is read to its end.
    fn read_up_to(self, limit: u64) -> io::Result<Vec<u8>> {
        match self.file {
            ReadableFile::Std(file) => match self.stamp.size.min(limit) {
                // The length `stat` saw, in one read (see `wasi_fs::WasiFile::read_up_to`):
                // past it, `take` ends the read without asking the system for the end.
                0 => read_prefix(&file, limit, 0),
                seen => read_prefix(&file, seen, seen),
            },
            #[cfg(all(target_os = "wasi", target_env = "p2"))]
            ReadableFile::Wasi(file) => file.read_up_to(limit),
        }
    }
}

/// Opens `path` for reading if it is a regular file: never through a final symbolic link, and
/// never blocking on a FIFO. Natively one open (`O_NOFOLLOW | O_NONBLOCK`) and one `fstat`;
/// inside a component through `wasi:filesystem` directly ([`crate::wasi_fs`]).
fn open_for_read(path: &Path) -> Result<Readable, Refused> {
    #[cfg(all(target_os = "wasi", target_env = "p2"))]
    if let Some(opened) = crate::wasi_fs::open(path) {
        return opened.map(|file| Readable {
            stamp: file.stamp(),
            file: ReadableFile::Wasi(file),
        });
    }
    let file = open_regular(path)?;
    let meta = file.metadata().map_err(Refused::Io)?;
    if !meta.is_file() {
        return Err(Refused::Kind(Kind::of(meta.file_type())));
    }
    Ok(Readable {
        stamp: Stamp::of(&meta),
        file: ReadableFile::Std(file),
    })
}

/// Opens for reading without following a final symbolic link and without blocking on a FIFO;
/// the caller's `fstat` then refuses whatever is not a regular file. One open, no extra stat.
#[cfg(unix)]
fn open_regular(path: &Path) -> Result<File, Refused> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => Refused::Kind(Kind::Link),
            _ => Refused::Io(e),
        })
}

/// Inside a component the host resolves every path beneath the granted directory, and there is
/// no `O_NOFOLLOW`: what the name is gets looked at first, so a link or a FIFO is refused
/// without opening what it names.
#[cfg(not(unix))]
fn open_regular(path: &Path) -> Result<File, Refused> {
    let kind = fs::symlink_metadata(path).map_err(Refused::Io)?.file_type();
    if !kind.is_file() {
        return Err(Refused::Kind(Kind::of(kind)));
    }
    File::open(path).map_err(Refused::Io)
}

fn id_mismatch(wanted: &str, found: &str) -> String {
    format!("holds task {found:?}, not {wanted:?}")
}

/// Flushes the directory `dir`, shared with the saves into it that wait for a flush at the same
/// time ([`SharedFlush`]: group commit), doing `meanwhile` (a save flushing its version record)
/// while the flush this call waits for may already run.
fn sync_meanwhile(
    shared: &SharedFlush,
    dir: &Path,
    meanwhile: impl FnOnce() -> Result<(), DirError>,
) -> Result<(), DirError> {
    let mut other = Ok(());
    let synced = shared.run(|| sync_dir(dir), || other = meanwhile());
    other?;
    synced.map_err(|source| DirError::Io {
        op: "sync directory",
        file: dir.to_path_buf(),
        source,
    })
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(all(target_os = "wasi", target_env = "p2"))]
    if let Some(synced) = crate::wasi_fs::sync_dir(dir) {
        return synced;
    }
    File::open(dir)?.sync_all()
}

/// A file a save writes (its temp file, the lock, the version record it overwrites in place):
/// natively a [`File`], inside a component a `wasi:filesystem` descriptor ([`crate::wasi_fs`]:
/// one host call per write, and a flush of the data that is `sync-data`, not `sync`).
enum Writable {
    Std(File),
    #[cfg(all(target_os = "wasi", target_env = "p2"))]
    Wasi(crate::wasi_fs::WasiWriter),
}

impl Writable {
    /// Writes all of `bytes` from the start of the file: a file just created, or a version
    /// record [`open_record_for_save`] left at its start.
    fn write_from_start(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Writable::Std(file) => file.write_all(bytes),
            #[cfg(all(target_os = "wasi", target_env = "p2"))]
            Writable::Wasi(file) => file.write_all_at(bytes, 0),
        }
    }

    /// Flushes the file's data (and length) to disk.
    fn sync_data(&self) -> io::Result<()> {
        match self {
            Writable::Std(file) => file.sync_data(),
            #[cfg(all(target_os = "wasi", target_env = "p2"))]
            Writable::Wasi(file) => file.sync_data(),
        }
    }

    /// The file's identity (device and inode), if it can be told here.
    fn identity(&self) -> Option<(u64, u64)> {
        match self {
            #[cfg(unix)]
            Writable::Std(file) => {
                use std::os::unix::fs::MetadataExt;
                file.metadata().ok().map(|meta| (meta.dev(), meta.ino()))
            }
            #[cfg(not(unix))]
            Writable::Std(_) => None,
            #[cfg(all(target_os = "wasi", target_env = "p2"))]
            Writable::Wasi(file) => file.identity().ok(),
        }
    }

    /// Writes the file's first byte again (`first`, the byte that is there): its content stays
    /// as it is, its modification time moves to now.
    fn rewrite_first(&self, first: u8) -> io::Result<()> {
        match self {
            #[cfg(unix)]
            Writable::Std(file) => std::os::unix::fs::FileExt::write_all_at(file, &[first], 0),
            #[cfg(not(unix))]
            Writable::Std(file) => {
                let mut file: &File = file;
                file.seek(io::SeekFrom::Start(0))?;
                file.write_all(&[first])?;
                file.seek(io::SeekFrom::End(0)).map(|_| ())
            }
            #[cfg(all(target_os = "wasi", target_env = "p2"))]
            Writable::Wasi(file) => file.write_all_at(&[first], 0),
        }
    }

    /// The file's stamp as it is now.
    fn stamp(&self) -> io::Result<Stamp> {
        match self {
            Writable::Std(file) => file.metadata().map(|meta| Stamp::of(&meta)),
            #[cfg(all(target_os = "wasi", target_env = "p2"))]
            Writable::Wasi(file) => file.stamp(),
        }
    }
}

/// The identity of what `path` names (not followed), as [`Writable::identity`] tells it;
/// `None` where that cannot be told.
fn identity_at(path: &Path) -> Option<io::Result<(u64, u64)>> {
    #[cfg(all(target_os = "wasi", target_env = "p2"))]
    if let Some(found) = crate::wasi_fs::identity_at(path) {
        return Some(found);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(fs::symlink_metadata(path).map(|meta| (meta.dev(), meta.ino())))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Creates `path` for writing, failing if anything is there (never through a link). Task
/// files, locks and records are their owner's alone (0600 on Unix), whatever the umask lets
/// through; inside a component the host decides.
fn create_new(path: &Path) -> io::Result<Writable> {
    #[cfg(all(target_os = "wasi", target_env = "p2"))]
    if let Some(created) = crate::wasi_fs::create_new(path) {
        return created.map(Writable::Wasi);
    }
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).map(Writable::Std)
}

/// 128 random bits from the standard library's per-process hasher keys (seeded from the OS,
/// or from `wasi:random` inside a component), a counter, and the clock.
fn random_u128() -> u128 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let hi = RandomState::new().hash_one((n, nanos));
    let lo = RandomState::new().hash_one((nanos, n, hi));
    (u128::from(hi) << 64) | u128::from(lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names in `dir`, sorted.
    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    fn store(dir: &tempfile::TempDir) -> DirStore {
        DirStore::new(dir.path(), Durability::Full)
    }

    #[test]
    fn save_writes_one_file_named_after_the_id_with_the_text_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let t = r#"{"id":"abc-123","status":{"state":"completed"}}"#;
        store(&dir).save_text(t).unwrap();
        let names = names_in(dir.path());
        // The Task file, and beside it its version record (hidden, not a Task file).
        assert_eq!(names, [".~abc-123.v", "abc-123.json"]);
        assert_eq!(
            fs::read_to_string(dir.path().join("abc-123.json")).unwrap(),
            r#"{"id":"abc-123","status":{"state":"completed"}}"#
        );
    }

    #[test]
    fn get_text_returns_what_was_saved_and_none_on_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir);
        let t = r#"{"id":"x","n":9007199254740993,"z":-0.0,"big":123456789012345678901234567890}"#;
        s.save_checked("x", t).unwrap();
        assert_eq!(s.get_text("x").unwrap().as_deref(), Some(t));
        assert_eq!(s.get_text("y").unwrap(), None);
    }

    #[test]
    fn a_file_holding_another_id_is_corrupt_not_a_hit() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.json"), r#"{"id":"b"}"#).unwrap();
        let err = store(&dir).get_text("a").unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, DirError::Corrupt { .. }), "{msg}");
        assert!(msg.contains("a.json") && msg.contains("\"b\""), "{msg}");
    }

    #[test]
    fn truncated_file_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.json"), r#"{"id":"a","status":{"#).unwrap();
        assert!(matches!(
            store(&dir).get_text("a"),
            Err(DirError::Corrupt { .. })
        ));
    }

    #[test]
    fn invalid_text_is_refused_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        for text in ["nope", "[]", "{}", r#"{"id":1}"#, r#"{"id":""}"#] {
            let err = store(&dir).save_text(text).unwrap_err();
            assert!(matches!(err, DirError::InvalidTask(_)), "{text}: {err}");
        }
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn save_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        for durability in [Durability::Full, Durability::Relaxed] {
            let s = DirStore::new(dir.path(), durability);
            for i in 0..20 {
                s.save_text(&format!(r#"{{"id":"t","i":{i}}}"#)).unwrap();
            }
        }
        let mut names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, [".~t.v", "t.json"]);
    }

    #[test]
    fn sweep_removes_only_stale_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join(".tmp-stale");
        let fresh = dir.path().join(".tmp-fresh");
        let other = dir.path().join(".other");
        for p in [&stale, &fresh, &other] {
            fs::write(p, "{").unwrap();
        }
        let old = SystemTime::now() - STALE_TEMP_AGE - Duration::from_secs(5);
        for p in [&stale, &other] {
            File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        assert_eq!(store(&dir).sweep_temp_files(STALE_TEMP_AGE).unwrap(), 1);
        assert!(!stale.exists() && fresh.exists() && other.exists());
    }

    fn ids(page: &TextPage) -> Vec<&str> {
        page.tasks.iter().map(|(id, _)| id.as_str()).collect()
    }

    #[test]
    fn list_pages_newest_first_and_delete_removes() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir);
        for i in [3, 1, 2, 5, 4] {
            s.save_text(&format!(
                r#"{{"id":"t{i}","contextId":"c{}","status":{{"state":"working","timestamp":"2025-01-0{i}T00:00:00Z"}}}}"#,
                i % 2
            ))
            .unwrap();
        }
        s.save_text(r#"{"id":"t0"}"#).unwrap();
        fs::write(dir.path().join(".tmp-x"), "{").unwrap();
        let q = ListQuery {
            page_size: 2,
            ..Default::default()
        };
        let page = s.list_texts(&q).unwrap();
        assert_eq!(ids(&page), ["t5", "t4"]);
        assert_eq!(page.total_size, 6);
        let q = ListQuery {
            page_token: page.next_page_token,
            ..q
        };
        let page = s.list_texts(&q).unwrap();
        assert_eq!(ids(&page), ["t3", "t2"]);
        let q = ListQuery {
            page_token: page.next_page_token,
            ..q
        };
        let page = s.list_texts(&q).unwrap();
        assert_eq!(ids(&page), ["t1", "t0"], "no timestamp comes last");
        assert_eq!(page.next_page_token, None);
        let q = ListQuery {
            context_id: Some("c0".into()),
            ..Default::default()
        };
        let page = s.list_texts(&q).unwrap();
        assert_eq!(ids(&page), ["t4", "t2"]);
        assert_eq!((page.next_page_token, page.total_size), (None, 2));
        let q = ListQuery {
            status_timestamp_after: Some(
                crate::query::Timestamp::parse("2025-01-04T00:00:00Z").unwrap(),
            ),
            ..Default::default()
        };
        assert_eq!(ids(&s.list_texts(&q).unwrap()), ["t5", "t4"]);
        let bad = ListQuery {
            page_token: Some("garbage".into()),
            ..Default::default()
        };
        assert!(matches!(s.list_texts(&bad), Err(DirError::InvalidQuery(_))));
        assert!(s.delete("t2").unwrap());
        assert!(!s.delete("t2").unwrap());
        assert_eq!(s.get_text("t2").unwrap(), None);
    }

    #[test]
    fn versions_count_saves_and_conditions_hold() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir);
        let t = |n: u32| format!(r#"{{"id":"v","n":{n}}}"#);
        assert_eq!(s.save_checked_if("v", &t(1), Expect::Absent).unwrap(), 1);
        assert_eq!(s.get_versioned("v").unwrap(), Some((t(1), 1)));
        let err = s.save_checked_if("v", &t(9), Expect::Absent).unwrap_err();
        assert!(
            matches!(
                err,
                DirError::Conflict {
                    current: Some(1),
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(
            s.save_checked_if("v", &t(2), Expect::Version(1)).unwrap(),
            2
        );
        let err = s
            .save_checked_if("v", &t(9), Expect::Version(1))
            .unwrap_err();
        assert!(matches!(
            err,
            DirError::Conflict {
                current: Some(2),
                ..
            }
        ));
        assert_eq!(s.save_checked("v", &t(3)).unwrap(), 3);
        assert_eq!(s.get_versioned("v").unwrap(), Some((t(3), 3)));
        let err = s
            .save_checked_if("w", &t(9), Expect::Version(3))
            .unwrap_err();
        assert!(matches!(err, DirError::Conflict { current: None, .. }));
        assert_eq!(
            s.get_text("w").unwrap(),
            None,
            "a refused save writes nothing"
        );
        assert!(s.delete("v").unwrap());
        assert_eq!(s.save_checked_if("v", &t(4), Expect::Absent).unwrap(), 1);
        // Only the Task file, its record and nothing else are left.
        let names = names_in(dir.path());
        assert_eq!(names, [".~v.v", "v.json"]);
    }

    /// The read that never waits answers exactly what the blocking read answers for every
    /// kind of file it decides on, and leaves a Task too large to check on an async worker to
    /// the blocking read.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_cached_read_agrees_with_the_blocking_read() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir);
        let text = r#"{"id":"hot","status":{"state":"working"}}"#;
        s.save_checked("hot", text).unwrap();
        // Just written: name and bytes are in the kernel's caches.
        assert_eq!(
            s.try_get_text_cached("hot").unwrap().unwrap(),
            Some(text.into())
        );
        // A miss is decided once the kernel remembers the name is absent (after a lookup that
        // may wait); before that it is left to the blocking read.
        assert!(s.try_get_text_cached("cold").is_none());
        assert_eq!(s.get_text("cold").unwrap(), None);
        assert_eq!(s.try_get_text_cached("cold").unwrap().unwrap(), None);
        assert!(matches!(
            s.try_get_text_cached(""),
            Some(Err(DirError::InvalidId(_)))
        ));
        fs::write(dir.path().join("other.json"), r#"{"id":"hot"}"#).unwrap();
        fs::write(dir.path().join("broken.json"), r#"{"id":"broken""#).unwrap();
        fs::write(
            dir.path().join("latin.json"),
            b"{\"id\":\"latin\",\"x\":\"\xe9\"}",
        )
        .unwrap();
        std::os::unix::fs::symlink("hot.json", dir.path().join("link.json")).unwrap();
        let fifo = std::ffi::CString::new(
            dir.path()
                .join("fifo.json")
                .into_os_string()
                .into_encoded_bytes(),
        )
        .unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        fs::create_dir(dir.path().join("sub.json")).unwrap();
        for id in ["other", "broken", "latin", "link", "fifo", "sub"] {
            let cached = s.try_get_text_cached(id).expect("decided without the disk");
            let blocking = s.get_text(id);
            assert_eq!(
                format!("{cached:?}"),
                format!("{blocking:?}"),
                "{id}: the same answer both ways"
            );
            assert!(
                matches!(cached, Err(DirError::Corrupt { .. })),
                "{id}: {cached:?}"
            );
        }
        let big = format!(
            r#"{{"id":"big","pad":"{}"}}"#,
            "x".repeat(NOWAIT_READ_MAX_BYTES as usize)
        );
        s.save_checked("big", &big).unwrap();
        assert!(
            s.try_get_text_cached("big").is_none(),
            "too large to check inline"
        );
        assert_eq!(s.get_text("big").unwrap(), Some(big));
    }

    /// The record's line and check are what `docs/on-disk-format.md` specifies, byte for byte,
    /// so any other implementation of the format can write records this one trusts.
    #[test]
    fn the_record_line_is_the_documented_one() {
        let stamp = Stamp {
            size: 1234,
            mtime_ns: 1_764_547_200_123_456_789,
        };
        let prev = Stamp {
            size: 1200,
            mtime_ns: 1_764_547_100_000_000_000,
        };
        let record = Record {
            version: 7,
            stamp,
            prev: Some(prev),
        };
        let line = record.to_text();
        assert_eq!(line.len(), RECORD_LEN);
        assert_eq!(
            line.trim_end(),
            r#"{"format":2,"version":7,"size":1234,"mtime_ns":1764547200123456789,"prev_size":1200,"prev_mtime_ns":1764547100000000000,"check":"e1df9f6a0b2b31fc"}"#
        );
        assert!(line.ends_with(" \n"));
        assert_eq!(Record::parse(&line), Some(record));
        // A first save's record has no previous file.
        let first = Record {
            version: 1,
            stamp,
            prev: None,
        };
        assert_eq!(
            first.to_text().trim_end(),
            r#"{"format":2,"version":1,"size":1234,"mtime_ns":1764547200123456789,"check":"9396a33d592ed634"}"#
        );
        // Format 1, which savers wrote after their rename, is still read.
        let format_1 = r#"{"format":1,"version":7,"size":1234,"mtime_ns":1764547200123456789,"check":"d88e547c369014c6"}"#;
        assert_eq!(
            Record::parse(format_1),
            Some(Record {
                version: 7,
                stamp,
                prev: None
            })
        );
    }

    /// A save whose flush takes longer than half the lease (a disk slowed by 300 ms per flush,
    /// under a 400 ms lease) renews its lock after the flush instead of giving up: it
    /// succeeds, and the version record describes the file as renewed (the next conditional
    /// save on its version holds).
    #[test]
    fn a_save_with_a_slow_flush_renews_its_lock_and_succeeds() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(&dir).with_lock_lease(Duration::from_millis(400));
        s.save_checked("h", r#"{"id":"h","n":1}"#).unwrap();
        s.slow_flush = Duration::from_millis(300);
        assert_eq!(s.save_checked("h", r#"{"id":"h","n":2}"#).unwrap(), 2);
        s.slow_flush = Duration::ZERO;
        assert_eq!(
            s.get_versioned("h").unwrap(),
            Some((r#"{"id":"h","n":2}"#.into(), 2))
        );
        assert_eq!(
            s.save_checked_if("h", r#"{"id":"h","n":3}"#, Expect::Version(2))
                .unwrap(),
            3
        );
        assert_eq!(names_in(dir.path()), [".~h.v", "h.json"]);
    }

    /// A save whose flush outlasts the whole lease (1.5 s under a 200 ms lease) has its lock
    /// broken and taken by another writer, which saves version 2. The slow save then fails as
    /// having lost its lock and writes nothing: before, it renewed the lock it no longer held
    /// and wrote its record over the other writer's, so that the Task read as version 3 and a
    /// save conditional on the acknowledged version 2 was refused.
    #[test]
    fn a_save_whose_lock_was_taken_over_during_its_flush_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let lease = Duration::from_millis(200);
        let mut slow = store(&dir).with_lock_lease(lease);
        slow.save_checked("t", r#"{"id":"t","n":1}"#).unwrap();
        slow.slow_flush = Duration::from_millis(1500);
        let other = store(&dir).with_lock_lease(lease);
        let lock = dir.path().join(".~t.l");
        let slow_result = std::thread::scope(|scope| {
            let slow = scope.spawn(|| slow.save_checked("t", r#"{"id":"t","n":"slow"}"#));
            while !lock.exists() {
                std::thread::sleep(Duration::from_millis(1));
            }
            // Waits until the slow save's lock is stale, breaks it and saves.
            assert_eq!(
                other
                    .save_checked("t", r#"{"id":"t","n":"other"}"#)
                    .unwrap(),
                2
            );
            slow.join().unwrap()
        });
        let err = slow_result.unwrap_err();
        assert!(
            matches!(&err, DirError::Io { op: "save under lock", source, .. }
                if source.kind() == io::ErrorKind::TimedOut),
            "{err}"
        );
        assert_eq!(
            other.get_versioned("t").unwrap(),
            Some((r#"{"id":"t","n":"other"}"#.into(), 2))
        );
        assert_eq!(
            other
                .save_checked_if("t", r#"{"id":"t","n":3}"#, Expect::Version(2))
                .unwrap(),
            3
        );
    }

    /// A saver that died after writing its record and before renaming its lock leaves the old
    /// Task file, which reads as the version it is (the record's previous file), and a lock
    /// holding part of its text, which is never read as the Task and is broken after the
    /// lease; the next save on that version succeeds and counts on from it.
    #[test]
    fn a_save_that_died_before_its_rename_leaves_the_old_version() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir).with_lock_lease(Duration::from_millis(200));
        s.save_checked("d", r#"{"id":"d","n":1}"#).unwrap();
        s.save_checked("d", r#"{"id":"d","n":2}"#).unwrap();
        let old = stamp_at(&dir.path().join("d.json")).unwrap();
        // What the dead saver left: its lock with half a text, and its record for version 3.
        let lock = dir.path().join(".~d.l");
        fs::write(&lock, r#"{"id":"d","n":"#).unwrap();
        let record = Record {
            version: 3,
            stamp: stamp_at(&lock).unwrap(),
            prev: Some(old),
        };
        fs::write(dir.path().join(".~d.v"), record.to_text()).unwrap();
        assert_eq!(
            s.get_versioned("d").unwrap(),
            Some((r#"{"id":"d","n":2}"#.into(), 2))
        );
        let err = s
            .save_checked_if("d", r#"{"id":"d","n":9}"#, Expect::Version(3))
            .unwrap_err();
        assert!(
            matches!(
                err,
                DirError::Conflict {
                    current: Some(2),
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(
            s.save_checked_if("d", r#"{"id":"d","n":3}"#, Expect::Version(2))
                .unwrap(),
            3
        );
        assert_eq!(
            s.get_versioned("d").unwrap(),
            Some((r#"{"id":"d","n":3}"#.into(), 3))
        );
        let names = names_in(dir.path());
        assert_eq!(names, [".~d.v", "d.json"], "the dead saver's lock is gone");
    }

    /// A save whose file would have the stamp of the file it replaces (the same length,
    /// written within one tick of the file system's clock) moves its modification time on:
    /// readers tell the two apart by their stamps alone.
    #[test]
    fn a_stamp_equal_to_the_replaced_one_is_moved_apart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut file = create_new(&path).unwrap();
        file.write_from_start(b"{}").unwrap();
        let same = file.stamp().unwrap();
        let apart = stamp_apart(&file, same, b'{').unwrap();
        assert_eq!(apart.size, same.size);
        assert_eq!(apart.mtime_ns, same.mtime_ns + 1, "natively, 1 ns on");
        assert_eq!(stamp_at(&path).unwrap(), apart, "on disk too");
        assert_eq!(fs::read(&path).unwrap(), b"{}", "the text is as it was");
        // Where setting the time cannot part them (inside a component, or a file system with
        // coarse times), writing the first byte again after a pause does.
        let again = file.stamp().unwrap();
        let rewritten = rewrite_until_apart(&file, again, b'{', again).unwrap();
        assert!(rewritten.mtime_ns > again.mtime_ns, "{rewritten:?}");
        assert_eq!(fs::read(&path).unwrap(), b"{}", "the text is as it was");
        let apart = rewritten;
        let other = Stamp {
            size: 99,
            mtime_ns: 5,
        };
        assert_eq!(
            stamp_apart(&file, other, b'{').unwrap(),
            apart,
            "left as it is"
        );
    }

    /// A reader tells the three files a record can meet apart by their stamps: the one it
    /// describes, the one its save replaced (one less: the save has not renamed its file into
    /// place yet), and any other (written after it: one more).
    #[test]
    fn the_version_follows_from_the_record_and_the_stamp() {
        let at = |size, mtime_ns| Stamp { size, mtime_ns };
        let record = RecordRead::Found(Record {
            version: 5,
            stamp: at(10, 2_000),
            prev: Some(at(10, 1_000)),
        });
        assert_eq!(Record::version_of(record, at(10, 2_000)), 5);
        assert_eq!(Record::version_of(record, at(10, 1_000)), 4);
        assert_eq!(Record::version_of(record, at(11, 2_000)), 6);
        assert_eq!(Record::version_of(RecordRead::Unsettled, at(10, 2_000)), 1);
        assert_eq!(Record::version_of(RecordRead::Missing, at(10, 2_000)), 1);
        // A record claiming a file before its first version still gives no version below 1.
        let odd = RecordRead::Found(Record {
            version: 1,
            stamp: at(10, 2_000),
            prev: Some(at(10, 1_000)),
        });
        assert_eq!(Record::version_of(odd, at(10, 1_000)), 1);
    }

    /// The first save creates the record (in place: a brand-new Task has none to lose); every
    /// later one overwrites that same file in place, at its fixed length, with a check a torn
    /// copy fails.
    #[cfg(unix)]
    #[test]
    fn the_version_record_is_overwritten_in_place_after_the_first_save() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir);
        let record = dir.path().join(".~r.v");
        s.save_checked("r", r#"{"id":"r","n":1}"#).unwrap();
        let first = fs::metadata(&record).unwrap();
        assert_eq!(first.len(), RECORD_LEN as u64);
        for n in 2..=5 {
            s.save_checked("r", &format!(r#"{{"id":"r","n":{n}}}"#))
                .unwrap();
        }
        let last = fs::metadata(&record).unwrap();
        assert_eq!((last.ino(), last.len()), (first.ino(), RECORD_LEN as u64));
        let text = fs::read_to_string(&record).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["version"], 5);
        assert_eq!(
            s.get_versioned("r").unwrap(),
            Some((r#"{"id":"r","n":5}"#.into(), 5))
        );
    }

    /// Even fields no real file has (a clock centuries off) make a record of the fixed length:
    /// never outsized, never a panic.
    #[test]
    fn the_longest_record_fits_its_fixed_length() {
        let record = Record {
            version: u64::MAX,
            stamp: Stamp {
                size: u64::MAX,
                mtime_ns: i128::MIN,
            },
            prev: Some(Stamp {
                size: u64::MAX,
                mtime_ns: i128::MIN,
            }),
        };
        let line = record.to_text();
        assert_eq!(line.len(), RECORD_LEN, "{line}");
        assert!(line.ends_with(" \n"), "{line}");
    }

    /// A record written before records had checks (one line, renamed into place) still
    /// gives the version; the next save replaces it with a fixed-length one.
    #[test]
    fn a_record_without_a_check_is_read_and_then_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir);
        s.save_checked("old", r#"{"id":"old","n":1}"#).unwrap();
        let meta = fs::metadata(dir.path().join("old.json")).unwrap();
        let stamp = Stamp::of(&meta);
        let legacy = format!(
            "{{\"format\":1,\"version\":41,\"size\":{},\"mtime_ns\":{}}}\n",
            stamp.size, stamp.mtime_ns
        );
        fs::write(dir.path().join(".~old.v"), &legacy).unwrap();
        assert_eq!(s.get_versioned("old").unwrap().unwrap().1, 41);
        assert_eq!(
            s.save_checked_if("old", r#"{"id":"old","n":2}"#, Expect::Version(41))
                .unwrap(),
            42
        );
        let record = fs::read_to_string(dir.path().join(".~old.v")).unwrap();
        assert_eq!(record.len(), RECORD_LEN);
        assert_eq!(s.get_versioned("old").unwrap().unwrap().1, 42);
    }

    /// A record whose check fails (what a reader sees when it copies the record while a save
    /// overwrites it) is never taken at its word: still unsettled when read again, it counts as
    /// no record (version 1), and the save after it starts the count again.
    #[test]
    fn a_record_that_fails_its_check_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir);
        for n in 1..=3 {
            s.save_checked("c", &format!(r#"{{"id":"c","n":{n}}}"#))
                .unwrap();
        }
        let path = dir.path().join(".~c.v");
        let good = fs::read_to_string(&path).unwrap();
        assert!(good.contains(r#""version":3,"#));
        // The version of a later save spliced into this one's line: valid JSON, wrong check.
        let torn = good.replacen(r#""version":3,"#, r#""version":9,"#, 1);
        fs::write(&path, &torn).unwrap();
        assert_eq!(Record::parse(&good).map(|r| r.version), Some(3));
        assert_eq!(Record::parse(&torn), None);
        assert_eq!(s.get_versioned("c").unwrap().unwrap().1, 1);
        assert_eq!(s.save_checked("c", r#"{"id":"c","n":4}"#).unwrap(), 2);
        assert!(
            !dir.path().join(".~c.l").exists(),
            "a read never takes the lock"
        );
    }

    /// A store whose caller checks what it gets returns a Task file's text unscanned, with its
    /// version, and still refuses everything that is not UTF-8 text in a regular file of
    /// bounded size; a store that checks refuses the same text, naming the file.
    #[test]
    fn gets_checked_by_the_caller_skip_only_the_task_scan() {
        let dir = tempfile::tempdir().unwrap();
        let checked = store(&dir);
        let unchecked = store(&dir).with_gets_checked_by_caller();
        checked.save_checked("t", r#"{"id":"t"}"#).unwrap();
        for text in [r#"{"id":"t","n":"#, r#"{"id":"someone-else"}"#, "[1]"] {
            fs::write(dir.path().join("t.json"), text).unwrap();
            let err = checked.get_versioned("t").unwrap_err();
            assert!(
                matches!(&err, DirError::Corrupt { file, .. } if file.ends_with("t.json")),
                "{text}: {err}"
            );
            assert!(checked.get_text("t").is_err(), "{text}");
            // The version counts the foreign text as a save (its stamp is not the record's).
            assert_eq!(
                unchecked.get_versioned("t").unwrap(),
                Some((text.to_owned(), 2)),
                "{text}"
            );
            assert_eq!(unchecked.get_text("t").unwrap(), Some(text.to_owned()));
            #[cfg(target_os = "linux")]
            if let Some(found) = unchecked.try_get_text_cached("t") {
                assert_eq!(found.unwrap(), Some(text.to_owned()));
            }
        }
        fs::write(dir.path().join("t.json"), b"{\"id\":\"t\",\"x\":\"\xff\"}").unwrap();
        let err = unchecked.get_versioned("t").unwrap_err();
        assert!(
            matches!(&err, DirError::Corrupt { file, reason } if file.ends_with("t.json") && reason.contains("UTF-8")),
            "{err}"
        );
        fs::remove_file(dir.path().join("t.json")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("elsewhere.json", dir.path().join("t.json")).unwrap();
        #[cfg(unix)]
        assert!(matches!(
            unchecked.get_text("t").unwrap_err(),
            DirError::Corrupt { .. }
        ));
    }

    #[test]
    fn only_a_record_of_the_documented_shape_is_read() {
        let record = Record {
            version: 7,
            stamp: Stamp {
                size: 12,
                mtime_ns: -3,
            },
            prev: None,
        };
        let line = record.to_text();
        assert_eq!(Record::parse(&line), Some(record));
        let check = record.check(1);
        assert_eq!(check.len(), 16);
        assert_eq!(check, record.check(2), "no previous file: the same check");
        // Members in any order, and members it does not know, are fine.
        let reordered = format!(
            r#"{{"check":"{check}","mtime_ns":-3,"size":12,"extra":[1],"version":7,"format":1}}"#
        );
        assert_eq!(Record::parse(&reordered), Some(record));
        // Written before records had checks.
        let unchecked = r#"{"format":1,"version":7,"size":12,"mtime_ns":-3}"#;
        assert_eq!(Record::parse(unchecked), Some(record));
        let with_prev = Record {
            prev: Some(Stamp {
                size: 5,
                mtime_ns: -4,
            }),
            ..record
        }
        .to_text();
        for bad in [
            // A check must be a string when it is there.
            r#"{"format":1,"version":7,"size":12,"mtime_ns":-3,"check":null}"#.to_owned(),
            r#"{"format":1,"version":7,"size":12,"mtime_ns":-3,"check":7}"#.to_owned(),
            // Another format, a missing or mistyped field, a field out of range.
            line.replacen(r#""format":2"#, r#""format":3"#, 1),
            // Format 2 needs its check; a previous file needs both its fields, and only
            // format 2 has one.
            line.replacen(&format!(r#","check":"{check}""#), "", 1),
            with_prev.replacen(r#","prev_size":5"#, "", 1),
            with_prev.replacen(r#""format":2"#, r#""format":1"#, 1),
            with_prev.replacen(r#""prev_size":5"#, r#""prev_size":6"#, 1),
            line.replacen(r#""size":12,"#, "", 1),
            line.replacen(r#""version":7"#, r#""version":"7""#, 1),
            line.replacen(r#""version":7"#, r#""version":-7"#, 1),
            line.replacen(r#""version":7"#, r#""version":7.0"#, 1),
            line.replacen(r#""mtime_ns":-3"#, r#""mtime_ns":9223372036854775808"#, 1),
            // Not JSON, or cut short.
            line[..line.trim_end().len() / 2].to_owned(),
            "not a record".to_owned(),
        ] {
            assert_eq!(Record::parse(&bad), None, "{bad}");
        }
    }

    /// Lock-free readers beside a writer: the version read is never newer than the text read
    /// (each text carries the version its save returned), whatever moment the record is
    /// copied at.
    #[test]
    fn readers_racing_a_writer_never_see_a_version_newer_than_the_text() {
        let dir = tempfile::tempdir().unwrap();
        let s = std::sync::Arc::new(DirStore::new(dir.path(), Durability::Relaxed));
        s.save_checked("race", r#"{"id":"race","n":1}"#).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (s, stop) = (s.clone(), stop.clone());
                let reads = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
                let counted = reads.clone();
                let thread = std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let (text, version) = s.get_versioned("race").unwrap().unwrap();
                        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
                        let n = value["n"].as_u64().unwrap();
                        assert!(version <= n, "version {version} read with the text of {n}");
                        counted.fetch_add(1, Ordering::Relaxed);
                    }
                });
                (thread, reads)
            })
            .collect();
        // At least 300 versions, and on until each reader has read 20 times while they were
        // written (a thread may start late on a loaded machine); a reader that failed ends it.
        let mut n = 1u64;
        while n < 300
            || readers
                .iter()
                .any(|(thread, reads)| !thread.is_finished() && reads.load(Ordering::Relaxed) < 20)
        {
            n += 1;
            let v = s
                .save_checked("race", &format!(r#"{{"id":"race","n":{n}}}"#))
                .unwrap();
            assert_eq!(v, n);
        }
        stop.store(true, Ordering::Relaxed);
        for (thread, reads) in readers {
            thread.join().unwrap();
            assert!(reads.load(Ordering::Relaxed) >= 20);
        }
    }

    #[test]
    fn a_task_written_without_versions_reads_and_moves_on() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir);
        // A seed store (or an older component) writes the plain file only.
        fs::write(dir.path().join("seed.json"), r#"{"id":"seed","n":1}"#).unwrap();
        assert_eq!(s.get_versioned("seed").unwrap().unwrap().1, 1);
        assert_eq!(
            s.save_checked_if("seed", r#"{"id":"seed","n":2}"#, Expect::Version(1))
                .unwrap(),
            2
        );
        // A seed writer overwrites it: the record no longer describes the file.
        std::thread::sleep(Duration::from_millis(20));
        fs::write(dir.path().join("seed.json"), r#"{"id":"seed","n":333}"#).unwrap();
        let (text, version) = s.get_versioned("seed").unwrap().unwrap();
        assert_eq!((text.as_str(), version), (r#"{"id":"seed","n":333}"#, 3));
        let err = s
            .save_checked_if("seed", r#"{"id":"seed","n":4}"#, Expect::Version(2))
            .unwrap_err();
        assert!(matches!(
            err,
            DirError::Conflict {
                current: Some(3),
                ..
            }
        ));
    }

    #[test]
    fn a_lock_left_by_a_crash_is_broken_after_the_lease_and_a_live_one_is_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir).with_lock_lease(Duration::from_millis(300));
        s.save_text(r#"{"id":"k"}"#).unwrap();
        // A crashed writer's lock: a fresh one must be waited out, then broken.
        let lock = dir.path().join(".~k.l");
        fs::write(&lock, "dead-writer").unwrap();
        // The lease runs from the lock file's modification time, which the kernel takes from a
        // coarse clock (up to a tick before the write returns): measure from it, not from now.
        let written = fs::metadata(&lock).unwrap().modified().unwrap();
        assert_eq!(
            s.save_checked_if("k", r#"{"id":"k","n":2}"#, Expect::Version(1))
                .unwrap(),
            2
        );
        let waited = SystemTime::now().duration_since(written).unwrap();
        assert!(waited >= Duration::from_millis(300), "{waited:?}");
        assert!(!lock.exists(), "the lock is released after the save");
    }

    /// A lock planted as a FIFO and a version record planted as a link to an endless file are
    /// never read through: the save breaks the stale lock and goes on, the record counts as
    /// none. (Reading the FIFO would block for good: no one ever writes it.)
    #[cfg(unix)]
    #[test]
    fn planted_fifos_and_links_as_lock_or_record_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir).with_lock_lease(Duration::from_millis(50));
        s.save_text(r#"{"id":"k"}"#).unwrap();
        fs::remove_file(dir.path().join(".~k.v")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join(".~k.v")).unwrap();
        let fifo = std::ffi::CString::new(dir.path().join(".~k.l").to_str().unwrap()).unwrap();
        let old = libc::timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        // SAFETY: a valid C path and two valid timespecs.
        unsafe {
            assert_eq!(libc::mkfifo(fifo.as_ptr(), 0o600), 0);
            assert_eq!(
                libc::utimensat(libc::AT_FDCWD, fifo.as_ptr(), [old, old].as_ptr(), 0),
                0
            );
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let version = s.get_versioned("k").map(|v| v.map(|(_, v)| v));
            let saved = s.save_checked_if("k", r#"{"id":"k","n":2}"#, Expect::Version(1));
            let _ = tx.send((version, saved, dir));
        });
        let (version, saved, _dir) = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the save never blocks on what was planted");
        assert_eq!(version.unwrap(), Some(1), "no readable record: version 1");
        assert_eq!(saved.unwrap(), 2);
    }

    #[test]
    fn a_writer_that_lost_its_lock_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir);
        s.save_text(r#"{"id":"k"}"#).unwrap();
        let lock = s.lock(".~k.l").unwrap();
        // Another writer judged it stale (as if this one had stalled past its lease), broke it
        // as the protocol does (aside, then removed) and took it.
        let path = dir.path().join(".~k.l");
        let long_ago = SystemTime::now() - s.lock_lease() * 2;
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        s.break_lock(&path);
        let theirs = s.lock(".~k.l").unwrap();
        let err = s.check_held(&lock).unwrap_err();
        assert!(err.to_string().contains("taken over"), "{err}");
        s.unlock(lock);
        assert_eq!(
            identity_at(&path).unwrap().unwrap(),
            theirs.identity.unwrap(),
            "unlock leaves a lock that is not ours"
        );
        assert!(
            s.check_held(&theirs).is_ok(),
            "the new holder's lock is intact"
        );
    }

    #[test]
    fn racing_conditional_saves_have_exactly_one_winner_per_version() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir);
        s.save_text(r#"{"id":"r"}"#).unwrap();
        for round in 1..=5u64 {
            let wins: Vec<_> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..8)
                    .map(|w| {
                        let s = s.clone();
                        scope.spawn(move || {
                            s.save_checked_if(
                                "r",
                                &format!(r#"{{"id":"r","w":{w}}}"#),
                                Expect::Version(round),
                            )
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let winners = wins.iter().filter(|r| r.is_ok()).count();
            assert_eq!(winners, 1, "round {round}: {wins:?}");
            for r in &wins {
                match r {
                    Ok(v) => assert_eq!(*v, round + 1),
                    Err(DirError::Conflict { current, .. }) => {
                        assert_eq!(*current, Some(round + 1))
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }
    }

    #[test]
    fn list_reports_a_corrupt_file() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("bad.json"), "{").unwrap();
        let err = store(&dir).list_texts(&ListQuery::default()).unwrap_err();
        assert!(
            matches!(err, DirError::Corrupt { .. }) && err.to_string().contains("bad.json"),
            "{err}"
        );
    }

    #[test]
    fn temp_names_are_unique() {
        let names: std::collections::HashSet<_> = (0..10_000).map(|_| random_u128()).collect();
        assert_eq!(names.len(), 10_000);
    }
}

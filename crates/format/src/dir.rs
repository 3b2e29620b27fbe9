//! A directory of Task files: atomic writes, verified reads, crash clean-up.
//!
//! Invariants (see `docs/on-disk-format.md`):
//! - A Task file is only ever created by renaming a complete, flushed temp file over its name,
//!   so a reader sees either the previous Task or the new one, never a prefix of either.
//! - Temp files are created with `create_new` under a random hidden name (`.tmp-<32 hex>`), so
//!   concurrent writers in any number of threads, instances or processes never share one.
//! - A read returns a Task only if the file parses as a Task whose `id` is the id asked for.

use crate::id::{self, IdError};
use crate::query::{self, ListQuery};
use crate::task::{self, TaskError};
use std::collections::hash_map::RandomState;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::hash::BuildHasher;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
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

/// One page of a listing: `(id, JSON text)` per Task, and the token for the next page.
pub type TextPage = (Vec<(String, String)>, Option<String>);

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
        }
    }
}

impl std::error::Error for DirError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DirError::InvalidId(e) => Some(e),
            DirError::InvalidTask(e) => Some(e),
            DirError::Corrupt { .. } => None,
            DirError::Io { source, .. } => Some(source),
        }
    }
}

/// One directory holding one `<encoded-id>.json` file per Task.
#[derive(Debug, Clone)]
pub struct DirStore {
    root: PathBuf,
    durability: Durability,
}

impl DirStore {
    /// A store over `root`, which must already exist. Nothing is read or written.
    pub fn new(root: impl Into<PathBuf>, durability: Durability) -> Self {
        DirStore {
            root: root.into(),
            durability,
        }
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
    /// [`DirError::Corrupt`], never `None` and never someone else's Task.
    pub fn get_text(&self, id: &str) -> Result<Option<String>, DirError> {
        let path = self.path_of(id)?;
        let Some(text) = read_text(&path)? else {
            return Ok(None);
        };
        let stored_id = task::check_task_text(&text).map_err(|e| DirError::Corrupt {
            file: path.clone(),
            reason: e.to_string(),
        })?;
        if stored_id != id {
            return Err(DirError::Corrupt {
                file: path,
                reason: id_mismatch(id, &stored_id),
            });
        }
        Ok(Some(text))
    }

    /// One page of the Tasks matching `query`, as (id, JSON text) pairs, and the next page token.
    ///
    /// Reads every Task file in the directory (temp and foreign files are skipped); a Task file
    /// that cannot be read as a Task is an error naming it, never silently left out.
    pub fn list_texts(&self, query: &ListQuery) -> Result<TextPage, DirError> {
        let entries = fs::read_dir(&self.root).map_err(|source| DirError::Io {
            op: "list",
            file: self.root.clone(),
            source,
        })?;
        let mut matching = Vec::new();
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
            // A plain name says its id: skip files outside the page without reading them.
            if id::decode_file_name(name).is_some_and(|id| !query.after_token(&id)) {
                continue;
            }
            let path = entry.path();
            let Some(text) = read_text(&path)? else {
                continue;
            }; // deleted meanwhile
            let corrupt = |reason: String| DirError::Corrupt {
                file: path.clone(),
                reason,
            };
            let (stored_id, keep) = if query.has_filters() {
                let task = task::parse_task(&text).map_err(|e| corrupt(e.to_string()))?;
                let stored_id = task::task_id(&task)
                    .map_err(|e| corrupt(e.to_string()))?
                    .to_owned();
                (stored_id, query.matches(&task))
            } else {
                (
                    task::check_task_text(&text).map_err(|e| corrupt(e.to_string()))?,
                    true,
                )
            };
            if id::encode_id(&stored_id).ok().as_deref() != Some(name) {
                return Err(corrupt(format!(
                    "holds task {stored_id:?}, which belongs in another file"
                )));
            }
            if keep && query.after_token(&stored_id) {
                matching.push((stored_id.clone(), (stored_id, text)));
            }
        }
        Ok(query::paginate(matching, query))
    }

    /// Removes the Task with this id: `true` if there was one.
    pub fn delete(&self, id: &str) -> Result<bool, DirError> {
        let path = self.path_of(id)?;
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(source) => {
                return Err(DirError::Io {
                    op: "delete",
                    file: path,
                    source,
                });
            }
        }
        if self.durability == Durability::Full {
            sync_dir(&self.root).map_err(|source| DirError::Io {
                op: "sync directory",
                file: self.root.clone(),
                source,
            })?;
        }
        Ok(true)
    }

    /// Saves a Task whose text the caller already checked to be a Task with this `id` (with
    /// [`task::check_task_text`] or by building it), written exactly as given.
    pub fn save_checked(&self, id: &str, text: &str) -> Result<(), DirError> {
        self.write(id, text.as_bytes())
    }

    /// Saves a Task given as JSON text, which is checked and then written exactly as given.
    pub fn save_text(&self, text: &str) -> Result<(), DirError> {
        let id = task::check_task_text(text).map_err(DirError::InvalidTask)?;
        self.write(&id, text.as_bytes())
    }

    /// Atomically replaces the file for `id` with `contents`.
    fn write(&self, id: &str, contents: &[u8]) -> Result<(), DirError> {
        let name = id::encode_id(id).map_err(DirError::InvalidId)?;
        write_atomically(&self.root, &name, contents, self.durability)
    }

    /// Removes temp files left by writers that crashed before their rename: those whose last
    /// change is older than `older_than`. Younger ones may belong to a live writer and stay.
    /// Returns how many were removed; errors on single entries are skipped.
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
            if !name.to_str().is_some_and(|n| n.starts_with(TEMP_PREFIX)) {
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
        .write_all(contents)
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

fn create_temp(dir: &Path) -> Result<(PathBuf, File), DirError> {
    let mut last_err = None;
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    // Task files are their owner's alone (0600 on Unix), whatever the umask lets through.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    for _ in 0..16 {
        let path = dir.join(format!("{TEMP_PREFIX}{:032x}", random_u128()));
        match options.open(&path) {
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
fn read_text(path: &Path) -> Result<Option<String>, DirError> {
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
    let mut file = match open_regular(path) {
        Ok(file) => file,
        Err(Refused::Io(e)) => return io_error(e),
        Err(Refused::Kind(kind)) => return Err(corrupt(not_regular(kind))),
        Err(Refused::Link) => {
            return Err(corrupt(
                "is a symbolic link, which is never followed".into(),
            ));
        }
    };
    let meta = file.metadata().map_err(|source| DirError::Io {
        op: "read",
        file: path.to_path_buf(),
        source,
    })?;
    if !meta.is_file() {
        return Err(corrupt(not_regular(meta.file_type())));
    }
    if meta.len() > MAX_TASK_FILE_BYTES {
        return Err(corrupt(too_large(meta.len())));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // At most one byte past the cap, in case the file grew since it was looked at.
    if let Err(e) = (&mut file)
        .take(MAX_TASK_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
    {
        return io_error(e);
    }
    if bytes.len() as u64 > MAX_TASK_FILE_BYTES {
        return Err(corrupt(too_large(bytes.len() as u64)));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| corrupt(format!("not UTF-8 ({e})")))
}

fn not_regular(kind: fs::FileType) -> String {
    let what = if kind.is_symlink() {
        "a symbolic link, which is never followed"
    } else if kind.is_dir() {
        "a directory"
    } else {
        "not a regular file (a FIFO, a socket or a device)"
    };
    format!("is {what}")
}

fn too_large(size: u64) -> String {
    format!("is {size} bytes, over the largest Task file read ({MAX_TASK_FILE_BYTES} bytes)")
}

/// Why [`open_regular`] did not open a file.
enum Refused {
    Io(io::Error),
    /// Not a regular file: what it is instead (found before opening, inside a component).
    #[cfg_attr(unix, allow(dead_code))]
    Kind(fs::FileType),
    /// A symbolic link (found by the open, natively).
    #[cfg_attr(not(unix), allow(dead_code))]
    Link,
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
            Some(libc::ELOOP) => Refused::Link,
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
        return Err(Refused::Kind(kind));
    }
    File::open(path).map_err(Refused::Io)
}

fn id_mismatch(wanted: &str, found: &str) -> String {
    format!("holds task {found:?}, not {wanted:?}")
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
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

    fn store(dir: &tempfile::TempDir) -> DirStore {
        DirStore::new(dir.path(), Durability::Full)
    }

    #[test]
    fn save_writes_one_file_named_after_the_id_with_the_text_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let t = r#"{"id":"abc-123","status":{"state":"completed"}}"#;
        store(&dir).save_text(t).unwrap();
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["abc-123.json"]);
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
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["t.json"]);
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

    #[test]
    fn list_pages_through_tasks_in_id_order_and_delete_removes() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir);
        for i in [3, 1, 2, 5, 4] {
            s.save_text(&format!(r#"{{"id":"t{i}","contextId":"c{}"}}"#, i % 2))
                .unwrap();
        }
        fs::write(dir.path().join(".tmp-x"), "{").unwrap();
        let q = ListQuery {
            page_size: 2,
            ..Default::default()
        };
        let (page, next) = s.list_texts(&q).unwrap();
        assert_eq!(
            page.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
            ["t1", "t2"]
        );
        let q = ListQuery {
            page_token: next,
            ..q
        };
        let (page, _) = s.list_texts(&q).unwrap();
        assert_eq!(
            page.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
            ["t3", "t4"]
        );
        let q = ListQuery {
            context_id: Some("c0".into()),
            ..Default::default()
        };
        let (page, next) = s.list_texts(&q).unwrap();
        assert_eq!(
            page.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
            ["t2", "t4"]
        );
        assert_eq!(next, None);
        assert!(s.delete("t2").unwrap());
        assert!(!s.delete("t2").unwrap());
        assert_eq!(s.get_text("t2").unwrap(), None);
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

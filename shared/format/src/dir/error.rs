//! What can go wrong with a directory operation.

use super::options::Expect;
use crate::id::IdError;
use crate::push_config::PUSH_DIR;
use crate::query::QueryError;
use crate::task::TaskError;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What went wrong with a directory operation. Every variant names the file involved.
#[derive(Debug)]
pub enum DirError {
    /// The id cannot name a Task.
    InvalidId(IdError),
    /// The document to save is not a Task.
    InvalidTask(TaskError),
    /// A Task file (or a push config file) exists but does not hold the Task (config) it
    /// should.
    Corrupt { file: PathBuf, reason: String },
    /// The file system refused.
    Io {
        op: &'static str,
        file: PathBuf,
        source: io::Error,
    },
    /// A save whose rename into place was done, whose flush then failed: the new text is in
    /// place but may not survive a power loss, so whether the save took effect is unknown.
    /// Read the Task again before saving again.
    AfterRename {
        op: &'static str,
        file: PathBuf,
        source: io::Error,
    },
    /// A save whose rename came later than half its lock's lease after it took or renewed the
    /// lock (the writer stalled before it), without a kernel lock fencing it, and after which the
    /// Task file is not the file it wrote: the lock it renamed may have been broken and taken by
    /// another writer meanwhile, so the file moved over the Task may have been that writer's.
    /// Whether the save took effect is unknown; read the Task again before saving again.
    LateRename { file: PathBuf, late: Duration },
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
                let what = if is_push_config_file(file) {
                    "push config file"
                } else {
                    "task file"
                };
                write!(f, "corrupt {what} {}: {reason}", file.display())
            }
            DirError::Io { op, file, source } => {
                write!(f, "cannot {op} {}: {source}", file.display())
            }
            DirError::AfterRename { op, file, source } => write!(
                f,
                "cannot {op} {} after the save's rename ({source}): the save may or may not \
                 survive a power loss; read the Task again before saving again",
                file.display()
            ),
            DirError::LateRename { file, late } => write!(
                f,
                "the save's rename over {} came {late:?} after it took or renewed its lock, past \
                 half the lock's lease, and the Task file is not the file it wrote: another \
                 writer may have taken the lock meanwhile, so whether this save took effect is \
                 unknown; read the Task again before saving again",
                file.display()
            ),
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

/// Whether `file` is `<root>/.push/<task stem>/<name>`: a push config's file, named so in
/// messages.
fn is_push_config_file(file: &Path) -> bool {
    let push_dir = file
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name);
    push_dir.is_some_and(|name| name == PUSH_DIR)
}

impl std::error::Error for DirError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DirError::InvalidId(e) => Some(e),
            DirError::InvalidTask(e) => Some(e),
            DirError::Corrupt { .. } | DirError::Conflict { .. } | DirError::LateRename { .. } => {
                None
            }
            DirError::InvalidQuery(e) => Some(e),
            DirError::Io { source, .. } | DirError::AfterRename { source, .. } => Some(source),
        }
    }
}

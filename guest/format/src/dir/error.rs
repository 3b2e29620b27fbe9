//! What can go wrong with a directory operation.

use super::options::Expect;
use crate::id::IdError;
use crate::query::QueryError;
use crate::task::TaskError;
use std::fmt;
use std::io;
use std::path::PathBuf;

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

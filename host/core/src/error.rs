//! The one error type every store returns.

use std::io;
pub use toolnexus_format::TaskError;

/// What went wrong in a store operation or while resolving a store.
///
/// Each variant names what was wrong (the selector, the file, the id, the component) and says,
/// through [`StoreError::blame`], whose fault it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The document given as a Task is not one (not JSON, not an object, no or bad `id`).
    #[error("invalid task: {0}")]
    InvalidTask(#[from] TaskError),

    /// The id cannot name a Task (it is empty).
    #[error("invalid task id {id:?}: {reason}")]
    InvalidId { id: String, reason: String },

    /// Stored data for an id exists but is not a valid Task with that id.
    #[error("corrupt task data in {location}: {reason}")]
    Corrupt { location: String, reason: String },

    /// The storage underneath failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },

    /// A store component broke the contract: it trapped, returned something that is not the
    /// requested Task, or reported an error of its own.
    #[error("store component {component} failed: {reason}")]
    Component { component: String, reason: String },

    /// The store refused a valid Task (or id) by a rule of its own, for example the
    /// lifecycle-guard middleware refusing to move a Task out of a terminal state. Nothing was
    /// changed; the same call fails the same way until the stored Task or the request changes.
    #[error("{store} refused the request: {reason}")]
    Rejected { store: String, reason: String },

    /// A Task is larger than the store accepts.
    #[error("task {id:?} is {size} bytes of JSON, over the store's limit of {max} bytes")]
    TaskTooLarge { id: String, size: usize, max: usize },

    /// A store component went over one of its resource limits during the call. The instance
    /// was discarded; the next call gets a fresh one.
    #[error("store component {component} exceeded its {limit}")]
    LimitExceeded { component: String, limit: Limit },

    /// The store cannot do this (for example `list` on a component that does not export the
    /// optional `catalog` interface).
    #[error("{store} does not support {operation}")]
    Unsupported {
        store: String,
        operation: &'static str,
    },

    /// A component could not be loaded: missing file, not a component, wrong world.
    #[error("cannot load store component {component}: {reason}")]
    Load { component: String, reason: String },

    /// The server a store keeps its Tasks on (a database) cannot be reached, broke the
    /// connection, or did not answer in time. Nothing was changed that the caller was told of;
    /// retrying later may succeed (the store reconnects by itself).
    #[error("{store} is unavailable: {reason}")]
    Unavailable { store: String, reason: String },

    /// The server a store keeps its Tasks on answered with an error the store did not expect
    /// (for example a table changed behind its back).
    #[error("{store} failed: {reason}")]
    Backend { store: String, reason: String },

    /// A selector string whose scheme is not one we know. Never a silent fallback.
    #[error(
        "Unknown A2A store {0:?}: expected \"memory\", \"file:<dir>\", \"wasm:<component>[?dir=<dir>]\" or \"postgres://<user>@<host>/<db>\""
    )]
    UnknownSelector(String),

    /// A conditional save ([`crate::TaskStore::save_versioned`]) found another version stored
    /// than it expected. Nothing was written; read the Task again and decide again.
    #[error("task {id:?} was not saved: expected {expected}, but the store holds {}", match current { Some(v) => format!("version {v}"), None => "no task".to_owned() })]
    Conflict {
        id: String,
        expected: toolnexus_format::Expect,
        /// The stored version (`None`: no Task with that id).
        current: Option<u64>,
    },

    /// A list query the store cannot run: a page token it did not make, a timestamp that is
    /// not RFC 3339.
    #[error("invalid list query: {reason}")]
    InvalidQuery { reason: String },

    /// The document given as a push-notification config is not one (not JSON, not an object,
    /// no or bad `id`, too large), or a config id is empty.
    #[error("invalid push notification config: {reason}")]
    InvalidPushConfig { reason: String },

    /// The store cannot tell whether a save or a delete took effect: it was sent (a reply lost
    /// after the statement reached the database) or done (a flush failed after the rename that
    /// installed the Task), and then something failed. Retrying blindly could undo a write made
    /// meanwhile: read the Task again, then decide.
    #[error("{store}: outcome unknown: {reason}")]
    OutcomeUnknown { store: String, reason: String },

    /// A selector with a known scheme but unusable arguments.
    #[error("invalid A2A store selector {selector:?}: {reason}")]
    InvalidSelector { selector: String, reason: String },
}

/// A resource limit of a store component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limit {
    /// The cap on all linear memories of one instance together, in bytes.
    Memory(usize),
    /// The cap on the linear memories of all of a store's instances together, in bytes.
    MemoryTotal(usize),
    /// The deadline for one call.
    Timeout(std::time::Duration),
    /// The largest Task accepted from the component, and the size of what it returned.
    AnswerSize { size: usize, max: usize },
    /// The most host resources (open files, streams, pollables) an instance may hold at once.
    Handles(usize),
    /// The disk quota of a read-write directory, in bytes.
    Disk(u64),
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Limit::Memory(bytes) => write!(f, "memory limit of {bytes} bytes"),
            Limit::MemoryTotal(bytes) => {
                write!(
                    f,
                    "memory limit of {bytes} bytes for all instances together"
                )
            }
            Limit::Timeout(d) => write!(f, "deadline of {d:?} per call"),
            Limit::Handles(max) => {
                write!(f, "limit of {max} open host resources (files, streams)")
            }
            Limit::Disk(bytes) => write!(f, "disk quota of {bytes} bytes"),
            Limit::AnswerSize { size, max } => {
                write!(
                    f,
                    "maximum Task size of {max} bytes (it returned {size} bytes)"
                )
            }
        }
    }
}

/// Whose fault an error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blame {
    /// The caller passed something invalid; retrying the same call fails the same way.
    Caller,
    /// The store's data or code is at fault (corrupt file, misbehaving component).
    Store,
    /// The environment failed (I/O); retrying may succeed.
    Environment,
}

impl StoreError {
    /// Whose fault this error is.
    pub fn blame(&self) -> Blame {
        match self {
            StoreError::InvalidTask(_)
            | StoreError::InvalidId { .. }
            | StoreError::TaskTooLarge { .. }
            | StoreError::Rejected { .. }
            | StoreError::Conflict { .. }
            | StoreError::InvalidQuery { .. }
            | StoreError::InvalidPushConfig { .. }
            | StoreError::UnknownSelector(_)
            | StoreError::InvalidSelector { .. } => Blame::Caller,
            StoreError::Corrupt { .. }
            | StoreError::Component { .. }
            | StoreError::LimitExceeded { .. }
            | StoreError::Load { .. }
            | StoreError::Backend { .. } => Blame::Store,
            StoreError::Io { .. }
            | StoreError::Unavailable { .. }
            | StoreError::OutcomeUnknown { .. } => Blame::Environment,
            StoreError::Unsupported { .. } => Blame::Store,
        }
    }

    /// An [`StoreError::Io`] with the context a user needs (what was being done, to what).
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        StoreError::Io {
            context: context.into(),
            source,
        }
    }
}

impl From<toolnexus_format::DirError> for StoreError {
    fn from(err: toolnexus_format::DirError) -> Self {
        use toolnexus_format::DirError;
        match err {
            DirError::InvalidId(e) => StoreError::InvalidId {
                id: String::new(),
                reason: e.to_string(),
            },
            DirError::InvalidTask(e) => StoreError::InvalidTask(e),
            DirError::Corrupt { file, reason } => StoreError::Corrupt {
                location: file.display().to_string(),
                reason,
            },
            DirError::Io { op, file, source } => {
                StoreError::io(format!("cannot {op} {}", file.display()), source)
            }
            err @ (DirError::AfterRename { .. } | DirError::LateRename { .. }) => {
                StoreError::OutcomeUnknown {
                    store: "file store".into(),
                    reason: err.to_string(),
                }
            }
            DirError::Conflict {
                id,
                expected,
                current,
                ..
            } => StoreError::Conflict {
                id,
                expected,
                current,
            },
            DirError::InvalidQuery(e) => StoreError::InvalidQuery {
                reason: e.to_string(),
            },
        }
    }
}

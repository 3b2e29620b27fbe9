//! What a look at a file tells the store: its stamp (the identity a version record remembers),
//! or what it is instead of a regular file.

use std::io;

/// A Task file's identity as the version record remembers it: length and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    pub(super) size: u64,
    pub(super) mtime_ns: i128,
}

/// What a name that is not a regular file is instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Link,
    Dir,
    Other,
}

/// Why a file was not opened for reading.
pub(super) enum Refused {
    Io(io::Error),
    /// Not a regular file.
    Kind(Kind),
}

/// What a writer that could not create a Task's lock sees of the lock that is there: enough to
/// tell whether it changed since the last look (a live writer renews its lock by changing it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Seen {
    /// Device and inode (inside a component, the host's metadata hash), where they can be told.
    pub(super) identity: Option<(u64, u64)>,
    pub(super) stamp: Stamp,
}

/// What is at a lock's name, as a waiter looks at it.
#[cfg_attr(not(unix), allow(dead_code))] // no kernel locks: nothing is `Live`
pub(super) enum LockLook<Hold> {
    /// Nothing: the lock was released meanwhile.
    Gone,
    /// A lock whose kernel lock a live writer holds: never broken, whatever its age.
    Live,
    /// A lock no one holds a kernel lock on (or where there are none), as it looks now; `Hold`
    /// is what the look keeps of it while the waiter decides (natively, the file with its
    /// kernel lock taken).
    Unfenced(Seen, Hold),
}

/// Whether a writer took the kernel lock on the lock it created.
#[cfg_attr(not(unix), allow(dead_code))] // no kernel locks: always `No`
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fenced {
    /// It holds it: no other process breaks the lock while it lives.
    Yes,
    /// Someone else holds it for a moment (a waiter looking at the lock): try again.
    Busy,
    /// There are no kernel locks here: the lease alone guards the lock.
    No,
}

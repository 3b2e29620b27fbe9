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

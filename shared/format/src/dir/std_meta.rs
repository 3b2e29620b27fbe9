//! What `std::fs` tells of a file, natively (every platform but a component's): its stamp,
//! what it is, reading it as `stat` saw it, and moving its modification time. Shared by `unix.rs` and `portable.rs`.

use super::stat::{Kind, Stamp};
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// The stamp in `meta`: length and modification time in nanoseconds since the epoch (-1 where
/// the file system keeps none).
pub(super) fn stamp_of(meta: &fs::Metadata) -> Stamp {
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

/// What a file of type `kind` that is not a regular file is.
pub(super) fn kind_of(kind: fs::FileType) -> Kind {
    if kind.is_symlink() {
        Kind::Link
    } else if kind.is_dir() {
        Kind::Dir
    } else {
        Kind::Other
    }
}

/// The stamp of what `path` names, not followed.
pub(super) fn stamp_at(path: &Path) -> io::Result<Stamp> {
    fs::symlink_metadata(path).map(|meta| stamp_of(&meta))
}

/// Sets `file`'s modification time 1 ns past `old`'s (`futimens` on Unix): the least step that
/// parts its stamp from `old` on a file system that keeps nanoseconds.
pub(super) fn set_modified_after(file: &fs::File, old: Stamp) -> io::Result<()> {
    match u64::try_from(old.mtime_ns + 1) {
        Ok(ns) => file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_nanos(ns)),
        Err(_) => Ok(()),
    }
}

/// A regular file opened for reading (by the platform's `open_for_update`, for writing too),
/// with its stamp when it was opened.
pub(super) struct Opened {
    pub(super) stamp: Stamp,
    pub(super) file: File,
}

impl Opened {
    /// At most `limit` bytes from the start of the file: the length its `stat` saw when it was
    /// opened, in one read. The files read this way are never written once in place (a Task
    /// file appears by a rename; a version record is overwritten at its fixed length), so that
    /// length is the file's: one that shrank since is read to its end, one that grew as it was.
    /// A file `stat` saw empty is read to its end.
    pub(super) fn read_up_to(&self, limit: u64) -> io::Result<Vec<u8>> {
        let (limit, expected) = match self.stamp.size.min(limit) {
            0 => (limit, 0),
            // Past the length `stat` saw, `take` ends the read without asking the system for
            // the end.
            seen => (seen, seen),
        };
        let mut bytes = Vec::with_capacity(expected as usize);
        (&self.file).take(limit).read_to_end(&mut bytes)?;
        Ok(bytes)
    }
}

/// The names in the directory `dir` (a name that is not UTF-8 is left out: no file the store
/// writes has one).
pub(super) fn read_names(dir: &Path) -> io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir)? {
        if let Ok(name) = entry?.file_name().into_string() {
            names.push(name);
        }
    }
    Ok(names)
}

//! Version records (`.~<stem>.v`): which version a Task file is, told by its stamp, and how a
//! save reads and rewrites the record (see `docs/on-disk-format.md`, "Versions").

use super::platform::{self, Writer};
use super::stat::{Refused, Stamp};
use std::io;
use std::path::Path;

/// The version record `.~<stem>.v`: which version the Task file with this stamp is, and (when
/// the save that wrote it replaced a Task file) the stamp of the file it replaced, which is one
/// version less. A saver writes the record before it renames its Task file into place, so a
/// reader between the two sees the record and the file it replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Record {
    pub(super) version: u64,
    pub(super) stamp: Stamp,
    /// The Task file this version replaced (`None` for a first save, and in records of format
    /// 1, which savers wrote after their rename).
    pub(super) prev: Option<Stamp>,
}

/// The length of every version record this store writes: one line of JSON padded with spaces.
/// A record of exactly this length is overwritten in place by the next save (one write, well
/// inside the first 512-byte sector); any other is replaced by a rename.
pub(super) const RECORD_LEN: usize = 256;

/// What reading a version record found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RecordRead {
    /// No record, or one that is not a regular file: no version known.
    Missing,
    Found(Record),
    /// A record that does not parse or fails its check: torn by a save writing it at this very
    /// moment (a reader without the lock), or left unreadable by a crash.
    Unsettled,
}

impl Record {
    /// The record's line: JSON with a check over its fields, padded to [`RECORD_LEN`].
    pub(super) fn to_text(self) -> String {
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
    pub(super) fn check(self, format: u64) -> String {
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
    pub(super) fn parse(text: &str) -> Option<Record> {
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
    pub(super) fn version_of(record: RecordRead, stamp: Stamp) -> u64 {
        match record {
            RecordRead::Found(r) if r.stamp == stamp => r.version,
            RecordRead::Found(r) if r.prev == Some(stamp) => r.version.saturating_sub(1).max(1),
            RecordRead::Found(r) => r.version.saturating_add(1),
            RecordRead::Missing | RecordRead::Unsettled => 1,
        }
    }
}

/// The most of a version record that is read: twice the length of one this store writes.
const RECORD_READ_BYTES: u64 = 2 * RECORD_LEN as u64;

/// The version record at `path`: `Missing` if there is none (or it is not a regular file),
/// `Unsettled` if it does not read as a record whose check holds (torn by a save writing it in
/// place right now, or cut short by a power loss under relaxed durability).
pub(super) fn read_record(path: &Path) -> RecordRead {
    match platform::open_for_read(path) {
        Ok(file) => record_in(file.read_up_to(RECORD_READ_BYTES)),
        Err(_) => RecordRead::Missing,
    }
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
/// holds, and the file itself when the save may overwrite it in place (a regular file of
/// exactly [`RECORD_LEN`] bytes, one this store wrote; never through a link and never blocking
/// on a FIFO). Without a file the save replaces the record by a rename.
pub(super) fn open_record_for_save(path: &Path) -> (RecordRead, Option<Writer>) {
    match platform::open_for_update(path) {
        Ok(file) => {
            let record = record_in(file.read_up_to(RECORD_READ_BYTES));
            let rewritable = file.stamp.size == RECORD_LEN as u64;
            (record, rewritable.then(|| file.into_writer()))
        }
        Err(Refused::Kind(_)) => (RecordRead::Missing, None),
        // Missing, or not writable here: read it as any reader would.
        Err(Refused::Io(_)) => (read_record(path), None),
    }
}

//! Reading a Task file: never through a link, never blocking on a FIFO, never without bound,
//! and (unless the caller checks it) checked to hold the Task asked for.

use super::error::DirError;
use super::platform;
use super::stat::{Kind, Refused, Stamp};
use crate::task;
use std::io;
use std::path::Path;

/// The largest Task file a store reads: a larger one is [`DirError::Corrupt`], never read into
/// memory.
pub const MAX_TASK_FILE_BYTES: u64 = 64 << 20;

/// The largest Task file [`super::DirStore::try_get_text_cached`] reads: checking a larger one
/// takes long enough (about 50 µs per 32 KiB) to belong on a blocking thread, not an async
/// worker.
pub const NOWAIT_READ_MAX_BYTES: u64 = 32 << 10;

/// The file's text: `None` if it does not exist; `Corrupt` if it is not a regular file (a
/// symbolic link, which is never followed, a FIFO, a device, a directory), is larger than
/// [`MAX_TASK_FILE_BYTES`] or is not UTF-8. Whoever else writes the directory (another program,
/// a store component), reading a Task file never blocks and never reads without bound.
/// Also returns the stamp (length, modification time) of the file it read.
pub(super) fn read_text(path: &Path) -> Result<Option<(String, Stamp)>, DirError> {
    read_text_capped(path, MAX_TASK_FILE_BYTES)
}

/// [`read_text`] of a file that may be at most `max_bytes` long (a larger one is `Corrupt`):
/// the same refusals, another cap (a push config's, say).
pub(super) fn read_text_capped(
    path: &Path,
    max_bytes: u64,
) -> Result<Option<(String, Stamp)>, DirError> {
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
    let file = match platform::open_for_read(path) {
        Ok(file) => file,
        Err(Refused::Io(e)) => return io_error(e),
        Err(Refused::Kind(kind)) => return Err(corrupt(not_regular(kind))),
    };
    let stamp = file.stamp;
    if stamp.size > max_bytes {
        return Err(corrupt(too_large(stamp.size, max_bytes)));
    }
    // The length `stat` saw (within the cap); a file it saw empty is read to its end, and one
    // byte past the cap at the most.
    let bytes = match file.read_up_to(max_bytes + 1) {
        Ok(bytes) => bytes,
        Err(e) => return io_error(e),
    };
    if bytes.len() as u64 > max_bytes {
        return Err(corrupt(too_large(bytes.len() as u64, max_bytes)));
    }
    String::from_utf8(bytes)
        .map(|text| Some((text, stamp)))
        .map_err(|e| corrupt(format!("not UTF-8 ({e})")))
}

/// [`read_text`] if it can be done without waiting for the disk (see
/// [`super::DirStore::try_get_text_cached`]), without the stamp: `None` if that could not be
/// decided.
#[cfg(target_os = "linux")]
pub(super) fn read_text_cached(path: &Path) -> Option<Result<Option<String>, DirError>> {
    let corrupt = |reason: String| DirError::Corrupt {
        file: path.to_path_buf(),
        reason,
    };
    Some(match platform::read_cached(path, NOWAIT_READ_MAX_BYTES)? {
        Ok(None) => Ok(None),
        Err(kind) => Err(corrupt(not_regular(kind))),
        Ok(Some(bytes)) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|e| corrupt(format!("not UTF-8 ({e})"))),
    })
}

/// The text of the Task file at `path`, checked to be a Task whose `id` is `id`.
pub(super) fn check_task_file(id: &str, path: &Path, text: String) -> Result<String, DirError> {
    let stored_id = task::check_task_text(&text).map_err(|e| DirError::Corrupt {
        file: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    if stored_id != id {
        return Err(DirError::Corrupt {
            file: path.to_path_buf(),
            reason: format!("holds task {stored_id:?}, not {id:?}"),
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

fn too_large(size: u64, max_bytes: u64) -> String {
    format!("is {size} bytes, over the largest such file read ({max_bytes} bytes)")
}

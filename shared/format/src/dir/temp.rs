//! Temp files: hidden, uniquely named, created exclusively, and the whole-file replacement made
//! of them (written, flushed, renamed over their target).

use super::error::DirError;
use super::options::Durability;
use super::platform::{self, Writer};
use std::collections::hash_map::RandomState;
use std::fs;
use std::hash::BuildHasher;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// Prefix of every temp file name. Hidden, so never mistaken for a Task file.
pub const TEMP_PREFIX: &str = ".tmp-";

/// A temp file older than this is a leftover from a crashed writer and may be removed.
/// Real writes hold a temp file for milliseconds; an hour leaves room for a stalled disk.
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(60 * 60);

/// Atomically replaces `dir/name` with `contents`: a unique temp file in `dir`, written, flushed
/// (under [`Durability::Full`]), renamed over `name`, then the directory flushed. On failure the
/// temp file is removed and `dir/name` is untouched.
pub fn write_atomically(
    dir: &Path,
    name: &str,
    contents: &[u8],
    durability: Durability,
) -> Result<(), DirError> {
    replace_by_temp(dir, &dir.join(name), contents, durability)?;
    if durability == Durability::Full {
        platform::sync_dir(dir).map_err(|source| DirError::Io {
            op: "sync directory",
            file: dir.to_path_buf(),
            source,
        })?;
    }
    Ok(())
}

/// Replaces `target` with `contents`: a fresh temp file in `dir`, written, flushed under full
/// durability and renamed over it (the directory is not flushed: the caller does that). On
/// failure the temp file is removed and `target` is untouched.
pub(super) fn replace_by_temp(
    dir: &Path,
    target: &Path,
    contents: &[u8],
    durability: Durability,
) -> Result<(), DirError> {
    let (path, mut file) = create_temp(dir)?;
    let replaced = file
        .write_from_start(contents)
        .and_then(|()| match durability {
            Durability::Full => file.sync_data(),
            Durability::Relaxed => Ok(()),
        })
        .map_err(|source| DirError::Io {
            op: "write",
            file: path.clone(),
            source,
        })
        .and_then(|()| {
            drop(file);
            fs::rename(&path, target).map_err(|source| DirError::Io {
                op: "rename into",
                file: target.to_path_buf(),
                source,
            })
        });
    if replaced.is_err() {
        // Best effort: the temp file is hidden and swept later if this fails too.
        let _ = fs::remove_file(&path);
    }
    replaced
}

/// Removes the stale temp files among `names` (the entries of `dir`, read by a walk made
/// anyway: a listing). A component sweeps nowhere else: an instance may serve a single request,
/// and a sweep of its own at each start would walk a directory that grows with the Tasks.
pub(super) fn remove_stale_among(dir: &Path, names: &[String]) {
    let now = SystemTime::now();
    for name in names.iter().filter(|n| n.starts_with(TEMP_PREFIX)) {
        remove_if_stale_temp(dir, name, STALE_TEMP_AGE, now);
    }
}

/// Removes `entry` if it is a temp file ([`TEMP_PREFIX`]) whose last change is at least
/// `older_than` before `now`: a leftover of a writer that crashed before its rename (a younger
/// one may belong to a live writer). Whether it was removed.
pub(super) fn remove_if_stale_temp(
    dir: &Path,
    name: &str,
    older_than: Duration,
    now: SystemTime,
) -> bool {
    if !name.starts_with(TEMP_PREFIX) {
        return false;
    }
    let path = dir.join(name);
    let stale = fs::symlink_metadata(&path)
        .and_then(|m| m.modified())
        .map(|modified| now.duration_since(modified).unwrap_or_default() >= older_than)
        .unwrap_or(false);
    stale && fs::remove_file(path).is_ok()
}

/// A new temp file in `dir`, created exclusively under a fresh random name.
fn create_temp(dir: &Path) -> Result<(PathBuf, Writer), DirError> {
    let mut last_err = None;
    for _ in 0..16 {
        let path = temp_path(dir);
        match platform::create_new(&path) {
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

/// A fresh temp file name in `dir`: [`TEMP_PREFIX`] and 128 random bits in hex.
pub(super) fn temp_path(dir: &Path) -> PathBuf {
    dir.join(format!("{TEMP_PREFIX}{:032x}", random_u128()))
}

/// 128 random bits from the standard library's per-process hasher keys (seeded from the OS,
/// or from `wasi:random` inside a component), a counter, and the clock.
pub(super) fn random_u128() -> u128 {
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

//! Directory flushes shared across component instances (group commit, [`SharedFlush`]).
//!
//! A component's save flushes its directory after its rename, with `sync` on a directory
//! descriptor. Each instance runs on one thread, so inside a component there is never anyone
//! to share a flush with; the host shares them: a guest's `sync` of a directory waits for an
//! `fsync` of that directory that starts after the call, run by whichever caller (any instance
//! of any store in this process) syncing the same directory starts it first. That is the same
//! promise as an `fsync` of its own: everything the guest did in the directory before its call
//! is durable when the call returns `ok`; a failed flush fails every call it served.
//!
//! Linux only: the directory is told apart by its device and inode (`fstat` of the guest's
//! descriptor, which wasmtime-wasi opens as a path only, `O_PATH`), and the caller that runs
//! the flush opens the directory for it, as wasmtime-wasi's own `sync` does.

use std::collections::HashMap;
use std::io;
use std::os::fd::AsFd;
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};
use toolnexus_format::group::SharedFlush;

/// The shared flushes of the directories being synced now, by device and inode. An entry
/// lives while a call waits on it; dead ones are dropped when a new one is made, so the map
/// holds at most as many entries as directories synced at once, plus the dead ones a
/// single sweep removes.
static SHARED: LazyLock<Mutex<HashMap<DirKey, Weak<SharedFlush>>>> = LazyLock::new(Mutex::default);

/// A directory's device and inode.
type DirKey = (u64, u64);

/// Flushes the directory open as `dir` (as a path only, or for reading), sharing the flush
/// with every other caller syncing the same directory at the same time.
pub(crate) fn sync_shared(dir: &std::fs::File) -> io::Result<()> {
    let stat = rustix::fs::fstat(dir)?;
    #[allow(clippy::unnecessary_cast)] // the field types differ between targets
    let shared = shared_for((stat.st_dev as u64, stat.st_ino as u64));
    shared.run(|| flush(dir), || {})
}

/// `fsync` of the directory `dir` names, on a descriptor opened for it (one opened as a path
/// only cannot be flushed).
fn flush(dir: &std::fs::File) -> io::Result<()> {
    use rustix::fs::{Mode, OFlags};
    let readable = rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    rustix::fs::fsync(readable.as_fd())?;
    Ok(())
}

fn shared_for(key: DirKey) -> Arc<SharedFlush> {
    // Nothing panics while holding the map, so a poisoned lock still holds a true one.
    let mut map = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(shared) = map.get(&key).and_then(Weak::upgrade) {
        return shared;
    }
    map.retain(|_, shared| shared.strong_count() > 0);
    let shared = Arc::new(SharedFlush::default());
    map.insert(key, Arc::downgrade(&shared));
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_flushed_and_its_entry_goes_with_its_last_caller() {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::open(dir.path()).unwrap();
        sync_shared(&file).unwrap();
        let map = SHARED.lock().unwrap();
        let stat = rustix::fs::fstat(&file).unwrap();
        #[allow(clippy::unnecessary_cast)]
        let key = (stat.st_dev as u64, stat.st_ino as u64);
        assert!(
            map.get(&key).is_none_or(|w| w.strong_count() == 0),
            "no caller holds the shared flush after the call"
        );
    }

    #[test]
    fn callers_of_one_directory_share_one_entry_and_other_directories_get_their_own() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let key = |path: &std::path::Path| {
            let stat = rustix::fs::stat(path).unwrap();
            #[allow(clippy::unnecessary_cast)]
            (stat.st_dev as u64, stat.st_ino as u64)
        };
        let first = shared_for(key(a.path()));
        let again = shared_for(key(a.path()));
        let other = shared_for(key(b.path()));
        assert!(Arc::ptr_eq(&first, &again));
        assert!(!Arc::ptr_eq(&first, &other));
    }

    #[test]
    fn a_path_only_descriptor_is_flushed() {
        let dir = tempfile::tempdir().unwrap();
        let path_only: std::fs::File = rustix::fs::open(
            dir.path(),
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .unwrap()
        .into();
        assert!(
            rustix::fs::fsync(&path_only).is_err(),
            "a path-only descriptor cannot be flushed itself"
        );
        sync_shared(&path_only).unwrap();
    }
}

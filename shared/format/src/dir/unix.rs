//! The directory store's file operations outside a component: `std::fs` with the Unix calls
//! that keep a read from following a link or blocking on a FIFO, and Linux's `O_PATH` and
//! `RESOLVE_CACHED` where they apply.
//!
//! Natively there is no host between the store and the kernel, so the store itself does what
//! the component host does for a component: saves into one directory share their directory
//! flushes ([`DirFlush`]: group commit), a replaced Task file is held open across the rename
//! that replaces it ([`look_for_replace`]), and every file it creates is its owner's alone
//! ([`create_new`]).
//!
//! Locks are fenced here: the writer that creates a Task's lock holds a kernel lock on it
//! (`flock`, through `std::fs::File::try_lock`) until it lets it go, and the kernel drops that
//! lock when the process dies. A waiter that finds the kernel lock held knows a live writer has
//! it, however long ago the file changed, and never breaks it ([`look_at_lock`]).

use super::stat::{Fenced, Kind, LockLook, Refused, Seen, Stamp};
pub(super) use super::std_meta::Opened;
use super::std_meta::{kind_of, set_modified_after};
pub(super) use super::std_meta::{read_names, stamp_at, stamp_of};
use crate::group::SharedFlush;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;

/// The file, to write: an `Opened` of [`open_for_update`].
impl Opened {
    pub(super) fn into_writer(self) -> Writer {
        Writer(self.file)
    }
}

/// Opens `path` for reading if it is a regular file: never through a final symbolic link and
/// never blocking on a FIFO. One open (`O_NOFOLLOW | O_NONBLOCK`) and one `fstat`, which
/// refuses whatever is not a regular file.
pub(super) fn open_for_read(path: &Path) -> Result<Opened, Refused> {
    open_regular(path, OpenOptions::new().read(true))
}

/// Opens `path` for reading and writing if it is a regular file, refused as
/// [`open_for_read`] refuses.
pub(super) fn open_for_update(path: &Path) -> Result<Opened, Refused> {
    open_regular(path, OpenOptions::new().read(true).write(true))
}

fn open_regular(path: &Path, options: &mut OpenOptions) -> Result<Opened, Refused> {
    let file = options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => Refused::Kind(Kind::Link),
            _ => Refused::Io(e),
        })?;
    let meta = file.metadata().map_err(Refused::Io)?;
    if !meta.is_file() {
        return Err(Refused::Kind(kind_of(meta.file_type())));
    }
    Ok(Opened {
        stamp: stamp_of(&meta),
        file,
    })
}

/// Creates `path` for writing, failing if anything is there (never through a link). Task
/// files, locks and records are their owner's alone (0600), whatever the umask lets through.
pub(super) fn create_new(path: &Path) -> io::Result<Writer> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map(Writer)
}

/// A file a save writes (its temp file, the lock, the version record it overwrites in place).
pub(super) struct Writer(File);

impl Writer {
    /// Writes all of `bytes` from the start of the file.
    pub(super) fn write_from_start(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.0.write_all_at(bytes, 0)
    }

    /// Flushes the file's data (and length) to disk.
    pub(super) fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }

    /// The file's identity (device and inode), if it can be told.
    pub(super) fn identity(&self) -> Option<(u64, u64)> {
        self.0.metadata().ok().map(|meta| (meta.dev(), meta.ino()))
    }

    /// Writes the file's first byte again (`first`, the byte that is there): its content stays
    /// as it is, its modification time moves to now.
    pub(super) fn rewrite_first(&self, first: u8) -> io::Result<()> {
        self.0.write_all_at(&[first], 0)
    }

    /// Sets the file's modification time 1 ns past `old`'s (`futimens`): the least step that
    /// parts its stamp from `old` on a file system that keeps nanoseconds.
    pub(super) fn set_modified_after(&self, old: Stamp) -> io::Result<()> {
        set_modified_after(&self.0, old)
    }

    /// The file's stamp as it is now.
    pub(super) fn stamp(&self) -> io::Result<Stamp> {
        self.0.metadata().map(|meta| stamp_of(&meta))
    }

    /// Takes the kernel lock on the file, without waiting: `Fenced::Yes` once this writer holds
    /// it, `Busy` while someone else does (a waiter looking at a lock holds it for a moment),
    /// `No` where the file system keeps no such locks (the lease alone then guards the lock).
    pub(super) fn fence(&self) -> Fenced {
        match self.0.try_lock() {
            Ok(()) => Fenced::Yes,
            Err(fs::TryLockError::WouldBlock) => Fenced::Busy,
            Err(fs::TryLockError::Error(_)) => Fenced::No,
        }
    }
}

/// What a waiter's look at a lock it could not create holds: the lock file, with its kernel
/// lock taken, so that no other fenced writer moves it while the waiter decides
/// (`None` where it could not be opened, or the file system keeps no kernel locks).
pub(super) type LookHold = Option<File>;

/// What is at the lock name `path`: nothing, a lock a live writer holds (its kernel lock is
/// held), or a lock no one holds a kernel lock on, with what it looks like (its identity and
/// stamp). Such a lock was left by a writer that died, or by one on a platform without kernel
/// locks (a component under another host), which the lease alone guards; or its writer has
/// just created it and not yet locked it, which is why a lock is broken only after it was seen
/// unchanged for a whole lease.
pub(super) fn look_at_lock(path: &Path) -> io::Result<LockLook<LookHold>> {
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(LockLook::Gone),
        // A link or another kind of file under the lock's name: looked at, not opened.
        Err(_) => {
            return match fs::symlink_metadata(path) {
                Ok(meta) => Ok(LockLook::Unfenced(seen_of(&meta), None)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(LockLook::Gone),
                Err(e) => Err(e),
            };
        }
    };
    let seen = seen_of(&file.metadata()?);
    match file.try_lock() {
        Ok(()) => Ok(LockLook::Unfenced(seen, Some(file))),
        Err(fs::TryLockError::WouldBlock) => Ok(LockLook::Live),
        Err(fs::TryLockError::Error(_)) => Ok(LockLook::Unfenced(seen, None)),
    }
}

fn seen_of(meta: &fs::Metadata) -> Seen {
    Seen {
        identity: Some((meta.dev(), meta.ino())),
        stamp: stamp_of(meta),
    }
}

/// The identity of what `path` names (not followed), as [`Writer::identity`] tells it.
pub(super) fn identity_at(path: &Path) -> io::Result<(u64, u64)> {
    fs::symlink_metadata(path).map(|meta| (meta.dev(), meta.ino()))
}

/// What [`look_for_replace`] keeps open until after the rename.
pub(super) type Held = Option<File>;

/// The stamp of what is at `path` (not followed) and whether it is a directory, and on Linux a
/// handle on it (`O_PATH`: nothing is opened for reading, so a FIFO or a device behaves as a
/// file) to be kept past a rename over it.
///
/// A rename that replaces the last name of a file frees that file inside the rename, while the
/// kernel holds the directory's lock: its blocks are released there, and on a file system that
/// discards freed blocks at once (ext4 mounted with `discard`, without a journal) that is a
/// synchronous device command, which every other save into the directory then waits behind.
/// Held open, the file is freed when the handle is closed, after the rename, outside that lock.
pub(super) fn look_for_replace(path: &Path) -> (io::Result<(Stamp, bool)>, Held) {
    let look = |meta: fs::Metadata| (stamp_of(&meta), meta.is_dir());
    match open_path_only(path) {
        Some(Ok(file)) => (file.metadata().map(look), Some(file)),
        Some(Err(e)) if e.kind() == io::ErrorKind::NotFound => (Err(e), None),
        // Anything else: look without holding.
        _ => (fs::symlink_metadata(path).map(look), None),
    }
}

/// A handle on what `path` names, not followed, that opens nothing for reading (`O_PATH`).
#[cfg(target_os = "linux")]
fn open_path_only(path: &Path) -> Option<io::Result<File>> {
    Some(
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_NOFOLLOW)
            .open(path),
    )
}

/// No `O_PATH` here: nothing is held.
#[cfg(not(target_os = "linux"))]
fn open_path_only(_path: &Path) -> Option<io::Result<File>> {
    None
}

/// Creates `dir` and any missing parents readable by their owner only (0700); a directory that
/// exists keeps its mode, which is its owner's choice.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Flushes the directory `dir` (its entries) to disk.
pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The directory flushes of saves, shared by the saves (of one store and its clones) waiting
/// for one at the same time ([`SharedFlush`]: group commit).
#[derive(Debug, Clone, Default)]
pub(super) struct DirFlush(Arc<SharedFlush>);

impl DirFlush {
    /// Flushes the directory `dir`, shared with the saves into it that wait for a flush at the
    /// same time, doing `meanwhile` (a save flushing its version record) while the flush this
    /// call waits for may already run. An error of `meanwhile` comes first; the flush's is
    /// returned inside.
    pub(super) fn sync_with<E>(
        &self,
        dir: &Path,
        meanwhile: impl FnOnce() -> Result<(), E>,
    ) -> Result<io::Result<()>, E> {
        let mut other = Ok(());
        let synced = self.0.run(|| sync_dir(dir), || other = meanwhile());
        other.map(|()| synced)
    }
}

/// The Task file at `path` if it can be read without waiting for the disk: `None` if its name
/// or any of its bytes are not in the kernel's caches (or it is over `max_bytes`, or this kernel
/// cannot tell), and then nothing was decided. `Some(Ok(None))`: no such file;
/// `Some(Err(kind))`: not a regular file.
///
/// The name is resolved with `openat2(RESOLVE_CACHED)` (`O_NOFOLLOW | O_NONBLOCK`, as every
/// read) and the bytes read with `preadv2(RWF_NOWAIT)`.
#[cfg(target_os = "linux")]
pub(super) fn read_cached(path: &Path, max_bytes: u64) -> Option<Result<Option<Vec<u8>>, Kind>> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    use rustix::io::{Errno, ReadWriteFlags};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat2(
        rustix::fs::CWD,
        path,
        flags,
        Mode::empty(),
        ResolveFlags::CACHED,
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Some(Ok(None)),
        Err(Errno::LOOP) => return Some(Err(Kind::Link)),
        // EAGAIN: not all cached. ENOSYS, EINVAL: a kernel before 5.12. Anything else: the
        // blocking read reports it the way it always does.
        Err(_) => return None,
    };
    let file = File::from(fd);
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return Some(Err(kind_of(meta.file_type())));
    }
    if meta.len() > max_bytes {
        return None;
    }
    // The length `stat` saw, in one read: a Task file is never written once in place (it
    // appears by a rename), so nothing is asked for past it to find the end.
    let mut bytes = vec![0u8; meta.len() as usize];
    let mut filled = 0;
    while filled < bytes.len() {
        match rustix::io::preadv2(
            &file,
            &mut [io::IoSliceMut::new(&mut bytes[filled..])],
            filled as u64,
            ReadWriteFlags::NOWAIT,
        ) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(Errno::INTR) => {}
            Err(_) => return None, // EAGAIN: some page is not cached
        }
    }
    bytes.truncate(filled);
    Some(Ok(Some(bytes)))
}

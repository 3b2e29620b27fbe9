//! Calls on the caller's async worker thread, and file streams without thread hand-offs.
//!
//! Handing a call to Tokio's blocking pool and back costs two thread switches, most of a small
//! `get` (tens of microseconds on a small VM, against a few for the call itself). So on Linux a
//! `get` runs where its caller awaits it, as an async wasmtime call on a fiber, when an idle
//! instance is ready; everything else (saves, deletes, lists, instantiation) runs on the
//! blocking pool. A call on a worker never waits for the disk and never holds the worker,
//! whatever the component does:
//!
//! - **Compute:** the guest yields to the executor at every epoch tick and traps at its
//!   deadline ([`crate::pool`]); a clock wait is an async sleep.
//! - **Reads:** a name is resolved only if the kernel has it cached (`openat2` with
//!   `RESOLVE_CACHED` before `open-at`, `stat-at`, `readlink-at` and `metadata-hash-at`;
//!   anything but a regular file, a directory or a link not followed, such as a FIFO whose open
//!   would wait, counts as uncached, and so do a followed link and `..`, which the kernel does
//!   not resolve from its cache alone), and file bytes are read with `preadv2(RWF_NOWAIT)`,
//!   through a stream ([`InlineReads`]) or positional `read`. `stat` of an open descriptor
//!   never waits. What "cached" means is the kernel's judgement: a read it completes within
//!   the call may have touched the disk.
//! - **Everything else that touches the disk** (writes, also through a write stream kept from
//!   an earlier call, `set-size`, `set-times`, syncs, creates, truncates, renames, unlinks, new
//!   directories, new write streams, listing a directory) is never done inline.
//!
//! Where a call on a worker would wait, the host stops it before doing any of it, with
//! [`NeedsBlocking`], drops the instance, and runs the call again on the blocking pool under
//! the same deadline and the same permit. Nothing was changed by the first attempt (it only
//! read), so the second is the call. A store whose `get`s asked three times
//! ([`crate::pool::MAX_INLINE_STOPS`]) for something never done inline (they write, the
//! kernel lacks `RESOLVE_CACHED`, or the file system `RWF_NOWAIT`, as tmpfs does) has all its
//! later `get`s run on the blocking pool directly; meeting an uncached file does not count.

use crate::pool::Host;
use bytes::{Bytes, BytesMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::OpenMode;
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, Filesize, HostDescriptor, HostDirectoryEntryStream, NewTimestamp, PathFlags,
};
use wasmtime_wasi::p2::{
    FsError, InputStream, OutputStream, Pollable, ReaddirIterator, StreamError,
};

/// Whether the instance's call in progress runs on an async worker; shared with its file
/// streams.
#[derive(Debug, Clone, Default)]
pub(crate) struct InlineFlag(Arc<AtomicBool>);

impl InlineFlag {
    pub(crate) fn set(&self, inline: bool) {
        self.0.store(inline, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Why a call running inline was stopped: it needs a thread that may block for `op`.
/// `counts`: the component asked for it by itself (not because of what the cache held), which
/// counts toward sending the store's `get`s to the blocking pool for good.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NeedsBlocking {
    pub(crate) op: &'static str,
    pub(crate) counts: bool,
}

impl std::fmt::Display for NeedsBlocking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} may wait for the disk: the call is run again on a blocking thread",
            self.op
        )
    }
}

impl std::error::Error for NeedsBlocking {}

fn stop(op: &'static str, counts: bool) -> wasmtime::Error {
    wasmtime::Error::new(NeedsBlocking { op, counts })
}

/// `Err` (a trap carrying [`NeedsBlocking`]) if the call in progress runs inline: for `op`,
/// which is never done there.
pub(crate) fn check(host: &Host, op: &'static str) -> wasmtime::Result<()> {
    match host.inline.get() {
        true => Err(stop(op, true)),
        false => Ok(()),
    }
}

/// What stopped a call that needed a blocking thread, if that is why it failed.
pub(crate) fn needs_blocking(err: &wasmtime::Error) -> Option<NeedsBlocking> {
    err.chain()
        .find_map(|cause| cause.downcast_ref::<NeedsBlocking>())
        .copied()
}

/// In a call running inline, `Ok` only if resolving `path` under the directory `dir` waits
/// for nothing: every name on the way is in the kernel's cache (or known missing), and what it
/// names is a regular file, a directory or a link, which open without waiting. Errors the
/// real call reports better (missing, escaping, not a directory) are left to it.
pub(crate) fn check_lookup(
    host: &mut Host,
    dir: &Resource<Descriptor>,
    path: &str,
    follow: bool,
) -> wasmtime::Result<()> {
    if !host.inline.get() {
        return Ok(());
    }
    // A store looks at a name more than once in a row (a `stat-at`, then the `open-at`): a
    // file or directory found cached in this call (not a link, so whether links are followed
    // does not matter) is not asked about again.
    if checked(host, dir, path).is_some() {
        return Ok(());
    }
    let Ok(Descriptor::Dir(found)) = host.table.get(dir) else {
        return Ok(()); // not a directory: the real call refuses it
    };
    let regular = match cached_lookup(&found.dir, path, follow)? {
        Found::File => true,
        Found::Directory => false,
        Found::Other => return Ok(()),
    };
    host.inline_checked = Some(Checked {
        dir: dir.rep(),
        path: path.to_owned(),
        regular,
    });
    Ok(())
}

/// A name found cached in the call in progress, naming a regular file or a directory
/// ([`check_lookup`]).
#[derive(Debug)]
pub(crate) struct Checked {
    /// The handle of the directory the name is under.
    dir: u32,
    path: String,
    /// A regular file, not a directory.
    regular: bool,
}

/// What `path` under `dir` was found to be, in this call, by [`check_lookup`]: `Some(true)` a
/// regular file, `Some(false)` a directory, `None` not looked at (or found something else).
pub(crate) fn checked(host: &Host, dir: &Resource<Descriptor>, path: &str) -> Option<bool> {
    host.inline_checked
        .as_ref()
        .filter(|c| c.dir == dir.rep() && c.path == path)
        .map(|c| c.regular)
}

/// Opens `path` under `dir` for the guest, as wasmtime-wasi's `open-at` would open it for
/// `flags` without `open-flags` (`create`: with `create` and `exclusive`), in one system call
/// where wasmtime-wasi takes two or three:
///
/// - an existing name, just found to be a regular file (by [`check_lookup`] inline, by an
///   `O_PATH` look otherwise), is opened without a second look at what was opened (the look
///   was just taken; the guest's `stat` of what it gets tells it the rest). Inline, it is
///   resolved from the kernel's cache only, and the call is stopped if it has left it since
///   the look. The open never blocks on a FIFO swapped in after the look (`O_NONBLOCK`, which a
///   regular file ignores);
/// - a create makes the file 0600 as it creates it, where wasmtime-wasi's `open-at` cannot
///   take a mode (the host changed it after, `quota::make_private`). A final link is never
///   followed.
///
/// Names resolve beneath `dir` as wasmtime-wasi resolves them (`openat2` with
/// `RESOLVE_BENEATH` and `RESOLVE_NO_MAGICLINKS`). `None` where this does not apply (other
/// flags, a write to a read-only directory, not Linux) or the open failed (nothing was created
/// then): the real call then opens, or says why it cannot, in wasmtime-wasi's words. `Err` (a
/// trap, as from wasmtime-wasi) if the instance holds too many handles to be given the file.
pub(crate) fn open_here(
    host: &mut Host,
    dir: &Resource<Descriptor>,
    path: &str,
    create: bool,
    follow: bool,
    flags: DescriptorFlags,
) -> wasmtime::Result<Option<Resource<Descriptor>>> {
    if !(DescriptorFlags::READ | DescriptorFlags::WRITE).contains(flags) {
        return Ok(None);
    }
    // As wasmtime-wasi opens a file: a create writes; a file is read unless asked only to be
    // written.
    let write = create || flags.contains(DescriptorFlags::WRITE);
    let mode = match (flags != DescriptorFlags::WRITE, write) {
        (true, true) => OpenMode::READ | OpenMode::WRITE,
        (false, true) => OpenMode::WRITE,
        _ => OpenMode::READ,
    };
    let Ok(Descriptor::Dir(found)) = host.table.get(dir) else {
        return Ok(None);
    };
    if write && found.perms.write_not_permitted() {
        return Ok(None);
    }
    let perms = found.perms;
    let how = Open {
        create,
        follow,
        mode,
        cached: host.inline.get(),
    };
    let Some(file) = open_beneath(&found.dir, path, how)? else {
        return Ok(None);
    };
    // Every instance's WASI context lets file I/O block the thread of the call
    // (`crate::pool`): so does this file.
    let file = wasmtime_wasi::filesystem::File::new(file, perms, mode, true);
    Ok(Some(host.table.push(Descriptor::File(file))?))
}

/// How [`open_beneath`] opens a name.
#[derive(Debug, Clone, Copy)]
struct Open {
    /// Create it (exclusively, 0600).
    create: bool,
    /// Follow a final link (never when creating).
    follow: bool,
    mode: OpenMode,
    /// Resolve the name from the kernel's cache only.
    cached: bool,
}

#[cfg(target_os = "linux")]
fn open_beneath(
    dir: &std::fs::File,
    path: &str,
    how: Open,
) -> wasmtime::Result<Option<std::fs::File>> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;
    let access = match (
        how.mode.contains(OpenMode::READ),
        how.mode.contains(OpenMode::WRITE),
    ) {
        (true, true) => OFlags::RDWR,
        (false, true) => OFlags::WRONLY,
        _ => OFlags::RDONLY,
    };
    let mut flags = access | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    let mut mode = Mode::empty();
    if how.create {
        flags |= OFlags::CREATE | OFlags::EXCL;
        mode = Mode::from_raw_mode(0o600);
    }
    if how.create || !how.follow {
        flags |= OFlags::NOFOLLOW;
    }
    let mut resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    if how.cached {
        resolve |= ResolveFlags::CACHED;
    }
    match rustix::fs::openat2(dir, path, flags, mode, resolve) {
        Ok(fd) => Ok(Some(std::fs::File::from(fd))),
        Err(Errno::AGAIN) if how.cached => {
            Err(stop("a lookup of a name not in the kernel's cache", false))
        }
        Err(_) => Ok(None),
    }
}

#[cfg(not(target_os = "linux"))]
fn open_beneath(
    _dir: &std::fs::File,
    _path: &str,
    _how: Open,
) -> wasmtime::Result<Option<std::fs::File>> {
    Ok(None)
}

/// What a lookup from the cache found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    File,
    Directory,
    /// A link (not followed), or nothing the real call will find (it reports why).
    Other,
}

#[cfg(target_os = "linux")]
fn cached_lookup(dir: &std::fs::File, path: &str, follow: bool) -> wasmtime::Result<Found> {
    use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;
    let mut flags = OFlags::PATH | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    let resolve = ResolveFlags::CACHED | ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    match rustix::fs::openat2(dir, path, flags, Mode::empty(), resolve) {
        Ok(found) => {
            match rustix::fs::fstat(&found).map(|st| FileType::from_raw_mode(st.st_mode)) {
                Ok(FileType::RegularFile) => Ok(Found::File),
                Ok(FileType::Directory) => Ok(Found::Directory),
                Ok(FileType::Symlink) => Ok(Found::Other),
                _ => Err(stop("opening something that is not a file", false)),
            }
        }
        Err(Errno::AGAIN) => Err(stop("a lookup of a name not in the kernel's cache", false)),
        // A kernel before 5.12 (no RESOLVE_CACHED) or without openat2.
        Err(Errno::NOSYS | Errno::INVAL) => Err(stop("a lookup (no RESOLVE_CACHED here)", true)),
        Err(_) => Ok(Found::Other),
    }
}

#[cfg(not(target_os = "linux"))]
fn cached_lookup(_dir: &std::fs::File, _path: &str, _follow: bool) -> wasmtime::Result<Found> {
    Err(stop("a lookup (no RESOLVE_CACHED here)", true))
}

/// The interface whose functions are wrapped; wasmtime links every `0.2.x` import to it.
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// Wraps the functions of `wasi:filesystem/types` that may wait for the disk and that no other
/// wrapper ([`crate::quota`], [`crate::links`]) checks already (after WASI was added to
/// `linker`): never inline `sync` (of a directory: shared with the other callers syncing it,
/// [`crate::dir_sync`]), `sync-data`, `set-times`, `set-times-at`,
/// `read-directory`; inline only over cached names `stat-at`, `readlink-at`,
/// `metadata-hash-at`; `read` of a file only from the page cache ([`read_positional`]).
pub(crate) fn guard_waits(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    types.func_wrap_async(
        "[method]descriptor.sync",
        |mut cx: StoreContextMut<'_, Host>, (fd,): (Resource<Descriptor>,)| {
            Box::new(async move {
                let host = cx.data_mut();
                check(host, "sync")?;
                // A directory's flush is shared with the other instances syncing it now.
                #[cfg(target_os = "linux")]
                if let Ok(Descriptor::Dir(dir)) = host.table.get(&fd) {
                    let dir = Arc::clone(&dir.dir);
                    let synced = crate::dir_sync::sync_shared(&dir);
                    return crate::quota::answer(host, synced.map_err(FsError::from));
                }
                let result = HostDescriptor::sync(&mut host.filesystem(), fd).await;
                crate::quota::answer(host, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.sync-data",
        |mut cx: StoreContextMut<'_, Host>, (fd,): (Resource<Descriptor>,)| {
            Box::new(async move {
                let host = cx.data_mut();
                check(host, "sync-data")?;
                let result = HostDescriptor::sync_data(&mut host.filesystem(), fd).await;
                crate::quota::answer(host, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.set-times",
        |mut cx: StoreContextMut<'_, Host>,
         (fd, atime, mtime): (Resource<Descriptor>, NewTimestamp, NewTimestamp)| {
            Box::new(async move {
                let host = cx.data_mut();
                check(host, "set-times")?;
                let result =
                    HostDescriptor::set_times(&mut host.filesystem(), fd, atime, mtime).await;
                crate::quota::answer(host, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.set-times-at",
        |mut cx: StoreContextMut<'_, Host>,
         (fd, flags, path, atime, mtime): (
            Resource<Descriptor>,
            PathFlags,
            String,
            NewTimestamp,
            NewTimestamp,
        )| {
            Box::new(async move {
                let host = cx.data_mut();
                check(host, "set-times-at")?;
                let result = HostDescriptor::set_times_at(
                    &mut host.filesystem(),
                    fd,
                    flags,
                    path,
                    atime,
                    mtime,
                )
                .await;
                crate::quota::answer(host, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.read-directory",
        |mut cx: StoreContextMut<'_, Host>, (fd,): (Resource<Descriptor>,)| {
            Box::new(async move {
                let host = cx.data_mut();
                check(host, "read-directory")?;
                let result = HostDescriptor::read_directory(&mut host.filesystem(), fd).await;
                crate::quota::answer(host, result)
            })
        },
    )?;
    // A directory stream made in an earlier call (on a blocking thread) and kept: reading it
    // lists the directory.
    types.func_wrap_async(
        "[method]directory-entry-stream.read-directory-entry",
        |mut cx: StoreContextMut<'_, Host>, (stream,): (Resource<ReaddirIterator>,)| {
            Box::new(async move {
                let host = cx.data_mut();
                check(host, "read-directory-entry")?;
                let result =
                    HostDirectoryEntryStream::read_directory_entry(&mut host.filesystem(), stream)
                        .await;
                crate::quota::answer(host, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.read",
        |mut cx: StoreContextMut<'_, Host>,
         (fd, len, offset): (Resource<Descriptor>, Filesize, Filesize)| {
            Box::new(async move {
                let host = cx.data_mut();
                if let Ok(Descriptor::File(file)) = host.table.get(&fd) {
                    let file = Arc::clone(&file.file);
                    return match read_positional(&file, len, offset, host.inline.get()) {
                        Ok(read) => Ok((Ok(read),)),
                        Err(NotRead::Wait(why)) => Err(read_stop(why)),
                        Err(NotRead::Failed(e)) => {
                            crate::quota::answer(host, Err(FsError::from(e)))
                        }
                    };
                }
                // Not a file: wasmtime-wasi says what is wrong.
                let result = HostDescriptor::read(&mut host.filesystem(), fd, len, offset).await;
                crate::quota::answer(host, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.stat-at",
        |mut cx: StoreContextMut<'_, Host>,
         (fd, flags, path): (Resource<Descriptor>, PathFlags, String)| {
            Box::new(async move {
                let host = cx.data_mut();
                check_lookup(host, &fd, &path, flags.contains(PathFlags::SYMLINK_FOLLOW))?;
                let result = HostDescriptor::stat_at(&mut host.filesystem(), fd, flags, path).await;
                crate::quota::answer(host, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.readlink-at",
        |mut cx: StoreContextMut<'_, Host>, (fd, path): (Resource<Descriptor>, String)| {
            Box::new(async move {
                let host = cx.data_mut();
                check_lookup(host, &fd, &path, false)?;
                let result = HostDescriptor::readlink_at(&mut host.filesystem(), fd, path).await;
                crate::quota::answer(host, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.metadata-hash-at",
        |mut cx: StoreContextMut<'_, Host>,
         (fd, flags, path): (Resource<Descriptor>, PathFlags, String)| {
            Box::new(async move {
                let host = cx.data_mut();
                check_lookup(host, &fd, &path, flags.contains(PathFlags::SYMLINK_FOLLOW))?;
                let result =
                    HostDescriptor::metadata_hash_at(&mut host.filesystem(), fd, flags, path).await;
                crate::quota::answer(host, result)
            })
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// The most one positional `read` answers with, and so the most the host allocates for one:
/// a guest that asks for more gets this much and asks again.
const MAX_READ: usize = 1 << 20;

/// Why a positional read has no answer.
#[derive(Debug)]
enum NotRead {
    /// Inline, the read would wait: the call is stopped.
    Wait(Wait),
    Failed(std::io::Error),
}

/// `descriptor.read` of a file, on the thread of the call: up to `len` bytes (at most
/// [`MAX_READ`]) from `offset`, and whether the end of the file was reached. wasmtime-wasi's
/// own reads once and says "end" only when that read found nothing, so a guest reading a file
/// whole asks twice; this reads on until it has `len` bytes or finds the end, which it then
/// reports with the bytes: a file read in one call. Inline the reads are `preadv2(RWF_NOWAIT)`,
/// and a read that would wait for the disk stops the call ([`NeedsBlocking`]) before any answer.
fn read_positional(
    file: &std::fs::File,
    len: Filesize,
    offset: Filesize,
    inline: bool,
) -> Result<(Vec<u8>, bool), NotRead> {
    let want = usize::try_from(len).unwrap_or(usize::MAX).min(MAX_READ);
    let mut buf = vec![0; want];
    let mut got = 0;
    let mut end = false;
    while got < want {
        let at = offset.saturating_add(got as u64);
        let read = match inline {
            true => read_nowait(file, &mut buf[got..], at),
            false => read_at(file, &mut buf[got..], at),
        };
        match read {
            Read::Bytes(0) => {
                end = true;
                break;
            }
            Read::Bytes(n) => got += n,
            Read::Failed(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Read::Failed(e) => return Err(NotRead::Failed(e)),
            Read::Wait(why) => return Err(NotRead::Wait(why)),
        }
    }
    buf.truncate(got);
    Ok((buf, end))
}

/// What one read or `check-write` of a file stream moves at most, as wasmtime-wasi's file
/// streams do (it bounds what one guest call makes the host allocate).
const CHUNK: usize = 64 * 1024;

/// A file's input stream that reads on the thread of the call. wasmtime-wasi's own hands a
/// non-blocking `read` to Tokio's blocking pool; this reads right there: with a plain `pread`
/// on a blocking thread, and with `preadv2(RWF_NOWAIT)` in a call running inline, which stops
/// the call ([`NeedsBlocking`]) rather than wait for a page not in the cache. The guest sees
/// what it would from wasmtime-wasi's stream: at most [`CHUNK`] bytes from the stream's
/// position per read, and `closed` at the end of the file.
pub(crate) struct InlineReads {
    pub(crate) file: Arc<std::fs::File>,
    pub(crate) position: u64,
    pub(crate) inline: InlineFlag,
    pub(crate) closed: bool,
}

/// What a read without waiting came to.
enum Read {
    Bytes(usize),
    Wait(Wait),
    Failed(std::io::Error),
}

/// Why a read inline would wait.
#[derive(Debug, Clone, Copy)]
enum Wait {
    /// The bytes are not all in the page cache.
    Uncached,
    /// The file system cannot read without waiting (no `RWF_NOWAIT`: tmpfs, some network and
    /// FUSE file systems): every read inline would stop.
    Unsupported,
}

/// The stop of a call whose read inline would wait, and whether it counts toward running the
/// store's `get`s on the blocking pool for good ([`crate::pool::MAX_INLINE_STOPS`]): a page
/// not in the cache says nothing of the next read; a file system without `RWF_NOWAIT` says the
/// same of every read, and each stop costs the instance (a fresh one is made for the blocking
/// attempt).
fn read_stop(why: Wait) -> wasmtime::Error {
    match why {
        Wait::Uncached => stop("a read of a file not in the page cache", false),
        Wait::Unsupported => stop(
            "a read where the file system cannot read without waiting (no RWF_NOWAIT)",
            true,
        ),
    }
}

impl InlineReads {
    fn read_here(&mut self, size: usize) -> Result<Bytes, StreamError> {
        if self.closed {
            return Err(StreamError::Closed);
        }
        if size == 0 {
            return Ok(Bytes::new());
        }
        let mut buf = BytesMut::zeroed(size.min(CHUNK));
        let inline = self.inline.get();
        let n = loop {
            let read = match inline {
                true => read_nowait(&self.file, &mut buf, self.position),
                false => read_at(&self.file, &mut buf, self.position),
            };
            match read {
                Read::Bytes(n) => break n,
                Read::Failed(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Read::Wait(why) => return Err(StreamError::Trap(read_stop(why))),
                Read::Failed(e) => {
                    self.closed = true;
                    return Err(StreamError::LastOperationFailed(e.into()));
                }
            }
        };
        if n == 0 {
            self.closed = true;
            return Err(StreamError::Closed);
        }
        buf.truncate(n);
        self.position = self.position.saturating_add(n as u64);
        Ok(buf.freeze())
    }
}

#[cfg(unix)]
fn read_at(file: &std::fs::File, buf: &mut [u8], position: u64) -> Read {
    use std::os::unix::fs::FileExt;
    match file.read_at(buf, position) {
        Ok(n) => Read::Bytes(n),
        Err(e) => Read::Failed(e),
    }
}

#[cfg(windows)]
fn read_at(file: &std::fs::File, buf: &mut [u8], position: u64) -> Read {
    use std::os::windows::fs::FileExt;
    match file.seek_read(buf, position) {
        Ok(n) => Read::Bytes(n),
        Err(e) => Read::Failed(e),
    }
}

#[cfg(target_os = "linux")]
fn read_nowait(file: &std::fs::File, buf: &mut [u8], position: u64) -> Read {
    use rustix::io::{Errno, ReadWriteFlags};
    let mut bufs = [std::io::IoSliceMut::new(buf)];
    match rustix::io::preadv2(file, &mut bufs, position, ReadWriteFlags::NOWAIT) {
        Ok(n) => Read::Bytes(n),
        Err(Errno::AGAIN) => Read::Wait(Wait::Uncached),
        // A file system without RWF_NOWAIT: a blocking thread reads it.
        Err(Errno::OPNOTSUPP | Errno::NOSYS | Errno::INVAL) => Read::Wait(Wait::Unsupported),
        Err(e) => Read::Failed(e.into()),
    }
}

#[cfg(not(target_os = "linux"))]
fn read_nowait(_file: &std::fs::File, _buf: &mut [u8], _position: u64) -> Read {
    Read::Wait(Wait::Unsupported)
}

#[async_trait::async_trait]
impl Pollable for InlineReads {
    /// Always ready: a read is done when asked for.
    async fn ready(&mut self) {}
}

#[async_trait::async_trait]
impl InputStream for InlineReads {
    fn read(&mut self, size: usize) -> Result<Bytes, StreamError> {
        self.read_here(size)
    }

    async fn blocking_read(&mut self, size: usize) -> Result<Bytes, StreamError> {
        self.read_here(size)
    }
}

/// A file's output stream at a position that writes on the thread of the call, where
/// wasmtime-wasi's own file stream hands every non-blocking `write` (the one the guest's libc
/// uses) to Tokio's blocking pool and back: two thread switches per write, tens of
/// microseconds each on a small VM, twice per save. Write streams are only made, and written,
/// on a blocking thread ([`check`]), so the write is done in place. What the guest sees is the same: the
/// bytes land at the stream's position, in order, before `write` returns; a failed write fails
/// with its I/O error (mapped to the WASI error code, such as `insufficient-space`) and closes
/// the stream.
#[cfg(unix)]
pub(crate) struct InlineWrites {
    pub(crate) file: Arc<std::fs::File>,
    pub(crate) position: u64,
    /// A stream made in one call may be kept for a later one, which may run inline: a write
    /// there stops the call like any other write.
    pub(crate) inline: InlineFlag,
    pub(crate) closed: bool,
}

#[cfg(unix)]
#[async_trait::async_trait]
impl Pollable for InlineWrites {
    /// Always ready: nothing is ever left in flight.
    async fn ready(&mut self) {}
}

#[cfg(unix)]
#[async_trait::async_trait]
impl OutputStream for InlineWrites {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        use std::os::unix::fs::FileExt;
        if self.closed {
            return Err(StreamError::Closed);
        }
        if self.inline.get() {
            return Err(StreamError::Trap(stop("a write", true)));
        }
        match self.file.write_all_at(&bytes, self.position) {
            Ok(()) => {
                self.position = self.position.saturating_add(bytes.len() as u64);
                Ok(())
            }
            Err(e) => {
                self.closed = true;
                Err(StreamError::LastOperationFailed(e.into()))
            }
        }
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        match self.closed {
            true => Err(StreamError::Closed),
            false => Ok(()),
        }
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        match self.closed {
            true => Err(StreamError::Closed),
            false => Ok(CHUNK),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stopped(result: wasmtime::Result<Found>) -> Option<NeedsBlocking> {
        result.err().as_ref().and_then(needs_blocking)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_lookup_inline_stops_at_what_an_open_would_wait_for() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("task.json"), "{}").unwrap();
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("task.json", tmp.path().join("link")).unwrap();
        let fifo = std::ffi::CString::new(tmp.path().join("fifo").to_str().unwrap()).unwrap();
        // SAFETY: a plain call with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let dir = std::fs::File::open(tmp.path()).unwrap();
        // Looked up once: the kernel now knows it is missing.
        assert!(std::fs::symlink_metadata(tmp.path().join("missing")).is_err());

        // Cached (just made) regular files, directories and links, and names known missing, go
        // on to the real call.
        for (path, follow) in [
            ("task.json", false),
            ("task.json", true),
            ("sub", false),
            ("link", false),
            ("missing", false),
        ] {
            let result = cached_lookup(&dir, path, follow);
            assert!(result.is_ok(), "{path} (follow: {follow}): {result:?}");
        }
        // A FIFO's open waits for a writer: never inline, and not the component's doing. Nor
        // is a name never looked up; and the kernel resolves neither a link to follow nor a
        // `..` beneath a directory from its cache alone (a blocking thread refuses the escape).
        for (path, follow) in [
            ("fifo", false),
            ("never-looked-up", false),
            ("link", true),
            ("../escape", false),
        ] {
            let needs = stopped(cached_lookup(&dir, path, follow))
                .unwrap_or_else(|| panic!("{path} (follow: {follow}) stops the call"));
            assert!(!needs.counts, "{path}");
        }
    }

    #[test]
    fn only_a_call_running_inline_is_stopped() {
        let flag = InlineFlag::default();
        assert!(!flag.get());
        flag.set(true);
        assert!(flag.clone().get(), "clones share the flag");
        let err = stop("sync", true);
        let needs = needs_blocking(&err.context("wrapped")).expect("found through context");
        assert_eq!(needs.op, "sync");
        assert!(needs.counts);
        assert!(needs_blocking(&wasmtime::Error::msg("a trap")).is_none());
    }

    #[test]
    fn a_positional_read_reads_on_to_what_was_asked_or_the_end_and_says_which() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("data");
        let data: Vec<u8> = (0..5000).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let inline = cfg!(target_os = "linux");
        for on_worker in [false, inline] {
            let read = |len, offset| read_positional(&file, len, offset, on_worker).unwrap();
            assert_eq!(
                read(5001, 0),
                (data.clone(), true),
                "the whole file, and its end"
            );
            assert_eq!(
                read(5000, 0),
                (data.clone(), false),
                "all asked for: end not seen"
            );
            assert_eq!(read(10, 4995), (data[4995..].to_vec(), true));
            assert_eq!(read(7, 100), (data[100..107].to_vec(), false));
            assert_eq!(read(7, 5000), (Vec::new(), true), "at the end");
            assert_eq!(read(7, 1 << 40), (Vec::new(), true), "past it");
            assert_eq!(read(0, 0), (Vec::new(), false), "nothing asked for");
        }
        // An offset no file can have is the system's error, as from wasmtime-wasi.
        assert!(matches!(
            read_positional(&file, 7, u64::MAX, false),
            Err(NotRead::Failed(e)) if e.kind() == std::io::ErrorKind::InvalidInput
        ));
        let big = tmp.path().join("big");
        std::fs::write(&big, vec![7u8; MAX_READ + 10]).unwrap();
        let big = std::fs::File::open(&big).unwrap();
        let (bytes, end) = read_positional(&big, u64::MAX, 0, false).unwrap();
        assert_eq!(
            (bytes.len(), end),
            (MAX_READ, false),
            "at most MAX_READ per call"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_host_opens_as_asked_waits_on_no_fifo_and_creates_files_private() {
        use std::io::{Read, Write};
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("task.json"), "{}").unwrap();
        std::os::unix::fs::symlink("task.json", tmp.path().join("link")).unwrap();
        let fifo = std::ffi::CString::new(tmp.path().join("fifo").to_str().unwrap()).unwrap();
        // SAFETY: a plain call with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let dir = std::fs::File::open(tmp.path()).unwrap();
        let mut text = String::new();
        open_beneath(&dir, "task.json", reading(false, true))
            .unwrap()
            .expect("a cached regular file opens")
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "{}");
        let writing = Open {
            mode: OpenMode::WRITE,
            ..reading(false, false)
        };
        let mut file = open_beneath(&dir, "task.json", writing)
            .unwrap()
            .expect("opens for writing");
        file.write_all(b"[]").unwrap();
        assert!(file.read(&mut [0; 2]).is_err(), "opened only to write");
        assert_eq!(std::fs::read(tmp.path().join("task.json")).unwrap(), b"[]");
        // A link is not followed unless asked to be, and nothing escapes the directory.
        assert!(matches!(
            open_beneath(&dir, "link", reading(false, false)),
            Ok(None)
        ));
        assert!(
            open_beneath(&dir, "link", reading(true, false))
                .unwrap()
                .is_some()
        );
        assert!(matches!(
            open_beneath(&dir, "../x", reading(false, false)),
            Ok(None)
        ));
        // A FIFO swapped in after the look: the open returns at once, without a writer.
        let opened = open_beneath(&dir, "fifo", reading(false, false)).unwrap();
        assert!(opened.is_some(), "opened without waiting for a writer");
        // A create makes the file private whatever the umask, and only if nothing is there.
        let create = Open {
            create: true,
            mode: OpenMode::WRITE,
            ..reading(false, false)
        };
        assert!(open_beneath(&dir, "new", create).unwrap().is_some());
        let made = std::fs::metadata(tmp.path().join("new")).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&made.permissions()) & 0o777,
            0o600
        );
        assert!(
            matches!(open_beneath(&dir, "new", create), Ok(None)),
            "exclusive"
        );
        assert!(
            matches!(open_beneath(&dir, "link", create), Ok(None)),
            "never through a link"
        );
    }

    #[cfg(target_os = "linux")]
    fn reading(follow: bool, cached: bool) -> Open {
        Open {
            create: false,
            follow,
            mode: OpenMode::READ,
            cached,
        }
    }

    #[test]
    fn reads_come_in_chunks_from_the_position_and_end_closed() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("data");
        let data: Vec<u8> = (0..CHUNK + 100).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let mut reads = InlineReads {
            file: Arc::new(std::fs::File::open(&path).unwrap()),
            position: 10,
            inline: InlineFlag::default(),
            closed: false,
        };
        assert!(reads.read_here(0).unwrap().is_empty());
        let first = reads.read_here(usize::MAX).unwrap();
        assert_eq!(first.len(), CHUNK, "at most one chunk per read");
        assert_eq!(&first[..], &data[10..10 + CHUNK]);
        let rest = reads.read_here(1000).unwrap();
        assert_eq!(&rest[..], &data[10 + CHUNK..]);
        assert!(matches!(reads.read_here(1), Err(StreamError::Closed)));
        assert!(matches!(reads.read_here(1), Err(StreamError::Closed)));
    }

    #[cfg(unix)]
    #[test]
    fn a_write_stream_kept_for_a_call_running_inline_stops_it_before_writing() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("data");
        std::fs::write(&path, b"").unwrap();
        let inline = InlineFlag::default();
        let mut writes = InlineWrites {
            file: Arc::new(std::fs::OpenOptions::new().write(true).open(&path).unwrap()),
            position: 0,
            inline: inline.clone(),
            closed: false,
        };
        writes
            .write(Bytes::from_static(b"on a blocking thread"))
            .unwrap();
        inline.set(true);
        match writes.write(Bytes::from_static(b" and inline")) {
            Err(StreamError::Trap(e)) => assert!(needs_blocking(&e).is_some_and(|n| n.counts)),
            other => panic!("a write inline must stop the call: {other:?}"),
        }
        assert_eq!(std::fs::read(&path).unwrap(), b"on a blocking thread");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_inline_read_of_a_cached_file_reads_it() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("data");
        std::fs::write(&path, b"cached bytes").unwrap();
        let inline = InlineFlag::default();
        inline.set(true);
        let mut reads = InlineReads {
            file: Arc::new(std::fs::File::open(&path).unwrap()),
            position: 0,
            inline,
            closed: false,
        };
        assert_eq!(&reads.read_here(100).unwrap()[..], b"cached bytes");
        assert!(matches!(reads.read_here(1), Err(StreamError::Closed)));
    }
}

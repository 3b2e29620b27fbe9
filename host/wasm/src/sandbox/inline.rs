//! Calls on the caller's async worker thread ("inline"), which never wait for the disk.
//!
//! Handing a call to Tokio's blocking pool and back costs two thread switches, most of a small
//! `get`. So on Linux a `get` runs where its caller awaits it, as an async wasmtime call on a
//! fiber, when an idle instance is ready; everything else (saves, deletes, lists,
//! instantiation) runs on the blocking pool. A call on a worker never waits for the disk and
//! never holds the worker, whatever the component does:
//!
//! - **Compute:** the guest yields to the executor at every epoch tick and traps at its
//!   deadline (`sandbox::deadline`); a clock wait is an async sleep.
//! - **Reads:** a name is resolved only if the kernel has it cached (`openat2` with
//!   `RESOLVE_CACHED` before `open-at`, `stat-at`, `readlink-at` and `metadata-hash-at`;
//!   anything but a regular file, a directory or a link not followed, such as a FIFO whose open
//!   would wait, counts as uncached, and so do a followed link and `..`, which the kernel does
//!   not resolve from its cache alone: [`InlineState::check_lookup`]), and file bytes are read
//!   with `preadv2(RWF_NOWAIT)` ([`read_nowait`]), through a stream or positional `read`
//!   (`sandbox::direct_io`). `stat` of an open descriptor never waits. What "cached" means is
//!   the kernel's judgement: a read it completes within the call may have touched the disk.
//! - **Everything else that touches the disk** (writes, also through a write stream kept from
//!   an earlier call, `set-size`, `set-times`, syncs, creates, truncates, renames, unlinks, new
//!   directories, new write streams, listing a directory) is never done inline
//!   ([`InlineState::refuse`], called by `sandbox::wasi_overrides` for each of them).
//!
//! Where a call on a worker would wait, the host stops it before doing any of it, with
//! [`NeedsBlocking`], drops the instance, and runs the call again on the blocking pool under
//! the same deadline and the same permit (`sandbox::call`). Nothing was changed by the first
//! attempt (it only read), so the second is the call. A pool whose `get`s asked
//! [`MAX_INLINE_STOPS`] times for something never done inline (they write, the kernel lacks
//! `RESOLVE_CACHED`, or the file system `RWF_NOWAIT`, as tmpfs does) has all its later `get`s
//! run on the blocking pool directly ([`InlineGets`]); meeting an uncached file does not count.
//!
//! Everything of this mechanism is here, but for its call sites: the per-instance part of the
//! state ([`InlineState`]), the pool's [`InlineGets`], the inline attempt in `sandbox::call`,
//! the checks in `sandbox::wasi_overrides`, and the choice of read in `sandbox::direct_io` and
//! of lookup in `sandbox::open`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::filesystem::Descriptor;

/// After this many `get`s asked for something never done on an async worker, a pool's `get`s
/// run on the blocking pool directly. Not after the first: a component may do one-time work
/// (a sweep, a directory to create) in its first call, and an instance created on the blocking
/// pool does it there, so such a component stops at most once per instance made idle at load.
pub(crate) const MAX_INLINE_STOPS: u32 = 3;

/// Whether a pool's `get`s are tried inline: until [`MAX_INLINE_STOPS`] of them asked for
/// something never done there.
#[derive(Debug)]
pub(crate) struct InlineGets {
    enabled: AtomicBool,
    /// How many `get`s running inline asked for something never done there (not counting what
    /// the kernel's cache decided).
    stops: AtomicU32,
}

impl InlineGets {
    /// Inline calls need `RESOLVE_CACHED` and `RWF_NOWAIT` to never wait: Linux only.
    pub(crate) fn new() -> Self {
        InlineGets {
            enabled: AtomicBool::new(cfg!(target_os = "linux")),
            stops: AtomicU32::new(0),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Counts a stop that the component asked for by itself; at [`MAX_INLINE_STOPS`], `get`s
    /// are no longer tried inline.
    pub(crate) fn count_stop(&self, needs: &NeedsBlocking) {
        if needs.counts && self.stops.fetch_add(1, Ordering::Relaxed) + 1 >= MAX_INLINE_STOPS {
            self.enabled.store(false, Ordering::Relaxed);
        }
    }
}

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

/// An instance's part of the state for inline calls.
#[derive(Debug, Default)]
pub(crate) struct InlineState {
    /// The call in progress runs on an async worker thread: file operations that may wait long
    /// (writes, syncs, renames, …) must not run here.
    pub(crate) on_worker: InlineFlag,
    /// The last file or directory found cached in this call ([`InlineState::check_lookup`]).
    last_cached: Option<CachedName>,
}

/// A name found cached in the call in progress, naming a regular file or a directory
/// ([`InlineState::check_lookup`]).
#[derive(Debug)]
struct CachedName {
    /// The handle of the directory the name is under.
    dir: u32,
    path: String,
    /// A regular file, not a directory.
    regular: bool,
}

impl InlineState {
    /// Arms the state for a call, `inline` if it runs on an async worker.
    pub(crate) fn start_call(&mut self, inline: bool) {
        self.on_worker.set(inline);
        self.last_cached = None;
    }

    /// Whether the call in progress runs on an async worker.
    pub(crate) fn running_inline(&self) -> bool {
        self.on_worker.get()
    }

    /// `Err` (a trap carrying [`NeedsBlocking`]) if the call in progress runs inline: for
    /// `op`, which is never done there.
    pub(crate) fn refuse(&self, op: &'static str) -> wasmtime::Result<()> {
        match self.running_inline() {
            true => Err(stop(op, true)),
            false => Ok(()),
        }
    }

    /// In a call running inline, `Ok` only if resolving `path` under the directory `dir` waits
    /// for nothing: every name on the way is in the kernel's cache (or known missing), and what
    /// it names is a regular file, a directory or a link, which open without waiting. Errors
    /// the real call reports better (missing, escaping, not a directory) are left to it.
    pub(crate) fn check_lookup(
        &mut self,
        table: &ResourceTable,
        dir: &Resource<Descriptor>,
        path: &str,
        follow: bool,
    ) -> wasmtime::Result<()> {
        if !self.running_inline() {
            return Ok(());
        }
        // A store looks at a name more than once in a row (a `stat-at`, then the `open-at`): a
        // file or directory found cached in this call (not a link, so whether links are
        // followed does not matter) is not asked about again.
        if self.checked(dir, path).is_some() {
            return Ok(());
        }
        let Ok(Descriptor::Dir(found)) = table.get(dir) else {
            return Ok(()); // not a directory: the real call refuses it
        };
        let regular = match cached_lookup(&found.dir, path, follow)? {
            Found::File => true,
            Found::Directory => false,
            Found::Other => return Ok(()),
        };
        self.last_cached = Some(CachedName {
            dir: dir.rep(),
            path: path.to_owned(),
            regular,
        });
        Ok(())
    }

    /// What `path` under `dir` was found to be, in this call, by
    /// [`InlineState::check_lookup`]: `Some(true)` a regular file, `Some(false)` a directory,
    /// `None` not looked at (or found something else).
    pub(crate) fn checked(&self, dir: &Resource<Descriptor>, path: &str) -> Option<bool> {
        self.last_cached
            .as_ref()
            .filter(|c| c.dir == dir.rep() && c.path == path)
            .map(|c| c.regular)
    }
}

/// Why a call running inline was stopped: it needs a thread that may block for `op`.
/// `counts`: the component asked for it by itself (not because of what the cache held), which
/// counts toward sending the pool's `get`s to the blocking pool for good.
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

/// The trap that stops a call running inline before `op`.
pub(crate) fn stop(op: &'static str, counts: bool) -> wasmtime::Error {
    wasmtime::Error::new(NeedsBlocking { op, counts })
}

/// What stopped a call that needed a blocking thread, if that is why it failed.
pub(crate) fn needs_blocking(err: &wasmtime::Error) -> Option<NeedsBlocking> {
    err.chain()
        .find_map(|cause| cause.downcast_ref::<NeedsBlocking>())
        .copied()
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

/// What one read of a file came to (only a read that must not wait answers `Wait`).
pub(crate) enum ReadOutcome {
    Bytes(usize),
    /// It would wait, for this reason: the call is stopped ([`read_stop`]).
    Wait(Wait),
    Failed(std::io::Error),
}

/// Why a read inline would wait.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wait {
    /// The bytes are not all in the page cache.
    Uncached,
    /// The file system cannot read without waiting (no `RWF_NOWAIT`: tmpfs, some network and
    /// FUSE file systems): every read inline would stop.
    Unsupported,
}

/// The stop of a call whose read inline would wait, and whether it counts toward running the
/// pool's `get`s on the blocking pool for good ([`MAX_INLINE_STOPS`]): a page not in the cache
/// says nothing of the next read; a file system without `RWF_NOWAIT` says the same of every
/// read, and each stop costs the instance (a fresh one is made for the blocking attempt).
pub(crate) fn read_stop(why: Wait) -> wasmtime::Error {
    match why {
        Wait::Uncached => stop("a read of a file not in the page cache", false),
        Wait::Unsupported => stop(
            "a read where the file system cannot read without waiting (no RWF_NOWAIT)",
            true,
        ),
    }
}

/// Reads into `buf` from `position` only what the page cache holds (`preadv2(RWF_NOWAIT)`).
#[cfg(target_os = "linux")]
pub(crate) fn read_nowait(file: &std::fs::File, buf: &mut [u8], position: u64) -> ReadOutcome {
    use rustix::io::{Errno, ReadWriteFlags};
    let mut bufs = [std::io::IoSliceMut::new(buf)];
    match rustix::io::preadv2(file, &mut bufs, position, ReadWriteFlags::NOWAIT) {
        Ok(n) => ReadOutcome::Bytes(n),
        Err(Errno::AGAIN) => ReadOutcome::Wait(Wait::Uncached),
        // A file system without RWF_NOWAIT: a blocking thread reads it.
        Err(Errno::OPNOTSUPP | Errno::NOSYS | Errno::INVAL) => ReadOutcome::Wait(Wait::Unsupported),
        Err(e) => ReadOutcome::Failed(e.into()),
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn read_nowait(_file: &std::fs::File, _buf: &mut [u8], _position: u64) -> ReadOutcome {
    ReadOutcome::Wait(Wait::Unsupported)
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
}

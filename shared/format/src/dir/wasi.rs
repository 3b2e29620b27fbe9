//! The directory store's file operations inside a `wasm32-wasip2` component, through
//! `wasi:filesystem` directly.
//!
//! `std::fs` reaches the host through wasi-libc, where every `stat` is two host calls (`stat`
//! and `metadata-hash`, which only fills in an inode number). Reading a Task file safely looks
//! at the name before opening it (to refuse a link or a FIFO without opening it) and at the file
//! after (its type, length and time): four host calls and four system calls through `std::fs`,
//! two here. A read through here is one `stat-at` of the name (not followed; skipped under a
//! host that refuses to open special files, [`set_host_refuses_special_files`]), one `open-at`,
//! one `stat` of what was opened, and its bytes by positional `read`: the length `stat` saw, in
//! one call (a stream would take four: make it, read, read again to see the end, drop it).
//! Reads are what a component's `get` does, which runs on the host's async workers when it can
//! (`docs/security.md`, "Where calls run"), so that is where it counts.
//!
//! The files a save writes (its temp file, the lock, the version record it overwrites in place)
//! go this way too ([`Writer::write_from_start`], [`create_new`], [`open_for_update`]): one
//! `write` of the whole text where wasi-libc's output stream takes a `check-write`, a `write` and
//! a flush per 64 KiB, and a flush of a file's data that is one (`sync-data`), where Rust's
//! standard library asks for `sync`, which also writes the file's metadata (its times) to disk.
//! So does the flush of the directory ([`sync_dir`]), on the handle the host granted. Renames
//! and removals stay on `std::fs` (one host call either way).
//!
//! What the store does for itself natively the host does for every component, so none of it is
//! done here: the host shares a directory's flush among all the instances syncing it, holds a
//! replaced file open across a rename, and makes every file a component creates its owner's
//! alone.

use super::stat::{Fenced, Kind, LockLook, Refused, Seen, Stamp};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use wasip2::filesystem::preopens;
use wasip2::filesystem::types::{
    Descriptor, DescriptorFlags, DescriptorStat, DescriptorType, ErrorCode, OpenFlags, PathFlags,
};

thread_local! {
    /// The preopened directories, asked for once per instance (each ask makes new handles).
    static PREOPENS: Vec<(Descriptor, String)> = preopens::get_directories();
}

/// A regular file opened for reading (by [`open_for_update`], for writing too), with its stamp
/// when it was opened.
pub(super) struct Opened {
    pub(super) stamp: Stamp,
    file: Descriptor,
}

impl Opened {
    /// At most `limit` bytes from the start of the file, by positional `read`s: the length
    /// `stat` saw when the file was opened, asked for in one call, which is one system call
    /// where the host fills what it is asked for (the toolnexus host does).
    ///
    /// That length is taken as the file's: the files read this way are never written after
    /// they are in place (a Task file appears by a rename of a complete file; a version record
    /// is overwritten in place at its own fixed length), so nothing is asked for past it. A
    /// file that shrank since is read to its end; one that grew is read as it was when it was
    /// opened. Only a file that `stat` saw empty is read until the host reports its end, 64 KiB
    /// at a time.
    pub(super) fn read_up_to(&self, limit: u64) -> io::Result<Vec<u8>> {
        let seen = self.stamp.size.min(limit);
        let mut bytes = Vec::new();
        while (bytes.len() as u64) < limit {
            let got = bytes.len() as u64;
            let want = match seen {
                // Seen empty: to the end, 64 KiB at a time (the host fills a buffer of the size
                // asked for: never ask for much more than there may be).
                0 => (limit - got).min(64 << 10),
                _ if got < seen => seen - got,
                _ => break, // all that `stat` saw
            };
            let (chunk, end) = self.file.read(want, got).map_err(to_io)?;
            if chunk.len() as u64 > want {
                return Err(io::Error::other(format!(
                    "the host read {} bytes where {want} were asked for",
                    chunk.len()
                )));
            }
            if chunk.is_empty() {
                break;
            }
            if bytes.is_empty() {
                // The first read is usually the whole file: kept, not copied; if more is to
                // come, room for the rest is made at once.
                let more = want.saturating_sub(chunk.len() as u64);
                bytes = chunk;
                if !end {
                    bytes.reserve(more as usize);
                }
            } else {
                bytes.extend_from_slice(&chunk);
            }
            if end {
                break;
            }
        }
        Ok(bytes)
    }

    /// The file, to write (opened by [`open_for_update`]).
    pub(super) fn into_writer(self) -> Writer {
        Writer(self.file)
    }
}

/// Opens `path` for reading if it is a regular file, never following a link and never opening
/// anything else (a FIFO is refused before it is opened, by this code or by the host, so the
/// open cannot block on it).
pub(super) fn open_for_read(path: &Path) -> Result<Opened, Refused> {
    beneath(path, |dir, rel| {
        open_beneath(dir, rel, DescriptorFlags::READ)
    })
    .map_err(Refused::Io)?
}

/// Opens `path` for reading and writing if it is a regular file, refused as
/// [`open_for_read`] refuses.
pub(super) fn open_for_update(path: &Path) -> Result<Opened, Refused> {
    beneath(path, |dir, rel| {
        open_beneath(dir, rel, DescriptorFlags::READ | DescriptorFlags::WRITE)
    })
    .map_err(Refused::Io)?
}

/// Creates `path` for writing, failing if anything is there (`exclusive`, which never follows
/// a link). Private to its owner by the host's doing, as every file a component creates.
pub(super) fn create_new(path: &Path) -> io::Result<Writer> {
    beneath(path, |dir, rel| {
        dir.open_at(
            PathFlags::empty(),
            rel,
            OpenFlags::CREATE | OpenFlags::EXCLUSIVE,
            DescriptorFlags::WRITE,
        )
        .map(Writer)
        .map_err(to_io)
    })?
}

/// A file a save writes (its temp file, the lock, the version record it overwrites in place):
/// one host call per write, and a flush of the data that is `sync-data`, not `sync`.
pub(super) struct Writer(Descriptor);

impl Writer {
    /// Writes all of `bytes` from the start of the file: one `write` unless the host writes less
    /// than asked.
    pub(super) fn write_from_start(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write_all_at(bytes, 0)
    }

    fn write_all_at(&self, mut bytes: &[u8], mut offset: u64) -> io::Result<()> {
        while !bytes.is_empty() {
            let written = self.0.write(bytes, offset).map_err(to_io)?;
            // More than was given would be a host fault; zero would loop for ever.
            let written = usize::try_from(written)
                .ok()
                .filter(|&n| n > 0 && n <= bytes.len())
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::WriteZero,
                        format!("the host wrote {written} of {} bytes", bytes.len()),
                    )
                })?;
            bytes = &bytes[written..];
            offset += written as u64;
        }
        Ok(())
    }

    /// Flushes the file's data (and its length) to disk, not its times: `sync-data`.
    pub(super) fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data().map_err(to_io)
    }

    /// The file's identity: the lower half of the host's `metadata-hash`. wasmtime hashes
    /// device and inode into all 128 bits; jco's preview2-shim (the component in Node.js) puts
    /// the inode in the lower half and the modification time, which every write changes, in
    /// the upper.
    pub(super) fn identity(&self) -> Option<(u64, u64)> {
        let hash = self.0.metadata_hash().ok()?;
        Some((hash.lower, 0))
    }

    /// Writes the file's first byte again (`first`, the byte that is there): its content stays
    /// as it is, its modification time moves to now.
    pub(super) fn rewrite_first(&self, first: u8) -> io::Result<()> {
        self.write_all_at(&[first], 0)
    }

    /// Leaves the modification time as it is: WASI `set-times` is not used, since jco's
    /// preview2-shim sets those times in the wrong unit. Saves part stamps by
    /// [`Writer::rewrite_first`] instead.
    pub(super) fn set_modified_after(&self, _old: Stamp) -> io::Result<()> {
        Ok(())
    }

    /// The file's stamp, as `stat` says now.
    pub(super) fn stamp(&self) -> io::Result<Stamp> {
        Ok(stamp(&self.0.stat().map_err(to_io)?))
    }

    /// No kernel locks through WASI: the lease guards a component's locks, and a host that
    /// fences the files its components create exclusively (this project's does) keeps them
    /// from being broken while the component holds them.
    pub(super) fn fence(&self) -> Fenced {
        Fenced::No
    }
}

/// Nothing is held by a look at a lock.
pub(super) type LookHold = ();

/// What is at the lock name `path` ([`LockLook`]): no kernel locks here, so a lock that is there
/// is `Unfenced`, with its stamp and identity (two host calls).
pub(super) fn look_at_lock(path: &Path) -> io::Result<LockLook<LookHold>> {
    let stamp = match stamp_at(path) {
        Ok(stamp) => stamp,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(LockLook::Gone),
        Err(e) => return Err(e),
    };
    let identity = identity_at(path).ok();
    Ok(LockLook::Unfenced(Seen { identity, stamp }, ()))
}

/// The length and modification time (nanoseconds) of what `path` names, not followed: what
/// `std::fs::symlink_metadata` would say of them, in one host call instead of two.
pub(super) fn stamp_at(path: &Path) -> io::Result<Stamp> {
    stamp_and_dir_of(path).map(|(stamp, _)| stamp)
}

/// The identity of what `path` names, not followed, as [`Writer::identity`] tells it.
pub(super) fn identity_at(path: &Path) -> io::Result<(u64, u64)> {
    beneath(path, |dir, rel| {
        let hash = dir
            .metadata_hash_at(PathFlags::empty(), rel)
            .map_err(to_io)?;
        Ok((hash.lower, 0))
    })?
}

/// The names in the directory `path`, by `wasi:filesystem` directly. wasi-libc's `readdir`
/// also asks the host for each entry's metadata hash (an inode number nothing here reads), and
/// an entry removed between the directory read and that ask (a writer's temp file renamed, a
/// Task deleted) fails the walk and ends it. Here such an entry, which a host may also report
/// as `no-entry` in the stream, is left out: the listing is the one a moment later.
///
/// The directory is read through a handle opened for it, the granted one included, as
/// wasi-libc does (jco's Node.js host answers `bad-descriptor` for reading the granted handle
/// itself).
pub(super) fn read_names(path: &Path) -> io::Result<Vec<String>> {
    beneath(path, |granted, rel| {
        let dir = granted
            .open_at(
                PathFlags::empty(),
                rel,
                OpenFlags::DIRECTORY,
                DescriptorFlags::READ,
            )
            .map_err(to_io)?;
        let entries = dir.read_directory().map_err(to_io)?;
        let mut names = Vec::new();
        loop {
            match entries.read_directory_entry() {
                Ok(Some(entry)) => names.push(entry.name),
                Ok(None) => return Ok(names),
                Err(ErrorCode::NoEntry) => {}
                Err(code) => return Err(to_io(code)),
            }
        }
    })?
}

/// Nothing: the host's rename holds the file it replaces open across the rename.
pub(super) type Held = ();

/// The stamp of what is at `path` (not followed) and whether it is a directory, in one host
/// call.
pub(super) fn look_for_replace(path: &Path) -> (io::Result<(Stamp, bool)>, Held) {
    (stamp_and_dir_of(path), ())
}

fn stamp_and_dir_of(path: &Path) -> io::Result<(Stamp, bool)> {
    beneath(path, |dir, rel| {
        let stat = dir.stat_at(PathFlags::empty(), rel).map_err(to_io)?;
        Ok((stamp(&stat), stat.type_ == DescriptorType::Directory))
    })?
}

/// Creates `dir` and any missing parents (WASI has no modes: the directory the host grants is
/// its owner's alone already).
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new().recursive(true).create(dir)
}

/// Flushes the directory `path` (its entries) to disk: `sync` on the granted directory's own
/// handle when `path` is that directory and the host can sync that handle, else on a handle
/// opened for it (jco's Node.js host answers `invalid` for the granted handle itself; an
/// `io` error is never retried, since a second flush may report success for writes the first
/// one lost).
pub(super) fn sync_dir(path: &Path) -> io::Result<()> {
    beneath(path, |dir, rel| {
        if rel == "." {
            match dir.sync() {
                Err(ErrorCode::Invalid | ErrorCode::Unsupported | ErrorCode::BadDescriptor) => {}
                synced => return synced.map_err(to_io),
            }
        }
        dir.open_at(
            PathFlags::empty(),
            rel,
            OpenFlags::DIRECTORY,
            DescriptorFlags::READ,
        )
        .and_then(|sub| sub.sync())
        .map_err(to_io)
    })?
}

/// A save's directory flush: just a `sync`. Inside one instance there is only one thread, so
/// no one to share a flush with; the host shares a directory's flush among all the instances
/// syncing it.
#[derive(Debug, Clone, Default)]
pub(super) struct DirFlush;

impl DirFlush {
    /// Does `meanwhile` (a save flushing its version record), then flushes the directory `dir`.
    /// An error of `meanwhile` comes first; the flush's is returned inside.
    pub(super) fn sync_with<E>(
        &self,
        dir: &Path,
        meanwhile: impl FnOnce() -> Result<(), E>,
    ) -> Result<io::Result<()>, E> {
        meanwhile()?;
        Ok(sync_dir(dir))
    }
}

/// `f` of the preopened directory `path` is beneath (the longest, as wasi-libc resolves it;
/// a relative path from the current directory, as wasi-libc resolves it) and the rest of `path`
/// under it. A path beneath no preopened directory is not found, as wasi-libc reports it.
fn beneath<T>(path: &Path, f: impl FnOnce(&Descriptor, &str) -> T) -> io::Result<T> {
    let absolute;
    let path = if path.is_relative() {
        absolute = std::env::current_dir()?.join(path);
        absolute.as_path()
    } else {
        path
    };
    PREOPENS.with(|preopens| {
        let (dir, rel) = preopens
            .iter()
            .filter_map(|(dir, name)| Some((dir, name, path.strip_prefix(name).ok()?)))
            .max_by_key(|(_, name, _)| name.len())
            .map(|(dir, _, rel)| (dir, rel))
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))?;
        let rel = match rel.to_str() {
            Some("") => ".",
            Some(rel) => rel,
            None => return Err(io::Error::from_raw_os_error(libc::EILSEQ)),
        };
        Ok(f(dir, rel))
    })
}

/// Set by [`set_host_refuses_special_files`].
static HOST_REFUSES_SPECIAL_FILES: AtomicBool = AtomicBool::new(false);

/// Whether the host refuses every `open-at` of a FIFO, a socket or a device (with
/// `not-permitted`), as the toolnexus wasmtime host says it does with the setting
/// `special-files-refused`. Then a read opens a name without looking at it first, since the
/// open cannot block on a FIFO or act through a device: one host call fewer per file read. The
/// look happens only when the open is refused, to say why. Off by default: another host may
/// open whatever it is asked to.
pub fn set_host_refuses_special_files(refuses: bool) {
    HOST_REFUSES_SPECIAL_FILES.store(refuses, Ordering::Relaxed);
}

fn open_beneath(dir: &Descriptor, rel: &str, flags: DescriptorFlags) -> Result<Opened, Refused> {
    let look = || -> Result<(), Refused> {
        let named = dir
            .stat_at(PathFlags::empty(), rel)
            .map_err(|e| Refused::Io(to_io(e)))?;
        regular(named.type_)
    };
    let looked_first = !HOST_REFUSES_SPECIAL_FILES.load(Ordering::Relaxed);
    if looked_first {
        look()?;
    }
    let file = dir
        .open_at(PathFlags::empty(), rel, OpenFlags::empty(), flags)
        .map_err(|e| match e {
            // A link (the open does not follow one), or replaced by one after the look.
            ErrorCode::Loop => Refused::Kind(Kind::Link),
            ErrorCode::IsDirectory => Refused::Kind(Kind::Dir),
            // What the host refuses to open is named by what it is, if that is why.
            ErrorCode::NotPermitted if !looked_first => match look() {
                Ok(()) => Refused::Io(to_io(e)),
                Err(refused) => refused,
            },
            e => Refused::Io(to_io(e)),
        })?;
    let stat = file.stat().map_err(|e| Refused::Io(to_io(e)))?;
    regular(stat.type_)?;
    Ok(Opened {
        stamp: stamp(&stat),
        file,
    })
}

/// The length and modification time that `stat` reported; the time in nanoseconds since the
/// epoch, as `std::fs::Metadata` reports it inside a component (wasi-libc fills `st_mtim` from
/// the same field, with 0 where the host keeps none).
fn stamp(stat: &DescriptorStat) -> Stamp {
    Stamp {
        size: stat.size,
        mtime_ns: stat.data_modification_timestamp.map_or(0, |t| {
            i128::from(t.seconds) * 1_000_000_000 + i128::from(t.nanoseconds)
        }),
    }
}

fn regular(kind: DescriptorType) -> Result<(), Refused> {
    match kind {
        DescriptorType::RegularFile => Ok(()),
        DescriptorType::SymbolicLink => Err(Refused::Kind(Kind::Link)),
        DescriptorType::Directory => Err(Refused::Kind(Kind::Dir)),
        _ => Err(Refused::Kind(Kind::Other)),
    }
}

/// The error as `std::fs` would have reported it: wasi-libc's errno for the code, so messages
/// and [`io::ErrorKind`]s read the same whichever way a file was read.
fn to_io(code: ErrorCode) -> io::Error {
    let errno = match code {
        ErrorCode::Access => libc::EACCES,
        ErrorCode::WouldBlock => libc::EAGAIN,
        ErrorCode::Busy => libc::EBUSY,
        ErrorCode::Exist => libc::EEXIST,
        ErrorCode::FileTooLarge => libc::EFBIG,
        ErrorCode::Interrupted => libc::EINTR,
        ErrorCode::Invalid => libc::EINVAL,
        ErrorCode::Io => libc::EIO,
        ErrorCode::IsDirectory => libc::EISDIR,
        ErrorCode::Loop => libc::ELOOP,
        ErrorCode::NameTooLong => libc::ENAMETOOLONG,
        ErrorCode::NoEntry => libc::ENOENT,
        ErrorCode::InsufficientMemory => libc::ENOMEM,
        ErrorCode::InsufficientSpace => libc::ENOSPC,
        ErrorCode::NotDirectory => libc::ENOTDIR,
        ErrorCode::Unsupported => libc::ENOTSUP,
        ErrorCode::NotPermitted => libc::EPERM,
        ErrorCode::ReadOnly => libc::EROFS,
        ErrorCode::Quota => libc::EDQUOT,
        ErrorCode::BadDescriptor => libc::EBADF,
        other => return io::Error::other(format!("{} ({})", other.message(), other.name())),
    };
    io::Error::from_raw_os_error(errno)
}

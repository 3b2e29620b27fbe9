//! A disk quota for read-write store components.
//!
//! A component with a read-write directory could otherwise fill the disk: nothing in WASI
//! bounds how much it writes. So the host counts what the directory holds and refuses to let a
//! component grow it past its quota ([`crate::WasmTaskStoreBuilder::disk_quota`], selector
//! option `quota=`, default [`DEFAULT_DISK_QUOTA`]).
//!
//! **What is counted:** every file's length, plus [`ENTRY_BYTES`] for every file and
//! directory (about a block each, so a component cannot exhaust the disk with empty files
//! either). The count starts from a scan of the directory when the store is built, and then
//! follows every call that can change it: `write` and the output streams of
//! `write-via-stream`/`append-via-stream` are charged for whatever they add past the file's
//! current length; `set-size` for growth; `open-at` with `create` and `create-directory-at` for
//! a new entry; `unlink-file-at`, `remove-directory-at`, a truncating `open-at` and a `rename-at`
//! that replaces another file give back what they free. A file that is unlinked or replaced
//! while the instance may still hold it open (a descriptor or a stream on any file) still takes
//! its space, so what it frees is given back only once the instance holds no file (at the latest
//! when the instance is dropped). Charging happens before the write: a write
//! that would pass the quota fails inside the guest with `insufficient-space` (`ENOSPC`), writes
//! nothing, and the host reports the call as [`toolnexus_core::Limit::Disk`].
//!
//! **What is not:** writes by anything other than this store's instances (a native store, another
//! process) after the scan; the count can only overestimate what the component itself adds
//! (a sparse file counts at its length).

use crate::inline;
use crate::pool::Host;
use bytes::Bytes;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, DescriptorType, ErrorCode, Filesize, Host as TypesHost, HostDescriptor,
    OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::{
    DynInputStream, DynOutputStream, FsResult, InputStream, OutputStream, Pollable, StreamError,
};

/// The quota of a read-write `wasm:` store unless set: 1 GiB.
pub const DEFAULT_DISK_QUOTA: u64 = 1 << 30;

/// What one directory entry (file or directory) counts for besides its length.
pub const ENTRY_BYTES: u64 = 4096;

/// The interface whose writing functions are wrapped; wasmtime links every `0.2.x` import to
/// it.
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// A store's count of what its directory holds, shared by all of its instances.
#[derive(Debug)]
pub(crate) struct DiskQuota {
    pub(crate) limit: u64,
    used: AtomicU64,
}

impl DiskQuota {
    /// Scans `dir` (without following links) for what it holds now.
    pub(crate) fn measure(dir: &Path, limit: u64) -> std::io::Result<Self> {
        Ok(DiskQuota {
            limit,
            used: AtomicU64::new(usage(dir)?),
        })
    }

    /// What the directory holds, as counted.
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Counts `bytes` more if that stays within the limit.
    fn charge(&self, bytes: u64) -> bool {
        if bytes == 0 {
            return true;
        }
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|total| *total <= self.limit)
            })
            .is_ok()
    }

    fn credit(&self, bytes: u64) {
        let _ = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                Some(used.saturating_sub(bytes))
            });
    }
}

/// Every entry under `dir`, counted the way writes are.
fn usage(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0u64;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            // Never follows a link. An entry gone since the listing (another writer's temp
            // file renamed into place, say) holds nothing.
            let meta = match entry.metadata() {
                Ok(meta) => meta,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            total = total
                .saturating_add(ENTRY_BYTES)
                .saturating_add(if meta.is_file() { meta.len() } else { 0 });
            if meta.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    Ok(total)
}

/// An instance's view of its store's quota: the shared count, whether a write of the call in
/// progress was refused, and what unlinked or replaced files will give back once the instance
/// holds no file that could keep them.
#[derive(Debug, Clone)]
pub(crate) struct QuotaHandle {
    disk: Arc<DiskQuota>,
    hit: Arc<AtomicBool>,
    /// Bytes freed by unlinks and replacing renames, not yet given back.
    pending: Arc<AtomicU64>,
    /// Streams on files this instance holds (each keeps its file's space in use).
    file_streams: Arc<AtomicUsize>,
}

impl QuotaHandle {
    pub(crate) fn new(disk: Arc<DiskQuota>) -> Self {
        QuotaHandle {
            disk,
            hit: Arc::new(AtomicBool::new(false)),
            pending: Arc::new(AtomicU64::new(0)),
            file_streams: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Whether a write was refused since the last [`QuotaHandle::reset`].
    pub(crate) fn hit(&self) -> bool {
        self.hit.load(Ordering::Relaxed)
    }

    pub(crate) fn reset(&self) {
        self.hit.store(false, Ordering::Relaxed);
    }

    fn charge(&self, bytes: u64) -> bool {
        let ok = self.disk.charge(bytes);
        if !ok {
            self.hit.store(true, Ordering::Relaxed);
        }
        ok
    }

    fn credit(&self, bytes: u64) {
        self.disk.credit(bytes);
    }

    /// Counts `bytes` as freed once nothing of this instance can hold them ([`settle`]).
    fn defer_credit(&self, bytes: u64) {
        self.pending.fetch_add(bytes, Ordering::AcqRel);
    }

    /// Gives back what deferred credits hold, unconditionally: for an instance being dropped.
    pub(crate) fn settle_all(&self) {
        self.credit(self.pending.swap(0, Ordering::AcqRel));
    }
}

/// Gives back the instance's deferred credits if it holds no file: no file descriptor and no
/// stream on a file, so no unlinked file can still be taking space because of it.
pub(crate) fn settle(host: &mut Host) {
    let Some(quota) = host.quota.clone() else {
        return;
    };
    if quota.pending.load(Ordering::Acquire) == 0 || quota.file_streams.load(Ordering::Acquire) > 0
    {
        return;
    }
    let holds_a_file = host.table.iter_mut().any(|entry| {
        matches!(
            entry.downcast_ref::<Descriptor>(),
            Some(Descriptor::File(_))
        )
    });
    if !holds_a_file {
        quota.settle_all();
    }
}

/// Counts a live stream on a file for as long as it lives.
struct FileStreamGuard(Arc<AtomicUsize>);

impl FileStreamGuard {
    fn new(quota: &QuotaHandle) -> Self {
        quota.file_streams.fetch_add(1, Ordering::AcqRel);
        FileStreamGuard(Arc::clone(&quota.file_streams))
    }
}

impl Drop for FileStreamGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A second handle on a borrowed descriptor, for a look before the real call takes the first.
fn again(fd: &Resource<Descriptor>) -> Resource<Descriptor> {
    Resource::new_borrow(fd.rep())
}

/// The answer of a wrapped call: a WASI error code, or a trap when the call trapped.
pub(crate) type Answer<T> = wasmtime::Result<(Result<T, ErrorCode>,)>;

pub(crate) fn answer<T>(host: &mut Host, result: FsResult<T>) -> Answer<T> {
    match result {
        Ok(value) => Ok((Ok(value),)),
        Err(e) => Ok((Err(TypesHost::convert_error_code(
            &mut host.filesystem(),
            e,
        )?),)),
    }
}

fn no_space<T>() -> Answer<T> {
    Ok((Err(ErrorCode::InsufficientSpace),))
}

/// The length of an open regular file, if `fd` is one.
fn file_len(host: &mut Host, fd: &Resource<Descriptor>) -> Option<u64> {
    let meta = open_file(host, fd)?.metadata().ok()?;
    meta.is_file().then_some(meta.len())
}

/// What the entry at `path` under `dir` counts for, if there is one (links are not followed).
async fn entry_bytes(host: &mut Host, dir: &Resource<Descriptor>, path: &str) -> Option<u64> {
    let stat = HostDescriptor::stat_at(
        &mut host.filesystem(),
        again(dir),
        PathFlags::empty(),
        path.to_owned(),
    )
    .await
    .ok()?;
    let len = if stat.type_ == DescriptorType::RegularFile {
        stat.size
    } else {
        0
    };
    Some(ENTRY_BYTES.saturating_add(len))
}

/// A handle on what `path` under `dir` names, for looking at it or holding it without opening
/// it: `O_PATH` (which reads, writes and waits for nothing, whatever the file is), resolved
/// beneath `dir`, a final link followed only if `follow`. Linux only; `None` elsewhere, and when
/// nothing is there (or the name escapes, …: the real call reports that).
fn path_handle(
    host: &mut Host,
    dir: &Resource<Descriptor>,
    path: &str,
    follow: bool,
) -> Option<Held> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{Mode, OFlags, ResolveFlags};
        let Ok(Descriptor::Dir(dir)) = host.table.get(dir) else {
            return None;
        };
        let mut flags = OFlags::PATH | OFlags::CLOEXEC;
        if !follow {
            flags |= OFlags::NOFOLLOW;
        }
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        rustix::fs::openat2(&*dir.dir, path, flags, Mode::empty(), resolve).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (host, dir, path, follow);
        None
    }
}

#[cfg(target_os = "linux")]
type Held = rustix::fd::OwnedFd;
#[cfg(not(target_os = "linux"))]
type Held = ();

/// A handle on what `path` names (not followed), to be held across a rename over it.
///
/// A rename that replaces the last name of a file frees that file inside the rename, while
/// the kernel holds the directory's lock; on a file system that discards freed blocks at once
/// (ext4 mounted with `discard`, without a journal) that is a synchronous device command,
/// which every other writer of the directory (other instances, other stores, the native
/// store) then waits behind. Held, the file is freed when the handle is dropped, after the
/// rename, outside that lock.
fn hold_replaced(host: &mut Host, dir: &Resource<Descriptor>, path: &str) -> Option<Held> {
    path_handle(host, dir, path, false)
}

/// What a rename of `old` under `dir` over what `held` holds frees, told from the held handle
/// and one `fstatat` of `old` ([`stat_name`]): `Some(None)` if nothing (`old` is that very file),
/// `Some(Some(bytes))` what the replaced entry counts for. `None` where it cannot be told this
/// way (no handle: nothing there, or not Linux; `old` not a single name), and then the caller
/// asks wasmtime-wasi, in two `metadata-hash-at` calls and a `stat-at`.
fn replaced_entry(
    host: &mut Host,
    dir: &Resource<Descriptor>,
    old: &str,
    held: Option<&Held>,
) -> Option<Option<u64>> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::FileType;
        let new = rustix::fs::fstat(held?).ok()?;
        let old = stat_name(host, dir, old, false)?.ok()?;
        if (old.st_dev, old.st_ino) == (new.st_dev, new.st_ino) {
            return Some(None);
        }
        let len = match FileType::from_raw_mode(new.st_mode) {
            FileType::RegularFile => u64::try_from(new.st_size).unwrap_or(0),
            _ => 0,
        };
        Some(Some(ENTRY_BYTES.saturating_add(len)))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (host, dir, old, held);
        None
    }
}

/// What a rename of `old` over `new` frees, if anything: [`replaced_entry`] where it can tell,
/// else wasmtime-wasi's answers (nothing if both name the same file, else what `new` counts for).
async fn replaced_bytes(
    host: &mut Host,
    (old_dir, old): (&Resource<Descriptor>, &str),
    (new_dir, new): (&Resource<Descriptor>, &str),
    held: Option<&Held>,
) -> Option<u64> {
    if let Some(replaced) = replaced_entry(host, old_dir, old, held) {
        return replaced;
    }
    if same_object(host, old_dir, old, new_dir, new).await {
        return None;
    }
    entry_bytes(host, new_dir, new).await
}

/// What a look at a name before opening it found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Look {
    /// A FIFO, a socket or a device, which the host never opens for a component.
    Special,
    Regular,
    /// Anything else: a directory, a link not followed, nothing (the real call says why).
    Other,
}

/// What `path` under `dir` names (Linux; elsewhere [`Look::Other`]): a FIFO, a socket or a
/// device is never opened for a component. The open of a FIFO waits in the kernel for a
/// writer, without bound and out of reach of the call's deadline, holding a blocking thread
/// all along; a device's open can have effects outside the directory. A name swapped for
/// something else between this look and the open is not caught by it: that takes another
/// writer of the directory racing the component (and the host's own open of a regular file,
/// [`inline::open_here`], does not wait on a FIFO even then).
///
/// A single name not followed, off an async worker, is looked at with one `fstatat` of it in
/// `dir` ([`stat_name`]), which cannot leave `dir`; anything else through an `O_PATH` handle
/// resolved beneath `dir` (an `openat2`, an `fstat` and a `close`).
fn look(host: &mut Host, dir: &Resource<Descriptor>, path: &str, follow: bool) -> Look {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::FileType;
        let kind = match stat_name(host, dir, path, follow) {
            Some(found) => found.map(|st| st.st_mode),
            None => {
                let Some(found) = path_handle(host, dir, path, follow) else {
                    return Look::Other;
                };
                rustix::fs::fstat(&found).map(|st| st.st_mode)
            }
        };
        match kind.map(FileType::from_raw_mode) {
            Ok(FileType::RegularFile) => Look::Regular,
            Ok(
                FileType::Fifo
                | FileType::Socket
                | FileType::CharacterDevice
                | FileType::BlockDevice,
            ) => Look::Special,
            _ => Look::Other,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (host, dir, path, follow);
        Look::Other
    }
}

/// Whether `path` is one name: not empty, not `.` or `..`, no `/` (nor a NUL, which no name
/// holds). Such a name, not followed, names an entry of the directory it is looked up in and
/// nothing beyond it, without `openat2`'s `RESOLVE_BENEATH`.
fn single_name(path: &str) -> bool {
    !path.is_empty() && path != "." && path != ".." && !path.contains(['/', '\0'])
}

/// `fstatat` of the single name `path` in `dir`, not followed (Linux): `None` where that does not
/// apply (a path of more than one name, a followed link, a call on an async worker, where a
/// look must come from the kernel's cache alone, `dir` not a directory), and then the caller
/// looks through a handle ([`path_handle`]).
#[cfg(target_os = "linux")]
fn stat_name(
    host: &mut Host,
    dir: &Resource<Descriptor>,
    path: &str,
    follow: bool,
) -> Option<rustix::io::Result<rustix::fs::Stat>> {
    if follow || !single_name(path) || host.inline.get() {
        return None;
    }
    let Ok(Descriptor::Dir(dir)) = host.table.get(dir) else {
        return None;
    };
    Some(rustix::fs::statat(
        &*dir.dir,
        path,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    ))
}

/// A file the component just created is its owner's alone (0600 on Unix), as the native
/// store's are, whatever the umask lets through. Best effort: the directory the host creates
/// is 0700 already.
fn make_private(host: &mut Host, file: &Resource<Descriptor>) {
    #[cfg(unix)]
    if let Ok(Descriptor::File(file)) = host.table.get(file) {
        use std::os::unix::fs::PermissionsExt;
        let _ = file
            .file
            .set_permissions(std::fs::Permissions::from_mode(0o600));
    }
    #[cfg(not(unix))]
    let _ = (host, file);
}

/// An exclusive create (`create` and `exclusive`, nothing else), made here: 0600 in one
/// system call ([`inline::open_here`]). `None` where that does not apply or the create failed.
fn create_private(
    host: &mut Host,
    dir: &Resource<Descriptor>,
    path: &str,
    open_flags: OpenFlags,
    flags: DescriptorFlags,
) -> wasmtime::Result<Option<Resource<Descriptor>>> {
    if open_flags != OpenFlags::CREATE | OpenFlags::EXCLUSIVE {
        return Ok(None);
    }
    inline::open_here(host, dir, path, true, false, flags)
}

/// Whether two paths name the same file (links are not followed); `false` if either is missing.
async fn same_object(
    host: &mut Host,
    dir_a: &Resource<Descriptor>,
    a: &str,
    dir_b: &Resource<Descriptor>,
    b: &str,
) -> bool {
    let x = metadata_hash_at(host, dir_a, a).await;
    let y = metadata_hash_at(host, dir_b, b).await;
    matches!((x, y), (Some(x), Some(y)) if x == y)
}

/// The metadata hash of the entry at `path` under `dir` (links not followed), if there is one.
async fn metadata_hash_at(
    host: &mut Host,
    dir: &Resource<Descriptor>,
    path: &str,
) -> Option<(u64, u64)> {
    HostDescriptor::metadata_hash_at(
        &mut host.filesystem(),
        again(dir),
        PathFlags::empty(),
        path.to_owned(),
    )
    .await
    .ok()
    .map(|h| (h.lower, h.upper))
}

/// Replaces the functions of `wasi:filesystem/types` that make the directory hold more (or
/// less) with versions that count, in `linker` (after WASI was added to it). Instances whose
/// [`Host::quota`] is `None` (read-only stores) go straight through. Each of them changes the
/// directory, so none runs in a call on an async worker ([`crate::inline::check`]).
pub(crate) fn count_disk_use(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    types.func_wrap_async(
        "[method]descriptor.write",
        |mut cx: StoreContextMut<'_, Host>,
         (fd, buf, offset): (Resource<Descriptor>, Vec<u8>, Filesize)| {
            Box::new(async move {
                let host = cx.data_mut();
                inline::check(host, "write")?;
                let mut charged = 0;
                if let Some(quota) = host.quota.clone() {
                    let end = offset.saturating_add(buf.len() as u64);
                    charged = file_len(host, &fd).map_or(0, |len| end.saturating_sub(len));
                    if !quota.charge(charged) {
                        return no_space();
                    }
                }
                let result = HostDescriptor::write(&mut host.filesystem(), fd, buf, offset).await;
                if result.is_err()
                    && let Some(quota) = &host.quota
                {
                    quota.credit(charged);
                }
                answer(host, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.set-size",
        |mut cx: StoreContextMut<'_, Host>, (fd, size): (Resource<Descriptor>, Filesize)| {
            Box::new(async move {
                let host = cx.data_mut();
                inline::check(host, "set-size")?;
                let Some(quota) = host.quota.clone() else {
                    let result = HostDescriptor::set_size(&mut host.filesystem(), fd, size).await;
                    return answer(host, result);
                };
                let len = file_len(host, &fd).unwrap_or(0);
                let growth = size.saturating_sub(len);
                if !quota.charge(growth) {
                    return no_space();
                }
                let result = HostDescriptor::set_size(&mut host.filesystem(), fd, size).await;
                match &result {
                    Ok(()) => quota.credit(len.saturating_sub(size)),
                    Err(_) => quota.credit(growth),
                }
                answer(host, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.write-via-stream",
        |mut cx: StoreContextMut<'_, Host>, (fd, offset): (Resource<Descriptor>, Filesize)| {
            Box::new(async move {
                let host = cx.data_mut();
                inline::check(host, "write-via-stream")?;
                let file = open_file(host, &fd);
                let result = HostDescriptor::write_via_stream(&mut host.filesystem(), fd, offset)
                    .and_then(|stream| counted_stream(host, stream, Some(offset), file));
                answer(host, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.append-via-stream",
        |mut cx: StoreContextMut<'_, Host>, (fd,): (Resource<Descriptor>,)| {
            Box::new(async move {
                let host = cx.data_mut();
                inline::check(host, "append-via-stream")?;
                let result = HostDescriptor::append_via_stream(&mut host.filesystem(), fd)
                    .and_then(|stream| counted_stream(host, stream, None, None));
                answer(host, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.open-at",
        |mut cx: StoreContextMut<'_, Host>,
         (fd, path_flags, path, open_flags, flags): (
            Resource<Descriptor>,
            PathFlags,
            String,
            OpenFlags,
            DescriptorFlags,
        )| {
            Box::new(async move {
                let host = cx.data_mut();
                // Only a create or a truncate changes what the directory holds.
                let changes = open_flags.intersects(OpenFlags::CREATE | OpenFlags::TRUNCATE);
                if changes {
                    inline::check(host, "open-at with create or truncate")?;
                }
                let follow = path_flags.contains(PathFlags::SYMLINK_FOLLOW);
                inline::check_lookup(host, &fd, &path, follow)?;
                // An exclusive create opens nothing that is there already; a name just found
                // to be a file or a directory need not be looked at again.
                let exclusive = open_flags.contains(OpenFlags::CREATE | OpenFlags::EXCLUSIVE);
                let found = match inline::checked(host, &fd, &path) {
                    _ if exclusive => Look::Other,
                    Some(true) => Look::Regular,
                    Some(false) => Look::Other,
                    None => look(host, &fd, &path, follow),
                };
                if found == Look::Special {
                    return Ok((Err(ErrorCode::NotPermitted),));
                }
                // A plain open of a regular file, opened here without a second look at it.
                if found == Look::Regular
                    && open_flags == OpenFlags::empty()
                    && let Some(file) = inline::open_here(host, &fd, &path, false, follow, flags)?
                {
                    return Ok((Ok(file),));
                }
                let quota = host.quota.clone().filter(|_| changes);
                // What an exclusive create would replace is nothing: it fails if anything is
                // there (and gives back what it was charged), so there is nothing to look at.
                let before = match &quota {
                    Some(_) if !exclusive => entry_bytes(host, &fd, &path).await,
                    _ => None,
                };
                let creates =
                    quota.is_some() && before.is_none() && open_flags.contains(OpenFlags::CREATE);
                if let Some(quota) = &quota
                    && creates
                    && !quota.charge(ENTRY_BYTES)
                {
                    return no_space();
                }
                let (result, private) = match create_private(host, &fd, &path, open_flags, flags)? {
                    Some(file) => (Ok(file), true),
                    None => {
                        let result = HostDescriptor::open_at(
                            &mut host.filesystem(),
                            fd,
                            path_flags,
                            path,
                            open_flags,
                            flags,
                        )
                        .await;
                        (result, false)
                    }
                };
                if let Some(quota) = &quota {
                    match (&result, before) {
                        (Ok(file), _) if creates && !private => make_private(host, file),
                        (Err(_), _) if creates => quota.credit(ENTRY_BYTES),
                        (Ok(_), Some(bytes)) if open_flags.contains(OpenFlags::TRUNCATE) => {
                            quota.credit(bytes.saturating_sub(ENTRY_BYTES))
                        }
                        _ => {}
                    }
                }
                answer(host, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.create-directory-at",
        |mut cx: StoreContextMut<'_, Host>, (fd, path): (Resource<Descriptor>, String)| {
            Box::new(async move {
                let host = cx.data_mut();
                inline::check(host, "create-directory-at")?;
                let quota = host.quota.clone();
                if let Some(quota) = &quota
                    && !quota.charge(ENTRY_BYTES)
                {
                    return no_space();
                }
                let result =
                    HostDescriptor::create_directory_at(&mut host.filesystem(), fd, path).await;
                if let (Err(_), Some(quota)) = (&result, &quota) {
                    quota.credit(ENTRY_BYTES);
                }
                answer(host, result)
            })
        },
    )?;
    for (name, unlink) in [
        ("[method]descriptor.unlink-file-at", true),
        ("[method]descriptor.remove-directory-at", false),
    ] {
        types.func_wrap_async(
            name,
            move |mut cx: StoreContextMut<'_, Host>, (fd, path): (Resource<Descriptor>, String)| {
                Box::new(async move {
                    let host = cx.data_mut();
                    inline::check(
                        host,
                        if unlink {
                            "unlink-file-at"
                        } else {
                            "remove-directory-at"
                        },
                    )?;
                    let freed = match host.quota {
                        Some(_) => entry_bytes(host, &fd, &path).await,
                        None => None,
                    };
                    let result = if unlink {
                        HostDescriptor::unlink_file_at(&mut host.filesystem(), fd, path).await
                    } else {
                        HostDescriptor::remove_directory_at(&mut host.filesystem(), fd, path).await
                    };
                    if let (Ok(()), Some(quota), Some(bytes)) = (&result, host.quota.clone(), freed)
                    {
                        quota.defer_credit(bytes);
                        settle(host);
                    }
                    answer(host, result)
                })
            },
        )?;
    }
    types.func_wrap_async(
        "[method]descriptor.rename-at",
        |mut cx: StoreContextMut<'_, Host>,
         (fd, old, new_fd, new): (Resource<Descriptor>, String, Resource<Descriptor>, String)| {
            Box::new(async move {
                let host = cx.data_mut();
                inline::check(host, "rename-at")?;
                // What the destination held, if anything, is freed by the rename, unless it is
                // the very file being renamed (a rename onto itself frees nothing).
                let held = hold_replaced(host, &new_fd, &new);
                let replaced = match host.quota {
                    Some(_) => replaced_bytes(host, (&fd, &old), (&new_fd, &new), held.as_ref()).await,
                    None => None,
                };
                let result =
                    HostDescriptor::rename_at(&mut host.filesystem(), fd, old, new_fd, new).await;
                drop(held);
                if let (Ok(()), Some(quota), Some(bytes)) = (&result, host.quota.clone(), replaced)
                {
                    quota.defer_credit(bytes);
                    settle(host);
                }
                answer(host, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.read-via-stream",
        |mut cx: StoreContextMut<'_, Host>, (fd, offset): (Resource<Descriptor>, Filesize)| {
            Box::new(async move {
                let host = cx.data_mut();
                let file = open_file(host, &fd);
                let result = HostDescriptor::read_via_stream(&mut host.filesystem(), fd, offset)
                    .and_then(|stream| reads_here(host, stream, offset, file))
                    .and_then(|stream| held_stream(host, stream));
                answer(host, result)
            })
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// The open file behind a descriptor, if it is a file.
fn open_file(host: &mut Host, fd: &Resource<Descriptor>) -> Option<Arc<std::fs::File>> {
    match host.table.get(fd) {
        Ok(Descriptor::File(file)) => Some(Arc::clone(&file.file)),
        _ => None,
    }
}

/// Swaps a file's new output stream for one that counts what it adds: `position` is where a
/// write stream starts (`None` for an append stream), `file` the file it writes.
fn counted_stream(
    host: &mut Host,
    stream: Resource<DynOutputStream>,
    position: Option<u64>,
    file: Option<Arc<std::fs::File>>,
) -> FsResult<Resource<DynOutputStream>> {
    let Some(quota) = host.quota.clone() else {
        return Ok(stream);
    };
    let mut inner = host.table.delete(stream)?;
    #[cfg(unix)]
    if let (Some(position), Some(file)) = (position, &file) {
        // The permission checks are done (the stream was made); the writes themselves go
        // straight to the file (see [`inline::InlineWrites`]).
        drop(inner);
        inner = Box::new(inline::InlineWrites {
            file: Arc::clone(file),
            position,
            inline: host.inline.clone(),
            closed: false,
        });
    }
    let counted: DynOutputStream = Box::new(CountedStream {
        inner,
        _held: FileStreamGuard::new(&quota),
        quota,
        position,
        file,
    });
    Ok(host.table.push(counted)?)
}

/// Swaps a file's new input stream (its permission checks done) for one that reads on the
/// thread of the call ([`inline::InlineReads`]).
fn reads_here(
    host: &mut Host,
    stream: Resource<DynInputStream>,
    position: u64,
    file: Option<Arc<std::fs::File>>,
) -> FsResult<Resource<DynInputStream>> {
    let Some(file) = file else {
        return Ok(stream);
    };
    drop(host.table.delete(stream)?);
    let reads: DynInputStream = Box::new(inline::InlineReads {
        file,
        position,
        inline: host.inline.clone(),
        closed: false,
    });
    Ok(host.table.push(reads)?)
}

/// Swaps a file's new input stream for one that is counted as holding the file (see
/// [`settle`]).
fn held_stream(
    host: &mut Host,
    stream: Resource<DynInputStream>,
) -> FsResult<Resource<DynInputStream>> {
    let Some(quota) = host.quota.clone() else {
        return Ok(stream);
    };
    let inner = host.table.delete(stream)?;
    let held: DynInputStream = Box::new(HeldStream {
        inner,
        _held: FileStreamGuard::new(&quota),
    });
    Ok(host.table.push(held)?)
}

/// A file's input stream, counted while it lives.
struct HeldStream {
    inner: DynInputStream,
    _held: FileStreamGuard,
}

#[async_trait::async_trait]
impl Pollable for HeldStream {
    async fn ready(&mut self) {
        self.inner.ready().await
    }
}

#[async_trait::async_trait]
impl InputStream for HeldStream {
    fn read(&mut self, size: usize) -> Result<Bytes, StreamError> {
        self.inner.read(size)
    }

    async fn blocking_read(&mut self, size: usize) -> Result<Bytes, StreamError> {
        self.inner.blocking_read(size).await
    }

    fn skip(&mut self, nelem: usize) -> Result<usize, StreamError> {
        self.inner.skip(nelem)
    }

    async fn blocking_skip(&mut self, nelem: usize) -> Result<usize, StreamError> {
        self.inner.blocking_skip(nelem).await
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await
    }
}

/// A file's output stream that is charged for every byte it writes past the file's length.
struct CountedStream {
    inner: DynOutputStream,
    _held: FileStreamGuard,
    quota: QuotaHandle,
    /// Where the next write lands, or `None` for an append stream (every byte is growth).
    position: Option<u64>,
    /// The file, to read its length before each write: another descriptor may have truncated
    /// or grown it since.
    file: Option<Arc<std::fs::File>>,
}

impl CountedStream {
    /// Charges a write of `n` bytes, or refuses it as the disk being full.
    fn charge(&mut self, n: usize) -> Result<(), StreamError> {
        let n = n as u64;
        let growth = match (self.position, &self.file) {
            (Some(position), Some(file)) => {
                // A length we cannot read counts as empty: the whole write is charged.
                let len = file.metadata().map_or(0, |meta| meta.len());
                position.saturating_add(n).saturating_sub(len)
            }
            _ => n,
        };
        if !self.quota.charge(growth) {
            return Err(StreamError::LastOperationFailed(no_space_error().into()));
        }
        if let Some(position) = &mut self.position {
            *position = position.saturating_add(n);
        }
        Ok(())
    }
}

/// The error a refused stream write fails with: `ENOSPC`, which the guest reads as
/// `insufficient-space`.
fn no_space_error() -> std::io::Error {
    #[cfg(unix)]
    {
        std::io::Error::from_raw_os_error(libc::ENOSPC)
    }
    #[cfg(not(unix))]
    {
        std::io::Error::from(std::io::ErrorKind::StorageFull)
    }
}

#[async_trait::async_trait]
impl Pollable for CountedStream {
    async fn ready(&mut self) {
        self.inner.ready().await
    }
}

#[async_trait::async_trait]
impl OutputStream for CountedStream {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.charge(bytes.len())?;
        self.inner.write(bytes)
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        self.inner.check_write()
    }

    async fn blocking_write_and_flush(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.charge(bytes.len())?;
        self.inner.blocking_write_and_flush(bytes).await
    }

    fn write_zeroes(&mut self, n: usize) -> Result<(), StreamError> {
        self.charge(n)?;
        self.inner.write_zeroes(n)
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_stop_at_the_limit_and_credits_free_room() {
        let quota = DiskQuota {
            limit: 10_000,
            used: AtomicU64::new(9_000),
        };
        assert!(quota.charge(1_000));
        assert!(!quota.charge(1), "past the limit");
        assert_eq!(quota.used(), 10_000, "a refused charge counts nothing");
        quota.credit(5_000);
        assert!(quota.charge(4_000));
        quota.credit(u64::MAX);
        assert_eq!(quota.used(), 0, "credits never wrap");
        assert!(!quota.charge(u64::MAX), "an overflowing charge is refused");
    }

    #[test]
    fn the_scan_counts_lengths_and_entries_without_following_links() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.json"), [b'x'; 100]).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/b.json"), [b'y'; 10]).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("/", dir.path().join("root")).unwrap();
        let links = if cfg!(unix) { 1 } else { 0 };
        let quota = DiskQuota::measure(dir.path(), u64::MAX).unwrap();
        assert_eq!(quota.used(), 110 + (3 + links) * ENTRY_BYTES);
    }
}

//! A disk quota for read-write store components.
//!
//! A component with a read-write directory could otherwise fill the disk: nothing in WASI
//! bounds how much it writes. So the host counts what the directory holds and refuses to let a
//! component grow it past its quota (`WasmTaskStoreBuilder::disk_quota`, selector option
//! `quota=`, default [`DEFAULT_DISK_QUOTA`]).
//!
//! **What is counted:** every file's length, plus [`ENTRY_BYTES`] for every file and
//! directory (about a block each, so a component cannot exhaust the disk with empty files
//! either). The count starts from a scan of the directory when the store is built, and then
//! follows every call that can change it (`sandbox::wasi_overrides`): `write` and the output
//! streams of `write-via-stream`/`append-via-stream` are charged for whatever they add past
//! the file's current length (`policy::quota_streams`); `set-size` for growth; `open-at` with
//! `create` and `create-directory-at` for a new entry; `unlink-file-at`,
//! `remove-directory-at`, a truncating `open-at` and a `rename-at` that replaces another file
//! give back what they free. A file that is unlinked or replaced while an instance of the pool
//! still holds it open (a descriptor or a stream) still takes its space, so what it frees is
//! given back only once no instance holds it (`policy::quota_holds`). Changes of a file's size
//! measured against its length are made one at a time per file in the pool
//! ([`DiskQuota::sizes`]).
//! Charging happens before the write: a write that would pass the quota fails inside the guest
//! with `insufficient-space` (`ENOSPC`), writes nothing, and the host reports the call as
//! [`toolnexus_core::Limit::Disk`].
//!
//! **What is not:** writes by anything other than this store's instances (a native store,
//! another process) after the scan; the count can only overestimate what the component itself
//! adds (a sparse file counts at its length).

use crate::sandbox::descriptors::{self, Held, again};
use crate::sandbox::policy::quota_holds::{self, Holds, Identity, InstanceHolds};
use crate::sandbox::wasi_resources::WasiResources;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{DescriptorType, HostDescriptor, PathFlags};

/// The quota of a read-write `wasm:` store unless set: 1 GiB.
pub const DEFAULT_DISK_QUOTA: u64 = 1 << 30;

/// What one directory entry (file or directory) counts for besides its length.
pub const ENTRY_BYTES: u64 = 4096;

/// A directory's count of what it holds, shared by all of a pool's instances, with the files
/// they hold (and the credits waiting on them) and the lock that orders their size changes.
#[derive(Debug)]
pub(crate) struct DiskQuota {
    pub(crate) limit: u64,
    used: AtomicU64,
    holds: Holds,
    /// Held by every change of a file's size that is measured against its length (a write, a
    /// `set-size`, a truncating open), from the look at the length to the change: two
    /// instances changing one file at once would otherwise both measure the same length (two
    /// truncations both credited for it). One lock per file, striped by its identity
    /// ([`size_lock`]): one lock for the pool made 64 concurrent saves of different Tasks
    /// write one at a time (38% slower at 64 callers, measured).
    sizes: Box<[Arc<tokio::sync::Mutex<()>>]>,
}

/// How many locks the size changes of a pool's files are spread over ([`DiskQuota::sizes`]).
const SIZE_LOCKS: usize = 64;

/// Which of [`SIZE_LOCKS`] orders the size changes of the file `file` (by device and inode;
/// an unknown file, the first).
fn size_lock(file: Option<Identity>) -> usize {
    file.map_or(0, |(dev, ino)| {
        ((dev ^ ino.rotate_left(7)) % SIZE_LOCKS as u64) as usize
    })
}

impl DiskQuota {
    /// Scans `dir` (without following links) for what it holds now.
    pub(crate) fn measure(dir: &Path, limit: u64) -> std::io::Result<Self> {
        Ok(DiskQuota::counting(limit, usage(dir)?))
    }

    fn counting(limit: u64, used: u64) -> Self {
        DiskQuota {
            limit,
            used: AtomicU64::new(used),
            holds: Holds::default(),
            sizes: (0..SIZE_LOCKS).map(|_| Arc::default()).collect(),
        }
    }

    /// Gives back the credits whose files no instance holds any more.
    fn settle(&self) {
        self.credit(self.holds.due());
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

/// An instance's part of its pool's quota: the shared count, whether a write of the call in
/// progress was refused, and the files the instance holds by descriptor (`quota_holds`).
/// Clones (held by the instance's counted streams) share all of it.
#[derive(Debug, Clone)]
pub(crate) struct QuotaState {
    disk: Arc<DiskQuota>,
    hit: Arc<AtomicBool>,
    files: Arc<Mutex<InstanceHolds>>,
}

impl QuotaState {
    pub(crate) fn new(disk: Arc<DiskQuota>) -> Self {
        QuotaState {
            disk,
            hit: Arc::new(AtomicBool::new(false)),
            files: Arc::default(),
        }
    }

    /// Whether a write was refused since the last [`QuotaState::start_call`].
    pub(crate) fn hit(&self) -> bool {
        self.hit.load(Ordering::Relaxed)
    }

    pub(crate) fn start_call(&self) {
        self.hit.store(false, Ordering::Relaxed);
    }

    /// Counts `bytes` more, or refuses them (and remembers the refusal).
    pub(crate) fn charge(&self, bytes: u64) -> bool {
        let ok = self.disk.charge(bytes);
        if !ok {
            self.hit.store(true, Ordering::Relaxed);
        }
        ok
    }

    pub(crate) fn credit(&self, bytes: u64) {
        self.disk.credit(bytes);
    }

    /// Counts `bytes`, freed by unlinking or replacing `file`, as freed once no instance of the
    /// pool holds that file ([`settle`]).
    pub(crate) fn defer_credit(&self, file: Option<Identity>, bytes: u64) {
        self.disk.holds.defer(file, bytes);
    }

    /// Counts a descriptor the instance just opened on `file`. Its identity is read (one
    /// `fstat`) only while a credit waits for a file to be let go; otherwise it is counted as
    /// an unknown file until the instance's next recount, which holds back only credits made
    /// meanwhile: a `get` costs no system call for this.
    pub(crate) fn opened(&self, file: &std::fs::File) {
        let holds = &self.disk.holds;
        let identity = match holds.has_pending() {
            true => quota_holds::identity(file),
            false => None,
        };
        self.instance_files().opened(holds, identity);
    }

    /// For an instance being dropped (its descriptors and streams closed): lets go of its
    /// files and gives back what no instance holds any more.
    pub(crate) fn settle_all(&self) {
        self.instance_files().release_all(&self.disk.holds);
        self.disk.settle();
    }

    /// Counts a live stream on `file` as holding it, for as long as the guard lives.
    pub(crate) fn hold_file_stream(&self, file: Option<&std::fs::File>) -> FileStreamGuard {
        let file = file.and_then(quota_holds::identity);
        self.disk.holds.hold(file);
        FileStreamGuard {
            disk: Arc::clone(&self.disk),
            file,
        }
    }

    /// The pool's lock on the size changes of `file` ([`DiskQuota::sizes`]), waited for.
    pub(crate) async fn lock_sizes(
        &self,
        file: Option<Identity>,
    ) -> tokio::sync::OwnedMutexGuard<()> {
        Arc::clone(&self.disk.sizes[size_lock(file)])
            .lock_owned()
            .await
    }

    /// The pool's lock on the size changes of `file`, if no one holds it now.
    pub(crate) fn try_lock_sizes(
        &self,
        file: Option<Identity>,
    ) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        Arc::clone(&self.disk.sizes[size_lock(file)])
            .try_lock_owned()
            .ok()
    }

    fn instance_files(&self) -> std::sync::MutexGuard<'_, InstanceHolds> {
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Counts the instance's files anew from its resource table, and gives back what unlinks and
/// replacing renames freed of files no instance of the pool holds any more.
pub(crate) fn settle(quota: &QuotaState, table: &mut ResourceTable) {
    quota.instance_files().recount(&quota.disk.holds, table);
    quota.disk.settle();
}

/// A live stream on a file, holding it while it lives ([`QuotaState::hold_file_stream`]).
pub(crate) struct FileStreamGuard {
    disk: Arc<DiskQuota>,
    file: Option<Identity>,
}

impl FileStreamGuard {
    /// The file held, as read when the stream was made.
    pub(crate) fn file(&self) -> Option<Identity> {
        self.file
    }
}

impl Drop for FileStreamGuard {
    fn drop(&mut self) {
        self.disk.holds.release(self.file);
        self.disk.settle();
    }
}

/// The identity of the open file `fd`, if it is one and it can be read (an `fstat`).
pub(crate) fn file_identity(table: &ResourceTable, fd: &Resource<Descriptor>) -> Option<Identity> {
    descriptors::open_file(table, fd).and_then(|file| quota_holds::identity(&file))
}

/// The identity of what `path` names under `dir`, looked up as the open will (beneath `dir`,
/// a last link followed if `follow`); `None` if it cannot be read (nothing there: a truncating
/// open of it then frees nothing; or not Linux). Used only to pick a lock.
pub(crate) fn open_target_identity(
    table: &ResourceTable,
    dir: &Resource<Descriptor>,
    path: &str,
    follow: bool,
) -> Option<Identity> {
    held_identity(descriptors::path_handle(table, dir, path, follow).as_ref())
}

/// The length of an open regular file, if `fd` is one.
pub(crate) fn file_len(table: &ResourceTable, fd: &Resource<Descriptor>) -> Option<u64> {
    let meta = descriptors::open_file(table, fd)?.metadata().ok()?;
    meta.is_file().then_some(meta.len())
}

/// What the entry at `path` under `dir` counts for, if there is one (links are not followed).
pub(crate) async fn entry_bytes(
    wasi: &mut WasiResources,
    dir: &Resource<Descriptor>,
    path: &str,
) -> Option<u64> {
    let stat = HostDescriptor::stat_at(
        &mut wasi.filesystem(),
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

/// A handle on what `path` names (not followed), to be held across a rename over it.
///
/// A rename that replaces the last name of a file frees that file inside the rename, while
/// the kernel holds the directory's lock; on a file system that discards freed blocks at once
/// (ext4 mounted with `discard`, without a journal) that is a synchronous device command,
/// which every other writer of the directory (other instances, other stores, the native
/// store) then waits behind. Held, the file is freed when the handle is dropped, after the
/// rename, outside that lock.
pub(crate) fn hold_replaced(
    table: &ResourceTable,
    dir: &Resource<Descriptor>,
    path: &str,
) -> Option<Held> {
    descriptors::path_handle(table, dir, path, false)
}

/// The identity of the file `held` (a handle [`hold_replaced`] took), if it can be read.
pub(crate) fn held_identity(held: Option<&Held>) -> Option<Identity> {
    #[cfg(target_os = "linux")]
    {
        let stat = rustix::fs::fstat(held?).ok()?;
        Some((stat.st_dev, stat.st_ino))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = held;
        None
    }
}

/// The identity of the file `path` names under `dir` (not followed), if it can be read.
pub(crate) fn name_identity(
    table: &ResourceTable,
    dir: &Resource<Descriptor>,
    path: &str,
) -> Option<Identity> {
    #[cfg(target_os = "linux")]
    {
        let stat = descriptors::stat_name(table, dir, path, false, false)?.ok()?;
        Some((stat.st_dev, stat.st_ino))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (table, dir, path);
        None
    }
}

/// What a rename of `old` under `dir` over what `held` holds frees, told from the held handle
/// and one `fstatat` of `old`: `Some(None)` if nothing (`old` is that very file),
/// `Some(Some(bytes))` what the replaced entry counts for. `None` where it cannot be told this
/// way (no handle: nothing there, or not Linux; `old` not a single name), and then the caller
/// asks wasmtime-wasi, in two `metadata-hash-at` calls and a `stat-at`.
fn replaced_entry(
    table: &ResourceTable,
    dir: &Resource<Descriptor>,
    old: &str,
    held: Option<&Held>,
    on_worker: bool,
) -> Option<Option<u64>> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::FileType;
        let new = rustix::fs::fstat(held?).ok()?;
        let old = descriptors::stat_name(table, dir, old, false, on_worker)?.ok()?;
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
        let _ = (table, dir, old, held, on_worker);
        None
    }
}

/// What a rename of `old` over `new` frees, if anything: [`replaced_entry`] where it can tell,
/// else wasmtime-wasi's answers (nothing if both name the same file, else what `new` counts for).
pub(crate) async fn replaced_bytes(
    wasi: &mut WasiResources,
    (old_dir, old): (&Resource<Descriptor>, &str),
    (new_dir, new): (&Resource<Descriptor>, &str),
    held: Option<&Held>,
    on_worker: bool,
) -> Option<u64> {
    if let Some(replaced) = replaced_entry(&wasi.table, old_dir, old, held, on_worker) {
        return replaced;
    }
    if same_object(wasi, old_dir, old, new_dir, new).await {
        return None;
    }
    entry_bytes(wasi, new_dir, new).await
}

/// Whether two paths name the same file (links are not followed); `false` if either is missing.
async fn same_object(
    wasi: &mut WasiResources,
    dir_a: &Resource<Descriptor>,
    a: &str,
    dir_b: &Resource<Descriptor>,
    b: &str,
) -> bool {
    let x = metadata_hash_at(wasi, dir_a, a).await;
    let y = metadata_hash_at(wasi, dir_b, b).await;
    matches!((x, y), (Some(x), Some(y)) if x == y)
}

/// The metadata hash of the entry at `path` under `dir` (links not followed), if there is one.
async fn metadata_hash_at(
    wasi: &mut WasiResources,
    dir: &Resource<Descriptor>,
    path: &str,
) -> Option<(u64, u64)> {
    HostDescriptor::metadata_hash_at(
        &mut wasi.filesystem(),
        again(dir),
        PathFlags::empty(),
        path.to_owned(),
    )
    .await
    .ok()
    .map(|h| (h.lower, h.upper))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_stop_at_the_limit_and_credits_free_room() {
        let quota = DiskQuota::counting(10_000, 9_000);
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

//! Fences: a file a component creates exclusively is held under a kernel lock (`flock`, taken
//! by the host on the component's own descriptor) for as long as the component keeps that
//! descriptor open, and the host refuses to rename a file that anyone else holds so (`busy`).
//!
//! Why: components have no kernel locks of their own (WASI has none), so a store component's
//! lock file is guarded by its lease alone, and a writer paused past its lease (a frozen VM, a
//! system call stalled on a saturated disk) could have its lock broken and then move a newer
//! writer's lock over the Task file. With the fence, a lock whose writer is alive is never
//! moved: a breaker's rename of it fails, and the breaker waits as for any live lock. The
//! kernel drops the lock when its holder's descriptor closes (the instance dropped, the
//! process killed), so a dead writer's lock can still be broken after its lease. The native
//! store takes and honours the same kernel locks, so components and native processes on one
//! directory fence each other (`docs/on-disk-format.md`, "The lease").
//!
//! The rule knows nothing of the store format: it is about exclusive creates and renames,
//! which is why the host can keep it for any component. The cost is one `flock` per exclusive
//! create and one `fstatat` per rename (a component renaming a file it holds itself); a rename
//! of a file it does not hold also opens that file to test its lock.
//!
//! A host process that spawns children can see that test fail for an instant: between a
//! child's fork and its exec, the child holds copies of the host's descriptors, and with them
//! any kernel lock they carry. The rename is then refused as `busy`, which a store treats as
//! it treats any live lock: it waits and tries again.

use crate::sandbox::descriptors;
use std::sync::{Arc, Weak};
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::filesystem::Descriptor;

/// A file's device and inode.
type Identity = (u64, u64);

/// The files an instance created exclusively and still holds open, each under its kernel lock.
#[derive(Default)]
pub(crate) struct Fences {
    held: Vec<(Identity, Weak<std::fs::File>)>,
}

/// A rename the fence refuses: someone else holds the file under its kernel lock.
#[derive(Debug)]
pub(crate) struct HeldByAnother;

/// What a rename of a file that no one held keeps while it runs: that file, under the kernel
/// lock this host took, so that no fenced writer takes it meanwhile.
pub(crate) type RenameGuard = Option<std::fs::File>;

impl Fences {
    /// Takes the kernel lock on the file the component just created exclusively behind `fd`,
    /// on the component's own descriptor: held until the component closes it. Best effort (a
    /// file system without kernel locks leaves the file guarded by its lease alone).
    pub(crate) fn fence_created(&mut self, table: &ResourceTable, fd: &Resource<Descriptor>) {
        let Some(file) = descriptors::open_file(table, fd) else {
            return;
        };
        let Some(identity) = identity_of(&file) else {
            return;
        };
        if file.try_lock().is_ok() {
            self.held.retain(|(_, file)| file.strong_count() > 0);
            self.held.push((identity, Arc::downgrade(&file)));
        }
    }

    /// Whether the component may rename `path` under `dir`: a file it holds itself, or one no
    /// one holds (then with its kernel lock taken here for the rename's length: hold the
    /// returned guard until the rename is done), or something that is not a regular file (no
    /// fence). `Err` if someone else holds it.
    pub(crate) fn check_rename(
        &mut self,
        table: &ResourceTable,
        dir: &Resource<Descriptor>,
        path: &str,
    ) -> Result<RenameGuard, HeldByAnother> {
        #[cfg(target_os = "linux")]
        {
            if let Some(Ok(stat)) = descriptors::stat_name(table, dir, path, false, false) {
                let regular = rustix::fs::FileType::from_raw_mode(stat.st_mode)
                    == rustix::fs::FileType::RegularFile;
                if !regular || self.holds((stat.st_dev, stat.st_ino)) {
                    return Ok(None);
                }
            }
            let Some(file) = open_beneath(table, dir, path) else {
                return Ok(None); // gone, or not a file: the rename says so
            };
            if identity_of(&file).is_some_and(|identity| self.holds(identity)) {
                return Ok(None);
            }
            match file.try_lock() {
                Ok(()) => Ok(Some(file)),
                Err(std::fs::TryLockError::WouldBlock) => Err(HeldByAnother),
                Err(std::fs::TryLockError::Error(_)) => Ok(None),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (table, dir, path);
            Ok(None)
        }
    }

    /// Whether this instance holds, open and fenced, the file with this identity.
    fn holds(&mut self, identity: Identity) -> bool {
        self.held.retain(|(_, file)| file.strong_count() > 0);
        self.held.iter().any(|(held, _)| *held == identity)
    }
}

#[cfg(unix)]
fn identity_of(file: &std::fs::File) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    file.metadata().ok().map(|meta| (meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity_of(_file: &std::fs::File) -> Option<Identity> {
    None
}

/// `path` under `dir` opened to test its kernel lock: read-only, never through a link, never
/// blocking (a FIFO), resolved beneath `dir`; `None` if it cannot be, or is not a regular file.
#[cfg(target_os = "linux")]
fn open_beneath(
    table: &ResourceTable,
    dir: &Resource<Descriptor>,
    path: &str,
) -> Option<std::fs::File> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    let Ok(Descriptor::Dir(dir)) = table.get(dir) else {
        return None;
    };
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    let fd = rustix::fs::openat2(&*dir.dir, path, flags, Mode::empty(), resolve).ok()?;
    let file = std::fs::File::from(fd);
    file.metadata().ok()?.is_file().then_some(file)
}

//! The per-Task lock file `.~<stem>.l`: created exclusively, held for at most half its lease,
//! broken by another writer once it has seen it unchanged for a whole lease (its writer
//! crashed), and renamed over the Task file by the save that holds it, which installs the Task
//! and releases the lock in one step. A save writes its Task text into the lock it holds.
//!
//! Where the platform has kernel locks (natively on Unix; for components, a host that fences
//! their exclusive creates), the writer also holds the lock file's kernel lock, and a lock whose
//! kernel lock is held is never broken: a writer paused for any time (SIGSTOP, a frozen VM, a
//! system call stalled on a saturated disk) keeps its lock. Without kernel locks the lease alone
//! guards it, and every late act of a writer that outlived its lease is checked for: ownership
//! after a renewal, before the record and before the rename, and a rename that came too late is
//! not acknowledged (`docs/on-disk-format.md`, "Fencing: kernel locks and the lease").

use super::error::DirError;
use super::options::Durability;
use super::platform::{self, Writer};
use super::stat::{Fenced, LockLook, Seen, Stamp};
use super::temp;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A held lock: its file, kept open (a save writes its Task text into it).
pub(super) struct Lock {
    pub(super) path: PathBuf,
    lease: Duration,
    acquired: Instant,
    /// The lock file's identity (device and inode), if it could be told when it was created.
    pub(super) identity: Option<(u64, u64)>,
    /// Open until the lock is released, so that no other file can be given its identity: the
    /// name still naming that identity means the lock is still ours. Natively it also holds
    /// the file's kernel lock.
    file: Writer,
    /// Whether its kernel lock is held: then no one breaks it, however late its rename.
    fenced: bool,
    /// Renamed over its Task file by the save: released, nothing left to remove.
    renamed: bool,
    /// How long each flush of a save's text takes longer than the disk makes it (tests of slow
    /// disks only).
    #[cfg(test)]
    slow_flush: Duration,
}

/// The first pause of a writer waiting for a lock, and the longest.
const FIRST_PAUSE: Duration = Duration::from_micros(200);
const MAX_PAUSE: Duration = Duration::from_millis(20);

impl Lock {
    /// Takes the lock at `path`, whose lease is `lease`: a file created exclusively (and kept
    /// open, with its kernel lock where there are kernel locks). Waits (backing off up to
    /// 20 ms) while another writer holds it, at most three leases.
    ///
    /// A lock is broken only when no live writer holds its kernel lock and this waiter has seen
    /// it unchanged (the same file, length and modification time) for longer than the lease, by
    /// its own monotonic clock: never by the file's modification time against the wall clock,
    /// which a clock stepped back or forward would make wrong by the size of the step.
    ///
    /// `fence` is false only in tests of what the lease alone guarantees: no kernel lock is
    /// taken, and others' are ignored.
    pub(super) fn take(path: PathBuf, lease: Duration, fence: bool) -> Result<Lock, DirError> {
        let started = Instant::now();
        let mut pause = FIRST_PAUSE;
        // The lock another writer holds as this waiter first saw it unchanged, and since when.
        let mut watched: Option<(Seen, Instant)> = None;
        loop {
            match platform::create_new(&path) {
                Ok(file) => {
                    if let Some(lock) = Self::fenced(path.clone(), lease, file, fence) {
                        return Ok(lock);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let look = match fence {
                        true => platform::look_at_lock(&path),
                        false => look_ignoring_kernel_locks(&path),
                    };
                    match look {
                        Ok(LockLook::Gone) => continue,
                        Ok(LockLook::Live) | Err(_) => watched = None,
                        Ok(LockLook::Unfenced(seen, hold)) => match watched {
                            Some((before, since)) if before == seen => {
                                if since.elapsed() > lease {
                                    break_lock(&path, seen, hold);
                                    watched = None;
                                    continue;
                                }
                            }
                            _ => watched = Some((seen, Instant::now())),
                        },
                    }
                }
                Err(source) => {
                    return Err(DirError::Io {
                        op: "create lock",
                        file: path,
                        source,
                    });
                }
            }
            if started.elapsed() > lease * 3 {
                return Err(DirError::Io {
                    op: "lock",
                    file: path,
                    source: io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "another writer kept the task locked for over {:?}",
                            lease * 3
                        ),
                    ),
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }

    /// The lock this writer just created at `path`, once it holds its kernel lock (where there
    /// are kernel locks) and its name still names it: `None` if it lost it in between (it was
    /// broken while this writer was paused between the create and the kernel lock), and then
    /// nothing of it is touched.
    fn fenced(path: PathBuf, lease: Duration, file: Writer, fence: bool) -> Option<Lock> {
        let acquired = Instant::now();
        let mut fenced = false;
        if fence {
            loop {
                match file.fence() {
                    Fenced::Yes => {
                        fenced = true;
                        break;
                    }
                    Fenced::No => break,
                    // A waiter looking at the lock holds its kernel lock for a moment.
                    Fenced::Busy if acquired.elapsed() < lease / 4 => std::thread::yield_now(),
                    Fenced::Busy => return None,
                }
            }
        }
        let lock = Lock {
            identity: file.identity(),
            path,
            lease,
            acquired,
            file,
            fenced,
            renamed: false,
            #[cfg(test)]
            slow_flush: Duration::ZERO,
        };
        match lock.identity {
            Some(_) if !lock.is_ours() => None,
            _ => Some(lock),
        }
    }

    /// The same lock, each flush of whose text takes `slow_flush` longer than the disk makes it.
    #[cfg(test)]
    pub(super) fn with_slow_flush(self, slow_flush: Duration) -> Lock {
        Lock { slow_flush, ..self }
    }

    /// Writes the Task text into the lock and flushes it (full durability): the stamp the Task
    /// file will have. The stamp must differ from that of the Task file it replaces
    /// (`replacing`), which readers tell from it by the stamp alone: when the two agree (the
    /// same length, written within one tick of the file system's clock), the modification time
    /// is moved on by the least the file system keeps, before the flush, which then writes it
    /// to disk with the file's length.
    ///
    /// A lock renewed after a flush that outlasted the lease may have been broken and taken
    /// meanwhile: it is renewed first and then looked at, and if it is no longer ours the save
    /// gives up here ([`Lock::lost`]), before it writes the record another writer's save relies
    /// on. Looking after the renewal is what makes this sound: a breaker moves a lock aside
    /// and removes it only if it is still stale there, and puts back one that was renewed.
    pub(super) fn write_task(
        &mut self,
        text: &[u8],
        replacing: Option<Stamp>,
        durability: Durability,
    ) -> Result<Stamp, DirError> {
        // Captures `self.path` alone, so `self.file` stays free to write.
        let io = |source| DirError::Io {
            op: "write",
            file: self.path.clone(),
            source,
        };
        self.file.write_from_start(text).map_err(io)?;
        let first = text.first().copied().unwrap_or(b'{');
        let stamp_of = |file: &Writer| match replacing {
            Some(old) => stamp_apart(file, old, first),
            None => file.stamp(),
        };
        let mut stamp = stamp_of(&self.file).map_err(io)?;
        if durability == Durability::Full {
            self.file.sync_data().map_err(io)?;
            #[cfg(test)]
            std::thread::sleep(self.slow_flush);
        }
        // Breakers age a lock by its modification time, which the flush did not move: after a
        // slow flush (a loaded disk) the lock is renewed, its time moved to now (its first byte
        // written again, `stamp_apart`), so that the save is not given up at half the lease for
        // the disk's slowness alone. The new time is not flushed (that would be another flush,
        // as slow): a power loss before the file system writes it back leaves the old time, and
        // the Task then reads one version past the record, which is never older than it is.
        if self.acquired.elapsed() > self.lease / 4 {
            let renewed = Instant::now();
            self.file.rewrite_first(first).map_err(io)?;
            stamp = stamp_of(&self.file).map_err(io)?;
            if !self.is_ours() {
                return Err(self.lost());
            }
            self.acquired = renewed;
        }
        Ok(stamp)
    }

    /// Fails unless the lock was taken less than half the lease ago, so that no one may have
    /// broken it yet (breakers wait for a whole lease since its last change).
    pub(super) fn check_young(&self) -> Result<(), DirError> {
        if self.acquired.elapsed() < self.lease / 2 {
            return Ok(());
        }
        Err(self.lost())
    }

    /// Fails unless the lock is still ours and young enough that no one may break it before
    /// the rename that follows: the last check before a save changes the Task file.
    pub(super) fn check_held(&self) -> Result<(), DirError> {
        if self.is_ours() && self.acquired.elapsed() < self.lease / 2 {
            return Ok(());
        }
        Err(self.lost())
    }

    /// Renames the lock (holding the Task text) over `target`: the save's one change of the
    /// Task file, which releases the lock.
    ///
    /// Without a kernel lock, a rename that returns half a lease or more after the lock was
    /// taken or last renewed (the age [`Lock::check_held`] checks) may have come after a breaker judged the lock stale and another
    /// writer took it: the file it moved may have been that writer's. Unless the Task file is
    /// then this save's own file, the save's outcome is unknown ([`DirError::LateRename`]): the
    /// writer that stalled is never told it won. (The other writer's text may then be in place
    /// while it is still writing it; that is the lease mode's one remaining assumption,
    /// `docs/on-disk-format.md`, "Fencing: kernel locks and the lease".)
    pub(super) fn rename_over(&mut self, target: &Path) -> Result<(), DirError> {
        fs::rename(&self.path, target).map_err(|source| DirError::Io {
            op: "rename into",
            file: target.to_path_buf(),
            source,
        })?;
        self.renamed = true;
        let late = self.acquired.elapsed();
        if self.fenced || late < self.lease / 2 {
            return Ok(());
        }
        match (self.identity, platform::identity_at(target)) {
            (Some(mine), Ok(there)) if there == mine => Ok(()),
            _ => Err(DirError::LateRename {
                file: target.to_path_buf(),
                late,
            }),
        }
    }

    /// Releases a lock a save did not rename over its Task file (a delete, a refused or failed
    /// save): removed if it is still ours.
    pub(super) fn release(self) {
        if !self.renamed && self.is_ours() {
            let _ = fs::remove_file(&self.path);
        }
    }

    /// Whether the lock file is still ours: not broken by a saver that judged it stale (and
    /// perhaps retaken since). By the identity of the file at its name, which is one look
    /// (`statx`); where that cannot be told, by its stamp (length and modification time).
    fn is_ours(&self) -> bool {
        let by_identity = self
            .identity
            .and_then(|mine| match platform::identity_at(&self.path) {
                Ok(there) => Some(there == mine),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Some(false),
                Err(_) => None,
            });
        by_identity.unwrap_or_else(|| {
            matches!((platform::stamp_at(&self.path), self.file.stamp()), (Ok(there), Ok(mine)) if there == mine)
        })
    }

    /// The error of a save that held its lock past half the lease, or lost it.
    fn lost(&self) -> DirError {
        DirError::Io {
            op: "save under lock",
            file: self.path.clone(),
            source: io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the lock was held past half its lease ({:?}) or taken over; nothing was saved",
                    self.lease / 2
                ),
            ),
        }
    }
}

/// What is at the lock name `path`, as a writer that ignores kernel locks sees it: a lock that
/// is there is `Unfenced`, held by nothing.
fn look_ignoring_kernel_locks(path: &Path) -> io::Result<LockLook<platform::LookHold>> {
    match platform::stamp_at(path) {
        Ok(stamp) => {
            let identity = platform::identity_at(path).ok();
            Ok(LockLook::Unfenced(
                Seen { identity, stamp },
                Default::default(),
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(LockLook::Gone),
        Err(e) => Err(e),
    }
}

/// Breaks a lock seen unchanged (`seen`) for longer than the lease, whose kernel lock no live
/// writer holds. Never puts a lock back: that could replace a lock taken meanwhile, and then
/// two writers would both win one version.
///
/// - Natively (`hold` is the lock file with its kernel lock taken by this waiter), the name is
///   removed if it still names that very file: no fenced writer can move it while the kernel
///   lock is held.
/// - Elsewhere it is moved aside (one breaker wins the rename; a host that fences its
///   components' creates refuses to move one a live writer holds) and removed, whatever it
///   turns out to be: if a newer lock replaced the stale one between the look and the rename,
///   its writer finds its lock gone at its next check and gives up, having changed nothing.
pub(super) fn break_lock(path: &Path, seen: Seen, hold: platform::LookHold) {
    #[cfg(unix)]
    if hold.is_some() {
        let still = platform::identity_at(path).ok();
        if still.is_some() && still == seen.identity {
            let _ = fs::remove_file(path);
        }
        return;
    }
    let _ = (hold, seen);
    let aside = temp::temp_path(path.parent().unwrap_or(Path::new("")));
    if fs::rename(path, &aside).is_ok() {
        let _ = fs::remove_file(&aside);
    }
}

/// The stamp of `file`, made to differ from `old` if it does not: first by setting its
/// modification time just past `old`'s ([`Writer::set_modified_after`], natively), and where
/// that does not part them (a file system with coarser times, a component) by writing its first
/// byte (`first`, as written) again, which moves its modification time to now, after a pause
/// that lets the file system's clock tick (1 ms, doubling).
pub(super) fn stamp_apart(file: &Writer, old: Stamp, first: u8) -> io::Result<Stamp> {
    let stamp = file.stamp()?;
    if stamp != old {
        return Ok(stamp);
    }
    file.set_modified_after(old)?;
    rewrite_until_apart(file, old, first, file.stamp()?)
}

/// [`stamp_apart`] by writing the first byte again, after pauses, until the stamp (`stamp`
/// now) differs from `old`.
pub(super) fn rewrite_until_apart(
    file: &Writer,
    old: Stamp,
    first: u8,
    mut stamp: Stamp,
) -> io::Result<Stamp> {
    let mut pause = Duration::from_millis(1);
    while stamp == old {
        if pause > Duration::from_secs(2) {
            return Err(io::Error::other(
                "the file system keeps no modification time that tells this save from the last one",
            ));
        }
        std::thread::sleep(pause);
        pause *= 2;
        file.rewrite_first(first)?;
        stamp = file.stamp()?;
    }
    Ok(stamp)
}

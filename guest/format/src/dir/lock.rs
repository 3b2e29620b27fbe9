//! The per-Task lock file `.~<stem>.l`: created exclusively, held for at most half its lease,
//! broken by another writer once it is older than the lease (its writer crashed), and renamed
//! over the Task file by the save that holds it, which installs the Task and releases the lock
//! in one step. A save writes its Task text into the lock it holds.

use super::error::DirError;
use super::options::Durability;
use super::platform::{self, Writer};
use super::stat::Stamp;
use super::temp;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// A held lock: its file, kept open (a save writes its Task text into it).
pub(super) struct Lock {
    pub(super) path: PathBuf,
    lease: Duration,
    acquired: Instant,
    /// The lock file's identity (device and inode), if it could be told when it was created.
    pub(super) identity: Option<(u64, u64)>,
    /// Open until the lock is released, so that no other file can be given its identity: the
    /// name still naming that identity means the lock is still ours.
    file: Writer,
    /// Renamed over its Task file by the save: released, nothing left to remove.
    renamed: bool,
    /// How long each flush of a save's text takes longer than the disk makes it (tests of slow
    /// disks only).
    #[cfg(test)]
    slow_flush: Duration,
}

impl Lock {
    /// Takes the lock at `path`, whose lease is `lease`: a file created exclusively (and kept
    /// open). A lock whose file was last changed longer than the lease ago was left by a
    /// crashed writer and is broken. Waits (backing off up to 20 ms) while a live writer holds
    /// it, at most three leases.
    pub(super) fn take(path: PathBuf, lease: Duration) -> Result<Lock, DirError> {
        let started = Instant::now();
        let mut pause = Duration::from_micros(200);
        loop {
            match platform::create_new(&path) {
                Ok(file) => {
                    return Ok(Lock {
                        identity: file.identity(),
                        path,
                        lease,
                        acquired: Instant::now(),
                        file,
                        renamed: false,
                        #[cfg(test)]
                        slow_flush: Duration::ZERO,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(source) => {
                    return Err(DirError::Io {
                        op: "create lock",
                        file: path,
                        source,
                    });
                }
            }
            if is_stale(&path, lease) {
                break_lock(&path, lease);
                continue;
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
            pause = (pause * 2).min(Duration::from_millis(20));
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
    pub(super) fn rename_over(&mut self, target: &Path) -> io::Result<()> {
        fs::rename(&self.path, target)?;
        self.renamed = true;
        Ok(())
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

/// Whether what is at `path` (not followed) was last changed longer than `lease` ago.
pub(super) fn is_stale(path: &Path, lease: Duration) -> bool {
    let Ok(stamp) = platform::stamp_at(path) else {
        return false;
    };
    let modified = SystemTime::UNIX_EPOCH
        + Duration::from_nanos(u64::try_from(stamp.mtime_ns).unwrap_or_default());
    SystemTime::now()
        .duration_since(modified)
        .is_ok_and(|age| age > lease)
}

/// Breaks a stale lock: moves it aside (one breaker wins the rename) and removes it if what it
/// moved is still stale; a lock that is not (the stale one was broken and retaken meanwhile) is
/// put back.
pub(super) fn break_lock(path: &Path, lease: Duration) {
    let aside = temp::temp_path(path.parent().unwrap_or(Path::new("")));
    if fs::rename(path, &aside).is_err() {
        return; // gone already
    }
    if is_stale(&aside, lease) {
        let _ = fs::remove_file(&aside);
    } else {
        let _ = fs::rename(&aside, path);
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

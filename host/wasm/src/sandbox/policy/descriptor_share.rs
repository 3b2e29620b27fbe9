//! The process's file descriptors: all component instances together, of every pool, hold at
//! most the components' share of the process's limit (`RLIMIT_NOFILE`), and the rest stays
//! for the host itself (accepting connections, PostgreSQL, native stores, logs). Within the
//! share, every live pool can count on [`GUARANTEED_PER_POOL`] descriptors however the others
//! hoard.
//!
//! Why: each instance may hold up to 1,024 host resources, each pool has up to 64 instances,
//! and a server runs a pool per namespace; against a common soft limit of 1,024 descriptors, a
//! store that keeps files open would otherwise push the whole process to `EMFILE`, and accept
//! and every other store would then fail. And one component that hoards must not starve the
//! others: each would fail in turn for want of a descriptor to open its Task.
//!
//! How: every instance counts the kernel descriptors it holds ([`DescriptorCount`]): one for its
//! preopened directory, one taken before each `open-at` (given back if the open fails), and,
//! at the end of each call, what its resource table really holds (the files and directories
//! it closed during the call come back then). Each pool sums its instances' counts
//! ([`PoolDescriptors`]). An `open-at` is allowed while the pool holds less than its guarantee,
//! or while what all pools hold beyond their guarantees stays within the common part: the
//! share less the guarantees of all live pools. Past that it fails inside the guest with
//! `insufficient-memory` (WASI has no `EMFILE`), before anything is opened. The share is the
//! soft limit less a reserve for the host ([`host_reserve`]), read when first needed and read
//! again when it seems used up, so a limit raised later ([`raise_descriptor_limit`]) is seen.
//!
//! What a guarantee holds against: opens made under these rules. A pool made while the others
//! already hold all of the common part gets its guarantee as they let go (their opens past
//! their own guarantees fail meanwhile); with more live pools than the share has guarantees
//! for (12 pools under a soft limit of 1,024), the common part is empty and the pools share
//! the share first come, first served.
//!
//! Not counted: descriptors a host call opens and closes within itself (the quota's and the
//! fences' probes), and outgoing HTTP connections (bounded per instance by the outgoing-HTTP
//! policy's requests in flight).
//!
//! One lock over the counts: they change at most once per `open-at` and once per call, next to
//! a system call each time, and one lock keeps the pool sums and the totals in step.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::ReaddirIterator;

/// The descriptors every live pool can count on, however the others hoard: enough for 16
/// concurrent calls of a file store (a Task's lock, its record and the directory each).
pub(crate) const GUARANTEED_PER_POOL: usize = 64;

/// The counts of every pool together.
struct Counts {
    /// Descriptors all instances hold now.
    held: usize,
    /// What pools hold beyond their guarantees, summed.
    beyond: usize,
    /// Pools alive.
    pools: usize,
    /// The components' share, as last read (0: not read yet).
    share: usize,
}

static COUNTS: Mutex<Counts> = Mutex::new(Counts {
    held: 0,
    beyond: 0,
    pools: 0,
    share: 0,
});

/// The counts, whoever panicked while holding them (nothing here panics with the lock held).
fn counts() -> MutexGuard<'static, Counts> {
    COUNTS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a pool holding `held` holds beyond its guarantee.
fn beyond(held: usize) -> usize {
    held.saturating_sub(GUARANTEED_PER_POOL)
}

impl Counts {
    /// Moves `pool`'s sum from `from` to `to`, and the totals with it.
    fn change(&mut self, pool: &PoolDescriptors, from: usize, to: usize) {
        self.held = (self.held + to).saturating_sub(from);
        self.beyond = (self.beyond + beyond(to)).saturating_sub(beyond(from));
        pool.held.store(to, Ordering::Relaxed);
    }

    /// The components' share, read from the limit if it was not yet (or `fresh`).
    fn share(&mut self, fresh: bool) -> usize {
        if self.share == 0 || fresh {
            self.share = share_of(soft_limit()).max(1);
        }
        self.share
    }

    /// Whether a pool holding `held` may take one more, within `share`.
    fn may_take_one(&self, held: usize, share: usize) -> bool {
        if self.held >= share {
            return false;
        }
        if held < GUARANTEED_PER_POOL {
            return true;
        }
        let common = share.saturating_sub(self.pools.saturating_mul(GUARANTEED_PER_POOL));
        self.beyond < common
    }
}

/// The descriptors one pool's instances hold, summed; made with the pool, it counts as a live
/// pool until dropped.
#[derive(Debug)]
pub(crate) struct PoolDescriptors {
    /// Changed only with [`COUNTS`] held.
    held: AtomicUsize,
}

impl PoolDescriptors {
    pub(crate) fn new() -> Arc<Self> {
        counts().pools += 1;
        Arc::new(PoolDescriptors {
            held: AtomicUsize::new(0),
        })
    }

    fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

impl Drop for PoolDescriptors {
    fn drop(&mut self) {
        // Its instances, which hold it, are gone: nothing of it is held any more.
        counts().pools -= 1;
    }
}

/// Raises the process's soft limit on open files (`RLIMIT_NOFILE`) to its hard limit, as
/// servers commonly do at start, and returns the soft limit now in force. The component
/// instances' share of descriptors is derived from it. `tnstore` calls this at start; an
/// embedder that runs components should too (or raise it its own way), before loading them.
#[cfg(unix)]
pub fn raise_descriptor_limit() -> std::io::Result<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid `rlimit` for the kernel to fill and read.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: as above. Refused (macOS caps the soft limit below an unlimited hard one),
        // the limit stays as it was.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    counts().share = 0;
    #[allow(clippy::useless_conversion)] // `rlim_t` is `u64` on Linux, not on every Unix
    Ok(u64::try_from(limit.rlim_cur).unwrap_or(u64::MAX))
}

/// Where there is no `RLIMIT_NOFILE`: nothing to raise; the share is a fixed 8,192.
#[cfg(not(unix))]
pub fn raise_descriptor_limit() -> std::io::Result<u64> {
    Ok(8192)
}

/// The soft limit on open files now.
fn soft_limit() -> usize {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `limit` is a valid `rlimit` for the kernel to fill.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            #[allow(clippy::useless_conversion)] // `rlim_t` is not `u64` on every Unix
            return usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX);
        }
        1024
    }
    #[cfg(not(unix))]
    8192
}

/// What the host keeps for itself of a soft limit of `soft`: a quarter, at least 64 and at
/// most 4,096 (with 1,024: 256 for the host, 768 for components).
pub(crate) fn host_reserve(soft: usize) -> usize {
    (soft / 4).clamp(64, 4096)
}

/// The components' share of a soft limit of `soft`.
fn share_of(soft: usize) -> usize {
    soft.saturating_sub(host_reserve(soft))
}

/// The descriptors one instance is counted for, in its pool's sum; given back when it is
/// dropped.
#[derive(Debug)]
pub(crate) struct DescriptorCount {
    pool: Arc<PoolDescriptors>,
    held: usize,
}

impl DescriptorCount {
    /// The count of a fresh instance of `pool`, holding its preopened directory if `has_dir`
    /// (counted even past the share: refusing it would refuse the instance, and it is one).
    pub(crate) fn new(pool: &Arc<PoolDescriptors>, has_dir: bool) -> Self {
        let mut count = DescriptorCount {
            pool: Arc::clone(pool),
            held: 0,
        };
        count.set(usize::from(has_dir));
        count
    }

    /// Counts this instance for `to`.
    fn set(&mut self, to: usize) {
        let mut counts = counts();
        let pool = self.pool.held();
        counts.change(&self.pool, pool, (pool + to).saturating_sub(self.held));
        self.held = to;
    }

    /// Takes one descriptor for an open about to be made; `false` if the pool may not have
    /// another.
    pub(crate) fn take_one(&mut self) -> bool {
        let mut counts = counts();
        let pool = self.pool.held();
        let share = counts.share(false);
        if !counts.may_take_one(pool, share) {
            let share = counts.share(true);
            if !counts.may_take_one(pool, share) {
                return false;
            }
        }
        counts.change(&self.pool, pool, pool + 1);
        self.held += 1;
        true
    }

    /// Gives back the one taken for an open that failed.
    pub(crate) fn give_back_one(&mut self) {
        if self.held > 0 {
            self.set(self.held - 1);
        }
    }

    /// At the end of a call: counts what the instance holds now, one for its preopened
    /// directory (`has_dir`) and one per file or directory (or directory listing) in its
    /// `table`. Returns that count.
    pub(crate) fn settle(&mut self, table: &mut ResourceTable, has_dir: bool) -> usize {
        let open = table
            .iter_mut()
            .filter(|entry| entry.is::<Descriptor>() || entry.is::<ReaddirIterator>())
            .count();
        let now = open + usize::from(has_dir);
        if now != self.held {
            self.set(now);
        }
        now
    }
}

impl Drop for DescriptorCount {
    fn drop(&mut self) {
        self.set(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_keeps_a_quarter_within_bounds() {
        assert_eq!(share_of(1024), 768);
        assert_eq!(share_of(256), 192);
        assert_eq!(share_of(100), 36);
        assert_eq!(share_of(1 << 20), (1 << 20) - 4096);
    }

    #[test]
    fn a_pool_past_its_guarantee_takes_only_from_the_common_part() {
        // Two pools under a share of 768: 128 guaranteed, 640 common.
        let counts = |held, beyond| Counts {
            held,
            beyond,
            pools: 2,
            share: 768,
        };
        // The hoarder holds its 64 and the whole common part: it gets no more, and the other
        // pool still gets its guarantee.
        let hoarded = counts(704, 640);
        assert!(!hoarded.may_take_one(704, 768));
        assert!(hoarded.may_take_one(0, 768));
        assert!(hoarded.may_take_one(63, 768));
        assert!(!hoarded.may_take_one(64, 768));
        // Below the common part's end, anyone may.
        assert!(counts(700, 636).may_take_one(700, 768));
        // Never past the share, guarantee or not.
        assert!(!counts(768, 0).may_take_one(0, 768));
    }
}

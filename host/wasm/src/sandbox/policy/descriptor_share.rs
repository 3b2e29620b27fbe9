//! The process's file descriptors: all component instances together, of every pool, hold at
//! most the components' share of the process's limit (`RLIMIT_NOFILE`), and the rest stays
//! for the host itself (accepting connections, PostgreSQL, native stores, logs).
//!
//! Why: each instance may hold up to 1,024 host resources, each pool has up to 64 instances,
//! and a server runs a pool per namespace; against a common soft limit of 1,024 descriptors, a
//! store that keeps files open would otherwise push the whole process to `EMFILE`, and accept
//! and every other store would then fail.
//!
//! How: every instance counts the kernel descriptors it holds ([`DescriptorCount`]): one for its
//! preopened directory, one taken before each `open-at` (given back if the open fails), and,
//! at the end of each call, what its resource table really holds (the files and directories
//! it closed during the call come back then). An `open-at` past the share fails inside the
//! guest with `insufficient-memory` (WASI has no `EMFILE`), before anything is opened. The
//! share is the soft limit less a reserve for the host ([`host_reserve`]), read when first
//! needed and read again when it seems used up, so a limit raised later
//! ([`raise_descriptor_limit`]) is seen.
//!
//! Not counted: descriptors a host call opens and closes within itself (the quota's and the
//! fences' probes), and outgoing HTTP connections (bounded per instance by the outgoing-HTTP
//! policy's requests in flight).

use std::sync::atomic::{AtomicUsize, Ordering};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::ReaddirIterator;

/// Descriptors all instances hold now, together.
static HELD: AtomicUsize = AtomicUsize::new(0);

/// The components' share, as last read (0: not read yet).
static SHARE: AtomicUsize = AtomicUsize::new(0);

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
    SHARE.store(0, Ordering::Release);
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

/// The components' share, read from the limit if it was not yet (or `fresh`).
fn share(fresh: bool) -> usize {
    let known = SHARE.load(Ordering::Acquire);
    if known != 0 && !fresh {
        return known;
    }
    let share = share_of(soft_limit()).max(1);
    SHARE.store(share, Ordering::Release);
    share
}

/// Takes `n` descriptors of the share, if they fit.
fn take(n: usize, share: usize) -> bool {
    HELD.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
        held.checked_add(n).filter(|sum| *sum <= share)
    })
    .is_ok()
}

/// The descriptors one instance is counted for; given back when it is dropped.
#[derive(Debug)]
pub(crate) struct DescriptorCount {
    held: usize,
}

impl DescriptorCount {
    /// The count of a fresh instance, holding its preopened directory if `has_dir` (counted
    /// even past the share: refusing it would refuse the instance, and it is one).
    pub(crate) fn new(has_dir: bool) -> Self {
        let held = usize::from(has_dir);
        HELD.fetch_add(held, Ordering::AcqRel);
        DescriptorCount { held }
    }

    /// Takes one descriptor for an open about to be made; `false` if the share is used up.
    pub(crate) fn take_one(&mut self) -> bool {
        if !take(1, share(false)) && !take(1, share(true)) {
            return false;
        }
        self.held += 1;
        true
    }

    /// Gives back the one taken for an open that failed.
    pub(crate) fn give_back_one(&mut self) {
        if self.held > 0 {
            self.held -= 1;
            HELD.fetch_sub(1, Ordering::AcqRel);
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
        if now >= self.held {
            HELD.fetch_add(now - self.held, Ordering::AcqRel);
        } else {
            HELD.fetch_sub(self.held - now, Ordering::AcqRel);
        }
        self.held = now;
        now
    }
}

impl Drop for DescriptorCount {
    fn drop(&mut self) {
        HELD.fetch_sub(self.held, Ordering::AcqRel);
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
}

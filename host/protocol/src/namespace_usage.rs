//! Each namespace's Tasks and bytes, held to [`OwnerLimits`]: what stops one owner from filling
//! the disk that every owner's Tasks share.
//!
//! A namespace is counted from its store on first use ([`TaskStore::usage`], else the Task
//! count of a listing, with no byte count), then kept up to date with what this process saves
//! in it: each new Task, each continuing message, each agent update. What changes it behind
//! this process's back (another replica, retention, a delete) is seen when the count is taken
//! again: whenever a request would pass a bound and the count is older than
//! [`RECOUNT_AFTER`], before the request is refused. So a bound is exact for one server and
//! approximate across replicas (each may let its own requests in until it counts again).
//!
//! [`TaskStore::usage`]: toolnexus_core::TaskStore::usage

use crate::error::{A2aError, ErrorKind};
use crate::owner_limits::OwnerLimits;
use crate::scope::At;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use toolnexus_core::{ListQuery, StoreError};

/// How old a count may be before a request it would refuse makes it be taken again.
pub(crate) const RECOUNT_AFTER: Duration = Duration::from_secs(10);

/// The count of every namespace used so far.
#[derive(Default)]
pub(crate) struct NamespaceUsage {
    counted: Mutex<HashMap<String, Counted>>,
}

#[derive(Clone, Copy)]
struct Counted {
    tasks: u64,
    /// `None`: the store cannot tell its bytes; no byte bound is held.
    bytes: Option<u64>,
    at: Instant,
}

impl Counted {
    /// Why adding `tasks` and `bytes` would pass a bound, if it would.
    fn refusal(&self, limits: &OwnerLimits, tasks: u64, bytes: u64) -> Option<String> {
        if tasks > 0 && self.tasks.saturating_add(tasks) > limits.max_tasks_per_owner {
            return Some(format!(
                "this owner holds {} tasks, the most allowed; delete some (or let retention) \
                 before creating more",
                self.tasks
            ));
        }
        let held = self.bytes?;
        (bytes > 0 && held.saturating_add(bytes) > limits.max_bytes_per_owner).then(|| {
            format!(
                "this owner's tasks take {held} bytes; {bytes} more would pass the {} allowed",
                limits.max_bytes_per_owner
            )
        })
    }
}

impl NamespaceUsage {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Counted>> {
        self.counted.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts `tasks` more Tasks and `bytes` more bytes in `at`'s namespace, if they fit its
    /// bounds; else `Err` (-32011) naming the bound, and nothing is counted. Undo with
    /// [`release`](Self::release) if what it was for is not saved.
    pub(crate) async fn reserve(
        &self,
        at: &At,
        limits: &OwnerLimits,
        tasks: u64,
        bytes: u64,
    ) -> Result<(), A2aError> {
        if !limits.bounds_tasks_or_bytes() {
            return Ok(());
        }
        let mut recounted = false;
        loop {
            let stale = {
                let mut counted = self.lock();
                match counted.get_mut(&at.ns) {
                    Some(count) => match count.refusal(limits, tasks, bytes) {
                        None => {
                            count.tasks += tasks;
                            if let Some(held) = &mut count.bytes {
                                *held += bytes;
                            }
                            return Ok(());
                        }
                        Some(why) if recounted || count.at.elapsed() < RECOUNT_AFTER => {
                            return Err(A2aError::new(ErrorKind::LimitReached, why));
                        }
                        Some(_) => true,
                    },
                    None => true,
                }
            };
            if stale {
                let fresh = count(at).await?;
                self.lock().insert(at.ns.clone(), fresh);
                recounted = true;
            }
        }
    }

    /// Takes back what [`reserve`](Self::reserve) counted.
    pub(crate) fn release(&self, at: &At, tasks: u64, bytes: u64) {
        if let Some(count) = self.lock().get_mut(&at.ns) {
            count.tasks = count.tasks.saturating_sub(tasks);
            if let Some(held) = &mut count.bytes {
                *held = held.saturating_sub(bytes);
            }
        }
    }

    /// Why `bytes` more in `at`'s namespace would pass its bound, if they would (for a check
    /// inside a transition, which cannot wait for a count: an uncounted namespace passes).
    pub(crate) fn over_bytes(&self, at: &At, limits: &OwnerLimits, bytes: u64) -> Option<String> {
        self.lock().get(&at.ns)?.refusal(limits, 0, bytes)
    }

    /// Counts a change of `delta` bytes that was saved in `at`'s namespace.
    pub(crate) fn add_bytes(&self, at: &At, delta: i64) {
        if let Some(held) = self.lock().get_mut(&at.ns).and_then(|c| c.bytes.as_mut()) {
            *held = held.saturating_add_signed(delta);
        }
    }
}

/// What `at`'s store holds now: its own usage, else the Task count of a listing; a store that
/// can tell neither holds nothing as far as the bounds go.
async fn count(at: &At) -> Result<Counted, A2aError> {
    let now = Instant::now();
    if let Some(usage) = at.store.usage().await? {
        return Ok(Counted {
            tasks: usage.tasks,
            bytes: Some(usage.bytes),
            at: now,
        });
    }
    let query = ListQuery {
        page_size: 1,
        ..ListQuery::default()
    };
    // A listing that fails (a store component over a directory not made yet) counts nothing:
    // the bound is then held from this process's own saves, and counted again when it is
    // reached.
    let tasks = match at.store.list(&query).await {
        Ok(page) => page.total_size.unwrap_or(0),
        Err(StoreError::Unsupported { .. }) => 0,
        Err(e) => {
            tracing::warn!(target: "toolnexus::server", namespace = %at.ns, error = %e,
                "cannot count the namespace's tasks for its bounds; counting from zero");
            0
        }
    };
    Ok(Counted {
        tasks,
        bytes: None,
        at: now,
    })
}

/// The growth from `before` bytes to `after`, as a signed count.
pub(crate) fn growth(before: usize, after: usize) -> i64 {
    i64::try_from(after).unwrap_or(i64::MAX) - i64::try_from(before).unwrap_or(i64::MAX)
}

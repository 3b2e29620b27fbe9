//! Admitting a request: one of the `instances` permits and room in the memory budget for a
//! fresh instance, waiting for both at most the queue timeout. Past it the request is turned
//! away (503) rather than held: a server that queues without bound holds every connection of a
//! burst while its clients time out anyway.

use crate::http_component::world::HttpWorld;
use crate::sandbox::memory::MemoryReservation;
use crate::sandbox::pool::InstancePool;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

/// What a request holds while its handler runs: its instance's permit and the memory budget's
/// reservation for it. Both are given back when dropped.
pub(crate) struct Admitted {
    pub(crate) permit: OwnedSemaphorePermit,
    pub(crate) reservation: MemoryReservation,
}

/// A permit and a reservation within `wait`, or `None` (every instance busy, or the budget
/// full, for that long; or the server stopping).
pub(crate) async fn admit(pool: &InstancePool<HttpWorld>, wait: Duration) -> Option<Admitted> {
    let until = Instant::now().checked_add(wait);
    let permits = Arc::clone(&pool.permits);
    let permit = if wait.is_zero() {
        permits.try_acquire_owned().ok()?
    } else {
        within(until, permits.acquire_owned()).await?.ok()?
    };
    loop {
        let freed = pool.budget.instance_freed.notified();
        tokio::pin!(freed);
        // Registered before looking, so a reservation given back between the look and the wait
        // wakes it.
        freed.as_mut().enable();
        if let Some(reservation) = pool.budget.admit() {
            return Some(Admitted {
                permit,
                reservation,
            });
        }
        if wait.is_zero() {
            return None;
        }
        within(until, freed).await?;
    }
}

/// `future`'s output if it comes by `until` (`None`: no bound).
async fn within<F: Future>(until: Option<Instant>, future: F) -> Option<F::Output> {
    match until {
        Some(until) => tokio::time::timeout_at(until, future).await.ok(),
        None => Some(future.await),
    }
}

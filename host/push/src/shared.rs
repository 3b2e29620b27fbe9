//! What every part of a sender reads: the stores, the options, the outbox and the counters
//! that bound the work.

use crate::options::PushOptions;
use crate::outbox::Outbox;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::{Notify, Semaphore};
use toolnexus_a2a_protocol::Stores;

pub struct Shared {
    /// Where configs are read at delivery (a deleted config is not delivered to).
    pub stores: Arc<dyn Stores>,
    pub options: PushOptions,
    pub outbox: Outbox,
    /// Deliveries in flight across all Tasks (`options.concurrency`).
    pub in_flight: Semaphore,
    /// Deliveries queued or between attempts (at most `options.max_queued`, except for what a
    /// restart found in the outbox).
    queued: AtomicUsize,
    /// Woken when `queued` reaches zero.
    drained: Notify,
}

impl Shared {
    pub fn new(stores: Arc<dyn Stores>, options: PushOptions, outbox: Outbox) -> Shared {
        let permits = options.concurrency.max(1);
        Shared {
            stores,
            options,
            outbox,
            in_flight: Semaphore::new(permits),
            queued: AtomicUsize::new(0),
            drained: Notify::new(),
        }
    }

    /// Counts `n` more deliveries if they fit under the bound (`force`: whatever the bound,
    /// for what a restart found already queued).
    pub fn reserve(&self, n: usize, force: bool) -> bool {
        let max = self.options.max_queued.max(1);
        self.queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                (force || queued + n <= max).then_some(queued + n)
            })
            .is_ok()
    }

    /// Counts `n` deliveries done (delivered, given up, or never written).
    pub fn release(&self, n: usize) {
        if n > 0 && self.queued.fetch_sub(n, Ordering::AcqRel) == n {
            self.drained.notify_waiters();
        }
    }

    /// Returns once nothing is queued or between attempts.
    pub async fn drained(&self) {
        loop {
            let notified = self.drained.notified();
            tokio::pin!(notified);
            // Registered before the check, so a release in between is not missed.
            notified.as_mut().enable();
            if self.queued() == 0 {
                return;
            }
            notified.await;
        }
    }

    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }
}

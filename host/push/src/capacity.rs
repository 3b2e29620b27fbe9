//! Fair shares of the sender's capacity. Deliveries are counted, and attempts hold slots, three
//! ways at once: overall, per namespace (a tenant's or an owner's store) and per destination
//! (the webhook URL's scheme, host and port, as the config named it when the delivery was
//! queued). The overall bounds stay the outer limit; the per-namespace and per-destination
//! ones keep one owner flooding its webhooks, or one webhook that never answers, from taking
//! what every other owner needs.

use crate::options::PushOptions;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// Which share a delivery counts against: its namespace and, when known, its destination
/// (deliveries found in the outbox at start have none: the outbox keeps no URL).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Share {
    pub namespace: Option<String>,
    pub destination: Option<String>,
}

/// The counters and slots of one sender.
pub struct Capacity {
    max_queued: usize,
    max_queued_per_namespace: usize,
    max_queued_per_destination: usize,
    counts: Mutex<Counts>,
    /// Woken when nothing is queued any more.
    drained: Notify,
    in_flight: Semaphore,
    namespace_slots: KeyedSlots<Option<String>>,
    destination_slots: KeyedSlots<String>,
}

#[derive(Default)]
struct Counts {
    total: usize,
    per_namespace: HashMap<Option<String>, usize>,
    per_destination: HashMap<String, usize>,
}

/// The slots one attempt holds; given back when dropped.
pub struct InFlight<'a> {
    capacity: &'a Capacity,
    share: &'a Share,
    _permits: [Option<OwnedSemaphorePermit>; 2],
    _global: tokio::sync::SemaphorePermit<'a>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        // The permits go first, so an entry nobody holds any more can be forgotten.
        self._permits = [None, None];
        self.capacity.namespace_slots.tidy(&self.share.namespace);
        if let Some(destination) = &self.share.destination {
            self.capacity.destination_slots.tidy(destination);
        }
    }
}

impl Capacity {
    pub fn new(options: &PushOptions) -> Capacity {
        Capacity {
            max_queued: options.max_queued.max(1),
            max_queued_per_namespace: options.max_queued_per_namespace.max(1),
            max_queued_per_destination: options.max_queued_per_destination.max(1),
            counts: Mutex::new(Counts::default()),
            drained: Notify::new(),
            in_flight: Semaphore::new(options.concurrency.max(1)),
            namespace_slots: KeyedSlots::new(options.concurrency_per_namespace.max(1)),
            destination_slots: KeyedSlots::new(options.concurrency_per_destination.max(1)),
        }
    }

    fn counts(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one more delivery of `share` if every bound it counts against has room; `Err`
    /// names the bound that is full (and its flag), for the log line.
    pub fn reserve(&self, share: &Share) -> Result<(), String> {
        let mut counts = self.counts();
        if counts.total >= self.max_queued {
            return Err(format!(
                "{} deliveries are queued, the most allowed (--push-max-queued)",
                counts.total
            ));
        }
        let in_namespace = counts.per_namespace.get(&share.namespace).copied();
        if in_namespace.unwrap_or(0) >= self.max_queued_per_namespace {
            return Err(format!(
                "its namespace has {} deliveries queued, the most allowed \
                 (--push-max-queued-per-namespace)",
                self.max_queued_per_namespace
            ));
        }
        if let Some(destination) = &share.destination
            && counts
                .per_destination
                .get(destination)
                .copied()
                .unwrap_or(0)
                >= self.max_queued_per_destination
        {
            return Err(format!(
                "{destination} has {} deliveries queued, the most allowed \
                 (--push-max-queued-per-destination)",
                self.max_queued_per_destination
            ));
        }
        counts.add(share);
        Ok(())
    }

    /// Counts a delivery whatever the bounds (what a restart found in the outbox).
    pub fn force(&self, share: &Share) {
        self.counts().add(share);
    }

    /// Counts a delivery done (delivered, given up, or never written).
    pub fn release(&self, share: &Share) {
        let mut counts = self.counts();
        counts.total = counts.total.saturating_sub(1);
        decrement(&mut counts.per_namespace, &share.namespace);
        if let Some(destination) = &share.destination {
            decrement(&mut counts.per_destination, destination);
        }
        if counts.total == 0 {
            self.drained.notify_waiters();
        }
    }

    /// Deliveries queued or between attempts.
    pub fn queued(&self) -> usize {
        self.counts().total
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

    /// Slots for one attempt of a delivery of `share`: its namespace's, its destination's,
    /// then one overall, in that order (always the same order, so no two attempts wait for
    /// each other's). A namespace waiting for a busy destination waits with its own slot only,
    /// never with one of the overall slots. `None`: the sender is closing.
    pub async fn in_flight<'a>(&'a self, share: &'a Share) -> Option<InFlight<'a>> {
        let namespace = self.namespace_slots.acquire(&share.namespace).await?;
        let destination = match &share.destination {
            Some(destination) => Some(self.destination_slots.acquire(destination).await?),
            None => None,
        };
        let global = self.in_flight.acquire().await.ok()?;
        Some(InFlight {
            capacity: self,
            share,
            _permits: [Some(namespace), destination],
            _global: global,
        })
    }
}

impl Counts {
    fn add(&mut self, share: &Share) {
        self.total += 1;
        *self
            .per_namespace
            .entry(share.namespace.clone())
            .or_default() += 1;
        if let Some(destination) = &share.destination {
            *self.per_destination.entry(destination.clone()).or_default() += 1;
        }
    }
}

fn decrement<K: Hash + Eq>(map: &mut HashMap<K, usize>, key: &K) {
    if let Some(n) = map.get_mut(key) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            map.remove(key);
        }
    }
}

/// A semaphore per key, made when first needed and forgotten once nobody holds or waits for
/// it (so the map holds only the namespaces and destinations busy now).
struct KeyedSlots<K> {
    per_key: usize,
    map: Mutex<HashMap<K, Arc<Semaphore>>>,
}

impl<K: Hash + Eq + Clone> KeyedSlots<K> {
    fn new(per_key: usize) -> Self {
        KeyedSlots {
            per_key,
            map: Mutex::new(HashMap::new()),
        }
    }

    async fn acquire(&self, key: &K) -> Option<OwnedSemaphorePermit> {
        let semaphore = {
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            let entry = map
                .entry(key.clone())
                .or_insert_with(|| Arc::new(Semaphore::new(self.per_key)));
            Arc::clone(entry)
        };
        semaphore.acquire_owned().await.ok()
    }

    /// Forgets `key`'s semaphore if the map's is the only reference left (every clone is taken
    /// under the map's lock, so none can appear meanwhile).
    fn tidy(&self, key: &K) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if map.get(key).is_some_and(|s| Arc::strong_count(s) == 1) {
            map.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(namespace: &str, destination: &str) -> Share {
        Share {
            namespace: Some(namespace.into()),
            destination: Some(destination.into()),
        }
    }

    fn options() -> PushOptions {
        PushOptions {
            max_queued: 5,
            max_queued_per_namespace: 3,
            max_queued_per_destination: 2,
            concurrency: 3,
            concurrency_per_namespace: 2,
            concurrency_per_destination: 1,
            ..PushOptions::default()
        }
    }

    #[test]
    fn each_bound_refuses_naming_itself_and_the_others_still_have_room() {
        let capacity = Capacity::new(&options());
        capacity.reserve(&share("a", "http://x:80")).unwrap();
        capacity.reserve(&share("a", "http://x:80")).unwrap();
        let full = capacity.reserve(&share("b", "http://x:80")).unwrap_err();
        assert!(full.contains("per-destination"), "{full}");
        capacity.reserve(&share("a", "http://y:80")).unwrap();
        let full = capacity.reserve(&share("a", "http://z:80")).unwrap_err();
        assert!(full.contains("per-namespace"), "{full}");
        capacity.reserve(&share("b", "http://z:80")).unwrap();
        capacity.reserve(&share("c", "http://w:80")).unwrap();
        let full = capacity.reserve(&share("d", "http://v:80")).unwrap_err();
        assert!(full.contains("--push-max-queued)"), "{full}");
        capacity.release(&share("a", "http://x:80"));
        capacity.reserve(&share("b", "http://x:80")).unwrap();
        assert_eq!(capacity.queued(), 5);
    }

    #[tokio::test]
    async fn slots_are_shared_per_namespace_and_destination_and_forgotten_when_free() {
        let capacity = Capacity::new(&options());
        let (a_x, a_y, b_x, b_y) = (
            share("a", "http://x:80"),
            share("a", "http://y:80"),
            share("b", "http://x:80"),
            share("b", "http://y:80"),
        );
        let first = capacity.in_flight(&a_x).await.unwrap();
        // x has its one slot taken: b's delivery to x waits, b's to y does not.
        let waiting = capacity.in_flight(&b_x);
        tokio::pin!(waiting);
        assert!(futures_poll_once(waiting.as_mut()).await.is_none());
        let second = capacity.in_flight(&b_y).await.unwrap();
        drop(second);
        let third = capacity.in_flight(&a_y).await.unwrap();
        drop((first, third));
        let fourth = waiting.await.unwrap();
        drop(fourth);
        assert!(capacity.namespace_slots.map.lock().unwrap().is_empty());
        assert!(capacity.destination_slots.map.lock().unwrap().is_empty());
    }

    /// Polls a future once: `Some` if it was ready.
    async fn futures_poll_once<F: std::future::Future + Unpin>(f: F) -> Option<F::Output> {
        let mut f = f;
        std::future::poll_fn(|cx| {
            std::task::Poll::Ready(match std::pin::Pin::new(&mut f).poll(cx) {
                std::task::Poll::Ready(v) => Some(v),
                std::task::Poll::Pending => None,
            })
        })
        .await
    }
}

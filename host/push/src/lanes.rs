//! Order: the deliveries of one Task to one config form a lane, delivered one at a time in
//! the order they were queued; a later one waits for the earlier ones, their retries
//! included. Lanes run side by side, each attempt holding a slot of its namespace, of its
//! destination and of the overall bound ([`capacity`](crate::capacity)); a lane waiting
//! between attempts holds no slot.

use crate::attempt::{Outcome, attempt};
use crate::backoff::{delay, random_unit};
use crate::outbox::{LaneKey, Pending};
use crate::shared::Shared;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// The lanes with deliveries; a lane in the map has its worker running.
pub struct Lanes {
    shared: Arc<Shared>,
    map: Mutex<HashMap<LaneKey, VecDeque<Pending>>>,
}

impl Lanes {
    pub fn new(shared: Arc<Shared>) -> Arc<Lanes> {
        Arc::new(Lanes {
            shared,
            map: Mutex::new(HashMap::new()),
        })
    }

    /// Adds deliveries (in their order) at the end of their lanes, starting a lane's worker
    /// when it had none. Call it in queue order: the lanes keep the order of these calls.
    pub fn enqueue(self: &Arc<Self>, pending: Vec<Pending>) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        for item in pending {
            match map.get_mut(&item.lane) {
                Some(lane) => lane.push_back(item),
                None => {
                    let key = item.lane.clone();
                    map.insert(key.clone(), VecDeque::from([item]));
                    tokio::spawn(Arc::clone(self).run(key));
                }
            }
        }
    }

    /// A lane's worker: its deliveries, front first, until it is empty.
    async fn run(self: Arc<Self>, key: LaneKey) {
        loop {
            let front = {
                let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
                map.get(&key).and_then(|lane| lane.front().cloned())
            };
            let Some(front) = front else { return };
            deliver(&self.shared, &front).await;
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(lane) = map.get_mut(&key) {
                lane.pop_front();
                if lane.is_empty() {
                    map.remove(&key);
                    return;
                }
            }
        }
    }
}

/// Every attempt of one delivery, then its entry goes.
async fn deliver(shared: &Shared, pending: &Pending) {
    let options = &shared.options;
    let attempts = options.attempts.max(1);
    let lane = &pending.lane;
    let what = || {
        format!(
            "push delivery {} of task {:?} to config {:?}{}",
            pending.seq,
            lane.task_id,
            lane.config_id,
            lane.namespace
                .as_deref()
                .map(|ns| format!(" in namespace {ns:?}"))
                .unwrap_or_default()
        )
    };
    let share = pending.share();
    for n in 1..=attempts {
        let outcome = match shared.capacity.in_flight(&share).await {
            Some(_slots) => attempt(shared, pending).await,
            None => return,
        };
        match outcome {
            Outcome::Delivered | Outcome::Gone => break,
            Outcome::Failed(why) => {
                tracing::warn!("{} failed, not retried: {why}", what());
                break;
            }
            Outcome::Retry(why) if n == attempts => {
                tracing::warn!("{} dropped after {n} attempts: {why}", what());
            }
            Outcome::Retry(why) => {
                let wait = delay(
                    n + 1,
                    options.first_backoff,
                    options.max_backoff,
                    random_unit(),
                );
                tracing::debug!("{} attempt {n} failed: {why}; next in {wait:?}", what());
                tokio::time::sleep(wait).await;
            }
        }
    }
    shared.outbox.done(pending);
    shared.capacity.release(&share);
}

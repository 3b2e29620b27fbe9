//! Queue order per namespace: a save's deliveries are numbered, written and put in their lanes
//! while the lock of its namespace is held, so the lanes keep the outbox's order. One lock per
//! namespace (made when needed, forgotten when free), so one namespace's slow outbox writes
//! never hold up another's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::OwnedMutexGuard;

#[derive(Default)]
pub struct QueueOrder {
    locks: Mutex<HashMap<Option<String>, Arc<tokio::sync::Mutex<()>>>>,
}

/// The queue-order lock of one namespace, held.
pub struct Ordered {
    order: Arc<QueueOrder>,
    namespace: Option<String>,
    guard: Option<OwnedMutexGuard<()>>,
}

impl QueueOrder {
    fn lock_of(&self, namespace: Option<&str>) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(locks.entry(namespace.map(str::to_owned)).or_default())
    }

    /// Waits for the lock of `namespace`.
    pub async fn lock(self: &Arc<Self>, namespace: Option<&str>) -> Ordered {
        let guard = self.lock_of(namespace).lock_owned().await;
        Ordered {
            order: Arc::clone(self),
            namespace: namespace.map(str::to_owned),
            guard: Some(guard),
        }
    }

    /// The lock of `namespace` if it is free now.
    pub fn try_lock(self: &Arc<Self>, namespace: Option<&str>) -> Option<Ordered> {
        let guard = self.lock_of(namespace).try_lock_owned().ok()?;
        Some(Ordered {
            order: Arc::clone(self),
            namespace: namespace.map(str::to_owned),
            guard: Some(guard),
        })
    }
}

impl Drop for Ordered {
    fn drop(&mut self) {
        self.guard = None;
        // Forgotten when nobody else holds or waits for it (every clone is taken under the
        // map's lock, so none can appear meanwhile).
        let mut locks = self.order.locks.lock().unwrap_or_else(|e| e.into_inner());
        if locks
            .get(&self.namespace)
            .is_some_and(|lock| Arc::strong_count(lock) == 1)
        {
            locks.remove(&self.namespace);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn namespaces_do_not_wait_for_each_other_and_free_locks_are_forgotten() {
        let order = Arc::new(QueueOrder::default());
        let a = order.lock(Some("a")).await;
        assert!(order.try_lock(Some("a")).is_none());
        let b = order
            .try_lock(Some("b"))
            .expect("another namespace is free");
        let root = order.try_lock(None).expect("the root namespace is free");
        drop((a, b, root));
        assert!(order.locks.lock().unwrap().is_empty());
    }
}

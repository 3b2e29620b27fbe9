//! The state the operations share (the stores, the agents' permits, the save listeners, the cancel
//! signals, the per-Task locks) and the one guarded read-modify-write every change of a Task
//! goes through.

use crate::error::{A2aError, ErrorKind};
use crate::live_events::LiveEvents;
use crate::save_listeners::{SaveListener, SaveListeners};
use crate::scope::{At, Stores};
use crate::service_config::{ServiceConfig, Spawn};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use toolnexus_core::Task;
use toolnexus_core::transition::{Step, TransitionError, transition};

/// The state behind a [`Service`](crate::Service), shared by its clones and its agents.
pub(crate) struct ServiceState {
    pub(crate) stores: Arc<dyn Stores>,
    pub(crate) config: ServiceConfig,
    pub(crate) spawn: Arc<dyn Spawn>,
    pub(crate) background: Arc<Semaphore>,
    /// Wakes subscribers and waiters of a Task (key: namespace and id) after each save here.
    pub(crate) save_listeners: SaveListeners,
    /// The events of each run here, as it emits them.
    pub(crate) live: LiveEvents,
    /// The cancel signal of each agent running here.
    pub(crate) cancels: Mutex<HashMap<String, watch::Sender<bool>>>,
    /// Per-Task locks, for stores without versions only (see [`ServiceState::guard`]).
    pub(crate) locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl ServiceState {
    pub(crate) fn new(
        stores: Arc<dyn Stores>,
        config: ServiceConfig,
        spawn: Arc<dyn Spawn>,
    ) -> Self {
        let background = Arc::new(Semaphore::new(config.max_background_tasks.max(1)));
        ServiceState {
            stores,
            config,
            spawn,
            background,
            save_listeners: Arc::new(Mutex::new(HashMap::new())),
            live: LiveEvents::default(),
            cancels: Mutex::new(HashMap::new()),
            locks: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the store of `at` keeps versions, as the store itself reports.
    pub(crate) fn versioned(&self, at: &At) -> bool {
        at.store.supports_versions()
    }

    pub(crate) fn lock_map<'a, T>(&self, m: &'a Mutex<T>) -> std::sync::MutexGuard<'a, T> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The in-process lock of a Task for one transition; `None` when the store keeps versions
    /// (each transition is then a compare-and-set, which also holds across processes).
    pub(crate) async fn guard(
        &self,
        at: &At,
        id: &str,
    ) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        if self.versioned(at) {
            return None;
        }
        let lock = Arc::clone(self.lock_map(&self.locks).entry(at.key(id)).or_default());
        Some(lock.lock_owned().await)
    }

    pub(crate) fn forget_lock(&self, at: &At, id: &str) {
        self.lock_map(&self.locks).remove(&at.key(id));
    }

    /// One read-modify-write of Task `id` under its guard, then its waiters woken.
    pub(crate) async fn transition(
        &self,
        at: &At,
        id: &str,
        fallback: Option<&Task>,
        decide: impl FnMut(&Task) -> Result<Step, A2aError>,
    ) -> Result<Option<Task>, A2aError> {
        let guard = self.guard(at, id).await;
        let result = transition(&*at.store, id, fallback, decide).await;
        drop(guard);
        if matches!(result, Ok(Some(_))) {
            self.announce_save(at, id);
        }
        result.map_err(transition_error)
    }

    /// A receiver woken by every save of Task `id` in this process.
    pub(crate) fn listen_for_saves(&self, at: &At, id: &str) -> SaveListener {
        let key = at.key(id);
        let rx = self
            .lock_map(&self.save_listeners)
            .entry(key.clone())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe();
        SaveListener {
            rx,
            key,
            save_listeners: Arc::clone(&self.save_listeners),
        }
    }

    pub(crate) fn announce_save(&self, at: &At, id: &str) {
        let key = at.key(id);
        let mut save_listeners = self.lock_map(&self.save_listeners);
        if let Some(sender) = save_listeners.get(&key) {
            if sender.receiver_count() == 0 {
                save_listeners.remove(&key);
            } else {
                sender.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
    }

    pub(crate) fn permit(&self) -> Result<OwnedSemaphorePermit, A2aError> {
        Arc::clone(&self.background)
            .try_acquire_owned()
            .map_err(|_| {
                A2aError::new(
                    ErrorKind::ServerBusy,
                    "server busy: too many tasks in progress, retry later",
                )
            })
    }
}

/// One transition's errors as A2A errors.
fn transition_error(e: TransitionError<A2aError>) -> A2aError {
    match e {
        TransitionError::NotFound { id } => A2aError::not_found(&id),
        TransitionError::Refused(e) => e,
        TransitionError::Store(e) => e.into(),
        contended @ TransitionError::Contended { .. } => A2aError::internal(contended.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::EchoAgent;
    use crate::scope::SingleStore;
    use futures_util::future::BoxFuture;
    use std::collections::HashSet;
    use std::time::Duration;
    use toolnexus_core::{InMemoryTaskStore, StoreError, TaskStore};

    /// A store without versions: `get` and `save` only.
    struct Unversioned(InMemoryTaskStore);

    #[async_trait::async_trait]
    impl TaskStore for Unversioned {
        async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
            self.0.get(id).await
        }
        async fn save(&self, task: &Task) -> Result<(), StoreError> {
            self.0.save(task).await
        }
        fn describe(&self) -> String {
            "unversioned".into()
        }
    }

    struct NoSpawn;
    impl Spawn for NoSpawn {
        fn spawn(&self, _future: BoxFuture<'static, ()>) {}
    }

    #[tokio::test]
    async fn only_a_store_without_versions_takes_the_in_process_lock() {
        let state = ServiceState::new(
            Arc::new(SingleStore(Arc::new(InMemoryTaskStore::new()))),
            ServiceConfig {
                agent: Arc::new(EchoAgent::default()),
                max_background_tasks: 1,
                max_list_bytes: 1 << 20,
                tenants: HashSet::new(),
                poll_interval: Duration::from_millis(10),
                output_modes: vec!["text/plain".into()],
                agent_limits: Default::default(),
                finish_read_to_write_delay: Duration::ZERO,
            },
            Arc::new(NoSpawn),
        );
        let versioned = At {
            store: Arc::new(InMemoryTaskStore::new()),
            ns: "v".into(),
        };
        let unversioned = At {
            store: Arc::new(Unversioned(InMemoryTaskStore::new())),
            ns: "u".into(),
        };
        assert!(state.versioned(&versioned));
        assert!(state.guard(&versioned, "t").await.is_none());
        assert!(!state.versioned(&unversioned));
        assert!(state.guard(&unversioned, "t").await.is_some());
    }
}

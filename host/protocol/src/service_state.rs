//! The state the operations share (the stores, the agents' permits, the save listeners, the cancel
//! signals, the per-Task locks) and the one guarded read-modify-write every change of a Task
//! goes through, which also tells the push-notification sender of each save.

use crate::error::{A2aError, ErrorKind};
use crate::live_events::LiveEvents;
use crate::namespace_usage::NamespaceUsage;
use crate::open_streams::OpenStreams;
use crate::push::PushNotifier;
use crate::save_listeners::{SaveListener, SaveListeners};
use crate::scope::{At, Stores};
use crate::service_config::{ServiceConfig, Spawn};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use toolnexus_core::Task;
use toolnexus_core::transition::{Start, Step, TransitionError, transition_from};

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
    /// The streams open, per owner and per Task (`config.owner_limits` bounds them).
    pub(crate) open_streams: Arc<OpenStreams>,
    /// Each namespace's Tasks and bytes (`config.owner_limits` bounds them).
    pub(crate) usage: NamespaceUsage,
    /// The cancel signal of each agent running here.
    pub(crate) cancels: Mutex<HashMap<String, watch::Sender<bool>>>,
    /// Per-Task locks, for stores without versions, and for every store while push
    /// notifications are on (see [`ServiceState::guard`]).
    pub(crate) locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Whether the root store keeps push configs, once asked.
    root_keeps_push_configs: OnceLock<bool>,
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
            open_streams: Arc::default(),
            usage: NamespaceUsage::default(),
            cancels: Mutex::new(HashMap::new()),
            locks: Mutex::new(HashMap::new()),
            root_keeps_push_configs: OnceLock::new(),
        }
    }

    /// Whether push notifications are offered: a notifier is set and the root store keeps
    /// push configs (what the card says).
    pub(crate) async fn push_offered(&self) -> bool {
        if self.config.push.is_none() {
            return false;
        }
        if let Some(keeps) = self.root_keeps_push_configs.get() {
            return *keeps;
        }
        match self.stores.store(None).await {
            Ok(root) => *self
                .root_keeps_push_configs
                .get_or_init(|| root.supports_push_configs()),
            // Asked again next time: the root store may open then.
            Err(_) => false,
        }
    }

    /// The notifier, where push notifications are offered for the store of `at`; else
    /// PushNotificationNotSupported (-32003).
    pub(crate) async fn push_notifier(&self, at: &At) -> Result<Arc<dyn PushNotifier>, A2aError> {
        match &self.config.push {
            Some(notifier) if self.push_offered().await && at.store.supports_push_configs() => {
                Ok(Arc::clone(notifier))
            }
            _ => Err(A2aError::new(
                ErrorKind::PushNotificationNotSupported,
                "push notifications are not supported",
            )),
        }
    }

    /// The notifier to tell of saves of Tasks of `at`: set, over a store that keeps push
    /// configs (no Task there can have any otherwise).
    fn save_notifier(&self, at: &At) -> Option<&Arc<dyn PushNotifier>> {
        self.config
            .push
            .as_ref()
            .filter(|_| at.store.supports_push_configs())
    }

    /// Tells the notifier that the first save of a new Task is about to be made (so that a
    /// crash between that save and its deliveries is recovered, as for every other save).
    pub(crate) async fn creating(&self, at: &At, id: &str) {
        if let Some(notifier) = self.save_notifier(at) {
            notifier.task_saving(at.namespace(), id).await;
        }
    }

    /// Tells the notifier that the first save announced by [`creating`](Self::creating) was
    /// not made.
    pub(crate) async fn not_created(&self, at: &At, id: &str) {
        if let Some(notifier) = self.save_notifier(at) {
            notifier.task_not_saved(at.namespace(), id).await;
        }
    }

    /// Tells the notifier of the first save of a new Task (made by its creator, before anyone
    /// else knows the id, so nothing can be saved or told before it).
    pub(crate) async fn created(&self, at: &At, task: &Task) {
        if let Some(notifier) = self.save_notifier(at) {
            notifier.task_saved(at.namespace(), task).await;
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
    /// (each transition is then a compare-and-set, which also holds across processes) and no
    /// notifier is to be told of the save (whose notices must come in save order).
    pub(crate) async fn guard(
        &self,
        at: &At,
        id: &str,
    ) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        if self.versioned(at) && self.save_notifier(at).is_none() {
            return None;
        }
        let lock = Arc::clone(self.lock_map(&self.locks).entry(at.key(id)).or_default());
        Some(lock.lock_owned().await)
    }

    /// Drops the lock of a Task once nobody holds or waits for it: Tasks this process only
    /// touches (a cancel, a continued message) leave no entry behind.
    fn release_lock(&self, at: &At, id: &str) {
        let key = at.key(id);
        let mut locks = self.lock_map(&self.locks);
        if locks
            .get(&key)
            .is_some_and(|lock| Arc::strong_count(lock) == 1)
        {
            locks.remove(&key);
        }
    }

    /// At the end of a run: the Task's lock goes unless someone holds or waits for it (who
    /// then drops it after their transition), so two transitions never hold two locks of one
    /// Task.
    pub(crate) fn forget_lock(&self, at: &At, id: &str) {
        self.release_lock(at, id);
    }

    /// One read-modify-write of Task `id` under its guard, the notifier told of the save while
    /// the guard is held (so it hears of a Task's saves in their order), then its waiters woken.
    /// With `last_saved` (a run's) it starts from the version the run saved last, without a
    /// read, and keeps the version it saves there.
    pub(crate) async fn transition(
        &self,
        at: &At,
        id: &str,
        fallback: Option<&Task>,
        last_saved: Option<&LastSaved>,
        decide: impl FnMut(&Task) -> Result<Step, A2aError>,
    ) -> Result<Option<Task>, A2aError> {
        let guard = self.guard(at, id).await;
        let notifier = self.save_notifier(at);
        if let Some(notifier) = notifier {
            notifier.task_saving(at.namespace(), id).await;
        }
        let known = last_saved.and_then(LastSaved::get);
        let start = match (&known, fallback) {
            (Some((task, version)), _) => Start::Known(task, *version),
            (None, Some(task)) => Start::Fallback(task),
            (None, None) => Start::Read,
        };
        let result = transition_from(&*at.store, id, start, decide).await;
        if let (Some(last_saved), Ok(Some((task, version)))) = (last_saved, &result) {
            last_saved.set(task, *version);
        }
        let result = result.map(|saved| saved.map(|(task, _)| task));
        match (notifier, &result) {
            (Some(notifier), Ok(Some(saved))) => notifier.task_saved(at.namespace(), saved).await,
            (Some(notifier), _) => notifier.task_not_saved(at.namespace(), id).await,
            (None, _) => {}
        }
        if guard.is_some() {
            drop(guard);
            self.release_lock(at, id);
        }
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
            .map_err(|e| {
                A2aError::new(
                    ErrorKind::ServerBusy,
                    match e {
                        // Closed by a graceful stop: no new run starts.
                        tokio::sync::TryAcquireError::Closed => {
                            "server stopping: no new tasks are taken, retry later (on another \
                             replica, or once it is back)"
                        }
                        tokio::sync::TryAcquireError::NoPermits => {
                            "server busy: too many tasks in progress, retry later"
                        }
                    },
                )
            })
    }
}

/// The Task as a run saved it last, and the version that save returned: the run's next
/// transition saves on that version without reading the Task first (a lost race reads).
#[derive(Default)]
pub(crate) struct LastSaved(Mutex<Option<(Task, u64)>>);

impl LastSaved {
    fn get(&self) -> Option<(Task, u64)> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Keeps `task` as saved with `version` (`None`: a store without versions, so nothing is
    /// kept and the next transition reads).
    pub(crate) fn set(&self, task: &Task, version: Option<u64>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) =
            version.map(|version| (task.clone(), version));
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

    fn config(push: Option<Arc<dyn PushNotifier>>) -> ServiceConfig {
        ServiceConfig {
            agent: Arc::new(EchoAgent::default()),
            max_background_tasks: 1,
            max_list_bytes: 1 << 20,
            tenants: HashSet::new(),
            poll_interval: Duration::from_millis(10),
            output_modes: vec!["text/plain".into()],
            agent_limits: Default::default(),
            finish_read_to_write_delay: Duration::ZERO,
            push,
            owner_limits: Default::default(),
        }
    }

    /// A notifier that counts the saves it is told of.
    #[derive(Default)]
    struct Counting(std::sync::atomic::AtomicUsize);

    #[async_trait::async_trait]
    impl PushNotifier for Counting {
        fn check_url(&self, _url: &str) -> Result<(), String> {
            Ok(())
        }
        fn seal(
            &self,
            _namespace: Option<&str>,
            _task_id: &str,
            config: serde_json::Map<String, serde_json::Value>,
        ) -> Result<serde_json::Map<String, serde_json::Value>, String> {
            Ok(config)
        }
        fn open(
            &self,
            _namespace: Option<&str>,
            _task_id: &str,
            config: serde_json::Map<String, serde_json::Value>,
        ) -> Result<serde_json::Map<String, serde_json::Value>, String> {
            Ok(config)
        }
        async fn task_saved(&self, _namespace: Option<&str>, _task: &Task) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn with_a_notifier_every_transition_is_locked_told_and_leaves_no_lock_behind() {
        let counting = Arc::new(Counting::default());
        let store = Arc::new(InMemoryTaskStore::new());
        let state = ServiceState::new(
            Arc::new(SingleStore(Arc::clone(&store) as _)),
            config(Some(Arc::clone(&counting) as _)),
            Arc::new(NoSpawn),
        );
        let at = At {
            store,
            ns: String::new(),
        };
        assert!(state.guard(&at, "t").await.is_some());
        let task =
            Task::try_from(serde_json::json!({"id": "t", "status": {"state": "working"}})).unwrap();
        at.store.save(&task).await.unwrap();
        for _ in 0..3 {
            let saved = state
                .transition(&at, "t", None, None, |t| Ok(Step::Save(t.clone())))
                .await
                .unwrap();
            assert!(saved.is_some());
        }
        let stopped = state
            .transition(&at, "t", None, None, |_| Ok(Step::Stop))
            .await;
        assert!(stopped.unwrap().is_none());
        assert_eq!(counting.0.load(std::sync::atomic::Ordering::SeqCst), 3);
        assert!(state.lock_map(&state.locks).is_empty());
    }

    #[tokio::test]
    async fn only_a_store_without_versions_takes_the_in_process_lock() {
        let state = ServiceState::new(
            Arc::new(SingleStore(Arc::new(InMemoryTaskStore::new()))),
            config(None),
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

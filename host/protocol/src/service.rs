//! The A2A operations over the store: [`Service::call`] takes one parsed request and answers
//! a value or a [`Subscription`]; every Task read and write goes through the store of the
//! request's namespace.

use crate::agent::{Agent, Reply, Sink, Stopped, Work};
use crate::call::{Call, ListParams, SendParams};
use crate::error::{A2aError, ErrorKind};
use crate::wire::{self, Version, message_in, task_out};
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use toolnexus_core::state::{TaskState, is_terminal_state};
use toolnexus_core::transition::{Step, TransitionError, transition};
use toolnexus_core::{Expect, ListQuery, StoreError, Task, TaskPage, TaskStore, task_state};

/// Who is asking, and in which tenant: together they pick the store namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Scope {
    /// The tenant (a declared one; see [`ServiceConfig::tenants`]).
    pub tenant: Option<String>,
    /// The authenticated owner, when the server authenticates.
    pub owner: Option<String>,
}

impl Scope {
    /// The namespace of this scope: `None` for the root store, else `t.<tenant>`,
    /// `o.<owner>` or `t.<tenant>/o.<owner>`.
    pub fn namespace(&self) -> Option<String> {
        match (&self.tenant, &self.owner) {
            (None, None) => None,
            (Some(t), None) => Some(format!("t.{t}")),
            (None, Some(o)) => Some(format!("o.{o}")),
            (Some(t), Some(o)) => Some(format!("t.{t}/o.{o}")),
        }
    }
}

/// Where the stores of the namespaces come from.
#[async_trait::async_trait]
pub trait Stores: Send + Sync {
    /// The store of `namespace` (`None`: the root store).
    async fn store(&self, namespace: Option<&str>) -> Result<Arc<dyn TaskStore>, StoreError>;
}

/// One store and no namespaces: a scope with a tenant or an owner is refused.
pub struct SingleStore(pub Arc<dyn TaskStore>);

#[async_trait::async_trait]
impl Stores for SingleStore {
    async fn store(&self, namespace: Option<&str>) -> Result<Arc<dyn TaskStore>, StoreError> {
        match namespace {
            None => Ok(Arc::clone(&self.0)),
            Some(_) => Err(StoreError::Unsupported {
                store: "this server's store".into(),
                operation: "namespaces (tenants or owners)",
            }),
        }
    }
}

/// Runs a background future: the host's executor (Tokio's `spawn` in the HTTP server).
pub trait Spawn: Send + Sync {
    fn spawn(&self, future: BoxFuture<'static, ()>);
}

/// What the service does and allows.
#[derive(Clone)]
pub struct ServiceConfig {
    pub agent: Arc<dyn Agent>,
    /// The most agents running or waiting at once; past it `SendMessage` answers -32000 and
    /// saves nothing.
    pub max_background_tasks: usize,
    /// The most bytes of Task JSON in one list answer (a longer page is cut and continues).
    pub max_list_bytes: usize,
    /// The tenants requests may name; any other is refused (-32602).
    pub tenants: HashSet<String>,
    /// How often a subscription or a blocking send reads the store again when nothing in this
    /// process woke it (a change saved by another replica).
    pub poll_interval: Duration,
    /// The output modes the agent produces (`acceptedOutputModes` must admit one).
    pub output_modes: Vec<String>,
    /// Test hook: the pause of the agent's final step between its read and its write.
    pub finish_read_to_write_delay: Duration,
}

/// The answer to a call.
pub enum Answer {
    /// One value, already in the request's version.
    Value(Value),
    /// A stream of events, each already in the request's version.
    Stream(Subscription),
}

/// The A2A operations.
pub struct Service {
    inner: Arc<Inner>,
}

impl Clone for Service {
    fn clone(&self) -> Self {
        Service {
            inner: Arc::clone(&self.inner),
        }
    }
}

struct Inner {
    stores: Arc<dyn Stores>,
    config: ServiceConfig,
    spawn: Arc<dyn Spawn>,
    background: Arc<Semaphore>,
    /// Wakes subscribers and waiters of a Task (key: namespace and id) after each save here.
    wakers: Wakers,
    /// The cancel signal of each agent running here.
    cancels: Mutex<HashMap<String, watch::Sender<bool>>>,
    /// Per-Task locks, for stores without versions only (see [`Inner::guard`]).
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Whether each store (by namespace) keeps versions.
    versioned: Mutex<HashMap<String, bool>>,
}

/// An id no Task has: asked once per store to learn whether it keeps versions.
const PROBE_ID: &str = "toolnexus-server-probe:versions";

impl Service {
    pub fn new(stores: Arc<dyn Stores>, config: ServiceConfig, spawn: Arc<dyn Spawn>) -> Self {
        let background = Arc::new(Semaphore::new(config.max_background_tasks.max(1)));
        Service {
            inner: Arc::new(Inner {
                stores,
                config,
                spawn,
                background,
                wakers: Arc::new(Mutex::new(HashMap::new())),
                cancels: Mutex::new(HashMap::new()),
                locks: Mutex::new(HashMap::new()),
                versioned: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub fn config(&self) -> &ServiceConfig {
        &self.inner.config
    }

    /// Handles one call for `scope`, answering in `version`.
    pub async fn call(
        &self,
        scope: &Scope,
        call: Call,
        version: Version,
    ) -> Result<Answer, A2aError> {
        if let Some(tenant) = &scope.tenant
            && !self.inner.config.tenants.contains(tenant)
        {
            return Err(A2aError::invalid(format!(
                "unknown tenant: {:?}",
                wire::truncate(tenant, 64)
            )));
        }
        let ns = scope.namespace();
        let store = self.inner.stores.store(ns.as_deref()).await?;
        let at = At {
            store,
            ns: ns.unwrap_or_default(),
        };
        let inner = &self.inner;
        match call {
            Call::Send(params) => inner.send(&at, params, version).await,
            Call::Get { id, history_length } => {
                let task = at
                    .store
                    .get(&id)
                    .await?
                    .ok_or_else(|| A2aError::not_found(&id))?;
                Ok(Answer::Value(task_answer(
                    task.into_value(),
                    history_length,
                    version,
                )))
            }
            Call::List(params) => inner.list(&at, params, version).await.map(Answer::Value),
            Call::Cancel { id } => inner.cancel(&at, &id, version).await.map(Answer::Value),
            Call::Subscribe { id } => inner.subscribe(&at, &id, version).await.map(Answer::Stream),
            Call::Delete { id } => {
                if at.store.delete(&id).await? {
                    Ok(Answer::Value(json!({"id": id, "deleted": true})))
                } else {
                    Err(A2aError::not_found(&id))
                }
            }
            Call::PushConfig => Err(A2aError::new(
                ErrorKind::PushNotificationNotSupported,
                "push notifications are not supported",
            )),
            // The card declares `extendedAgentCard: false`: then 1.0 says UnsupportedOperation
            // (ExtendedAgentCardNotConfigured is for an agent that declares one it lacks).
            Call::ExtendedCard => Err(A2aError::new(
                ErrorKind::UnsupportedOperation,
                "this agent has no extended agent card",
            )),
        }
    }
}

/// One sender per Task with a listener in this process (a stream or a waiting send). An entry
/// goes when its last listener does ([`Waker`]'s drop), or at the next save with none left.
type Wakers = Arc<Mutex<HashMap<String, watch::Sender<u64>>>>;

/// A listener's receiver; dropping the last one for a Task removes the Task's entry, so the
/// map holds only Tasks someone listens to (a client subscribing to unknown ids leaves nothing).
struct Waker {
    rx: watch::Receiver<u64>,
    key: String,
    wakers: Wakers,
}

impl Drop for Waker {
    fn drop(&mut self) {
        let mut wakers = self.wakers.lock().unwrap_or_else(|e| e.into_inner());
        // Our own receiver still counts here.
        if wakers
            .get(&self.key)
            .is_some_and(|sender| sender.receiver_count() <= 1)
        {
            wakers.remove(&self.key);
        }
    }
}

/// A store and its namespace (the key prefix of wakers and locks).
#[derive(Clone)]
struct At {
    store: Arc<dyn TaskStore>,
    ns: String,
}

impl At {
    fn key(&self, id: &str) -> String {
        format!("{}\u{0}{id}", self.ns)
    }
}

/// The current time as RFC 3339 in UTC, to the millisecond.
pub fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// A fresh version-4 UUID, 122 random bits from the operating system.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// `task` with a new status (`state`, now, and the message if any).
pub fn with_status(task: &Task, state: &str, message: Option<Value>) -> Result<Task, A2aError> {
    let mut value = task.clone().into_value();
    let mut status = json!({"state": state, "timestamp": now()});
    if let Some(message) = message {
        status["message"] = message;
    }
    value["status"] = status;
    Task::try_from(value).map_err(A2aError::from)
}

fn agent_message(task: &Task, text: &str) -> Value {
    json!({"kind": "message", "role": "agent", "messageId": new_id(), "taskId": task.id(),
        "contextId": task.get("contextId"), "parts": [{"kind": "text", "text": text}]})
}

fn state_of(task: &Value) -> Option<TaskState> {
    task["status"]["state"].as_str().and_then(TaskState::parse)
}

/// Whether a Task in this state waits for the user (1.0's "interrupted" states).
fn is_interrupted(state: Option<TaskState>) -> bool {
    matches!(
        state,
        Some(TaskState::InputRequired | TaskState::AuthRequired)
    )
}

fn is_settled(task: &Value) -> bool {
    let state = state_of(task);
    state.is_some_and(TaskState::is_terminal) || is_interrupted(state)
}

/// The Task in `version`, its history cut to `history_length` (the last ones), in 1.0 wrapped
/// as `{"task": …}` where the caller asks for it.
fn task_answer(mut task: Value, history_length: Option<usize>, version: Version) -> Value {
    cut_history(&mut task, history_length);
    task_out(&task, version)
}

fn cut_history(task: &mut Value, history_length: Option<usize>) {
    let Some(n) = history_length else { return };
    if let Some(Value::Array(history)) = task.get_mut("history") {
        let drop = history.len().saturating_sub(n);
        history.drain(..drop);
        if history.is_empty()
            && let Some(object) = task.as_object_mut()
        {
            object.remove("history");
        }
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

impl Inner {
    async fn versioned(&self, at: &At) -> bool {
        if let Some(known) = self.lock_map(&self.versioned).get(&at.ns) {
            return *known;
        }
        let known = match at.store.get_versioned(PROBE_ID).await {
            Ok(_) => true,
            Err(StoreError::Unsupported { .. }) => false,
            // Unknown for now (the store failed): lock, and ask again next time.
            Err(_) => return false,
        };
        self.lock_map(&self.versioned).insert(at.ns.clone(), known);
        known
    }

    fn lock_map<'a, T>(&self, m: &'a Mutex<T>) -> std::sync::MutexGuard<'a, T> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The in-process lock of a Task for one transition; `None` when the store keeps versions
    /// (each transition is then a compare-and-set, which also holds across processes).
    async fn guard(&self, at: &At, id: &str) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        if self.versioned(at).await {
            return None;
        }
        let lock = Arc::clone(self.lock_map(&self.locks).entry(at.key(id)).or_default());
        Some(lock.lock_owned().await)
    }

    fn forget_lock(&self, at: &At, id: &str) {
        self.lock_map(&self.locks).remove(&at.key(id));
    }

    /// One read-modify-write of Task `id` under its guard, then its waiters woken.
    async fn transition(
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
            self.wake(at, id);
        }
        result.map_err(transition_error)
    }

    /// A receiver woken by every save of Task `id` in this process.
    fn waker(&self, at: &At, id: &str) -> Waker {
        let key = at.key(id);
        let rx = self
            .lock_map(&self.wakers)
            .entry(key.clone())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe();
        Waker {
            rx,
            key,
            wakers: Arc::clone(&self.wakers),
        }
    }

    fn wake(&self, at: &At, id: &str) {
        let key = at.key(id);
        let mut wakers = self.lock_map(&self.wakers);
        if let Some(sender) = wakers.get(&key) {
            if sender.receiver_count() == 0 {
                wakers.remove(&key);
            } else {
                sender.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
    }

    fn permit(&self) -> Result<OwnedSemaphorePermit, A2aError> {
        Arc::clone(&self.background)
            .try_acquire_owned()
            .map_err(|_| {
                A2aError::new(
                    ErrorKind::ServerBusy,
                    "server busy: too many tasks in progress, retry later",
                )
            })
    }

    fn check_output_modes(&self, accepted: &[String]) -> Result<(), A2aError> {
        if accepted.is_empty() {
            return Ok(());
        }
        let admits = |mode: &str| {
            let mode = mode
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            self.config.output_modes.iter().any(|ours| {
                mode == "*/*"
                    || mode == *ours
                    || mode
                        .strip_suffix("/*")
                        .is_some_and(|major| ours.split('/').next() == Some(major))
            })
        };
        if accepted.iter().any(|m| admits(m)) {
            Ok(())
        } else {
            Err(A2aError::new(
                ErrorKind::ContentTypeNotSupported,
                format!(
                    "none of the accepted output modes {:?} is produced by this agent ({})",
                    accepted
                        .iter()
                        .take(8)
                        .map(|m| wire::truncate(m, 64))
                        .collect::<Vec<_>>(),
                    self.config.output_modes.join(", ")
                ),
            ))
        }
    }

    async fn send(
        self: &Arc<Self>,
        at: &At,
        params: SendParams,
        version: Version,
    ) -> Result<Answer, A2aError> {
        if params.push_config {
            return Err(A2aError::new(
                ErrorKind::PushNotificationNotSupported,
                "push notifications are not supported",
            ));
        }
        self.check_output_modes(&params.accepted_output_modes)?;
        let mut message = message_in(Some(&params.message), "message")?;
        let permit = self.permit()?;
        let task = match message
            .get("taskId")
            .and_then(Value::as_str)
            .map(str::to_owned)
        {
            Some(id) => self.continue_task(at, &id, &mut message).await?,
            None => {
                let context_id = message
                    .get("contextId")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(new_id);
                let id = new_id();
                message["taskId"] = json!(id);
                message["contextId"] = json!(context_id);
                let task = Task::try_from(json!({
                    "id": id,
                    "contextId": context_id,
                    "kind": "task",
                    "status": {"state": "submitted", "timestamp": now()},
                    "history": [message.clone()],
                }))?;
                // A fresh id: created only if absent, where the store can say so.
                match at.store.save_versioned(&task, Expect::Absent).await {
                    Err(StoreError::Unsupported { .. }) => at.store.save(&task).await?,
                    other => drop(other?),
                }
                task
            }
        };
        let id = task.id().to_owned();
        // Listening before the agent starts: no save of its can be missed.
        let waker = self.waker(at, &id);
        let finished = Arc::new(AtomicBool::new(false));
        self.start_agent(at, task.clone(), message, permit, Arc::clone(&finished));
        let snapshot = task.into_value();
        if params.streaming {
            return Ok(Answer::Stream(Subscription::new(
                at.clone(),
                id,
                version,
                waker,
                snapshot,
                true,
                self.config.poll_interval,
            )));
        }
        let task = if params.return_immediately {
            snapshot
        } else {
            self.settled(at, &id, waker, &finished).await?
        };
        let answer = task_answer(task, params.history_length, version);
        Ok(Answer::Value(match version {
            Version::V1_0 => json!({"task": answer}),
            Version::V0_3 => answer,
        }))
    }

    /// The next message of Task `id`, which must wait for input: appended to its history and
    /// the Task saved `submitted` again (a compare-and-set on what was read).
    async fn continue_task(
        &self,
        at: &At,
        id: &str,
        message: &mut Value,
    ) -> Result<Task, A2aError> {
        let context = message
            .get("contextId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut stored_message = None;
        let step = |task: &Task| {
            let current = task_state(task);
            if is_terminal_state(current) {
                return Err(A2aError::new(
                    ErrorKind::UnsupportedOperation,
                    format!(
                        "task {id} is in a terminal state ({current}): it takes no more messages"
                    ),
                ));
            }
            if !is_interrupted(TaskState::parse(current)) {
                return Err(A2aError::new(
                    ErrorKind::UnsupportedOperation,
                    format!(
                        "task {id} is {current}: it takes a message only when it asks for input"
                    ),
                ));
            }
            let task_context = task.get("contextId").and_then(Value::as_str).unwrap_or("");
            if let Some(context) = &context
                && context != task_context
            {
                return Err(A2aError::invalid(format!(
                    "message.contextId {:?} is not the context of task {id}",
                    wire::truncate(context, 64)
                )));
            }
            let mut m = message.clone();
            m["contextId"] = json!(task_context);
            let mut value = with_status(task, "submitted", None)?.into_value();
            match value.get_mut("history") {
                Some(Value::Array(history)) => history.push(m.clone()),
                _ => value["history"] = json!([m.clone()]),
            }
            stored_message = Some(m);
            Ok(Step::Save(Task::try_from(value)?))
        };
        let saved = self.transition(at, id, None, step).await?;
        if let Some(m) = stored_message {
            *message = m;
        }
        saved.ok_or_else(|| A2aError::internal(format!("task {id} was not continued")))
    }

    /// Waits until Task `id` is terminal or waits for input (or its agent ended without
    /// getting it there: a store failure, logged), then answers it as stored.
    async fn settled(
        &self,
        at: &At,
        id: &str,
        mut waker: Waker,
        finished: &AtomicBool,
    ) -> Result<Value, A2aError> {
        loop {
            let done = finished.load(Ordering::Acquire);
            let task = at
                .store
                .get(id)
                .await?
                .ok_or_else(|| A2aError::not_found(id))?;
            let task = task.into_value();
            if done || is_settled(&task) {
                return Ok(task);
            }
            wait_for_change(&mut waker, self.config.poll_interval).await;
        }
    }

    fn start_agent(
        self: &Arc<Self>,
        at: &At,
        task: Task,
        message: Value,
        permit: OwnedSemaphorePermit,
        finished: Arc<AtomicBool>,
    ) {
        let inner = Arc::clone(self);
        let at = at.clone();
        let (cancel_tx, cancel_rx) = watch::channel(false);
        self.lock_map(&self.cancels)
            .insert(at.key(task.id()), cancel_tx);
        self.spawn.spawn(Box::pin(async move {
            let _permit = permit;
            let id = task.id().to_owned();
            if let Err(e) = inner.run_agent(&at, task, message, cancel_rx).await {
                tracing::warn!(target: "toolnexus::server", task_id = %id, error = %e.detail(),
                    "background transition failed");
            }
            inner.lock_map(&inner.cancels).remove(&at.key(&id));
            inner.forget_lock(&at, &id);
            finished.store(true, Ordering::Release);
            // Whatever happened, waiters read the Task once more.
            inner.wake_always(&at, &id);
        }));
    }

    fn wake_always(&self, at: &At, id: &str) {
        self.wake(at, id);
    }

    /// `submitted → working →` the agent's outcome, each saved, unless the Task was canceled
    /// meanwhile (here, or through another replica).
    async fn run_agent(
        self: &Arc<Self>,
        at: &At,
        task: Task,
        message: Value,
        cancel: watch::Receiver<bool>,
    ) -> Result<(), A2aError> {
        let id = task.id().to_owned();
        let step = |current: &Task| {
            if is_terminal_state(task_state(current)) {
                return Ok(Step::Stop);
            }
            Ok(Step::Save(with_status(current, "working", None)?))
        };
        let Some(working) = self.transition(at, &id, Some(&task), step).await? else {
            return Ok(());
        };
        let artifact_id = new_id();
        let sink = Arc::new(ReplySink {
            inner: Arc::clone(self),
            at: at.clone(),
            id: id.clone(),
            artifact_id: artifact_id.clone(),
        });
        let mut work = Work {
            task: working.clone(),
            message,
            cancel,
            sink,
        };
        let outcome = self.config.agent.run(&mut work).await;
        let stage = self.config.finish_read_to_write_delay;
        let step = |current: &Task| {
            if is_terminal_state(task_state(current)) {
                return Ok(Step::Stop);
            }
            if !stage.is_zero() {
                // The test hook: blocks this worker thread, which only tests ever ask for.
                std::thread::sleep(stage);
            }
            let done = match &outcome {
                Ok(Reply::Completed(text)) => {
                    let mut value = with_status(current, "completed", None)?.into_value();
                    if !text.is_empty() || !has_artifact(&value, &artifact_id) {
                        append_reply(&mut value, &artifact_id, text);
                    }
                    Task::try_from(value)?
                }
                Ok(Reply::InputRequired(question)) => with_status(
                    current,
                    "input-required",
                    Some(agent_message(current, question)),
                )?,
                Err(reason) => {
                    with_status(current, "failed", Some(agent_message(current, reason)))?
                }
            };
            Ok(Step::Save(done))
        };
        self.transition(at, &id, Some(&working), step)
            .await
            .map(drop)
    }

    async fn cancel(&self, at: &At, id: &str, version: Version) -> Result<Value, A2aError> {
        let step = |task: &Task| {
            let current = task_state(task);
            if is_terminal_state(current) {
                return Err(A2aError::new(
                    ErrorKind::TaskNotCancelable,
                    format!("task cannot be canceled: it is {current}"),
                ));
            }
            Ok(Step::Save(with_status(task, "canceled", None)?))
        };
        let result = self.transition(at, id, None, step).await;
        if result.is_ok()
            && let Some(signal) = self.lock_map(&self.cancels).get(&at.key(id))
        {
            signal.send_replace(true);
        }
        let canceled =
            result?.ok_or_else(|| A2aError::internal(format!("task {id} was not canceled")))?;
        Ok(task_out(&canceled.into_value(), version))
    }

    async fn subscribe(
        &self,
        at: &At,
        id: &str,
        version: Version,
    ) -> Result<Subscription, A2aError> {
        let waker = self.waker(at, id);
        let task = at
            .store
            .get(id)
            .await?
            .ok_or_else(|| A2aError::not_found(id))?;
        let state = task_state(&task);
        if is_terminal_state(state) {
            return Err(A2aError::new(
                ErrorKind::UnsupportedOperation,
                format!(
                    "task {id} is in a terminal state ({state}): there is nothing to subscribe to"
                ),
            ));
        }
        Ok(Subscription::new(
            at.clone(),
            id.to_owned(),
            version,
            waker,
            task.into_value(),
            false,
            self.config.poll_interval,
        ))
    }

    async fn list(&self, at: &At, params: ListParams, version: Version) -> Result<Value, A2aError> {
        let query = ListQuery {
            context_id: params.context_id.clone(),
            state: params.state.map(|s| s.v03_name().to_owned()),
            status_timestamp_after: params.status_timestamp_after,
            page_size: params.page_size,
            page_token: params.page_token.clone(),
        };
        let page = self.capped_page(at, query).await?;
        let mut tasks = Vec::with_capacity(page.tasks.len());
        for task in page.tasks {
            let mut value = task.into_value();
            if !params.include_artifacts
                && let Some(object) = value.as_object_mut()
            {
                object.remove("artifacts");
            }
            tasks.push(task_answer(value, params.history_length, version));
        }
        let mut out = Map::new();
        out.insert("tasks".into(), Value::Array(tasks));
        out.insert(
            "nextPageToken".into(),
            json!(page.next_page_token.unwrap_or_default()),
        );
        out.insert("pageSize".into(), json!(params.page_size));
        if let Some(total) = page.total_size {
            out.insert("totalSize".into(), json!(total));
        }
        Ok(Value::Object(out))
    }

    /// The store's page for `query`, cut to what fits in `max_list_bytes`. A page token is the
    /// store's own (opaque here), so a page is cut by asking the store again for only the Tasks
    /// that fit, from the same place.
    async fn capped_page(&self, at: &At, mut query: ListQuery) -> Result<TaskPage, A2aError> {
        let max = self.config.max_list_bytes;
        loop {
            let page = at.store.list(&query).await?;
            let fit = fitting(&page.tasks, max);
            if fit == page.tasks.len() {
                return Ok(page);
            }
            let asked = query.limit();
            if fit >= asked {
                return Err(A2aError::internal(format!(
                    "the store answered {} Tasks to a list of at most {asked}",
                    page.tasks.len()
                )));
            }
            query.page_size = fit;
        }
    }
}

/// How many of `tasks`, from the first, fit in `max` bytes of JSON (commas included); at least
/// one, so that paging always moves on.
fn fitting(tasks: &[Task], max: usize) -> usize {
    let mut total = 0usize;
    for (i, task) in tasks.iter().enumerate() {
        total = total.saturating_add(task.as_json().len() + usize::from(i > 0));
        if total > max {
            return i.max(1);
        }
    }
    tasks.len()
}

fn has_artifact(task: &Value, artifact_id: &str) -> bool {
    task["artifacts"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x["artifactId"] == artifact_id))
}

/// Appends a text part to the reply artifact `artifact_id` (created if missing).
fn append_reply(task: &mut Value, artifact_id: &str, text: &str) {
    let part = json!({"kind": "text", "text": text});
    if !task["artifacts"].is_array() {
        task["artifacts"] = json!([]);
    }
    let Some(artifacts) = task["artifacts"].as_array_mut() else {
        return;
    };
    match artifacts
        .iter_mut()
        .find(|a| a["artifactId"] == artifact_id)
    {
        Some(artifact) => match artifact["parts"].as_array_mut() {
            Some(parts) => parts.push(part),
            None => artifact["parts"] = json!([part]),
        },
        None => {
            artifacts.push(json!({"artifactId": artifact_id, "name": "reply", "parts": [part]}))
        }
    }
}

/// Saves an agent's partial output: each piece appended to its reply artifact.
struct ReplySink {
    inner: Arc<Inner>,
    at: At,
    id: String,
    artifact_id: String,
}

#[async_trait::async_trait]
impl Sink for ReplySink {
    async fn append_text(&self, text: &str) -> Result<(), Stopped> {
        let step = |current: &Task| {
            if is_terminal_state(task_state(current)) {
                return Err(A2aError::new(ErrorKind::UnsupportedOperation, "stopped"));
            }
            let mut value = current.clone().into_value();
            append_reply(&mut value, &self.artifact_id, text);
            Ok(Step::Save(Task::try_from(value)?))
        };
        match self.inner.transition(&self.at, &self.id, None, step).await {
            Ok(_) => Ok(()),
            Err(e) => {
                if e.kind != ErrorKind::UnsupportedOperation {
                    tracing::warn!(target: "toolnexus::server", task_id = %self.id,
                        error = %e.detail(), "saving an agent's partial reply failed");
                }
                Err(Stopped)
            }
        }
    }
}

async fn wait_for_change(waker: &mut Waker, poll: Duration) {
    tokio::select! {
        changed = waker.rx.changed() => {
            if changed.is_err() {
                tokio::time::sleep(poll).await;
            }
        }
        () = tokio::time::sleep(poll) => {}
    }
}

/// The events of one Task, each already in the request's version: the Task as it was first,
/// then what changed in the store (status and artifact updates), read after every save in this
/// process and at the poll interval (saves by other replicas). It ends after a terminal state
/// (and, for a streaming send, when the Task waits for input), or when the Task is deleted.
pub struct Subscription {
    at: At,
    id: String,
    version: Version,
    waker: Waker,
    last: Value,
    pending: VecDeque<Value>,
    done: bool,
    end_on_interrupt: bool,
    poll: Duration,
}

impl Subscription {
    fn new(
        at: At,
        id: String,
        version: Version,
        waker: Waker,
        snapshot: Value,
        end_on_interrupt: bool,
        poll: Duration,
    ) -> Self {
        let mut pending = VecDeque::new();
        pending.push_back(match version {
            Version::V1_0 => json!({"task": task_out(&snapshot, version)}),
            Version::V0_3 => task_out(&snapshot, version),
        });
        Subscription {
            at,
            id,
            version,
            waker,
            done: is_terminal(&snapshot),
            last: snapshot,
            pending,
            end_on_interrupt,
            poll,
        }
    }

    /// The Task's id.
    pub fn task_id(&self) -> &str {
        &self.id
    }

    /// The next event, `None` after the last; an error (the store failing) ends the stream.
    pub async fn next(&mut self) -> Option<Result<Value, A2aError>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            if self.done {
                return None;
            }
            wait_for_change(&mut self.waker, self.poll).await;
            let current = match self.at.store.get(&self.id).await {
                Ok(Some(task)) => task.into_value(),
                Ok(None) => {
                    self.done = true;
                    continue;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e.into()));
                }
            };
            let was_interrupted = is_interrupted(state_of(&self.last));
            self.diff(&current);
            let interrupted = is_interrupted(state_of(&current));
            self.done = is_terminal(&current)
                || (interrupted && (self.end_on_interrupt || !was_interrupted));
            self.last = current;
        }
    }

    /// Queues the events that take `self.last` to `current`: artifact updates first, then the
    /// status.
    fn diff(&mut self, current: &Value) {
        let task_id = json!(self.id);
        let context_id = current["contextId"].clone();
        let terminal = is_terminal(current);
        let before: Vec<&Value> = self.last["artifacts"]
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        for artifact in current["artifacts"].as_array().into_iter().flatten() {
            let old = before
                .iter()
                .find(|a| a["artifactId"] == artifact["artifactId"]);
            let (sent, append) = match old {
                Some(old) if *old == artifact => continue,
                Some(old) => {
                    let old_parts = old["parts"].as_array().map(Vec::as_slice).unwrap_or(&[]);
                    let new_parts = artifact["parts"]
                        .as_array()
                        .map(Vec::as_slice)
                        .unwrap_or(&[]);
                    if new_parts.len() > old_parts.len() && new_parts.starts_with(old_parts) && {
                        let mut a = (*old).clone();
                        a["parts"] = artifact["parts"].clone();
                        a == *artifact
                    } {
                        let mut chunk = artifact.clone();
                        chunk["parts"] = Value::Array(new_parts[old_parts.len()..].to_vec());
                        (chunk, true)
                    } else {
                        (artifact.clone(), false)
                    }
                }
                None => (artifact.clone(), false),
            };
            let artifact = wire::artifact_out(&sent, self.version);
            self.pending.push_back(match self.version {
                Version::V1_0 => {
                    json!({"artifactUpdate": {"taskId": task_id, "contextId": context_id,
                    "artifact": artifact, "append": append, "lastChunk": terminal}})
                }
                Version::V0_3 => {
                    json!({"kind": "artifact-update", "taskId": task_id, "contextId": context_id,
                    "artifact": artifact, "append": append, "lastChunk": terminal})
                }
            });
        }
        if current["status"] != self.last["status"] {
            let status = wire::status_out(&current["status"], self.version);
            let final_ = terminal || is_interrupted(state_of(current));
            self.pending.push_back(match self.version {
                Version::V1_0 => {
                    json!({"statusUpdate": {"taskId": task_id, "contextId": context_id,
                    "status": status}})
                }
                Version::V0_3 => {
                    json!({"kind": "status-update", "taskId": task_id, "contextId": context_id,
                    "status": status, "final": final_})
                }
            });
        }
    }
}

fn is_terminal(task: &Value) -> bool {
    state_of(task).is_some_and(TaskState::is_terminal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::EchoAgent;
    use toolnexus_core::InMemoryTaskStore;

    struct NoSpawn;
    impl Spawn for NoSpawn {
        fn spawn(&self, _future: BoxFuture<'static, ()>) {}
    }

    fn service() -> Service {
        let store: Arc<dyn TaskStore> = Arc::new(InMemoryTaskStore::new());
        Service::new(
            Arc::new(SingleStore(store)),
            ServiceConfig {
                agent: Arc::new(EchoAgent::default()),
                max_background_tasks: 8,
                max_list_bytes: 1 << 20,
                tenants: HashSet::new(),
                poll_interval: Duration::from_millis(10),
                output_modes: vec!["text/plain".into()],
                finish_read_to_write_delay: Duration::ZERO,
            },
            Arc::new(NoSpawn),
        )
    }

    #[tokio::test]
    async fn listeners_leave_nothing_behind() {
        let service = service();
        let scope = Scope::default();
        for i in 0..1000 {
            let call = Call::Subscribe {
                id: format!("no-such-task-{i}"),
            };
            let refused = service.call(&scope, call, Version::V1_0).await;
            assert_eq!(refused.err().map(|e| e.code()), Some(-32001));
        }
        assert_eq!(service.inner.wakers.lock().unwrap().len(), 0);
        // A stream that is dropped before its Task changes leaves nothing either.
        let sent = service
            .call(
                &scope,
                Call::Send(SendParams {
                    message: json!({"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "x"}]}),
                    streaming: true,
                    return_immediately: false,
                    history_length: None,
                    accepted_output_modes: Vec::new(),
                    push_config: false,
                }),
                Version::V1_0,
            )
            .await;
        let Ok(Answer::Stream(mut stream)) = sent else {
            panic!("a stream")
        };
        assert!(stream.next().await.is_some());
        assert_eq!(service.inner.wakers.lock().unwrap().len(), 1);
        drop(stream);
        assert_eq!(service.inner.wakers.lock().unwrap().len(), 0);
    }
}

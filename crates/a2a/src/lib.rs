//! An A2A JSON-RPC server whose every Task read and write goes through a [`TaskStore`].
//!
//! [`serve`] answers the agent card at `/.well-known/agent-card.json` and JSON-RPC 2.0 at `/`:
//! `SendMessage`, `GetTask`, `CancelTask`, `ListTasks`, `DeleteTask` (and the older names
//! `message/send`, `tasks/get`, `tasks/cancel`, `tasks/list`, `tasks/delete`). `SendMessage`
//! saves the new Task as `submitted`, answers with it, then runs the [`Agent`] in the background,
//! saving `working` and then `completed` (with an artifact) or `failed` — each through the store,
//! so a restarted server over the same store finds every acknowledged Task in its last state.
//!
//! It knows no store: give it any `Arc<dyn TaskStore>` (from `toolnexus::resolve_store`, or
//! your own). State changes go through
//! [`toolnexus_core::transition`](mod@toolnexus_core::transition), so a cancel racing the
//! agent's completion is never lost, within one process or across replicas sharing a store
//! that can compare-and-set.
//!
//! At startup, before it accepts anything, [`serve`] resolves the Tasks a crashed run left
//! `submitted` or `working` ([`ServerConfig::recovery`]: marked `failed` with a reason by
//! default), and with [`ServerConfig::retain`] it deletes terminal Tasks past that age in the
//! background; both go through the store's `list` and `delete` ([`maintenance`]).
//!
//! [`serve`] also protects itself: each limit is a field of [`ServerConfig`] (defaults there).
//! A request head must arrive within the header timeout, its body within the body timeout,
//! and a keep-alive connection on which nothing moves is closed after the idle timeout; at most
//! `max_connections` connections are served at once; at most `max_background_tasks` agents run
//! or wait in the background (past that, `SendMessage` answers [`codes::SERVER_BUSY`] and saves
//! nothing); a list answer carries at most `max_list_bytes` of Tasks (a longer page is cut and
//! continues with its `nextPageToken`). Every answer has an `x-request-id` header; an internal
//! error (a store failing, say) reaches the client only as `internal error (request id …)`,
//! while its details are logged (target `toolnexus::server`, field `request_id`).
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolnexus_a2a::{ServerConfig, serve};
//! use toolnexus_core::InMemoryTaskStore;
//! # async fn demo() -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! serve(listener, Arc::new(InMemoryTaskStore::new()), ServerConfig::default()).await
//! # }
//! ```

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Extension, FromRequest, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use toolnexus_core::state::is_terminal_state;
use toolnexus_core::transition::{Step, TransitionError, transition};
use toolnexus_core::{
    Expect, ListQuery, StoreError, Task, TaskPage, TaskStore, Timestamp, task_state,
};

mod conn;
pub mod maintenance;

pub use maintenance::Recovery;

/// JSON-RPC and A2A error codes.
pub mod codes {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    pub const TASK_NOT_FOUND: i64 = -32001;
    pub const TASK_NOT_CANCELABLE: i64 = -32002;
    pub const UNSUPPORTED_OPERATION: i64 = -32004;
    /// The server has as many agents running or waiting in the background as it allows
    /// ([`crate::ServerConfig::max_background_tasks`]); nothing was saved, retry later.
    pub const SERVER_BUSY: i64 = -32000;
}

/// The response header that carries the id of every request, also named in internal-error
/// messages and in the log.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Default of [`ServerConfig::header_read_timeout`].
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default of [`ServerConfig::body_read_timeout`].
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Default of [`ServerConfig::idle_timeout`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default of [`ServerConfig::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default of [`ServerConfig::max_background_tasks`].
pub const DEFAULT_MAX_BACKGROUND_TASKS: usize = 1024;
/// Default of [`ServerConfig::max_list_bytes`].
pub const DEFAULT_MAX_LIST_BYTES: usize = 16 << 20;
/// Default of [`ServerConfig::max_body_bytes`].
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;

/// The agent logic a runtime plugs in: given the Task (as saved, `working`) and the user's
/// message, produce the reply text, or an error message that fails the Task.
#[async_trait::async_trait]
pub trait Agent: Send + Sync {
    async fn run(&self, task: &Task, message: &Value) -> Result<String, String>;

    /// Whether this agent picks up, by itself, the Tasks a previous run of the server left
    /// `submitted` or `working` (after a crash, say). If it says so, the startup recovery
    /// ([`ServerConfig::recovery`]) leaves those Tasks alone for it (and logs that it did);
    /// otherwise [`Recovery::FailInterrupted`] marks them `failed`.
    ///
    /// The server itself never resumes a Task: an agent that answers `true` must find and
    /// finish them on its own. The default, and the built-in [`EchoAgent`], answer `false`:
    /// the echo agent does not implement resuming.
    fn can_resume(&self) -> bool {
        false
    }
}

/// The built-in agent: replies with the text parts of the message, after an optional delay.
#[derive(Debug, Clone, Default)]
pub struct EchoAgent {
    /// How long to "think" before answering (for demos and restart tests).
    pub delay: Duration,
}

#[async_trait::async_trait]
impl Agent for EchoAgent {
    async fn run(&self, _task: &Task, message: &Value) -> Result<String, String> {
        tokio::time::sleep(self.delay).await;
        let text: Vec<&str> = message["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["text"].as_str())
            .collect();
        Ok(text.join("\n"))
    }
}

/// How the server presents itself, what it accepts, and its limits.
///
/// Build it with `..Default::default()` so new fields keep their defaults. The timeouts and
/// `max_connections` apply to [`serve`]; a [`router`] embedded in an application of your own
/// gets the body timeout, the background and list limits and the request ids, while the
/// connection limits are then the host application's business.
#[derive(Clone)]
pub struct ServerConfig {
    /// The agent's name on its card.
    pub name: String,
    /// The agent's description on its card.
    pub description: String,
    /// The largest request body accepted, in bytes (default 1 MiB); larger ones get HTTP 413.
    pub max_body_bytes: usize,
    /// The agent logic.
    pub agent: Arc<dyn Agent>,
    /// How long a client has to send a whole request head (request line and headers), counted
    /// from the connection's accept, or on a kept-alive connection from the first byte of the
    /// next request (default 10 s). Past it the connection is closed without an answer.
    pub header_read_timeout: Duration,
    /// How long a client has to send a request's whole body once its head is in (default
    /// 30 s). Past it the request gets HTTP 408 and the connection is closed.
    pub body_read_timeout: Duration,
    /// How long a connection may sit with nothing moving on it while the server waits for the
    /// client, to take an answer or to start its next request (default 60 s); then it is
    /// closed.
    pub idle_timeout: Duration,
    /// The most connections served at once (default 1024; 0 counts as 1). Past it the server
    /// stops accepting until one closes: further clients wait in the operating system's listen
    /// backlog (their connect may succeed there), unserved but not refused.
    pub max_connections: usize,
    /// The most agents running or waiting to run in the background, one per `SendMessage`
    /// until its Task is finished (default 1024; 0 counts as 1). When that many are in
    /// progress, `SendMessage` answers [`codes::SERVER_BUSY`] ("server busy: too many tasks in
    /// progress, retry later") and saves nothing.
    pub max_background_tasks: usize,
    /// The most bytes of Task JSON in one `ListTasks` answer (default 16 MiB). A page that would
    /// be larger is cut before the Task that goes over, with a `nextPageToken` to continue
    /// from; a page always has at least one Task, so a single Task larger than this comes on a
    /// page of its own.
    pub max_list_bytes: usize,
    /// Test hook, not for production: how long the background agent's final step waits between
    /// reading the Task and saving its outcome, so a test can land a cancel from another
    /// process exactly there. Zero (the default) means no wait.
    #[doc(hidden)]
    pub finish_read_to_write_delay: Duration,
    /// What [`serve`] does, before it accepts anything, with Tasks a previous run left
    /// `submitted` or `working` (default [`Recovery::FailInterrupted`]: mark those whose status
    /// timestamp is before this start, or that have none, `failed` with the status message
    /// [`maintenance::INTERRUPTED_MESSAGE`]). Over a store shared by several live replicas use
    /// [`Recovery::Off`]: one replica's restart would fail the Tasks the others are working
    /// on. A [`router`] embedded elsewhere runs nothing by itself: call
    /// [`maintenance::recover_at_startup`].
    pub recovery: Recovery,
    /// Keep terminal Tasks this long (by status timestamp), then delete them: [`serve`] runs
    /// [`maintenance::retention`] in the background, at startup and then every tenth of this
    /// (between 1 s and 1 h). `None` (the default) keeps every Task. Tasks without a status
    /// timestamp are never deleted.
    pub retain: Option<Duration>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            name: "toolnexus echo agent".into(),
            description: "Echoes the text it is sent; every Task lives in a toolnexus task store."
                .into(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            agent: Arc::new(EchoAgent::default()),
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_background_tasks: DEFAULT_MAX_BACKGROUND_TASKS,
            max_list_bytes: DEFAULT_MAX_LIST_BYTES,
            finish_read_to_write_delay: Duration::ZERO,
            recovery: Recovery::default(),
            retain: None,
        }
    }
}

struct AppState {
    store: Arc<dyn TaskStore>,
    config: ServerConfig,
    url: String,
    /// One lock per Task id with a transition in flight, so a cancel and the background agent
    /// never interleave their read-modify-write in this process. Only for stores without
    /// versions: over a store with them, each transition is a compare-and-set on the version
    /// it read, which also holds against other processes.
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Whether the store keeps versions (found out on first use).
    versioned: tokio::sync::OnceCell<bool>,
    /// One permit per background agent, running or waiting ([`ServerConfig::max_background_tasks`]).
    background: Arc<Semaphore>,
}

/// Serves A2A on `listener` until the process ends (or the future is dropped, which stops
/// accepting), with every Task in `store`, within the limits of `config`.
///
/// Before it accepts a connection it runs the startup recovery ([`ServerConfig::recovery`]);
/// clients that connect meanwhile wait in the listen backlog. With [`ServerConfig::retain`]
/// it also runs retention in the background until the future ends.
///
/// Errors only if the listener's address cannot be read. Accept errors (such as running out
/// of file descriptors) are logged and retried after a short pause.
pub async fn serve(
    listener: tokio::net::TcpListener,
    store: Arc<dyn TaskStore>,
    config: ServerConfig,
) -> std::io::Result<()> {
    let started = maintenance::now();
    let url = format!("http://{}/", listener.local_addr()?);
    let limits = conn::Limits {
        header_read_timeout: config.header_read_timeout,
        idle_timeout: config.idle_timeout,
        max_connections: config.max_connections,
    };
    maintenance::recover_at_startup(&*store, &config, started).await;
    let _retention = config.retain.map(|retain| {
        AbortOnDrop(tokio::spawn(maintenance::retention(
            Arc::clone(&store),
            retain,
        )))
    });
    conn::run(listener, router(store, config, url), limits).await
}

/// A background task that ends with its owner.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The routes, for embedding in a larger axum application. `url` is the JSON-RPC endpoint as
/// clients should see it (it goes on the agent card).
pub fn router(store: Arc<dyn TaskStore>, config: ServerConfig, url: String) -> Router {
    let limit = config.max_body_bytes;
    let background = Arc::new(Semaphore::new(config.max_background_tasks.max(1)));
    let state = Arc::new(AppState {
        store,
        config,
        url,
        locks: Mutex::new(HashMap::new()),
        versioned: tokio::sync::OnceCell::new(),
        background,
    });
    Router::new()
        .route("/.well-known/agent-card.json", get(agent_card))
        .route("/", post(json_rpc))
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn(with_request_id))
        .with_state(state)
}

/// The id of one HTTP request: in its answer's `x-request-id` header, in the message of an
/// internal error, and in the log.
#[derive(Debug, Clone)]
struct RequestId(Arc<str>);

/// Gives every request a fresh id (a version-4 UUID, never one the client sent).
async fn with_request_id(mut request: Request, next: Next) -> Response {
    let id = RequestId(new_id().into());
    request.extensions_mut().insert(id.clone());
    let mut response = next.run(request).await;
    if let Ok(value) = HeaderValue::from_str(&id.0) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    response
}

async fn agent_card(State(state): State<Arc<AppState>>) -> axum::Json<Value> {
    axum::Json(json!({
        "name": state.config.name,
        "description": state.config.description,
        "url": state.url,
        "version": env!("CARGO_PKG_VERSION"),
        "protocolVersion": "0.3.0",
        "preferredTransport": "JSONRPC",
        "capabilities": {"streaming": false, "pushNotifications": false, "stateTransitionHistory": false},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "Echo", "description": "Replies with the text it is sent.", "tags": ["echo"]}],
    }))
}

/// A JSON-RPC error. `message` goes to the client; `detail`, when there is one, only to the
/// log: the error is then internal and the client sees `internal error (request id …)`.
struct RpcError {
    code: i64,
    message: String,
    detail: Option<String>,
}

impl RpcError {
    /// An error that is the caller's, whose message is safe to show.
    fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            detail: None,
        }
    }

    /// An internal error: `detail` (paths, store and component details) goes to the log only.
    fn internal(detail: impl Into<String>) -> Self {
        RpcError {
            code: codes::INTERNAL_ERROR,
            message: "internal error".into(),
            detail: Some(detail.into()),
        }
    }

    /// The whole error, for the log.
    fn detail(&self) -> &str {
        self.detail.as_deref().unwrap_or(&self.message)
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.detail())
    }
}

/// Store errors that are the caller's keep a message that names nothing of the store (no
/// selector, path, component or database); every other one is internal.
impl From<StoreError> for RpcError {
    fn from(err: StoreError) -> Self {
        match &err {
            StoreError::Unsupported { operation, .. } => RpcError::new(
                codes::UNSUPPORTED_OPERATION,
                format!("the store does not support {operation}"),
            ),
            // About the id or Task the caller sent (the Task's own id and sizes only).
            StoreError::InvalidId { .. }
            | StoreError::InvalidTask(_)
            | StoreError::TaskTooLarge { .. } => {
                RpcError::new(codes::INVALID_PARAMS, err.to_string())
            }
            // A store's policy refusing the request: its reason is meant for the caller; which
            // store (a selector, a component file) is not.
            StoreError::Rejected { reason, .. } => RpcError::new(
                codes::INVALID_PARAMS,
                format!("the store refused the request: {reason}"),
            ),
            // A page token the store did not make: the caller's.
            StoreError::InvalidQuery { reason } => {
                RpcError::new(codes::INVALID_PARAMS, reason.clone())
            }
            _ => RpcError::internal(err.to_string()),
        }
    }
}

async fn json_rpc(
    State(state): State<Arc<AppState>>,
    Extension(request_id): Extension<RequestId>,
    request: Request,
) -> Response {
    let read = tokio::time::timeout(
        state.config.body_read_timeout,
        Bytes::from_request(request, &state),
    );
    let body = match read.await {
        Ok(Ok(body)) => body,
        // Too large (413) or broken off (400), as axum answers them.
        Ok(Err(rejection)) => return rejection.into_response(),
        Err(_elapsed) => {
            tracing::debug!(target: "toolnexus::server", request_id = %request_id.0,
                "request body not received within the body timeout");
            return (
                StatusCode::REQUEST_TIMEOUT,
                [(header::CONNECTION, "close")],
                "request body not received in time",
            )
                .into_response();
        }
    };
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return reply(
                &request_id,
                "",
                Value::Null,
                Err(RpcError::new(
                    codes::PARSE_ERROR,
                    format!("parse error: {e}"),
                )),
            );
        }
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let valid_id = matches!(id, Value::Null | Value::String(_) | Value::Number(_));
    let method = request.get("method").and_then(Value::as_str);
    let (Some(method), true, Some("2.0")) = (
        method,
        valid_id,
        request.get("jsonrpc").and_then(Value::as_str),
    ) else {
        let id = if valid_id { id } else { Value::Null };
        return reply(
            &request_id,
            "",
            id,
            Err(RpcError::new(
                codes::INVALID_REQUEST,
                "not a JSON-RPC 2.0 request",
            )),
        );
    };
    let params = request.get("params").cloned().unwrap_or(Value::Null);
    let result = match method {
        "SendMessage" | "message/send" => send_message(&state, &request_id, &params)
            .await
            .map(|v| v.to_string()),
        "GetTask" | "tasks/get" => get_task(&state, &params).await.map(|v| v.to_string()),
        "CancelTask" | "tasks/cancel" => cancel_task(&state, &params).await.map(|v| v.to_string()),
        "ListTasks" | "tasks/list" => list_tasks(&state, &params).await,
        "DeleteTask" | "tasks/delete" => delete_task(&state, &params).await.map(|v| v.to_string()),
        other => Err(RpcError::new(
            codes::METHOD_NOT_FOUND,
            format!("method not found: {other}"),
        )),
    };
    reply(&request_id, method, id, result)
}

/// The JSON-RPC answer, `result` being JSON text already. An internal error is logged with the
/// request id, and answered with that id only.
fn reply(
    request_id: &RequestId,
    method: &str,
    id: Value,
    result: Result<String, RpcError>,
) -> Response {
    let body = match result {
        Ok(result) => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#),
        Err(e) => {
            let message = if e.detail.is_some() {
                tracing::error!(target: "toolnexus::server", request_id = %request_id.0, method,
                    error = %e.detail(), "request failed");
                format!("{} (request id {})", e.message, request_id.0)
            } else {
                e.message
            };
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": e.code, "message": message}})
                .to_string()
        }
    };
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn param_str<'a>(params: &'a Value, key: &str) -> Result<&'a str, RpcError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            RpcError::new(
                codes::INVALID_PARAMS,
                format!("params.{key} must be a non-empty string"),
            )
        })
}

/// The current time as RFC 3339 in UTC, to the millisecond.
fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// A fresh version-4 UUID, 122 random bits from the operating system.
fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn with_status(task: &Task, state: &str, message: Option<Value>) -> Result<Task, RpcError> {
    let mut value = task.clone().into_value();
    let mut status = json!({"state": state, "timestamp": now()});
    if let Some(message) = message {
        status["message"] = message;
    }
    value["status"] = status;
    Task::try_from(value).map_err(RpcError::from)
}

/// An id no Task has (ids the server makes are UUIDs): asked once to learn whether the store
/// keeps versions.
const PROBE_ID: &str = "toolnexus-server-probe:versions";

impl AppState {
    /// Whether the store answers versions: then transitions need no lock in this process.
    async fn versioned(&self) -> bool {
        if let Some(known) = self.versioned.get() {
            return *known;
        }
        match self.store.get_versioned(PROBE_ID).await {
            Ok(_) => *self.versioned.get_or_init(|| async { true }).await,
            Err(StoreError::Unsupported { .. }) => {
                *self.versioned.get_or_init(|| async { false }).await
            }
            // Unknown for now (the store failed): lock, and ask again next time.
            Err(_) => false,
        }
    }

    /// The in-process lock of Task `id`, held for a transition; `None` when the store keeps
    /// versions and needs none.
    async fn guard(&self, id: &str) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        if self.versioned().await {
            return None;
        }
        Some(self.lock_for(id).lock_owned().await)
    }

    fn lock_for(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(locks.entry(id.to_owned()).or_default())
    }

    fn forget_lock(&self, id: &str) {
        self.locks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }
}

async fn send_message(
    state: &Arc<AppState>,
    request_id: &RequestId,
    params: &Value,
) -> Result<Value, RpcError> {
    let invalid = |m: &str| RpcError::new(codes::INVALID_PARAMS, m.to_owned());
    let message = params
        .get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| invalid("params.message must be an object"))?;
    let role = message
        .get("role")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("params.message.role must be a string"))?;
    let parts = message
        .get("parts")
        .and_then(Value::as_array)
        .filter(|p| !p.is_empty());
    let parts = parts.ok_or_else(|| invalid("params.message.parts must be a non-empty array"))?;
    if !parts.iter().all(Value::is_object) {
        return Err(invalid(
            "every part of params.message.parts must be an object",
        ));
    }
    let mut message = message.clone();
    if message.get("messageId").and_then(Value::as_str).is_none() {
        message["messageId"] = json!(new_id());
    }
    message["kind"] = json!("message");
    let _ = role;
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
    // Room for its agent first: a Task saved without one would stay `submitted` for good.
    let permit = background_permit(state)?;
    // A fresh id: created only if absent, where the store can say so.
    match state.store.save_versioned(&task, Expect::Absent).await {
        Err(StoreError::Unsupported { .. }) => state.store.save(&task).await?,
        other => drop(other?),
    }
    let background = Arc::clone(state);
    let submitted = task.clone();
    let request_id = request_id.clone();
    tokio::spawn(async move {
        let _permit: OwnedSemaphorePermit = permit;
        let id = submitted.id().to_owned();
        if let Err(e) = run_agent(&background, submitted, message).await {
            tracing::warn!(target: "toolnexus::server", request_id = %request_id.0, task_id = %id,
                error = %e.detail(), "background transition failed");
        }
    });
    Ok(task.into_value())
}

/// A place for one more background agent, or [`codes::SERVER_BUSY`].
fn background_permit(state: &Arc<AppState>) -> Result<OwnedSemaphorePermit, RpcError> {
    Arc::clone(&state.background)
        .try_acquire_owned()
        .map_err(|_| {
            RpcError::new(
                codes::SERVER_BUSY,
                "server busy: too many tasks in progress, retry later",
            )
        })
}

/// One read-modify-write of the Task `id` through the store ([`transition`]), with its errors as
/// JSON-RPC errors. The caller holds [`AppState::guard`], which is what keeps stores without
/// compare-and-set safe in this process.
async fn transition_rpc(
    state: &AppState,
    id: &str,
    fallback: Option<&Task>,
    decide: impl FnMut(&Task) -> Result<Step, RpcError>,
) -> Result<Option<Task>, RpcError> {
    transition(&*state.store, id, fallback, decide)
        .await
        .map_err(|e| match e {
            TransitionError::NotFound { id } => {
                RpcError::new(codes::TASK_NOT_FOUND, format!("task not found: {id}"))
            }
            TransitionError::Refused(e) => e,
            TransitionError::Store(e) => e.into(),
            contended @ TransitionError::Contended { .. } => {
                RpcError::internal(contended.to_string())
            }
        })
}

/// `submitted → working → completed|failed`, each saved, unless the Task was canceled meanwhile
/// (by this process or, over a shared store, by another replica).
async fn run_agent(state: &AppState, task: Task, message: Value) -> Result<(), RpcError> {
    let id = task.id().to_owned();
    let working = {
        let _guard = state.guard(&id).await;
        let step = |current: &Task| {
            if is_terminal_state(task_state(current)) {
                return Ok(Step::Stop);
            }
            Ok(Step::Save(with_status(current, "working", None)?))
        };
        match transition_rpc(state, &id, Some(&task), step).await? {
            Some(working) => working,
            None => {
                state.forget_lock(&id);
                return Ok(());
            }
        }
    };
    let outcome = state.config.agent.run(&working, &message).await;
    let _guard = state.guard(&id).await;
    let stage = state.config.finish_read_to_write_delay;
    let step = |current: &Task| {
        if is_terminal_state(task_state(current)) {
            return Ok(Step::Stop);
        }
        if !stage.is_zero() {
            // The test hook: blocks this worker thread, which only tests ever ask for.
            std::thread::sleep(stage);
        }
        let done = match &outcome {
            Ok(text) => {
                let mut value = with_status(current, "completed", None)?.into_value();
                value["artifacts"] = json!([{"artifactId": new_id(), "name": "reply", "parts": [{"kind": "text", "text": text}]}]);
                Task::try_from(value)?
            }
            Err(reason) => with_status(
                current,
                "failed",
                Some(
                    json!({"kind": "message", "role": "agent", "messageId": new_id(), "parts": [{"kind": "text", "text": reason}]}),
                ),
            )?,
        };
        Ok(Step::Save(done))
    };
    let result = transition_rpc(state, &id, Some(&working), step).await;
    state.forget_lock(&id);
    result.map(drop)
}

async fn get_task(state: &AppState, params: &Value) -> Result<Value, RpcError> {
    let id = param_str(params, "id")?;
    match state.store.get(id).await? {
        Some(task) => Ok(task.into_value()),
        None => Err(RpcError::new(
            codes::TASK_NOT_FOUND,
            format!("task not found: {id}"),
        )),
    }
}

async fn cancel_task(state: &AppState, params: &Value) -> Result<Value, RpcError> {
    let id = param_str(params, "id")?;
    let guard = state.guard(id).await;
    let result = cancel_locked(state, id).await;
    drop(guard);
    // Whatever happened, the Task is now terminal or gone: nothing else will need its lock.
    state.forget_lock(id);
    result
}

async fn cancel_locked(state: &AppState, id: &str) -> Result<Value, RpcError> {
    let step = |task: &Task| {
        let current = task_state(task);
        if is_terminal_state(current) {
            return Err(RpcError::new(
                codes::TASK_NOT_CANCELABLE,
                format!("task cannot be canceled: it is {current}"),
            ));
        }
        Ok(Step::Save(with_status(task, "canceled", None)?))
    };
    let canceled = transition_rpc(state, id, None, step).await?;
    // The step never says stop: it cancels or fails.
    canceled
        .map(Task::into_value)
        .ok_or_else(|| RpcError::internal(format!("task {id} was not canceled")))
}

/// The `ListTasks` result as JSON text, its Tasks at most [`ServerConfig::max_list_bytes`].
async fn list_tasks(state: &AppState, params: &Value) -> Result<String, RpcError> {
    let opt = |key: &str| -> Result<Option<String>, RpcError> {
        match params.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(RpcError::new(
                codes::INVALID_PARAMS,
                format!("params.{key} must be a string"),
            )),
        }
    };
    let page_size = match params.get("pageSize") {
        None | Some(Value::Null) => 0,
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| {
                RpcError::new(
                    codes::INVALID_PARAMS,
                    "params.pageSize must be a non-negative integer",
                )
            })?,
    };
    let status_timestamp_after = opt("statusTimestampAfter")?
        .map(|t| {
            Timestamp::parse(&t).map_err(|e| {
                RpcError::new(
                    codes::INVALID_PARAMS,
                    format!("params.statusTimestampAfter: {e}"),
                )
            })
        })
        .transpose()?;
    let query = ListQuery {
        context_id: opt("contextId")?,
        state: opt("status")?.or(opt("state")?),
        status_timestamp_after,
        page_size,
        page_token: opt("pageToken")?.filter(|t| !t.is_empty()),
    };
    let page = capped_page(state, query).await?;
    let mut out = String::from(r#"{"tasks":["#);
    for (i, task) in page.tasks.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(task.as_json());
    }
    out.push_str(r#"],"nextPageToken":"#);
    out.push_str(&json!(page.next_page_token.unwrap_or_default()).to_string());
    if let Some(total) = page.total_size {
        out.push_str(&format!(r#","totalSize":{total}"#));
    }
    out.push_str(&format!(r#","pageSize":{}"#, page.tasks.len()));
    out.push('}');
    Ok(out)
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

/// The store's page for `query`, cut to what fits in [`ServerConfig::max_list_bytes`]. A page
/// token is the store's own (opaque to us), so a page is cut by asking the store again for
/// only the Tasks that fit, from the same place: the same token and filters give the same
/// start, and the store gives the token that continues right after it.
async fn capped_page(state: &AppState, mut query: ListQuery) -> Result<TaskPage, RpcError> {
    let max = state.config.max_list_bytes;
    loop {
        let page = state.store.list(&query).await?;
        let fit = fitting(&page.tasks, max);
        if fit == page.tasks.len() {
            return Ok(page);
        }
        // The store answers at most the page size; a store that answers more is not cut
        // further by asking again.
        let asked = query.limit();
        if fit >= asked {
            return Err(RpcError::internal(format!(
                "the store answered {} Tasks to a list of at most {asked}",
                page.tasks.len()
            )));
        }
        tracing::debug!(target: "toolnexus::server", tasks = page.tasks.len(), fit, max,
            "list page over the byte limit: asking for a shorter one");
        query.page_size = fit;
    }
}

async fn delete_task(state: &AppState, params: &Value) -> Result<Value, RpcError> {
    let id = param_str(params, "id")?;
    if state.store.delete(id).await? {
        Ok(json!({"id": id, "deleted": true}))
    } else {
        Err(RpcError::new(
            codes::TASK_NOT_FOUND,
            format!("task not found: {id}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339() {
        let t = now();
        assert_eq!(t.len(), 24, "{t}");
        assert!(
            t.starts_with("20") && t.ends_with('Z') && &t[10..11] == "T",
            "{t}"
        );
    }

    #[test]
    fn terminal_states_in_both_spellings() {
        for s in [
            "completed",
            "canceled",
            "failed",
            "rejected",
            "TASK_STATE_COMPLETED",
            "TASK_STATE_CANCELED",
        ] {
            assert!(is_terminal_state(s), "{s}");
        }
        for s in [
            "submitted",
            "working",
            "input-required",
            "TASK_STATE_WORKING",
            "auth-required",
        ] {
            assert!(!is_terminal_state(s), "{s}");
        }
    }

    #[test]
    fn ids_are_unique_version_4_uuids() {
        let ids: std::collections::HashSet<_> = (0..1000).map(|_| new_id()).collect();
        assert_eq!(ids.len(), 1000);
        for id in &ids {
            let groups: Vec<_> = id.split('-').collect();
            assert_eq!(
                groups.iter().map(|g| g.len()).collect::<Vec<_>>(),
                [8, 4, 4, 4, 12],
                "{id}"
            );
            assert!(groups[2].starts_with('4'), "{id}");
            assert!(
                matches!(groups[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'),
                "{id}"
            );
        }
    }
}

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
//! your own). State changes go through [`toolnexus_core::transition`], so a cancel racing the
//! agent's completion is never lost, within one process or across replicas sharing a store
//! that can compare-and-set.
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
use axum::extract::{DefaultBodyLimit, State};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use toolnexus_core::state::is_terminal_state;
use toolnexus_core::transition::{Step, TransitionError, transition};
use toolnexus_core::{ListQuery, StoreError, Task, TaskStore, task_state};

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
}

/// The agent logic a runtime plugs in: given the Task (as saved, `working`) and the user's
/// message, produce the reply text, or an error message that fails the Task.
#[async_trait::async_trait]
pub trait Agent: Send + Sync {
    async fn run(&self, task: &Task, message: &Value) -> Result<String, String>;
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

/// How the server presents itself and what it accepts.
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
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            name: "toolnexus echo agent".into(),
            description: "Echoes the text it is sent; every Task lives in a toolnexus task store."
                .into(),
            max_body_bytes: 1 << 20,
            agent: Arc::new(EchoAgent::default()),
        }
    }
}

struct AppState {
    store: Arc<dyn TaskStore>,
    config: ServerConfig,
    url: String,
    /// One lock per Task id with a transition in flight, so a cancel and the background agent
    /// never interleave their read-modify-write in this process.
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// Serves A2A on `listener` until the process ends, with every Task in `store`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    store: Arc<dyn TaskStore>,
    config: ServerConfig,
) -> std::io::Result<()> {
    let url = format!("http://{}/", listener.local_addr()?);
    axum::serve(listener, router(store, config, url)).await
}

/// The routes, for embedding in a larger axum application. `url` is the JSON-RPC endpoint as
/// clients should see it (it goes on the agent card).
pub fn router(store: Arc<dyn TaskStore>, config: ServerConfig, url: String) -> Router {
    let limit = config.max_body_bytes;
    let state = Arc::new(AppState {
        store,
        config,
        url,
        locks: Mutex::new(HashMap::new()),
    });
    Router::new()
        .route("/.well-known/agent-card.json", get(agent_card))
        .route("/", post(json_rpc))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
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

struct RpcError {
    code: i64,
    message: String,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<StoreError> for RpcError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Unsupported { .. } => {
                RpcError::new(codes::UNSUPPORTED_OPERATION, err.to_string())
            }
            StoreError::InvalidId { .. }
            | StoreError::InvalidTask(_)
            | StoreError::TaskTooLarge { .. }
            | StoreError::Rejected { .. } => RpcError::new(codes::INVALID_PARAMS, err.to_string()),
            other => RpcError::new(codes::INTERNAL_ERROR, other.to_string()),
        }
    }
}

async fn json_rpc(State(state): State<Arc<AppState>>, body: Bytes) -> axum::Json<Value> {
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return reply(
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
            id,
            Err(RpcError::new(
                codes::INVALID_REQUEST,
                "not a JSON-RPC 2.0 request",
            )),
        );
    };
    let params = request.get("params").cloned().unwrap_or(Value::Null);
    let result = match method {
        "SendMessage" | "message/send" => send_message(&state, &params).await,
        "GetTask" | "tasks/get" => get_task(&state, &params).await,
        "CancelTask" | "tasks/cancel" => cancel_task(&state, &params).await,
        "ListTasks" | "tasks/list" => list_tasks(&state, &params).await,
        "DeleteTask" | "tasks/delete" => delete_task(&state, &params).await,
        other => Err(RpcError::new(
            codes::METHOD_NOT_FOUND,
            format!("method not found: {other}"),
        )),
    };
    reply(id, result)
}

fn reply(id: Value, result: Result<Value, RpcError>) -> axum::Json<Value> {
    axum::Json(match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(e) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": e.code, "message": e.message}})
        }
    })
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

impl AppState {
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

async fn send_message(state: &Arc<AppState>, params: &Value) -> Result<Value, RpcError> {
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
    state.store.save(&task).await?;
    let background = Arc::clone(state);
    let submitted = task.clone();
    tokio::spawn(async move {
        if let Err(e) = run_agent(&background, submitted, message).await {
            tracing::warn!(target: "toolnexus::server", error = %e.message, "background transition failed");
        }
    });
    Ok(task.into_value())
}

/// One read-modify-write of the Task `id` through the store ([`transition`]), with its errors as
/// JSON-RPC errors. The caller holds the Task's lock in this process, which is what keeps
/// stores without compare-and-set safe.
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
                RpcError::new(codes::INTERNAL_ERROR, contended.to_string())
            }
        })
}

/// `submitted → working → completed|failed`, each saved, unless the Task was canceled meanwhile
/// (by this process or, over a shared store, by another replica).
async fn run_agent(state: &AppState, task: Task, message: Value) -> Result<(), RpcError> {
    let id = task.id().to_owned();
    let working = {
        let lock = state.lock_for(&id);
        let _guard = lock.lock().await;
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
    let lock = state.lock_for(&id);
    let _guard = lock.lock().await;
    let step = |current: &Task| {
        if is_terminal_state(task_state(current)) {
            return Ok(Step::Stop);
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
    let lock = state.lock_for(id);
    let guard = lock.lock().await;
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
        .ok_or_else(|| RpcError::new(codes::INTERNAL_ERROR, format!("task {id} was not canceled")))
}

async fn list_tasks(state: &AppState, params: &Value) -> Result<Value, RpcError> {
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
    let query = ListQuery {
        context_id: opt("contextId")?,
        state: opt("status")?.or(opt("state")?),
        page_size,
        page_token: opt("pageToken")?.filter(|t| !t.is_empty()),
    };
    let page = state.store.list(&query).await?;
    let tasks: Vec<Value> = page.tasks.into_iter().map(Task::into_value).collect();
    Ok(json!({"tasks": tasks, "nextPageToken": page.next_page_token.unwrap_or_default()}))
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

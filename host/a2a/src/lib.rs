//! An A2A server whose every Task read and write goes through a [`TaskStore`]: the HTTP layer
//! over the I/O-free protocol core [`toolnexus_a2a_protocol`].
//!
//! [`serve`] answers, on one port:
//!
//! - the agent card at `/.well-known/agent-card.json` (A2A 1.0 `supportedInterfaces`, with the
//!   0.3 fields beside them);
//! - **JSON-RPC 2.0** at `/`: `SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`,
//!   `CancelTask`, `SubscribeToTask`, `DeleteTask`, and the 0.3 names (`message/send`,
//!   `message/stream`, `tasks/get`, `tasks/list`, `tasks/cancel`, `tasks/resubscribe`,
//!   `tasks/delete`);
//! - **HTTP+JSON**: `POST /message:send`, `POST /message:stream`, `GET /tasks/{id}`,
//!   `GET /tasks`, `POST /tasks/{id}:cancel`, `GET|POST /tasks/{id}:subscribe`, each also
//!   under `/{tenant}/…` and under `/v1/…`.
//!
//! The protocol version of each request is its `A2A-Version` header (none or empty: 0.3;
//! `1.0`; anything else: -32009). Streams are server-sent events. Tasks are stored in one form
//! (A2A 0.3 JSON) whatever version the client speaks; see `docs/a2a-protocol.md`.
//!
//! It knows no store: give it any `Arc<dyn TaskStore>` (from `toolnexus::resolve_store`, or
//! your own), or a [`Stores`] for tenants and owners (each its own store namespace). State
//! changes go through [`toolnexus_core::transition`](mod@toolnexus_core::transition), so a
//! cancel racing the agent's completion is never lost, within one process or across replicas
//! sharing a store that can compare-and-set.
//!
//! With [`ServerConfig::tokens`], every request but the agent card needs a bearer token; its
//! owner's Tasks live in their own namespace, invisible to every other owner.
//!
//! At startup, before it accepts anything, [`serve`] resolves the Tasks a crashed run left
//! `submitted` or `working` ([`ServerConfig::recovery`]: marked `failed` with a reason by
//! default), and with [`ServerConfig::retain`] it deletes terminal Tasks past that age in the
//! background; both go through the store's `list` and `delete` ([`maintenance`]).
//!
//! [`serve`] also protects itself: each limit is a field of [`ServerConfig`] (defaults there).
//! Every answer has an `x-request-id` header; an internal error (a store failing, say) reaches
//! the client only as `internal error (request id …)`, while its details are logged (target
//! `toolnexus::server`, field `request_id`).
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
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Extension, FromRequest, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use toolnexus_a2a_protocol::call::{self, Call};
use toolnexus_a2a_protocol::card::{CardInfo, agent_card as card_json};
use toolnexus_a2a_protocol::rest03;
use toolnexus_a2a_protocol::{
    A2aError, Answer, ErrorKind, Scope, Service, ServiceConfig, Spawn, Subscription, Version,
};
use toolnexus_core::TaskStore;

pub mod auth;
mod conn;
pub mod maintenance;

pub use auth::Tokens;
pub use maintenance::Recovery;
pub use toolnexus_a2a_protocol::{
    Agent, EchoAgent, Reply, SingleStore, Stopped, Stores, Work, codes,
};

/// The response header that carries the id of every request, also named in internal-error
/// messages and in the log.
pub const REQUEST_ID_HEADER: &str = "x-request-id";
/// The request header that names the protocol version.
pub const VERSION_HEADER: &str = "a2a-version";

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
/// Default of [`ServerConfig::poll_interval`].
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);

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
    /// closed. An event stream sends a keep-alive comment well within it.
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
    /// from; a page always has at least one Task.
    pub max_list_bytes: usize,
    /// Test hook, not for production: how long the background agent's final step waits between
    /// reading the Task and saving its outcome. Zero (the default) means no wait.
    #[doc(hidden)]
    pub finish_read_to_write_delay: Duration,
    /// What [`serve`] does, before it accepts anything, with Tasks a previous run left
    /// `submitted` or `working` (default [`Recovery::FailInterrupted`]). Over a store shared by
    /// several live replicas use [`Recovery::Off`]. A [`router`] embedded elsewhere runs
    /// nothing by itself: call [`maintenance::recover_at_startup`].
    pub recovery: Recovery,
    /// Keep terminal Tasks this long (by status timestamp), then delete them: [`serve`] runs
    /// [`maintenance::retention`] in the background. `None` (the default) keeps every Task.
    pub retain: Option<Duration>,
    /// Bearer tokens, each mapped to an owner (default none: no authentication). With them,
    /// every request but the agent card needs `Authorization: Bearer <token>` (else HTTP 401),
    /// and each owner's Tasks are in the owner's own store namespace.
    pub tokens: Option<Arc<Tokens>>,
    /// The tenants requests may name (`/{tenant}/…`, or `tenant` in JSON-RPC params); each is
    /// its own store namespace. Any other tenant is refused (-32602). Default none.
    pub tenants: Vec<String>,
    /// How often a stream or a waiting send reads the store again when nothing in this process
    /// woke it, to see what another replica saved (default 500 ms).
    pub poll_interval: Duration,
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
            tokens: None,
            tenants: Vec::new(),
            poll_interval: DEFAULT_POLL_INTERVAL,
        }
    }
}

impl ServerConfig {
    /// Every namespace requests can reach: the root (`None`) without tokens, each owner's with
    /// them, and each of those in each tenant. Recovery and retention walk all of them.
    pub fn namespaces(&self) -> Vec<Option<String>> {
        let owners: Vec<Option<String>> = match &self.tokens {
            None => vec![None],
            Some(tokens) => tokens.owners().into_iter().map(Some).collect(),
        };
        let mut out = Vec::new();
        for tenant in std::iter::once(None).chain(self.tenants.iter().cloned().map(Some)) {
            for owner in &owners {
                out.push(
                    Scope {
                        tenant: tenant.clone(),
                        owner: owner.clone(),
                    }
                    .namespace(),
                );
            }
        }
        out
    }
}

struct AppState {
    service: Service,
    config: ServerConfig,
    /// The card for 1.0 clients, and with the 0.3 fields beside it, each with its `ETag`.
    card_v1: (String, String),
    card_compat: (String, String),
    /// When the cards were made (the router's creation, to the second): their `Last-Modified`.
    card_modified: SystemTime,
}

/// A card's text and its entity tag (a digest of the text).
fn card_entity(card: &Value) -> (String, String) {
    use sha2::{Digest, Sha256};
    let text = card.to_string();
    let digest = Sha256::digest(text.as_bytes());
    let tag: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    (text, format!("\"{tag}\""))
}

struct TokioSpawn;

impl Spawn for TokioSpawn {
    fn spawn(&self, future: BoxFuture<'static, ()>) {
        tokio::spawn(future);
    }
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
    serve_stores(listener, Arc::new(SingleStore(store)), config).await
}

/// [`serve`] over the namespaces of `stores`: the root store, and one per tenant and owner.
pub async fn serve_stores(
    listener: tokio::net::TcpListener,
    stores: Arc<dyn Stores>,
    config: ServerConfig,
) -> std::io::Result<()> {
    serve_stores_then(listener, stores, config, || Ok(())).await
}

/// [`serve_stores`], calling `ready` once the startup recovery is done, just before the first
/// connection is accepted: the moment to tell the world the server is up (`tnstore serve`
/// prints `listening on …` there). An error from `ready` ends serving with that error.
///
/// The start that recovery measures against is taken before recovery runs, so a Task that a
/// client creates (through another replica, say) after `ready` was called is never taken for
/// one this server's predecessor left behind.
pub async fn serve_stores_then(
    listener: tokio::net::TcpListener,
    stores: Arc<dyn Stores>,
    config: ServerConfig,
    ready: impl FnOnce() -> std::io::Result<()>,
) -> std::io::Result<()> {
    let started = maintenance::now();
    let url = format!("http://{}/", listener.local_addr()?);
    let limits = conn::Limits {
        header_read_timeout: config.header_read_timeout,
        idle_timeout: config.idle_timeout,
        max_connections: config.max_connections,
    };
    let mut namespaced = Vec::new();
    for ns in config.namespaces() {
        match stores.store(ns.as_deref()).await {
            Ok(store) => namespaced.push(store),
            Err(e) => tracing::warn!(target: "toolnexus::server", namespace = ?ns, error = %e,
                "cannot open a namespace for recovery and retention"),
        }
    }
    for store in &namespaced {
        maintenance::recover_at_startup(&**store, &config, started).await;
    }
    let _retention: Vec<AbortOnDrop> = match config.retain {
        None => Vec::new(),
        Some(retain) => namespaced
            .iter()
            .map(|store| {
                AbortOnDrop(tokio::spawn(maintenance::retention(
                    Arc::clone(store),
                    retain,
                )))
            })
            .collect(),
    };
    ready()?;
    conn::run(listener, router_stores(stores, config, url), limits).await
}

/// A background task that ends with its owner.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The routes, for embedding in a larger axum application. `url` is the base URL as clients
/// should see it (the JSON-RPC endpoint and the root of the HTTP+JSON routes; it goes on the
/// agent card).
pub fn router(store: Arc<dyn TaskStore>, config: ServerConfig, url: String) -> Router {
    router_stores(Arc::new(SingleStore(store)), config, url)
}

/// [`router`] over the namespaces of `stores`.
pub fn router_stores(stores: Arc<dyn Stores>, config: ServerConfig, url: String) -> Router {
    let limit = config.max_body_bytes;
    let output_modes = vec!["text/plain".to_owned()];
    let info = CardInfo {
        name: config.name.clone(),
        description: config.description.clone(),
        version: env!("CARGO_PKG_VERSION").into(),
        url,
        bearer_auth: config.tokens.is_some(),
        output_modes: output_modes.clone(),
    };
    let card_v1 = card_entity(&card_json(&info, false));
    let card_compat = card_entity(&card_json(&info, true));
    let service = Service::new(
        stores,
        ServiceConfig {
            agent: Arc::clone(&config.agent),
            max_background_tasks: config.max_background_tasks,
            max_list_bytes: config.max_list_bytes,
            tenants: config.tenants.iter().cloned().collect::<HashSet<_>>(),
            poll_interval: config.poll_interval,
            output_modes,
            finish_read_to_write_delay: config.finish_read_to_write_delay,
        },
        Arc::new(TokioSpawn),
    );
    let state = Arc::new(AppState {
        service,
        config,
        card_v1,
        card_compat,
        // Whole seconds, as HTTP dates carry them, so `If-Modified-Since` compares exactly.
        card_modified: SystemTime::UNIX_EPOCH
            + Duration::from_secs(
                SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
            ),
    });
    Router::new()
        .route("/.well-known/agent-card.json", get(agent_card))
        .route("/.well-known/agent.json", get(agent_card))
        .route("/", post(json_rpc))
        .fallback(rest)
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
    let id = RequestId(toolnexus_a2a_protocol::service::new_id().into());
    request.extensions_mut().insert(id.clone());
    let mut response = next.run(request).await;
    if let Ok(value) = HeaderValue::from_str(&id.0) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    response
}

/// How long clients may cache the agent card.
const CARD_MAX_AGE: &str = "public, max-age=300";

/// The agent card: the pure 1.0 card to a client that says it speaks 1.0 (`A2A-Version`),
/// else the 1.0 card with the 0.3 fields beside it; with an `ETag`, a `Last-Modified` and a
/// `Cache-Control`, and 304 to an `If-None-Match` that names the current tag or, without
/// `If-None-Match`, to an `If-Modified-Since` not before the card was made (RFC 9110 §13.2.2).
async fn agent_card(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let v1 = matches!(requested_version(&request), Some(Ok(Version::V1_0)));
    let (text, tag) = if v1 {
        &state.card_v1
    } else {
        &state.card_compat
    };
    let header_text = |name| request.headers().get(name).and_then(|v| v.to_str().ok());
    let unchanged = match header_text(header::IF_NONE_MATCH) {
        Some(tags) => tags
            .split(',')
            .any(|t| t.trim() == "*" || t.trim().trim_start_matches("W/") == tag),
        // An unparsable date is ignored, as RFC 9110 says.
        None => header_text(header::IF_MODIFIED_SINCE)
            .and_then(|date| httpdate::parse_http_date(date).ok())
            .is_some_and(|since| since >= state.card_modified),
    };
    let mut response = if unchanged {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        json_response(StatusCode::OK, text.clone())
    };
    let headers = response.headers_mut();
    if let Ok(tag) = HeaderValue::from_str(tag) {
        headers.insert(header::ETAG, tag);
    }
    if let Ok(date) = HeaderValue::from_str(&httpdate::fmt_http_date(state.card_modified)) {
        headers.insert(header::LAST_MODIFIED, date);
    }
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(CARD_MAX_AGE),
    );
    headers.insert(header::VARY, HeaderValue::from_static("a2a-version"));
    response
}

/// The protocol version a request asks for: its `A2A-Version` header, else an `A2A-Version`
/// query parameter (1.0 lets clients send it either way); `None` when neither is there.
fn requested_version(request: &Request) -> Option<Result<Version, A2aError>> {
    if let Some(value) = request.headers().get(VERSION_HEADER) {
        return Some(match value.to_str() {
            Ok(v) => Version::from_header(Some(v)),
            Err(_) => Err(A2aError::new(
                ErrorKind::VersionNotSupported,
                "the A2A-Version header is not text",
            )),
        });
    }
    let query = request.uri().query()?;
    url_pairs(query)
        .into_iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(VERSION_HEADER))
        .map(|(_, v)| Version::from_header(Some(&v)))
}

/// The binding of a request, for the shape of its answers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Binding {
    JsonRpc,
    Rest,
}

/// Everything a request carries besides its call: version, owner, id.
struct Ctx {
    /// A2A 0.3's HTTP+JSON binding: bodies are the 0.3 protobuf JSON ([`rest03`]); the call
    /// itself runs as 1.0 and its answers are converted.
    rest03: bool,
    request_id: RequestId,
    version: Version,
    owner: Option<String>,
    binding: Binding,
    /// The JSON-RPC request id.
    rpc_id: Value,
    method: String,
}

impl Ctx {
    fn log(&self, e: &A2aError) {
        if e.detail.is_some() {
            tracing::error!(target: "toolnexus::server", request_id = %self.request_id.0,
                method = %self.method, error = %e.detail(), "request failed");
        }
    }

    fn error(&self, e: A2aError) -> Response {
        self.log(&e);
        match self.binding {
            Binding::JsonRpc => {
                let body = json!({"jsonrpc": "2.0", "id": self.rpc_id,
                    "error": e.jsonrpc_error(&self.request_id.0)});
                // An authentication failure is HTTP 401 in both bindings.
                let status = if e.kind == ErrorKind::Unauthenticated {
                    StatusCode::UNAUTHORIZED
                } else {
                    StatusCode::OK
                };
                with_auth_challenge(json_response(status, body.to_string()), &e)
            }
            Binding::Rest => {
                let status =
                    StatusCode::from_u16(e.kind.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
                with_auth_challenge(
                    json_response(status, self.rest_error_body(&e).to_string()),
                    &e,
                )
            }
        }
    }

    fn value(&self, value: Value) -> Response {
        json_response(StatusCode::OK, self.result(value).to_string())
    }

    /// An answer or event as the binding carries it.
    fn result(&self, value: Value) -> Value {
        match self.binding {
            Binding::JsonRpc => json!({"jsonrpc": "2.0", "id": self.rpc_id, "result": value}),
            Binding::Rest if self.rest03 => rest03::answer_out(&value),
            Binding::Rest => value,
        }
    }

    /// The HTTP+JSON error body; for a 0.3 client also the error's class name and message at
    /// the top, which is where the official 0.3 client looks for them.
    fn rest_error_body(&self, e: &A2aError) -> Value {
        let mut body = e.rest_body(&self.request_id.0);
        if self.rest03 {
            body["type"] = json!(e.kind.sdk_name());
            body["message"] = json!(e.public_message(&self.request_id.0));
        }
        body
    }
}

fn with_auth_challenge(mut response: Response, e: &A2aError) -> Response {
    if e.kind == ErrorKind::Unauthenticated {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}

fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The version and owner of a request, from its headers (and query).
fn identify(
    state: &AppState,
    request: &Request,
) -> (Result<Version, A2aError>, Result<Option<String>, A2aError>) {
    let version = requested_version(request).unwrap_or(Ok(Version::V0_3));
    let headers = request.headers();
    let owner = match &state.config.tokens {
        None => Ok(None),
        Some(tokens) => {
            let presented = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok());
            match presented.and_then(|a| tokens.owner(a)) {
                Some(owner) => Ok(Some(owner.to_owned())),
                None => Err(A2aError::new(
                    ErrorKind::Unauthenticated,
                    if presented.is_some() {
                        "the bearer token is not valid"
                    } else {
                        "this server needs a bearer token (Authorization: Bearer <token>)"
                    },
                )),
            }
        }
    };
    (version, owner)
}

/// Reads the whole body within the body timeout; `Err` is the answer to give instead.
async fn read_body(
    state: &AppState,
    request: Request,
    request_id: &RequestId,
) -> Result<Bytes, Response> {
    let read = tokio::time::timeout(
        state.config.body_read_timeout,
        Bytes::from_request(request, &()),
    );
    match read.await {
        Ok(Ok(body)) => Ok(body),
        // Too large (413) or broken off (400), as axum answers them.
        Ok(Err(rejection)) => Err(rejection.into_response()),
        Err(_elapsed) => {
            tracing::debug!(target: "toolnexus::server", request_id = %request_id.0,
                "request body not received within the body timeout");
            Err((
                StatusCode::REQUEST_TIMEOUT,
                [(header::CONNECTION, "close")],
                "request body not received in time",
            )
                .into_response())
        }
    }
}

async fn json_rpc(
    State(state): State<Arc<AppState>>,
    Extension(request_id): Extension<RequestId>,
    request: Request,
) -> Response {
    let (version, owner) = identify(&state, &request);
    let mut ctx = Ctx {
        rest03: false,
        request_id: request_id.clone(),
        version: Version::V0_3,
        owner: None,
        binding: Binding::JsonRpc,
        rpc_id: Value::Null,
        method: String::new(),
    };
    let body = match read_body(&state, request, &request_id).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return ctx.error(A2aError::new(ErrorKind::Parse, format!("parse error: {e}")));
        }
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let valid_id = matches!(id, Value::Null | Value::String(_) | Value::Number(_));
    if valid_id {
        ctx.rpc_id = id;
    }
    let method = request.get("method").and_then(Value::as_str);
    let (Some(method), true, Some("2.0")) = (
        method,
        valid_id,
        request.get("jsonrpc").and_then(Value::as_str),
    ) else {
        return ctx.error(A2aError::new(
            ErrorKind::InvalidRequest,
            "not a JSON-RPC 2.0 request",
        ));
    };
    ctx.method = method.to_owned();
    ctx.owner = match owner {
        Ok(owner) => owner,
        Err(e) => return ctx.error(e),
    };
    ctx.version = match version {
        Ok(version) => version,
        Err(e) => return ctx.error(e),
    };
    let params = request.get("params").unwrap_or(&Value::Null);
    let parsed = match call::from_jsonrpc(method, params) {
        Ok(parsed) => parsed,
        Err(e) => return ctx.error(e),
    };
    answer(&state, ctx, parsed.tenant, parsed.call).await
}

/// The HTTP+JSON binding: every route but the card and `/`.
async fn rest(
    State(state): State<Arc<AppState>>,
    Extension(request_id): Extension<RequestId>,
    request: Request,
) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or("").to_owned();
    let (version, owner) = identify(&state, &request);
    let explicit_version = requested_version(&request).is_some()
        && !request
            .headers()
            .get(VERSION_HEADER)
            .is_some_and(|v| v.as_bytes().trim_ascii().is_empty());
    let mut ctx = Ctx {
        rest03: false,
        request_id: request_id.clone(),
        version: Version::V0_3,
        owner: None,
        binding: Binding::Rest,
        rpc_id: Value::Null,
        method: format!("{method} {path}"),
    };
    ctx.version = match version {
        Ok(version) => version,
        Err(e) => return ctx.error(e),
    };
    // Split off the tenant and the 0.3 `/v1` prefix; decode each segment.
    let mut segments: Vec<String> = Vec::new();
    for raw in path.trim_start_matches('/').split('/') {
        match percent_encoding::percent_decode_str(raw).decode_utf8() {
            Ok(segment) => segments.push(segment.into_owned()),
            Err(_) => {
                return ctx.error(A2aError::invalid("the path is not UTF-8 once decoded"));
            }
        }
    }
    let is_root = |s: &str| {
        s == "tasks" || s == "v1" || s.starts_with("message:") || s == "extendedAgentCard"
    };
    let mut tenant = None;
    if segments.len() > 1 && !is_root(&segments[0]) {
        tenant = Some(segments.remove(0));
    }
    let v1 = segments.first().map(String::as_str) == Some("v1");
    if v1 {
        segments.remove(0);
    }
    // 0.3's HTTP+JSON routes are the `/v1/…` ones; the others are 1.0's. A request without a
    // version header is taken at its route's version; with one, at the header's.
    ctx.rest03 = if explicit_version {
        ctx.version == Version::V0_3
    } else {
        v1
    };
    if !ctx.rest03 {
        ctx.version = Version::V1_0;
    }
    let route = format!("/{}", segments.join("/"));
    let body = if method == Method::POST {
        match read_body(&state, request, &request_id).await {
            Ok(body) => body,
            Err(response) => return response,
        }
    } else {
        Bytes::new()
    };
    let body: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => {
                return ctx.error(A2aError::new(ErrorKind::Parse, format!("parse error: {e}")));
            }
        }
    };
    let pairs: Vec<(String, String)> = url_pairs(&query);
    let body = if ctx.rest03 {
        rest03::request_in(&body)
    } else {
        body
    };
    // Parsed with the defaults of the client's version; answered in 1.0 shapes, which the
    // 0.3 binding's are converted from.
    let call = match call::from_rest(method.as_str(), &route, &pairs, &body, ctx.version) {
        Ok(call) => call,
        Err(e) => return ctx.error(e),
    };
    ctx.owner = match owner {
        Ok(owner) => owner,
        Err(e) => return ctx.error(e),
    };
    if ctx.rest03 {
        ctx.version = Version::V1_0;
    }
    answer(&state, ctx, tenant, call).await
}

/// `application/x-www-form-urlencoded` pairs of a query string.
fn url_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(&s.replace('+', " "))
                    .decode_utf8_lossy()
                    .into_owned()
            };
            (decode(k), decode(v))
        })
        .collect()
}

async fn answer(state: &AppState, ctx: Ctx, tenant: Option<String>, call: Call) -> Response {
    let scope = Scope {
        tenant,
        owner: ctx.owner.clone(),
    };
    if let Some(t) = &scope.tenant
        && !auth::valid_name(t)
    {
        return ctx.error(A2aError::invalid(
            "a tenant is 1 to 64 of A-Z a-z 0-9 . _ -",
        ));
    }
    match state.service.call(&scope, call, ctx.version).await {
        Ok(Answer::Value(value)) => ctx.value(value),
        Ok(Answer::Stream(subscription)) => event_stream(state, ctx, subscription),
        Err(e) => ctx.error(e),
    }
}

/// Server-sent events: each event one `data:` line (in JSON-RPC, a whole JSON-RPC response
/// with the event as its `result`), keep-alive comments in between.
fn event_stream(state: &AppState, ctx: Ctx, subscription: Subscription) -> Response {
    let keep_alive =
        (state.config.idle_timeout / 3).clamp(Duration::from_millis(100), Duration::from_secs(15));
    let ctx = Arc::new(ctx);
    let stream = futures_util::stream::unfold(
        (subscription, ctx, false),
        move |(mut sub, ctx, ended)| async move {
            if ended {
                return None;
            }
            let next = tokio::select! {
                next = sub.next() => next,
                () = tokio::time::sleep(keep_alive) => {
                    return Some((Ok::<_, std::convert::Infallible>(Bytes::from_static(b": keep-alive\n\n")), (sub, ctx, false)));
                }
            };
            let (data, ended) = match next {
                None => return None,
                Some(Ok(event)) => (
                    match ctx.binding {
                        Binding::JsonRpc => {
                            json!({"jsonrpc": "2.0", "id": ctx.rpc_id, "result": event})
                        }
                        Binding::Rest => event,
                    },
                    false,
                ),
                Some(Err(e)) => {
                    ctx.log(&e);
                    let data = match ctx.binding {
                        Binding::JsonRpc => json!({"jsonrpc": "2.0", "id": ctx.rpc_id,
                            "error": e.jsonrpc_error(&ctx.request_id.0)}),
                        Binding::Rest => ctx.rest_error_body(&e),
                    };
                    (data, true)
                }
            };
            let frame = Bytes::from(format!("data: {data}\n\n"));
            Some((Ok(frame), (sub, ctx, ended)))
        },
    );
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_pairs_are_decoded() {
        assert_eq!(
            url_pairs("a=1&b=x%20y&c=p+q&&d"),
            [
                ("a".to_string(), "1".to_string()),
                ("b".into(), "x y".into()),
                ("c".into(), "p q".into()),
                ("d".into(), "".into())
            ]
        );
    }

    #[test]
    fn namespaces_cover_tenants_and_owners() {
        let tokens = Tokens::parse("alice 0123456789abcdef\nbob 0123456789abcdeX").unwrap();
        let config = ServerConfig {
            tokens: Some(Arc::new(tokens)),
            tenants: vec!["acme".into()],
            ..Default::default()
        };
        assert_eq!(
            config.namespaces(),
            [
                Some("o.alice".to_string()),
                Some("o.bob".into()),
                Some("t.acme/o.alice".into()),
                Some("t.acme/o.bob".into())
            ]
        );
        assert_eq!(ServerConfig::default().namespaces(), [None::<String>]);
    }
}

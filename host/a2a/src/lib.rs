//! An A2A server whose every Task read and write goes through a
//! [`TaskStore`](toolnexus_core::TaskStore): the HTTP layer over the I/O-free protocol core
//! [`toolnexus_a2a_protocol`].
//!
//! [`serve`] answers, on one port:
//!
//! - the agent card at `/.well-known/agent-card.json` (A2A 1.0 `supportedInterfaces`, with the
//!   0.3 fields beside them): the operator's description of the agent
//!   ([`ServerConfig::card`], checked by [`OperatorCard`]), the URL clients reach
//!   ([`ServerConfig::public_url`]) and an interface pair per tenant;
//! - **JSON-RPC 2.0** at `/`: `SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`,
//!   `CancelTask`, `SubscribeToTask`, `DeleteTask`, the four push-notification config methods
//!   (`CreateTaskPushNotificationConfig`, `Get…`, `ListTaskPushNotificationConfigs`,
//!   `Delete…`), and the 0.3 names (`message/send`, `message/stream`, `tasks/get`,
//!   `tasks/list`, `tasks/cancel`, `tasks/resubscribe`, `tasks/delete`,
//!   `tasks/pushNotificationConfig/set|get|list|delete`);
//! - **HTTP+JSON**: `POST /message:send`, `POST /message:stream`, `GET /tasks/{id}`,
//!   `GET /tasks`, `POST /tasks/{id}:cancel`, `GET|POST /tasks/{id}:subscribe`,
//!   `POST|GET /tasks/{id}/pushNotificationConfigs`,
//!   `GET|DELETE /tasks/{id}/pushNotificationConfigs/{configId}`, each also under `/{tenant}/…`
//!   and under `/v1/…`.
//!
//! Push notifications are offered with a sender ([`ServiceConfig::push`]) over a store that
//! keeps push configs; the server then tells the sender of every save of a Task it makes.
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
//! background; both go through the store's `list` and `delete` ([`maintenance`], which is
//! the protocol crate's: it needs no HTTP).
//!
//! With [`HttpConfig::tls`] ([`TlsIdentity`]), [`serve`] speaks HTTPS (rustls).
//!
//! [`serve_stores_with_shutdown`] stops gracefully when its shutdown future is ready: no new
//! connections, the agents' runs get [`ServerConfig::shutdown_grace`] to finish, the rest are
//! stopped with their Tasks saved `failed` ([`RUN_STOPPED_MESSAGE`]), then it returns.
//!
//! The cargo feature `server` (default) is the network side: [`serve`], its accept loop and
//! TLS. Without it the crate is the router alone, which builds for `wasm32-wasip2`: the A2A
//! server component (`guest/a2a-server`) runs it inside a `wasi:http` handler.
//!
//! [`ServerConfig`] is the protocol service's settings ([`ServerConfig::service`], a
//! [`ServiceConfig`]), the HTTP side's ([`ServerConfig::http`], an [`HttpConfig`]), and the
//! card, token and maintenance settings of the server's own.
//!
//! [`serve`] also protects itself: each limit is a field of [`ServiceConfig`] or
//! [`HttpConfig`] (defaults there).
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

mod agent_card;
mod app_state;
pub mod auth;
mod card_file;
mod config;
#[cfg(feature = "server")]
mod conn;
mod dispatch;
mod event_stream;
mod http_config;
mod http_json;
mod jsonrpc;
mod public_url;
mod request_context;
mod request_id;
mod router;
#[cfg(feature = "server")]
mod serve;
#[cfg(feature = "server")]
mod stream_end;
#[cfg(feature = "server")]
mod tls;
mod version_header;

pub use auth::Tokens;
pub use card_file::{CardError, CardProblem, OperatorCard};
pub use config::{DEFAULT_SHUTDOWN_GRACE, ServerConfig};
pub use http_config::{
    DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS, HttpConfig, TlsIdentity,
};
pub use public_url::{PublicUrl, PublicUrlError};
pub use request_id::REQUEST_ID_HEADER;
pub use router::{router, router_stores};
#[cfg(feature = "server")]
pub use serve::{serve, serve_stores, serve_stores_then, serve_stores_with_shutdown};
#[cfg(feature = "server")]
pub use tls::TlsError;
pub use toolnexus_a2a_protocol::RUN_STOPPED_MESSAGE;
/// Startup recovery, retention and `prune`: the protocol crate's
/// [`toolnexus_a2a_protocol::maintenance`], here under its old path.
pub use toolnexus_a2a_protocol::maintenance;
pub use toolnexus_a2a_protocol::maintenance::Recovery;
pub use toolnexus_a2a_protocol::owner_limits;
pub use toolnexus_a2a_protocol::{
    Agent, AgentLimits, Artifact, EchoAgent, EmitError, Message, Outcome, OwnerLimits, Part,
    PartContent, PushNotifier, Request, Role, ServiceConfig, SingleStore, Stores, Updater, Work,
    codes,
};
pub use toolnexus_a2a_protocol::{
    DEFAULT_MAX_BACKGROUND_TASKS, DEFAULT_MAX_LIST_BYTES, DEFAULT_POLL_INTERVAL,
};
pub use version_header::VERSION_HEADER;

//! The A2A protocol over a toolnexus [`TaskStore`](toolnexus_core::TaskStore), free of I/O:
//! requests in, store calls and answers out.
//!
//! - [`call`] parses a request of either binding (JSON-RPC method and params, or an HTTP+JSON
//!   route, query and body) and either protocol version ([`Version`], from the `A2A-Version`
//!   header) into one [`Call`]; from there on both bindings and both versions share one code
//!   path.
//! - [`Service::call`] performs it over the store of the request's [`Scope`] (tenant and
//!   owner pick a namespace, [`Stores`]), and answers a value or a [`Subscription`] (an event
//!   stream), already shaped for the request's version ([`wire`]).
//! - [`error`] is A2A's error table: JSON-RPC codes, HTTP statuses, reasons.
//! - [`agent`] is what a runtime plugs in: an [`Agent`] that streams partial output, asks for
//!   input and is told of a cancel.
//! - [`maintenance`] keeps a store tidy around a server: startup recovery of the Tasks a crash
//!   left unfinished, retention and `prune` of old terminal Tasks, through the store alone.
//!
//! Nothing here opens a socket or a file: the host gives the stores, an executor for agents
//! ([`Spawn`]) and the transport (the `toolnexus-a2a` crate serves it over HTTP with axum),
//! so the same core can later run inside a WebAssembly component.

pub mod agent;
mod agent_limits;
mod agent_run;
mod answer;
mod background_work;
pub mod call;
mod cancel;
pub mod card;
pub mod error;
mod event_queue;
mod list;
mod live_events;
pub mod maintenance;
mod namespace_usage;
mod open_streams;
pub mod owner_limits;
mod params;
pub mod push;
pub mod push_call;
mod push_configs;
mod push_wire;
mod recovery_policy;
pub mod rest03;
mod run_stop;
mod run_updates;
mod save_listeners;
mod scope;
mod send;
pub mod service;
mod service_config;
mod service_state;
mod subscribe;
mod subscription;
pub mod task_count;
mod task_json;
pub mod wire;

pub use agent::{
    Agent, Artifact, CanceledTask, EchoAgent, EmitError, Message, Metadata, Outcome, Part,
    PartContent, Request, Role, Updater, Work,
};
pub use agent_limits::AgentLimits;
pub use call::{Call, ListParams, Parsed, SendParams};
pub use error::{A2aError, ErrorKind, codes};
pub use owner_limits::OwnerLimits;
pub use push::PushNotifier;
pub use push_call::{PushAuthentication, PushCall, PushConfigInput};
pub use run_stop::RUN_STOPPED_MESSAGE;
pub use service::{
    Answer, MemoryStores, Scope, Service, ServiceConfig, SingleStore, Spawn, Stores, Subscription,
};
pub use service_config::{
    DEFAULT_MAX_BACKGROUND_TASKS, DEFAULT_MAX_LIST_BYTES, DEFAULT_POLL_INTERVAL,
};
pub use wire::Version;

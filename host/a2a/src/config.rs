//! The server's settings ([`ServerConfig`]) and their defaults.

use crate::auth::Tokens;
use crate::card_file::OperatorCard;
use crate::public_url::PublicUrl;
use crate::recovery_policy::Recovery;
#[cfg(feature = "server")]
use crate::tls::TlsIdentity;
use std::sync::Arc;
use std::time::Duration;
use toolnexus_a2a_protocol::{Agent, AgentLimits, EchoAgent, OwnerLimits, PushNotifier, Scope};

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
/// Default of [`ServerConfig::shutdown_grace`].
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How the server presents itself, what it accepts, and its limits.
///
/// Build it with `..Default::default()` so new fields keep their defaults. The timeouts and
/// `max_connections` apply to [`serve`](crate::serve); a [`router`](crate::router) embedded in an application of your own
/// gets the body timeout, the background and list limits and the request ids, while the
/// connection limits are then the host application's business.
#[derive(Clone)]
pub struct ServerConfig {
    /// The agent's name on its card, unless [`card`](Self::card) gives one.
    pub name: String,
    /// The agent's description on its card, unless [`card`](Self::card) gives one.
    pub description: String,
    /// The operator's part of the agent card: name, description, version, provider, skills,
    /// input and output modes, icon and documentation links (`tnstore serve --card FILE`,
    /// [`OperatorCard::from_file`]). None (the default): the echo agent's card, from `name` and
    /// `description`, with output mode `text/plain`. Its output modes are what a request's
    /// `acceptedOutputModes` must admit. The server writes the rest of the card itself.
    pub card: Option<OperatorCard>,
    /// The base URL the card advertises for every interface: where clients reach the server
    /// (`https://agent.example.com/`, a reverse proxy's address). None (the default):
    /// [`serve`](crate::serve) advertises the address it listens on, `http://ADDR/`
    /// (`https://ADDR/` with [`tls`](Self::tls)), and refuses a listener on an address other
    /// than loopback, where that URL would not be one clients can use. A
    /// [`router`](crate::router) advertises the URL it is given.
    pub public_url: Option<PublicUrl>,
    /// Serve HTTPS with this certificate and key ([`TlsIdentity::from_pem_files`]); only
    /// [`serve`](crate::serve) uses it. None (the default): plain HTTP.
    #[cfg(feature = "server")]
    pub tls: Option<TlsIdentity>,
    /// The largest request body accepted, in bytes (default 1 MiB); larger ones get HTTP 413.
    pub max_body_bytes: usize,
    /// The agent logic.
    pub agent: Arc<dyn Agent>,
    /// What one run of the agent may emit (default [`AgentLimits::default`]: 4 MiB per update,
    /// 10,000 updates per run, 16 MiB per Task).
    pub agent_limits: AgentLimits,
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
    /// progress, `SendMessage` answers [`codes::SERVER_BUSY`](crate::codes::SERVER_BUSY) ("server busy: too many tasks in
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
    /// What [`serve`](crate::serve) does, before it accepts anything, with Tasks a previous run left
    /// `submitted` or `working` (default [`Recovery::FailInterrupted`]). Over a store shared by
    /// several live replicas use [`Recovery::Off`]. A [`router`](crate::router) embedded elsewhere runs
    /// nothing by itself: call [`maintenance::recover_at_startup`](crate::maintenance::recover_at_startup).
    pub recovery: Recovery,
    /// Keep terminal Tasks this long (by status timestamp), then delete them: [`serve`](crate::serve) runs
    /// [`maintenance::retention`](crate::maintenance::retention) in the background. `None` (the default) keeps every Task.
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
    /// The push-notification sender (default none). With it, over a store that keeps push
    /// configs, the server offers push notifications: the config methods, a config in
    /// `SendMessage`, `capabilities.pushNotifications: true` on the card; and it tells the
    /// sender of every save of a Task it makes, startup recovery's included. Without it (or
    /// over a store without push configs) those methods answer -32003.
    pub push: Option<Arc<dyn PushNotifier>>,
    /// When [`serve_stores_with_shutdown`](crate::serve_stores_with_shutdown) is told to stop:
    /// how long the agents' runs in progress get to finish (default 10 s). The runs still going
    /// then are stopped, each Task saved `failed` with
    /// [`RUN_STOPPED_MESSAGE`](crate::RUN_STOPPED_MESSAGE). Zero stops them at once.
    pub shutdown_grace: Duration,
    /// What each owner (each store namespace: owner, tenant, or both) may hold: Tasks and
    /// their bytes, event streams open (per owner and per Task), and the bytes of events one
    /// stream may leave unread (defaults: [`OwnerLimits::default`]). A request over a bound is
    /// refused with [`codes::LIMIT_REACHED`](crate::codes::LIMIT_REACHED) (HTTP 429), naming
    /// it, and changes nothing; a stream whose reader falls behind gets that error as its last
    /// event and can subscribe again.
    pub owner_limits: OwnerLimits,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            name: "toolnexus echo agent".into(),
            description: "Echoes the text it is sent; every Task lives in a toolnexus task store."
                .into(),
            card: None,
            public_url: None,
            #[cfg(feature = "server")]
            tls: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            agent: Arc::new(EchoAgent::default()),
            agent_limits: AgentLimits::default(),
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
            push: None,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            owner_limits: OwnerLimits::default(),
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

#[cfg(test)]
mod tests {
    use super::*;

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

//! What the host gives the service besides its stores: the settings ([`ServiceConfig`]) and an
//! executor for background work ([`Spawn`]).

use crate::agent::{Agent, EchoAgent};
use crate::agent_limits::AgentLimits;
use crate::owner_limits::OwnerLimits;
use crate::push::PushNotifier;
use futures_util::future::BoxFuture;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// Default of [`ServiceConfig::max_background_tasks`].
pub const DEFAULT_MAX_BACKGROUND_TASKS: usize = 1024;
/// Default of [`ServiceConfig::max_list_bytes`].
pub const DEFAULT_MAX_LIST_BYTES: usize = 16 << 20;
/// Default of [`ServiceConfig::poll_interval`].
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);

/// Runs a background future: the host's executor (Tokio's `spawn` in the HTTP server).
pub trait Spawn: Send + Sync {
    fn spawn(&self, future: BoxFuture<'static, ()>);
}

/// What the service does and allows.
///
/// Build it with `..Default::default()` so new fields keep their defaults.
#[derive(Clone)]
pub struct ServiceConfig {
    /// The agent logic (default [`EchoAgent::default`]).
    pub agent: Arc<dyn Agent>,
    /// The most agents running or waiting to run in the background, one per `SendMessage`
    /// until its Task is finished (default 1024; 0 counts as 1). When that many are in
    /// progress, `SendMessage` answers [`codes::SERVER_BUSY`](crate::codes::SERVER_BUSY)
    /// ("server busy: too many tasks in progress, retry later") and saves nothing.
    pub max_background_tasks: usize,
    /// The most bytes of Task JSON in one `ListTasks` answer (default 16 MiB). A page that
    /// would be larger is cut before the Task that goes over, with a `nextPageToken` to
    /// continue from; a page always has at least one Task.
    pub max_list_bytes: usize,
    /// The tenants requests may name (`/{tenant}/…`, or `tenant` in JSON-RPC params); each is
    /// its own store namespace. Any other tenant is refused (-32602). Default none.
    pub tenants: HashSet<String>,
    /// How often a subscription or a blocking send reads the store again when nothing in this
    /// process woke it, to see what another replica saved (default 500 ms).
    pub poll_interval: Duration,
    /// The output modes the agent produces (`acceptedOutputModes` must admit one; default
    /// `text/plain`).
    pub output_modes: Vec<String>,
    /// What one run of the agent may emit (default [`AgentLimits::default`]: 4 MiB per
    /// update, 10,000 updates per run, 16 MiB per Task).
    pub agent_limits: AgentLimits,
    /// Test hook, not for production: the pause of the agent's final step between reading the
    /// Task and saving its outcome. Zero (the default) means no wait.
    #[doc(hidden)]
    pub finish_read_to_write_delay: Duration,
    /// The push-notification sender. Push notifications are offered (the config methods, a
    /// config in `SendMessage`, the card's `pushNotifications`) when it is set and the root
    /// store keeps push configs; otherwise those methods answer -32003. It is told of every
    /// save of a Task the service makes ([`PushNotifier::task_saved`]).
    pub push: Option<Arc<dyn PushNotifier>>,
    /// What each owner (each store namespace: owner, tenant, or both) may hold: Tasks and
    /// their bytes, event streams open (per owner and per Task), and the bytes of events one
    /// stream may leave unread (defaults: [`OwnerLimits::default`]). A request over a bound is
    /// refused with [`codes::LIMIT_REACHED`](crate::codes::LIMIT_REACHED) (HTTP 429), naming
    /// it, and changes nothing; a stream whose reader falls behind gets that error as its last
    /// event and can subscribe again.
    pub owner_limits: OwnerLimits,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            agent: Arc::new(EchoAgent::default()),
            max_background_tasks: DEFAULT_MAX_BACKGROUND_TASKS,
            max_list_bytes: DEFAULT_MAX_LIST_BYTES,
            tenants: HashSet::new(),
            poll_interval: DEFAULT_POLL_INTERVAL,
            output_modes: vec!["text/plain".to_owned()],
            agent_limits: AgentLimits::default(),
            finish_read_to_write_delay: Duration::ZERO,
            push: None,
            owner_limits: OwnerLimits::default(),
        }
    }
}

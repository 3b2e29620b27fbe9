//! What the host gives the service besides its stores: the settings ([`ServiceConfig`]) and an
//! executor for background work ([`Spawn`]).

use crate::agent::Agent;
use crate::agent_limits::AgentLimits;
use crate::owner_limits::OwnerLimits;
use crate::push::PushNotifier;
use futures_util::future::BoxFuture;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

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
    /// What one run of the agent may emit.
    pub agent_limits: AgentLimits,
    /// Test hook: the pause of the agent's final step between its read and its write.
    pub finish_read_to_write_delay: Duration,
    /// The push-notification sender. Push notifications are offered (the config methods, a
    /// config in `SendMessage`, the card's `pushNotifications`) when it is set and the root
    /// store keeps push configs; otherwise those methods answer -32003. It is told of every
    /// save of a Task the service makes ([`PushNotifier::task_saved`]).
    pub push: Option<Arc<dyn PushNotifier>>,
    /// What each owner (namespace) may hold: Tasks and their bytes, streams open, and how far
    /// one stream may fall behind.
    pub owner_limits: OwnerLimits,
}

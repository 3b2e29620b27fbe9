//! Push notifications for the toolnexus A2A server: [`PushSender`], the
//! [`PushNotifier`] that `tnstore serve` gives the service. The guarantees, the SSRF policy,
//! the bounds, secrets at rest and the outbox format are in the repository's
//! `docs/push-notifications.md`; in short:
//!
//! - after each save of a Task, one delivery per push config of the Task is written to the
//!   outbox ([`outbox`]) before the save's caller goes on; a delivery leaves the outbox once it
//!   succeeded or was given up, so a restart delivers what was pending (at least once);
//! - deliveries of one Task to one config go one at a time, in save order ([`lanes`]), each
//!   retried with exponential backoff and jitter on 5xx, 408, 429, timeouts and connection
//!   errors ([`backoff`], [`attempt`]);
//! - a webhook is reached only at addresses that were checked after resolution: public ones,
//!   or those the operator allowed (`--push-allow`, the allow-list grammar of agents' outgoing
//!   HTTP) ([`url_policy`], [`http_post`]);
//! - the config is read from the store at each attempt (a deleted config gets nothing), and
//!   its secrets are sealed at rest with the operator's key ([`secrets`]).

pub mod attempt;
pub mod backoff;
pub mod http_post;
mod lanes;
pub mod options;
pub mod outbox;
pub mod outbox_slot;
pub mod payload;
pub mod secrets;
mod shared;
pub mod url_policy;

pub use options::PushOptions;
pub use secrets::SealKey;
pub use toolnexus_egress::allow_list::AllowList;

use lanes::Lanes;
use outbox::{LaneKey, Outbox};
use serde_json::{Map, Value};
use shared::Shared;
use std::sync::Arc;
use toolnexus_a2a_protocol::{PushNotifier, Stores};
use toolnexus_core::Task;

/// Delivers push notifications: see the crate docs.
pub struct PushSender {
    shared: Arc<Shared>,
    lanes: Arc<Lanes>,
    /// Held from a save's sequence numbers to its deliveries' place in their lanes, so the
    /// lanes keep the outbox's order.
    queue_order: tokio::sync::Mutex<()>,
}

impl PushSender {
    /// A sender over `stores` (where configs are read at delivery). Opens the outbox and
    /// starts delivering what it holds, in order; call it inside a Tokio runtime. `Err`: the
    /// outbox directory cannot be created or read.
    pub fn start(stores: Arc<dyn Stores>, options: PushOptions) -> Result<PushSender, String> {
        let (outbox, pending) = Outbox::open(options.outbox.as_deref(), &options.store_name)?;
        let shared = Arc::new(Shared::new(stores, options, outbox));
        let lanes = Lanes::new(Arc::clone(&shared));
        if !pending.is_empty() {
            tracing::warn!(
                "push: {} deliveries left from an earlier run are being sent again",
                pending.len()
            );
            shared.reserve(pending.len(), true);
            lanes.enqueue(pending);
        }
        Ok(PushSender {
            shared,
            lanes,
            queue_order: tokio::sync::Mutex::new(()),
        })
    }

    /// The options it runs with.
    pub fn options(&self) -> &PushOptions {
        &self.shared.options
    }

    /// Deliveries queued or between attempts right now.
    pub fn queued(&self) -> usize {
        self.shared.queued()
    }

    /// Returns once every delivery queued so far is done: delivered, dropped or given up (for
    /// a graceful stop, and for tests).
    pub async fn drained(&self) {
        self.shared.drained().await
    }

    async fn queue(&self, namespace: Option<&str>, task: &Task) -> Result<(), String> {
        let store = self
            .shared
            .stores
            .store(namespace)
            .await
            .map_err(|e| format!("its store cannot be opened: {e}"))?;
        if !store.supports_push_configs() {
            return Ok(());
        }
        let configs = store
            .list_push_configs(task.id())
            .await
            .map_err(|e| format!("its push configs cannot be listed: {e}"))?;
        if configs.is_empty() {
            return Ok(());
        }
        let count = configs.len();
        if !self.shared.reserve(count, false) {
            return Err(format!(
                "{count} deliveries refused: {} are queued already, the most allowed",
                self.shared.queued()
            ));
        }
        let lanes: Vec<LaneKey> = configs
            .iter()
            .map(|config| LaneKey {
                namespace: namespace.map(str::to_owned),
                task_id: task.id().to_owned(),
                config_id: config.id().to_owned(),
            })
            .collect();
        let _order = self.queue_order.lock().await;
        let shared = Arc::clone(&self.shared);
        let task = task.clone();
        let max = shared.options.max_payload_bytes;
        let appended = if shared.outbox.is_durable() {
            tokio::task::spawn_blocking(move || shared.outbox.append(lanes, &task, max)).await
        } else {
            Ok(shared.outbox.append(lanes, &task, max))
        };
        let (written, error) = match appended {
            Ok(appended) => appended,
            Err(e) => (Vec::new(), Some(format!("writing the outbox failed: {e}"))),
        };
        self.shared.release(count - written.len());
        self.lanes.enqueue(written);
        error.map_or(Ok(()), Err)
    }
}

#[async_trait::async_trait]
impl PushNotifier for PushSender {
    fn check_url(&self, url: &str) -> Result<(), String> {
        url_policy::check_url(&self.shared.options.allow, url).map(|_| ())
    }

    fn seal(&self, config: Map<String, Value>) -> Result<Map<String, Value>, String> {
        secrets::seal_config(self.shared.options.key.as_ref(), config)
    }

    fn open(&self, config: Map<String, Value>) -> Result<Map<String, Value>, String> {
        secrets::open_config(self.shared.options.key.as_ref(), config)
    }

    async fn task_saved(&self, namespace: Option<&str>, task: &Task) {
        if let Err(why) = self.queue(namespace, task).await {
            tracing::warn!("push notifications of task {:?}: {why}", task.id());
        }
    }
}

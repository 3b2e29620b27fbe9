//! Push notifications for the toolnexus A2A server: [`PushSender`], the
//! [`PushNotifier`] that `tnstore serve` gives the service. The guarantees, the SSRF policy,
//! the bounds, secrets at rest and the outbox format are in the repository's
//! `docs/push-notifications.md`; in short:
//!
//! - before each save of a Task with push configs an intent is recorded in the outbox
//!   ([`outbox_intent`]); after it, one delivery per push config of the Task is written to the
//!   outbox ([`outbox`]) before the save's caller goes on and the intent dropped; a delivery
//!   leaves the outbox once it succeeded or was given up, so a restart delivers what was
//!   pending, and the Task of every intent left (at least once);
//! - capacity is shared fairly: deliveries queued and attempts in flight are bounded per
//!   namespace and per destination inside the overall bounds ([`capacity`]);
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
pub mod capacity;
pub mod http_post;
mod lanes;
pub mod options;
pub mod outbox;
pub mod outbox_entry;
pub mod outbox_intent;
pub mod outbox_slot;
pub mod payload;
mod queue_order;
mod saves;
pub mod secrets;
mod shared;
pub mod url_policy;

pub use options::PushOptions;
pub use secrets::SealKey;
pub use toolnexus_egress::allow_list::AllowList;

use lanes::Lanes;
use outbox::Outbox;
use queue_order::QueueOrder;
use saves::Saves;
use serde_json::{Map, Value};
use shared::Shared;
use std::sync::Arc;
use toolnexus_a2a_protocol::{PushNotifier, Stores};
use toolnexus_core::Task;

/// Delivers push notifications: see the crate docs.
pub struct PushSender {
    shared: Arc<Shared>,
    /// What a save queues, in order per namespace (its lanes, its intents).
    saves: Saves,
}

impl PushSender {
    /// A sender over `stores` (where configs are read at delivery). Opens the outbox and
    /// starts delivering what it holds, in order, then what the intents an earlier run left
    /// say was saved; call it inside a Tokio runtime. `Err`: the outbox directory cannot be
    /// created or read.
    pub fn start(stores: Arc<dyn Stores>, options: PushOptions) -> Result<PushSender, String> {
        let (outbox, pending) = Outbox::open(options.outbox.as_deref(), &options.store_name)?;
        let intents = outbox.intents()?;
        let shared = Arc::new(Shared::new(stores, options, outbox));
        let lanes = Lanes::new(Arc::clone(&shared));
        let saves = Saves {
            shared: Arc::clone(&shared),
            lanes: Arc::clone(&lanes),
            order: Arc::new(QueueOrder::default()),
            in_progress: Arc::default(),
        };
        if !pending.is_empty() {
            tracing::warn!(
                "push: {} deliveries left from an earlier run are being sent again",
                pending.len()
            );
            for item in &pending {
                shared.capacity.force(&item.share());
            }
            lanes.enqueue(pending.clone());
        }
        saves.recover(intents, &pending);
        Ok(PushSender { shared, saves })
    }

    /// The options it runs with.
    pub fn options(&self) -> &PushOptions {
        &self.shared.options
    }

    /// Deliveries queued or between attempts right now.
    pub fn queued(&self) -> usize {
        self.shared.capacity.queued()
    }

    /// Returns once every delivery queued so far is done: delivered, dropped or given up (for
    /// a graceful stop, and for tests).
    pub async fn drained(&self) {
        self.shared.capacity.drained().await
    }
}

#[async_trait::async_trait]
impl PushNotifier for PushSender {
    fn check_url(&self, url: &str) -> Result<(), String> {
        let uri = url_policy::check_url(&self.shared.options.allow, url)?;
        url_policy::check_scheme(self.shared.options.require_https, &uri)
    }

    fn seal(
        &self,
        namespace: Option<&str>,
        task_id: &str,
        config: Map<String, Value>,
    ) -> Result<Map<String, Value>, String> {
        let place = secrets::Place { namespace, task_id };
        secrets::seal_config(self.shared.options.key.as_ref(), place, config)
    }

    fn open(
        &self,
        namespace: Option<&str>,
        task_id: &str,
        config: Map<String, Value>,
    ) -> Result<Map<String, Value>, String> {
        let place = secrets::Place { namespace, task_id };
        secrets::open_config(self.shared.options.key.as_ref(), place, config)
    }

    async fn task_saving(&self, namespace: Option<&str>, task_id: &str) {
        self.saves.saving(namespace, task_id).await;
    }

    async fn task_not_saved(&self, namespace: Option<&str>, task_id: &str) {
        self.saves.not_saved(namespace, task_id);
    }

    async fn task_saved(&self, namespace: Option<&str>, task: &Task) {
        self.saves.saved(namespace, task).await;
    }
}

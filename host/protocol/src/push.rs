//! The seam between the A2A service and a push-notification sender: [`PushNotifier`], which the
//! host supplies (`toolnexus-push` in `tnstore serve`), and the shapes both sides agree on.
//!
//! The service owns the four config methods (they go through the store of the request's
//! namespace) and calls [`PushNotifier::task_saved`] after every save of a Task it makes. The
//! notifier owns everything that touches the network or secrets: which webhook URLs are
//! acceptable, sealing credentials before they are stored, and delivering.
//!
//! # A config as stored
//!
//! What the service saves with [`TaskStore::save_push_config`](toolnexus_core::TaskStore) is
//! one version-neutral JSON object, whatever the protocol version of the request:
//!
//! | member | |
//! |---|---|
//! | `id` | the config id (given by the client, or a UUID the service assigns) |
//! | `taskId` | the Task's id |
//! | `url` | the webhook URL |
//! | `token` | optional: the client's token, sent as `X-A2A-Notification-Token` |
//! | `authentication` | optional: `{"scheme": …, "credentials": …}` (0.3's `schemes` list becomes its first scheme) |
//! | `protocolVersion` | `"1.0"` or `"0.3"`: the version of the request that made it, which decides the payload's shape |
//!
//! after [`PushNotifier::seal`], which may replace the secret members (`token`,
//! `authentication.credentials`) with sealed forms of its own; [`PushNotifier::open`] restores
//! them. Nothing else of a config is secret.

use crate::wire::{self, Version};
use serde_json::{Map, Value, json};
use toolnexus_core::Task;

/// What the service needs of a push-notification sender.
#[async_trait::async_trait]
pub trait PushNotifier: Send + Sync {
    /// Checks a webhook URL a client gives, before anything is stored: syntax, scheme, and
    /// what the operator never allows. `Err` is the reason, which the client sees (-32602 on
    /// the field `url`). Addresses a name resolves to are checked again at each delivery.
    fn check_url(&self, url: &str) -> Result<(), String>;

    /// The config as it is to be stored (see the module docs): secrets sealed, or returned as
    /// they are when the operator gave no key. `Err` is an internal error.
    fn seal(&self, config: Map<String, Value>) -> Result<Map<String, Value>, String>;

    /// What [`seal`](Self::seal) made, opened again (for Get and List answers). A config this
    /// notifier cannot open (another key, tampered) is `Err`, naming why.
    fn open(&self, config: Map<String, Value>) -> Result<Map<String, Value>, String>;

    /// A Task of namespace `namespace` was saved by the service, as `task`: queue one delivery
    /// to each of its configs. Returns once the deliveries are queued (persisted, when the
    /// notifier persists them); it reports its own failures (a log line), since the save has
    /// happened either way.
    async fn task_saved(&self, namespace: Option<&str>, task: &Task);
}

/// The body of a delivery of `task` to a webhook whose config was made with `version`: A2A
/// 1.0's `StreamResponse` carrying the Task (`{"task": …}`), or, for 0.3, the Task object itself
/// (what the 0.3 SDKs post).
pub fn payload(task: &Task, version: Version) -> Value {
    let task = wire::task_out(&Value::Object(task.as_map().clone()), version);
    match version {
        Version::V1_0 => json!({ "task": task }),
        Version::V0_3 => task,
    }
}

/// The protocol version a stored config names in `protocolVersion` (1.0 when missing or
/// unknown).
pub fn config_version(config: &Map<String, Value>) -> Version {
    match config.get("protocolVersion").and_then(Value::as_str) {
        Some("0.3") => Version::V0_3,
        _ => Version::V1_0,
    }
}

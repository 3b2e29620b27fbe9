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
//! `authentication.credentials`) with sealed forms of its own, bound to the namespace and Task
//! the config is kept under and to its URL; [`PushNotifier::open`] restores them, there only.
//! Nothing else of a config is secret.

use crate::wire::{self, Version};
use serde_json::{Map, Value, json};
use toolnexus_core::Task;

/// The most push configs one Task may have; a create past it is refused (-32602), replacing
/// one by its id always passes. Every save of a Task becomes one delivery per config, so this
/// is the fan-out of each save: one config is what a client needs, a few serve a few
/// consumers, and ten is what an operator sizing `--push-max-queued` or a webhook's load can
/// reason about (the stores' own bound, `toolnexus_core::MAX_PUSH_CONFIGS_PER_TASK`, is
/// higher). Counted and saved under the Task's lock in a process; see
/// `docs/push-notifications.md` for replicas.
pub const MAX_CONFIGS_PER_TASK: usize = 10;

/// What the service needs of a push-notification sender.
#[async_trait::async_trait]
pub trait PushNotifier: Send + Sync {
    /// Checks a webhook URL a client gives, before anything is stored: syntax, scheme, and
    /// what the operator never allows. `Err` is the reason, which the client sees (-32602 on
    /// the field `url`). Addresses a name resolves to are checked again at each delivery.
    fn check_url(&self, url: &str) -> Result<(), String>;

    /// The config of Task `task_id` in namespace `namespace` (`None`: the root store) as it is
    /// to be stored (see the module docs): secrets sealed, or returned as they are when the
    /// operator gave no key. A sealed secret is to open only where it was sealed for: the same
    /// namespace, Task and config id, and the same `url` (so someone who can write the store
    /// but has no key cannot redirect it). `Err` is an internal error.
    fn seal(
        &self,
        namespace: Option<&str>,
        task_id: &str,
        config: Map<String, Value>,
    ) -> Result<Map<String, Value>, String>;

    /// What [`seal`](Self::seal) made, read from the store of `namespace` under Task
    /// `task_id`, opened again (for Get and List answers, and deliveries). A config this
    /// notifier cannot open there (another key; its URL or anything else bound changed; moved
    /// to another namespace or Task) is `Err`, naming why.
    fn open(
        &self,
        namespace: Option<&str>,
        task_id: &str,
        config: Map<String, Value>,
    ) -> Result<Map<String, Value>, String>;

    /// A Task of namespace `namespace` was saved by the service, as `task`: queue one delivery
    /// to each of its configs. Returns once the deliveries are queued (persisted, when the
    /// notifier persists them); it reports its own failures (a log line), since the save has
    /// happened either way.
    async fn task_saved(&self, namespace: Option<&str>, task: &Task);

    /// Task `task_id` of namespace `namespace` is about to be saved by the service (under the
    /// Task's lock, before the store is written): a notifier that persists its deliveries may
    /// record an intent here, so that a crash between the save and
    /// [`task_saved`](Self::task_saved) loses no notification. Followed by `task_saved` or,
    /// when nothing was saved after all, [`task_not_saved`](Self::task_not_saved). The
    /// default does nothing.
    async fn task_saving(&self, namespace: Option<&str>, task_id: &str) {
        let _ = (namespace, task_id);
    }

    /// The save announced by [`task_saving`](Self::task_saving) did not happen (the update
    /// was refused, had nothing to change, or the store failed). The default does nothing.
    async fn task_not_saved(&self, namespace: Option<&str>, task_id: &str) {
        let _ = (namespace, task_id);
    }
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

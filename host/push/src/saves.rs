//! What a save of a Task does to the sender: before it, an intent recorded in the outbox
//! ([`outbox_intent`](crate::outbox_intent)); after it, one delivery per push config queued
//! (each counted against its namespace's and destination's shares, or refused with a log line
//! naming the bound) and the intent dropped; at start, a delivery of what was saved for every
//! intent a crash left behind.

use crate::capacity::Share;
use crate::lanes::Lanes;
use crate::outbox::{LaneKey, Pending, trim};
use crate::outbox_intent::Intent;
use crate::queue_order::{Ordered, QueueOrder};
use crate::shared::Shared;
use crate::url_policy::destination_of;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use toolnexus_core::{PushConfig, Task, task_state};

/// The parts of a sender that queue deliveries.
#[derive(Clone)]
pub struct Saves {
    pub shared: Arc<Shared>,
    pub lanes: Arc<Lanes>,
    pub order: Arc<QueueOrder>,
    /// The configs [`saving`](Saves::saving) found for a save in progress, by namespace and
    /// Task, so the save's end does not list them again; an intent was written exactly when
    /// there are some, so a save of a Task without configs touches no file at its end. A
    /// Task's saves are one at a time (the service holds its lock from `saving` to the end).
    pub in_progress: Arc<Mutex<HashMap<SaveKey, Vec<PushConfig>>>>,
}

/// A save in progress: its namespace and Task id.
pub type SaveKey = (Option<String>, String);

fn key(namespace: Option<&str>, task_id: &str) -> SaveKey {
    (namespace.map(str::to_owned), task_id.to_owned())
}

/// How a namespace reads in a log line.
fn namespace_label(namespace: Option<&str>) -> String {
    namespace.map_or_else(
        || "the root namespace".to_owned(),
        |ns| format!("namespace {ns:?}"),
    )
}

impl Saves {
    /// The push configs of Task `task_id` (none where its store keeps no configs).
    async fn configs(
        &self,
        namespace: Option<&str>,
        task_id: &str,
    ) -> Result<Vec<PushConfig>, String> {
        let store = self
            .shared
            .stores
            .store(namespace)
            .await
            .map_err(|e| format!("its store cannot be opened: {e}"))?;
        if !store.supports_push_configs() {
            return Ok(Vec::new());
        }
        store
            .list_push_configs(task_id)
            .await
            .map_err(|e| format!("its push configs cannot be listed: {e}"))
    }

    /// Before a save of Task `task_id`: records the intent when the outbox is on disk and the
    /// Task has configs (a Task without any has nothing to lose).
    pub async fn saving(&self, namespace: Option<&str>, task_id: &str) {
        if !self.shared.outbox.is_durable() {
            return;
        }
        let configs = match self.configs(namespace, task_id).await {
            Ok(configs) => configs,
            Err(why) => {
                tracing::warn!("push: intent to save task {task_id:?} not recorded: {why}");
                return;
            }
        };
        let has_configs = !configs.is_empty();
        self.lock_in_progress()
            .insert(key(namespace, task_id), configs);
        if !has_configs {
            return;
        }
        let intent = Intent {
            namespace: namespace.map(str::to_owned),
            task_id: task_id.to_owned(),
        };
        // Under the namespace's order, so a recovery at start never drops a newer intent.
        let _order = self.order.lock(namespace).await;
        let shared = Arc::clone(&self.shared);
        let recorded =
            tokio::task::spawn_blocking(move || shared.outbox.record_intent(&intent)).await;
        let failed = match recorded {
            Ok(result) => result.err(),
            Err(e) => Some(e.to_string()),
        };
        if let Some(why) = failed {
            tracing::warn!(
                "push: intent to save task {task_id:?} in {} not recorded (a crash before its \
                 deliveries are written would lose them): {why}",
                namespace_label(namespace)
            );
        }
    }

    fn lock_in_progress(&self) -> std::sync::MutexGuard<'_, HashMap<SaveKey, Vec<PushConfig>>> {
        self.in_progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A save of Task `task_id` did not happen after all: its intent goes.
    pub fn not_saved(&self, namespace: Option<&str>, task_id: &str) {
        let listed = self.lock_in_progress().remove(&key(namespace, task_id));
        if listed.is_some_and(|configs| !configs.is_empty()) {
            self.forget_intent(namespace, task_id);
        }
    }

    fn forget_intent(&self, namespace: Option<&str>, task_id: &str) {
        self.shared.outbox.forget_intent(&Intent {
            namespace: namespace.map(str::to_owned),
            task_id: task_id.to_owned(),
        });
    }

    /// After a save: one delivery of `task` per config queued (or refused by a bound), then
    /// the intent dropped; kept when the configs cannot be listed or the outbox written.
    pub async fn saved(&self, namespace: Option<&str>, task: &Task) {
        if let Some(state) = &self.shared.options.abort_after_save_in_state
            && task_state(task) == state
        {
            // The crash tests' hook: a kill between the save and its deliveries' entries.
            eprintln!("push: aborting after the save of a {state} Task, as asked");
            std::process::abort();
        }
        let listed = self.lock_in_progress().remove(&key(namespace, task.id()));
        let intent = listed.as_ref().is_some_and(|configs| !configs.is_empty());
        let queued = async {
            let configs = match listed {
                Some(configs) => configs,
                None => self.configs(namespace, task.id()).await?,
            };
            if configs.is_empty() {
                return Ok(());
            }
            let _order = self.order.lock(namespace).await;
            self.queue(namespace, task, configs, |_| false, false).await
        };
        match queued.await {
            Ok(()) if intent => self.forget_intent(namespace, task.id()),
            Ok(()) => {}
            // The intent stays: the next start queues the Task's latest state.
            Err(why) => tracing::warn!(
                "push notifications of task {:?}: {why}; with an outbox on disk, the next start \
                 queues the Task's latest state",
                task.id()
            ),
        }
    }

    /// Queues one delivery of `task` per config (but the lanes `skip` names), with the
    /// namespace's order lock held by the caller. `force`: whatever the bounds (recovery).
    async fn queue(
        &self,
        namespace: Option<&str>,
        task: &Task,
        configs: Vec<PushConfig>,
        skip: impl Fn(&LaneKey) -> bool,
        force: bool,
    ) -> Result<(), String> {
        let capacity = &self.shared.capacity;
        let mut lanes = Vec::with_capacity(configs.len());
        // Per bound that refused: the configs it refused, in order.
        let mut refused: Vec<(String, Vec<&str>)> = Vec::new();
        for config in &configs {
            let lane = LaneKey {
                namespace: namespace.map(str::to_owned),
                task_id: task.id().to_owned(),
                config_id: config.id().to_owned(),
            };
            if skip(&lane) {
                continue;
            }
            let url = config
                .to_map()
                .get("url")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let share = Share {
                namespace: lane.namespace.clone(),
                destination: url.as_deref().and_then(destination_of),
            };
            if force {
                capacity.force(&share);
            } else if let Err(why) = capacity.reserve(&share) {
                match refused.iter_mut().find(|(reason, _)| *reason == why) {
                    Some((_, ids)) => ids.push(config.id()),
                    None => refused.push((why, vec![config.id()])),
                }
                continue;
            }
            lanes.push((lane, share.destination));
        }
        for (why, ids) in &refused {
            const SHOWN: usize = 3;
            let mut named: Vec<String> =
                ids.iter().take(SHOWN).map(|id| format!("{id:?}")).collect();
            if ids.len() > SHOWN {
                named.push(format!("and {} more", ids.len() - SHOWN));
            }
            tracing::warn!(
                "push deliveries of task {:?} in {} refused ({} of them, to configs {}): {why}",
                task.id(),
                namespace_label(namespace),
                ids.len(),
                named.join(", ")
            );
        }
        if lanes.is_empty() {
            return Ok(());
        }
        let shares: Vec<Share> = lanes
            .iter()
            .map(|(lane, destination)| Share {
                namespace: lane.namespace.clone(),
                destination: destination.clone(),
            })
            .collect();
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
        for share in &shares[written.len()..] {
            capacity.release(share);
        }
        self.lanes.enqueue(written);
        error.map_or(Ok(()), Err)
    }

    /// At start: for each intent an earlier run left, a delivery of its Task as the store
    /// holds it now to each of its configs, after what the outbox held (`pending`, already
    /// queued) and unless the last delivery pending in that lane holds that same Task. The
    /// namespaces' order locks are taken before this returns and held until every intent of
    /// theirs is handled, so no new save of theirs is queued before (or loses its intent to)
    /// the recovery. Call it inside a Tokio runtime.
    pub fn recover(&self, intents: Vec<Intent>, pending: &[Pending]) {
        if intents.is_empty() {
            return;
        }
        let mut held: HashMap<Option<String>, Ordered> = HashMap::new();
        for intent in &intents {
            let namespace = intent.namespace.as_deref();
            if !held.contains_key(&intent.namespace)
                && let Some(guard) = self.order.try_lock(namespace)
            {
                held.insert(intent.namespace.clone(), guard);
            }
        }
        let last: HashMap<LaneKey, Pending> = pending
            .iter()
            .map(|p| (p.lane.clone(), p.clone()))
            .collect();
        tracing::warn!(
            "push: {} saves of an earlier run may have no deliveries written; queueing their \
             Tasks' latest states",
            intents.len()
        );
        let saves = self.clone();
        tokio::spawn(async move {
            for intent in intents {
                saves.recover_one(&intent, &last).await;
            }
            drop(held);
        });
    }

    async fn recover_one(&self, intent: &Intent, last: &HashMap<LaneKey, Pending>) {
        let namespace = intent.namespace.as_deref();
        let found = async {
            let store = self
                .shared
                .stores
                .store(namespace)
                .await
                .map_err(|e| format!("its store cannot be opened: {e}"))?;
            store
                .get(&intent.task_id)
                .await
                .map_err(|e| format!("it cannot be read: {e}"))
        };
        let task = match found.await {
            Ok(Some(task)) => task,
            // Deleted since: nothing to tell.
            Ok(None) => return self.not_saved(namespace, &intent.task_id),
            Err(why) => {
                // Left for the next start, when the store may answer.
                tracing::warn!(
                    "push: the save of task {:?} in {} cannot be recovered now: {why}",
                    intent.task_id,
                    namespace_label(namespace)
                );
                return;
            }
        };
        let trimmed = trim(&task);
        let already_pending = |lane: &LaneKey| {
            last.get(lane)
                .and_then(|p| self.shared.outbox.load(p).ok())
                .is_some_and(|loaded| {
                    loaded.task == task || (loaded.trimmed && loaded.task == trimmed)
                })
        };
        let queued = match self.configs(namespace, task.id()).await {
            Ok(configs) => {
                self.queue(namespace, &task, configs, already_pending, true)
                    .await
            }
            Err(why) => Err(why),
        };
        if let Err(why) = queued {
            tracing::warn!(
                "push: the save of task {:?} in {} cannot be recovered: {why}",
                task.id(),
                namespace_label(namespace)
            );
        }
        self.not_saved(namespace, task.id());
    }
}

//! The events of Tasks whose agent runs in this process, exactly as the run emitted them.
//!
//! A run publishes each event after its save succeeded, together with the Task as saved, under
//! one lock: a subscriber that attaches takes the Task as of its last event and a receiver of
//! every event after it, so what it shows is the store's state and then each change, in order,
//! none merged or left out, and every subscriber sees the same sequence. Subscribers to a Task
//! whose run is elsewhere (another replica) read the store instead (`subscription`).

use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// How many events a subscriber may fall behind before its stream ends (it can resubscribe:
/// it then gets the Task as it is, and the events after).
pub(crate) const EVENT_BACKLOG: usize = 4096;

/// One event of a run, in the stored form (converted to each subscriber's version on the way
/// out).
#[derive(Debug, Clone)]
pub(crate) enum Event {
    /// A new status; `final_` when the Task is terminal or waits for the user.
    Status { status: Value, final_: bool },
    /// An artifact update (for an append, only the new parts).
    Artifact {
        artifact: Value,
        append: bool,
        last_chunk: bool,
    },
    /// The agent's direct answer (`Outcome::Reply`).
    Message(Value),
}

/// An event as subscribers receive it, with the Task as saved with it (after the events
/// published with it, too), so a subscriber that falls behind or outlives the run knows
/// where it is.
#[derive(Debug, Clone)]
pub(crate) struct Published {
    pub(crate) event: Event,
    pub(crate) task: Arc<Value>,
}

/// The live events of one Task.
pub(crate) struct TaskEvents {
    inner: Mutex<Latest>,
}

struct Latest {
    /// The Task as saved with the last event published.
    task: Arc<Value>,
    /// Made by the first subscriber: most runs have none (a send that waits reads the
    /// store), and a channel's backlog is allocated whole when it is made.
    sender: Option<broadcast::Sender<Published>>,
}

impl TaskEvents {
    fn new(task: Value) -> Self {
        TaskEvents {
            inner: Mutex::new(Latest {
                task: Arc::new(task),
                sender: None,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Latest> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends `events`, which `task` (as saved) reflects, to every attached subscriber.
    pub(crate) fn publish(&self, task: Value, events: Vec<Event>) {
        let task = Arc::new(task);
        let mut latest = self.lock();
        latest.task = Arc::clone(&task);
        let Some(sender) = &latest.sender else {
            return;
        };
        for event in events {
            let task = Arc::clone(&task);
            // No receiver left is fine: nobody listens any more.
            let _ = sender.send(Published { event, task });
        }
    }

    /// The Task as of the last event, and a receiver of every later one.
    pub(crate) fn attach(&self) -> (Value, broadcast::Receiver<Published>) {
        let mut latest = self.lock();
        let receiver = latest
            .sender
            .get_or_insert_with(|| broadcast::channel(EVENT_BACKLOG).0)
            .subscribe();
        (Value::clone(&latest.task), receiver)
    }
}

/// The live events of every Task whose run is in this process, by key (namespace and id).
#[derive(Default)]
pub(crate) struct LiveEvents {
    runs: Mutex<HashMap<String, Arc<TaskEvents>>>,
}

impl LiveEvents {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<TaskEvents>>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens the events of a run starting on `task` (as saved). A run replaces an older entry
    /// of the same Task (whose subscribers keep their receiver until its sender goes).
    pub(crate) fn open(&self, key: String, task: Value) -> Arc<TaskEvents> {
        let events = Arc::new(TaskEvents::new(task));
        self.lock().insert(key, Arc::clone(&events));
        events
    }

    /// The run's events of Task `key`, if it runs here.
    pub(crate) fn get(&self, key: &str) -> Option<Arc<TaskEvents>> {
        self.lock().get(key).cloned()
    }

    /// Ends the run's entry (if it is still `events`): attached subscribers see the channel
    /// close after its last event.
    pub(crate) fn close(&self, key: &str, events: &Arc<TaskEvents>) {
        let mut runs = self.lock();
        if runs.get(key).is_some_and(|e| Arc::ptr_eq(e, events)) {
            runs.remove(key);
        }
    }
}

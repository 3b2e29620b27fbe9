//! The events of Tasks whose agent runs in this process, exactly as the run emitted them.
//!
//! A run publishes each event after its save succeeded, and the Task as saved with it, under
//! one lock: a subscriber that attaches takes the Task as of its last event and a receiver of
//! every event after it, so what it shows is the store's state and then each change, in order,
//! none merged or left out, and every subscriber sees the same sequence. Only the latest Task is
//! kept (for the next subscriber to attach): an event carries its own change, never a copy of
//! the Task, so what a slow subscriber holds is what it has not read. Subscribers to a Task
//! whose run is elsewhere (another replica) read the store instead (`subscription`).

use crate::event_queue::{QueueReceiver, QueueSender, queue};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use toolnexus_core::Task;

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

impl Event {
    /// The bytes it is counted for in a subscriber's backlog: its JSON's length.
    fn size(&self) -> usize {
        let value = match self {
            Event::Status { status, .. } => status,
            Event::Artifact { artifact, .. } => artifact,
            Event::Message(message) => message,
        };
        json_size(value)
    }
}

/// The length of `value` as JSON, counted without keeping the text.
fn json_size(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter fails only if the value cannot be JSON, which a Value always can.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// The live events of one Task.
pub(crate) struct TaskEvents {
    /// The most bytes of events one subscriber may leave unread before it is cut.
    max_backlog_bytes: usize,
    inner: Mutex<Latest>,
}

struct Latest {
    /// The Task as saved with the last event published.
    task: Value,
    /// Each attached subscriber's queue.
    subscribers: Vec<QueueSender<Event>>,
}

impl TaskEvents {
    fn new(task: Value, max_backlog_bytes: usize) -> Self {
        TaskEvents {
            max_backlog_bytes,
            inner: Mutex::new(Latest {
                task,
                subscribers: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Latest> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends `events`, which `task` (as saved) reflects, to every attached subscriber. A
    /// subscriber that would pass its backlog bound is cut and dropped from the list, as is one
    /// that went away.
    pub(crate) fn publish(&self, task: Task, events: Vec<Event>) {
        let task = task.into_value();
        let mut latest = self.lock();
        latest.task = task;
        if latest.subscribers.is_empty() {
            return;
        }
        let sized: Vec<(Event, usize)> = events
            .into_iter()
            .map(|event| {
                let size = event.size();
                (event, size)
            })
            .collect();
        let max = self.max_backlog_bytes;
        latest.subscribers.retain(|subscriber| {
            !subscriber.is_abandoned()
                && sized
                    .iter()
                    .all(|(event, size)| subscriber.push(event.clone(), *size, max))
        });
    }

    /// The Task as of the last event, and a receiver of every later one.
    pub(crate) fn attach(&self) -> (Value, QueueReceiver<Event>) {
        let (sender, receiver) = queue();
        let mut latest = self.lock();
        latest.subscribers.push(sender);
        (latest.task.clone(), receiver)
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

    /// Opens the events of a run starting on `task` (as saved), each subscriber's unread ones
    /// bounded by `max_backlog_bytes`. A run replaces an older entry of the same Task (whose
    /// subscribers keep their receiver until its sender goes).
    pub(crate) fn open(
        &self,
        key: String,
        task: Value,
        max_backlog_bytes: usize,
    ) -> Arc<TaskEvents> {
        let events = Arc::new(TaskEvents::new(task, max_backlog_bytes));
        self.lock().insert(key, Arc::clone(&events));
        events
    }

    /// The run's events of Task `key`, if it runs here.
    pub(crate) fn get(&self, key: &str) -> Option<Arc<TaskEvents>> {
        self.lock().get(key).cloned()
    }

    /// Ends the run's entry (if it is still `events`): attached subscribers get its events
    /// to the last, then the end.
    pub(crate) fn close(&self, key: &str, events: &Arc<TaskEvents>) {
        let mut runs = self.lock();
        if runs.get(key).is_some_and(|e| Arc::ptr_eq(e, events)) {
            runs.remove(key);
        }
        drop(runs);
        events.lock().subscribers.clear();
    }
}

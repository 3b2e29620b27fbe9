//! How many event streams each owner and each Task hold open now, against
//! [`OwnerLimits`]' bounds.

use crate::error::{A2aError, ErrorKind};
use crate::owner_limits::OwnerLimits;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The streams open now, per namespace and per Task.
#[derive(Default)]
pub(crate) struct OpenStreams {
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    per_owner: HashMap<String, usize>,
    per_task: HashMap<String, usize>,
}

/// One open stream, counted until it is dropped.
pub(crate) struct StreamSlot {
    streams: Arc<OpenStreams>,
    owner: String,
    task: String,
}

impl OpenStreams {
    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a new stream of namespace `owner` (its key) on Task `task` (its key, namespace
    /// and id), if both have room.
    pub(crate) fn open(
        self: &Arc<Self>,
        limits: &OwnerLimits,
        owner: &str,
        task: &str,
    ) -> Result<StreamSlot, A2aError> {
        let mut counts = self.lock();
        let of_owner = counts.per_owner.get(owner).copied().unwrap_or(0);
        if of_owner >= limits.max_streams_per_owner {
            return Err(A2aError::new(
                ErrorKind::LimitReached,
                format!(
                    "{of_owner} streams are open for this caller, the most allowed; close one \
                     first"
                ),
            ));
        }
        let of_task = counts.per_task.get(task).copied().unwrap_or(0);
        if of_task >= limits.max_streams_per_task {
            return Err(A2aError::new(
                ErrorKind::LimitReached,
                format!("{of_task} streams are open on this task, the most allowed"),
            ));
        }
        *counts.per_owner.entry(owner.to_owned()).or_default() += 1;
        *counts.per_task.entry(task.to_owned()).or_default() += 1;
        Ok(StreamSlot {
            streams: Arc::clone(self),
            owner: owner.to_owned(),
            task: task.to_owned(),
        })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut counts = self.streams.lock();
        let counts = &mut *counts;
        for (map, key) in [
            (&mut counts.per_owner, &self.owner),
            (&mut counts.per_task, &self.task),
        ] {
            if let Some(n) = map.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    map.remove(key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_counted_per_owner_and_per_task_until_dropped() {
        let limits = OwnerLimits {
            max_streams_per_owner: 3,
            max_streams_per_task: 2,
            ..OwnerLimits::default()
        };
        let open = Arc::new(OpenStreams::default());
        let a1 = open.open(&limits, "alice", "alice/t1").unwrap();
        let _a2 = open.open(&limits, "alice", "alice/t1").unwrap();
        let refused = open.open(&limits, "alice", "alice/t1").err().unwrap();
        assert_eq!(refused.kind, ErrorKind::LimitReached);
        assert!(
            refused.message.contains("on this task"),
            "{}",
            refused.message
        );
        let _a3 = open.open(&limits, "alice", "alice/t2").unwrap();
        let refused = open.open(&limits, "alice", "alice/t3").err().unwrap();
        assert!(
            refused.message.contains("for this caller"),
            "{}",
            refused.message
        );
        // Another owner is not held back by alice's streams.
        let _b = open.open(&limits, "bob", "bob/t1").unwrap();
        drop(a1);
        let _a4 = open.open(&limits, "alice", "alice/t1").unwrap();
        assert_eq!(open.lock().per_owner["alice"], 3);
    }
}

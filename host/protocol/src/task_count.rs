//! Counting work in progress (a service's background runs, the requests and connections a
//! server is handling), so that a graceful stop can wait for it to end. The one counter the
//! protocol crate, the HTTP server and the component server share.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::Notify;

/// How many of something are in progress; [`TaskCount::idle`] waits for none.
#[derive(Debug, Default)]
pub struct TaskCount {
    running: AtomicUsize,
    ended: Notify,
}

/// One piece of work in progress, counted until dropped.
pub struct Running(Arc<TaskCount>);

impl TaskCount {
    pub fn start(self: &Arc<Self>) -> Running {
        self.running.fetch_add(1, Ordering::AcqRel);
        Running(Arc::clone(self))
    }

    pub fn running(&self) -> usize {
        self.running.load(Ordering::Acquire)
    }

    /// Ready once nothing is in progress.
    pub async fn idle(&self) {
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            // Registered before the count is read: an end between the two is not missed.
            ended.as_mut().enable();
            if self.running() == 0 {
                return;
            }
            ended.await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.ended.notify_waiters();
        }
    }
}

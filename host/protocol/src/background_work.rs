//! The service's background work (the agents' runs, the agents' cancel hooks), counted on the
//! way to the host's executor, so a host that stops can wait for it to end.

use crate::service_config::Spawn;
use crate::task_count::TaskCount;
use futures_util::future::BoxFuture;
use std::sync::Arc;

/// The host's executor, counting what it is given.
pub(crate) struct CountingSpawn {
    pub(crate) host: Arc<dyn Spawn>,
    pub(crate) work: Arc<TaskCount>,
}

impl Spawn for CountingSpawn {
    fn spawn(&self, future: BoxFuture<'static, ()>) {
        // Counted from here, synchronously: a run is in progress from the moment the send
        // that starts it hands it over, before the executor first polls it. The count ends
        // when the future is dropped, finished or not.
        let running = self.work.start();
        self.host.spawn(Box::pin(async move {
            let _running = running;
            future.await;
        }));
    }
}

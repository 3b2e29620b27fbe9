//! Listeners of a Task's saves (streams and waiting sends), woken after each save in this process,
//! with the poll interval as the fallback for saves by other replicas.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// One sender per Task with a listener in this process (a stream or a waiting send). An entry
/// goes when its last listener does ([`SaveListener`]'s drop), or at the next save with none left.
pub(crate) type SaveListeners = Arc<Mutex<HashMap<String, watch::Sender<u64>>>>;

/// A listener's receiver; dropping the last one for a Task removes the Task's entry, so the
/// map holds only Tasks someone listens to (a client subscribing to unknown ids leaves nothing).
pub(crate) struct SaveListener {
    pub(crate) rx: watch::Receiver<u64>,
    pub(crate) key: String,
    pub(crate) save_listeners: SaveListeners,
}

impl Drop for SaveListener {
    fn drop(&mut self) {
        let mut save_listeners = self
            .save_listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // Our own receiver still counts here.
        if save_listeners
            .get(&self.key)
            .is_some_and(|sender| sender.receiver_count() <= 1)
        {
            save_listeners.remove(&self.key);
        }
    }
}

pub(crate) async fn wait_for_change(saves: &mut SaveListener, poll: Duration) {
    tokio::select! {
        changed = saves.rx.changed() => {
            if changed.is_err() {
                tokio::time::sleep(poll).await;
            }
        }
        () = tokio::time::sleep(poll) => {}
    }
}

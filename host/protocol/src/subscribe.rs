//! `SubscribeToTask`: the events of a Task that is not terminal yet.

use crate::error::{A2aError, ErrorKind};
use crate::scope::At;
use crate::service_state::ServiceState;
use crate::subscription::Subscription;
use crate::wire::Version;
use std::sync::Arc;
use toolnexus_core::state::is_terminal_state;
use toolnexus_core::task_state;

impl ServiceState {
    pub(crate) async fn subscribe(
        self: &Arc<Self>,
        at: &At,
        id: &str,
        version: Version,
    ) -> Result<Subscription, A2aError> {
        let slot = self
            .open_streams
            .open(&self.config.owner_limits, &at.ns, &at.key(id))?;
        let saves = self.listen_for_saves(at, id);
        let task = at
            .store
            .get(id)
            .await?
            .ok_or_else(|| A2aError::not_found(id))?;
        let state = task_state(&task);
        if is_terminal_state(state) {
            return Err(A2aError::new(
                ErrorKind::UnsupportedOperation,
                format!(
                    "task {id} is in a terminal state ({state}): there is nothing to subscribe to"
                ),
            ));
        }
        // Where the run is here: the Task as of its last event, and every event after it.
        let (snapshot, live) = match self.live.get(&at.key(id)) {
            Some(events) => {
                let (snapshot, receiver) = events.attach();
                (snapshot, Some(receiver))
            }
            None => (task.into_value(), None),
        };
        Ok(Subscription::new(
            Arc::clone(self),
            at.clone(),
            id.to_owned(),
            version,
            saves,
            (snapshot, live, slot),
            false,
        ))
    }
}

//! `SubscribeToTask`: the events of a Task that is not terminal yet.

use crate::error::{A2aError, ErrorKind};
use crate::scope::At;
use crate::service_state::ServiceState;
use crate::subscription::Subscription;
use crate::wire::Version;
use toolnexus_core::state::is_terminal_state;
use toolnexus_core::task_state;

impl ServiceState {
    pub(crate) async fn subscribe(
        &self,
        at: &At,
        id: &str,
        version: Version,
    ) -> Result<Subscription, A2aError> {
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
        Ok(Subscription::new(
            at.clone(),
            id.to_owned(),
            version,
            saves,
            task.into_value(),
            false,
            self.config.poll_interval,
        ))
    }
}

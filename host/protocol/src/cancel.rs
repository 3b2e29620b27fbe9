//! `CancelTask`: the Task saved `canceled` (unless terminal), and its agent, if it runs here,
//! told to stop.

use crate::error::{A2aError, ErrorKind};
use crate::scope::At;
use crate::service_state::ServiceState;
use crate::task_json::with_status;
use crate::wire::{Version, task_out};
use serde_json::Value;
use toolnexus_core::state::is_terminal_state;
use toolnexus_core::transition::Step;
use toolnexus_core::{Task, task_state};

impl ServiceState {
    pub(crate) async fn cancel(
        &self,
        at: &At,
        id: &str,
        version: Version,
    ) -> Result<Value, A2aError> {
        let step = |task: &Task| {
            let current = task_state(task);
            if is_terminal_state(current) {
                return Err(A2aError::new(
                    ErrorKind::TaskNotCancelable,
                    format!("task cannot be canceled: it is {current}"),
                ));
            }
            Ok(Step::Save(with_status(task, "canceled", None)?))
        };
        let result = self.transition(at, id, None, step).await;
        if result.is_ok()
            && let Some(signal) = self.lock_map(&self.cancels).get(&at.key(id))
        {
            signal.send_replace(true);
        }
        let canceled =
            result?.ok_or_else(|| A2aError::internal(format!("task {id} was not canceled")))?;
        Ok(task_out(&canceled.into_value(), version))
    }
}

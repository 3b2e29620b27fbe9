//! `CancelTask`: the Task saved `canceled` (unless terminal), and its agent, if it runs here,
//! told to stop.

use crate::agent::CanceledTask;
use crate::error::{A2aError, ErrorKind};
use crate::live_events::Event;
use crate::scope::{At, Scope};
use crate::service_state::ServiceState;
use crate::task_json::with_status;
use crate::wire::{Version, task_out};
use serde_json::Value;
use std::sync::Arc;
use toolnexus_core::state::is_terminal_state;
use toolnexus_core::transition::Step;
use toolnexus_core::{Task, task_state};

impl ServiceState {
    pub(crate) async fn cancel(
        &self,
        at: &At,
        scope: &Scope,
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
        let result = self.transition(at, id, None, None, step).await;
        if let Ok(Some(canceled)) = &result {
            // The run's subscribers get the cancel as the run's last event.
            if let Some(events) = self.live.get(&at.key(id)) {
                let status = canceled.get("status").cloned().unwrap_or_default();
                events.publish(
                    canceled.clone(),
                    vec![Event::Status {
                        status,
                        final_: true,
                    }],
                );
            }
            if let Some(signal) = self.lock_map(&self.cancels).get(&at.key(id)) {
                signal.send_replace(true);
            }
            // The agent may release what it holds elsewhere; the Task stays canceled.
            let agent = Arc::clone(&self.config.agent);
            let task = CanceledTask {
                task_id: id.to_owned(),
                context_id: canceled
                    .get("contextId")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                owner: scope.owner.clone(),
                tenant: scope.tenant.clone(),
            };
            self.spawn.spawn(Box::pin(async move {
                agent.cancel(&task).await;
            }));
        }
        let canceled =
            result?.ok_or_else(|| A2aError::internal(format!("task {id} was not canceled")))?;
        Ok(task_out(&canceled.into_value(), version))
    }
}

//! The composed agent, as the protocol's [`Agent`]: `toolnexus:a2a/agent` imported from the
//! agent component, its `task` updates through the run bridge (`toolnexus:a2a-server/run`).
//!
//! `agent.handle` is a synchronous call into the agent: nothing else runs in this instance
//! until it returns. Meanwhile the bridge keeps the agent's updates (and answers
//! `is-canceled` from the store); then they are replayed here, in order, through the run's
//! [`Work`], which saves and publishes each one exactly as for a native agent, and the outcome
//! follows. An update the replay refuses ends the replay: `stopped` (the Task was canceled or
//! ended meanwhile) quietly, anything else fails the run naming the refusal.

use crate::bindings::toolnexus::a2a::agent;
use crate::bindings::toolnexus::a2a_server::run;
use crate::convert::{artifact_from_wit, message_from_wit, outcome_from_wit, request_to_wit};
use toolnexus_a2a_protocol::{Agent, CanceledTask, EmitError, Outcome, Work};

/// The agent component this component was composed with.
pub struct ImportedAgent;

async fn replay(work: &Work, updates: Vec<run::Update>) -> Result<(), String> {
    for (index, update) in updates.into_iter().enumerate() {
        let emitted = match update {
            run::Update::Status(message) => {
                let message = message
                    .map(|m| message_from_wit(m, &format!("update {index}'s")))
                    .transpose()?;
                work.update_status(message).await
            }
            run::Update::Artifact(a) => {
                let artifact =
                    artifact_from_wit(a.artifact).map_err(|e| format!("update {index}: {e}"))?;
                work.update_artifact(artifact, a.append, a.last_chunk).await
            }
        };
        match emitted {
            Ok(()) => {}
            Err(EmitError::Stopped) => return Ok(()),
            Err(e) => return Err(format!("update {index} was refused: {e}")),
        }
    }
    Ok(())
}

#[async_trait::async_trait]
impl Agent for ImportedAgent {
    async fn run(&self, work: &mut Work) -> Result<Outcome, String> {
        let request = request_to_wit(work.request());
        run::begin(&request.task_id);
        let outcome = agent::handle(&request);
        let updates = run::end();
        replay(work, updates).await?;
        outcome_from_wit(outcome)
    }

    /// The composed agent exports `agent` only (what composition can rely on), so it is told of
    /// a cancel without the owner and tenant (`scoped-cancel` is for the native host).
    async fn cancel(&self, task: &CanceledTask) {
        agent::cancel(&task.task_id, &task.context_id);
    }
}

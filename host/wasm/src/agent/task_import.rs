//! The `task` import the host serves to an agent component: each call acts on the Task of the
//! running `handle` through its [`Updater`], which the run puts in the instance's call context
//! for that call only. Outside a `handle` call there is none, and every update answers
//! `stopped`.

use crate::agent::contract::{task, wit};
use crate::agent::convert::{artifact_from_wit, message_from_wit};
use crate::sandbox::state::InstanceState;
use toolnexus_a2a_protocol::{EmitError, Updater};
use wasmtime::component::{HasData, Linker};

/// Adds the `toolnexus:a2a/task` import to `linker`.
pub(crate) fn add_to_linker(linker: &mut Linker<InstanceState>) -> wasmtime::Result<()> {
    task::add_to_linker::<InstanceState, TaskImport>(linker, task_import)
}

/// The run an import call acts on, if one is in progress.
pub(crate) struct TaskImport(Option<Updater>);

impl HasData for TaskImport {
    type Data<'a> = TaskImport;
}

fn task_import(state: &mut InstanceState) -> TaskImport {
    TaskImport(
        state
            .call_context
            .as_ref()
            .and_then(|context| context.downcast_ref::<Updater>())
            .cloned(),
    )
}

fn to_wit(err: EmitError) -> wit::EmitError {
    match err {
        EmitError::Stopped => wit::EmitError::Stopped,
        EmitError::Invalid(m) => wit::EmitError::Invalid(m),
        EmitError::Limit(m) => wit::EmitError::Limit(m),
        EmitError::Unavailable(m) => wit::EmitError::Unavailable(m),
    }
}

impl wit::Host for TaskImport {}

impl task::Host for TaskImport {
    async fn update_status(&mut self, message: Option<wit::Message>) -> Result<(), wit::EmitError> {
        let Some(updater) = &self.0 else {
            return Err(wit::EmitError::Stopped);
        };
        let message = message
            .map(|m| message_from_wit(m, "the status"))
            .transpose()
            .map_err(wit::EmitError::Invalid)?;
        updater.update_status(message).await.map_err(to_wit)
    }

    async fn update_artifact(
        &mut self,
        artifact: wit::Artifact,
        append: bool,
        last_chunk: bool,
    ) -> Result<(), wit::EmitError> {
        let Some(updater) = &self.0 else {
            return Err(wit::EmitError::Stopped);
        };
        let artifact = artifact_from_wit(artifact).map_err(wit::EmitError::Invalid)?;
        updater
            .update_artifact(artifact, append, last_chunk)
            .await
            .map_err(to_wit)
    }

    async fn is_canceled(&mut self) -> bool {
        // Outside a run there is nothing to work on: as good as canceled.
        self.0.as_ref().is_none_or(Updater::is_canceled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::contract::task::Host as _;

    fn said() -> wit::Message {
        wit::Message {
            message_id: None,
            role: wit::Role::Agent,
            parts: Vec::new(),
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    #[tokio::test]
    async fn outside_a_run_every_call_answers_stopped() {
        let mut outside = TaskImport(None);
        assert!(matches!(
            outside.update_status(Some(said())).await,
            Err(wit::EmitError::Stopped)
        ));
        let artifact = wit::Artifact {
            artifact_id: "a".into(),
            name: None,
            description: None,
            parts: Vec::new(),
            metadata: None,
            extensions: Vec::new(),
        };
        assert!(matches!(
            outside.update_artifact(artifact, false, true).await,
            Err(wit::EmitError::Stopped)
        ));
        assert!(outside.is_canceled().await);
    }
}

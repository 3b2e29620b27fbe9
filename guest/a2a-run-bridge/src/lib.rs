//! # `toolnexus-a2a-run-bridge`: the agent's `task`, for the composed A2A server
//!
//! In a composition of an agent, the A2A server component (`guest/a2a-server`) and a store,
//! the agent imports `toolnexus:a2a/task` (its updates) and the server imports the agent. The
//! server cannot also export `task`: the two would import each other, and a composition has no
//! cycles. This component exports `task` to the agent and `toolnexus:a2a-server/run` to the
//! server (world `toolnexus:a2a-server/run-bridge`, `wit/a2a-server/server.wit`):
//!
//! - `run.begin(task-id)` opens a run; the agent's `update-status` / `update-artifact` until
//!   `run.end()` are kept in order, within bounds ([`updates`]); `end` hands them to the server,
//!   which saves and publishes each one as the native server does.
//! - `is-canceled` reads the Task from the imported store: a terminal state (a `CancelTask`
//!   from any request or replica saved `canceled`) means the agent should stop, and every
//!   update after that answers `stopped`.
//!
//! It keeps nothing but the open run, and only while `agent.handle` runs.
//!
//! ```text
//! cargo build -p toolnexus-a2a-run-bridge --target wasm32-wasip2 --release
//! ```

pub mod updates;

#[cfg(target_arch = "wasm32")]
mod component {
    wit_bindgen::generate!({
        path: ["../../wit/task-store.wit", "../../wit/a2a", "../../wit/a2a-server"],
        world: "toolnexus:a2a-server/run-bridge",
        generate_all,
    });

    use super::updates::{Refused, Runs, is_terminal_text};
    use exports::toolnexus::a2a::task::Guest as TaskGuest;
    use exports::toolnexus::a2a_server::run::{ArtifactUpdate, Guest as RunGuest, Update};
    use std::sync::Mutex;
    use toolnexus::a2a::types::{Artifact, EmitError, Message, Part, PartContent};
    use toolnexus::task_store::store;

    static RUNS: Mutex<Runs<Update>> = Mutex::new(Runs::new());

    struct Bridge;

    fn runs() -> std::sync::MutexGuard<'static, Runs<Update>> {
        // A panic cannot happen while the lock is held (no code there panics), but a poisoned
        // lock still holds a usable value.
        RUNS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether the open run's Task is stored in a terminal state.
    fn run_stopped() -> bool {
        let Some(id) = runs().task_id().map(str::to_owned) else {
            return false;
        };
        matches!(store::get(&id), Ok(Some(stored)) if is_terminal_text(&stored.task))
    }

    fn keep(update: Update, size: usize) -> Result<(), EmitError> {
        if run_stopped() {
            return Err(EmitError::Stopped);
        }
        runs().push(update, size).map_err(|refused| match refused {
            Refused::NoRun => {
                EmitError::Invalid("no run is open: `task` is only for the agent's `handle`".into())
            }
            Refused::Limit(what) => EmitError::Limit(what),
        })
    }

    fn json_size(json: &Option<String>) -> usize {
        json.as_ref().map_or(0, String::len)
    }

    fn parts_size(parts: &[Part]) -> usize {
        parts
            .iter()
            .map(|part| {
                let content = match &part.content {
                    PartContent::Text(s) | PartContent::Url(s) | PartContent::Data(s) => s.len(),
                    PartContent::Raw(bytes) => bytes.len(),
                };
                content
                    + part.media_type.as_ref().map_or(0, String::len)
                    + part.filename.as_ref().map_or(0, String::len)
                    + json_size(&part.metadata)
            })
            .sum()
    }

    fn message_size(message: &Option<Message>) -> usize {
        message.as_ref().map_or(0, |m| {
            parts_size(&m.parts)
                + json_size(&m.metadata)
                + m.message_id.as_ref().map_or(0, String::len)
                + m.extensions
                    .iter()
                    .chain(&m.reference_task_ids)
                    .map(String::len)
                    .sum::<usize>()
        })
    }

    fn artifact_size(artifact: &Artifact) -> usize {
        parts_size(&artifact.parts)
            + artifact.artifact_id.len()
            + artifact.name.as_ref().map_or(0, String::len)
            + artifact.description.as_ref().map_or(0, String::len)
            + json_size(&artifact.metadata)
            + artifact.extensions.iter().map(String::len).sum::<usize>()
    }

    impl TaskGuest for Bridge {
        fn update_status(message: Option<Message>) -> Result<(), EmitError> {
            let size = message_size(&message);
            keep(Update::Status(message), size)
        }

        fn update_artifact(
            artifact: Artifact,
            append: bool,
            last_chunk: bool,
        ) -> Result<(), EmitError> {
            let size = artifact_size(&artifact);
            keep(
                Update::Artifact(ArtifactUpdate {
                    artifact,
                    append,
                    last_chunk,
                }),
                size,
            )
        }

        fn is_canceled() -> bool {
            run_stopped()
        }
    }

    impl RunGuest for Bridge {
        fn begin(task_id: String) {
            runs().begin(task_id);
        }

        fn end() -> Vec<Update> {
            runs().end()
        }
    }

    export!(Bridge);
}

//! # `toolnexus-agent-echo`: the echo agent as a WebAssembly component
//!
//! The built-in echo agent of `tnstore serve`, built as an agent component (world
//! `toolnexus:a2a/configurable-agent`, contract in `wit/a2a/agent.wit`): the same behaviour as
//! the native `EchoAgent`, run in the sandbox like any third-party agent. It doubles as the
//! smallest example of an agent component.
//!
//! ## What it does
//!
//! - It replies with the text parts of the message, joined by newlines, as an artifact named
//!   `reply` with the id `<task-id>-reply`, then ends the run `completed`.
//! - A message whose text starts with `ask:` ends the run `input-required` with the status
//!   message "what should I echo?"; the next message to that Task is echoed.
//! - With the setting `delay-ms` (default 0) the reply comes in up to four pieces cut at
//!   whitespace, one after each quarter of the delay: the first creates the artifact, the
//!   others are appended to it, the last is marked the last chunk. Without a delay the reply is
//!   one update, the last chunk. The agent looks at `is-canceled` at least every 50 ms while it
//!   waits and stops when the Task is canceled or an update answers `stopped`.
//! - An update the runtime refuses (`invalid`, `limit`, `unavailable`) fails the Task, its
//!   status message naming the refusal.
//!
//! It keeps nothing between calls (the contract forbids it): everything it needs is in the
//! request. `cancel` has nothing to release.
//!
//! ## Building
//!
//! ```text
//! cargo build -p toolnexus-agent-echo --target wasm32-wasip2 --release
//! ```
//!
//! gives `target/wasm32-wasip2/release/toolnexus_agent_echo.wasm`, a component exporting
//! `toolnexus:a2a/agent@0.1.0` and `toolnexus:a2a/config@0.1.0`. The host crate
//! (`toolnexus-wasm`) builds and embeds it too, as `wasm:echo`: serve it with
//! `tnstore serve --agent 'wasm:echo?delay-ms=400'` (or `wasm:<path to the .wasm>?…`).
//!
//! A native build (clippy, `cargo test -p toolnexus-agent-echo`) type-checks the bindings and
//! runs the unit tests of the behaviour ([`echo`]), which talks to the runtime through a trait.

pub mod echo;

/// The component glue: the contract's types in and out of [`echo`]. Natively it is only
/// type-checked; see `export!` below.
mod component {
    wit_bindgen::generate!({
        path: "../../wit/a2a",
        world: "configurable-agent",
    });

    use super::echo::{self, Ending, Halt, Piece, REPLY_ARTIFACT_NAME, parse_millis};
    use exports::toolnexus::a2a::agent::Guest as Agent;
    use exports::toolnexus::a2a::config::Guest as Config;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;
    use toolnexus::a2a::task;
    use toolnexus::a2a::types::{
        Artifact, EmitError, Message, Outcome, Part, PartContent, Request, Role,
    };

    /// Set by `configure(delay-ms=…)`. Configuration, not state of a Task: the runtime passes
    /// the same settings to every instance.
    static DELAY_MS: AtomicU64 = AtomicU64::new(0);

    struct EchoComponent;

    impl Config for EchoComponent {
        fn configure(settings: Vec<(String, String)>) -> Result<(), String> {
            for (name, value) in settings {
                if name == "delay-ms" {
                    let delay = parse_millis(&name, &value)?;
                    let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
                    DELAY_MS.store(ms, Ordering::Relaxed);
                }
            }
            Ok(())
        }
    }

    impl Agent for EchoComponent {
        fn handle(request: Request) -> Outcome {
            let delay = Duration::from_millis(DELAY_MS.load(Ordering::Relaxed));
            let mut runtime = TaskRuntime {
                artifact_id: echo::reply_artifact_id(&request.task_id),
            };
            match echo::echo(&text_of(&request.message), delay, &mut runtime) {
                Ending::Completed => Outcome::Completed(None),
                Ending::InputRequired(question) => Outcome::InputRequired(Some(said(question))),
                // Ignored by the runtime (the Task is already canceled or ended).
                Ending::Halted(Halt::Stopped) => Outcome::Canceled(None),
                Ending::Halted(Halt::Failed(why)) => Outcome::Failed(Some(said(&why))),
            }
        }

        fn cancel(_task_id: String, _context_id: String) {}
    }

    /// [`echo::Runtime`] over the `task` import.
    struct TaskRuntime {
        artifact_id: String,
    }

    impl echo::Runtime for TaskRuntime {
        fn emit(&mut self, piece: Piece<'_>) -> Result<(), Halt> {
            let artifact = Artifact {
                artifact_id: self.artifact_id.clone(),
                name: Some(REPLY_ARTIFACT_NAME.to_owned()),
                description: None,
                parts: vec![text_part(piece.text)],
                metadata: None,
                extensions: Vec::new(),
            };
            task::update_artifact(&artifact, piece.append, piece.last_chunk).map_err(halt)
        }
    }

    impl echo::Clock for TaskRuntime {
        fn is_canceled(&mut self) -> bool {
            task::is_canceled()
        }

        fn sleep(&mut self, pause: Duration) {
            // wasip2's std sleeps on a `wasi:clocks` pollable.
            std::thread::sleep(pause);
        }
    }

    fn halt(error: EmitError) -> Halt {
        match error {
            EmitError::Stopped => Halt::Stopped,
            EmitError::Invalid(why) => Halt::Failed(format!("the reply was refused: {why}")),
            EmitError::Limit(why) => Halt::Failed(format!("the reply is over a limit: {why}")),
            EmitError::Unavailable(why) => {
                Halt::Failed(format!("the reply could not be saved: {why}"))
            }
        }
    }

    /// The text parts of `message`, joined by newlines.
    fn text_of(message: &Message) -> String {
        let texts: Vec<&str> = message
            .parts
            .iter()
            .filter_map(|part| match &part.content {
                PartContent::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }

    fn text_part(text: &str) -> Part {
        Part {
            content: PartContent::Text(text.to_owned()),
            media_type: None,
            filename: None,
            metadata: None,
        }
    }

    /// An agent message of one text part (the runtime gives it its id).
    fn said(text: &str) -> Message {
        Message {
            message_id: None,
            role: Role::Agent,
            parts: vec![text_part(text)],
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    // Only a wasm build exports the component ABI (native linkers reject the export names).
    #[cfg(target_family = "wasm")]
    export!(EchoComponent);
}

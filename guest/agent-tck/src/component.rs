//! The component glue: picks the scenario of a request, plays it (or echoes) through the `task`
//! import, and turns the ending into the contract's outcome. Natively it is only type-checked;
//! see `export!` below.

wit_bindgen::generate!({
    path: "../../wit/a2a",
    world: "configurable-agent",
});

use crate::echo::{self, Clock as _, Ending, Halt, Piece, REPLY_ARTIFACT_NAME, parse_millis};
use crate::events::{events_artifact_id, parse_events};
use crate::run::{self, Finish, TaskSink};
use crate::scenario;
use crate::script::{Content, End, PartSpec, script};
use exports::toolnexus::a2a::agent::Guest as Agent;
use exports::toolnexus::a2a::config::Guest as Config;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use toolnexus::a2a::task;
use toolnexus::a2a::types::{
    Artifact, EmitError, Message, Outcome, Part, PartContent, Request, Role,
};

/// Set by `configure(streaming-timeout-ms=…)`: the TCK's default streaming timeout, 2 s.
static STREAMING_TIMEOUT_MS: AtomicU64 = AtomicU64::new(2000);
/// Set by `configure(delay-ms=…)`: the echo fallback's delay.
static DELAY_MS: AtomicU64 = AtomicU64::new(0);

struct TckAgent;

impl Config for TckAgent {
    fn configure(settings: Vec<(String, String)>) -> Result<(), String> {
        for (name, value) in settings {
            let target = match name.as_str() {
                "streaming-timeout-ms" => &STREAMING_TIMEOUT_MS,
                "delay-ms" => &DELAY_MS,
                _ => continue,
            };
            let millis = parse_millis(&name, &value)?.as_millis();
            target.store(u64::try_from(millis).unwrap_or(u64::MAX), Ordering::Relaxed);
        }
        Ok(())
    }
}

impl Agent for TckAgent {
    fn handle(request: Request) -> Outcome {
        let chosen = request
            .message
            .message_id
            .as_deref()
            .and_then(scenario::for_message_id);
        let Some(scenario) = chosen else {
            if let Some((rounds, pause_ms)) = parse_events(&text_of(&request.message)) {
                return events(&request.task_id, rounds, Duration::from_millis(pause_ms));
            }
            return echo_fallback(&request);
        };
        let turn = request
            .history
            .iter()
            .filter(|m| m.role == Role::User)
            .count();
        let timeout = Duration::from_millis(STREAMING_TIMEOUT_MS.load(Ordering::Relaxed));
        let mut runtime = TaskRuntime {
            reply_artifact_id: String::new(),
        };
        match run::play(
            &script(scenario),
            &request.task_id,
            turn,
            timeout,
            &mut runtime,
        ) {
            Finish::Ended(End::Completed(text)) => Outcome::Completed(text.map(said)),
            Finish::Ended(End::InputRequired) => Outcome::InputRequired(None),
            Finish::Ended(End::Rejected(text)) => Outcome::Rejected(Some(said(text))),
            Finish::Ended(End::Reply(text)) => Outcome::Reply(said(text)),
            Finish::Halted(halt) => halted(halt),
        }
    }

    fn cancel(_task_id: String, _context_id: String) {}
}

/// The `events:N:MS` scenario (`crate::events`).
fn events(task_id: &str, rounds: u32, pause: Duration) -> Outcome {
    let mut runtime = TaskRuntime {
        reply_artifact_id: String::new(),
    };
    let artifact_id = events_artifact_id(task_id);
    for i in 0..rounds {
        if i > 0
            && let Err(halt) = echo::wait(&mut runtime, pause)
        {
            return halted(halt);
        }
        let step = task::update_status(Some(&said(&format!("step {i}"))));
        let piece = artifact(&artifact_id, vec![text_part(&i.to_string())]);
        let taken = step.and_then(|()| task::update_artifact(&piece, i > 0, i + 1 == rounds));
        if let Err(error) = taken {
            return halted(halt(error));
        }
    }
    if runtime.is_canceled() {
        return Outcome::Canceled(None);
    }
    Outcome::Completed(Some(said("done")))
}

/// Any message no scenario claims: the echo agent's behaviour.
fn echo_fallback(request: &Request) -> Outcome {
    let delay = Duration::from_millis(DELAY_MS.load(Ordering::Relaxed));
    let mut runtime = TaskRuntime {
        reply_artifact_id: echo::reply_artifact_id(&request.task_id),
    };
    match echo::echo(&text_of(&request.message), delay, &mut runtime) {
        Ending::Completed => Outcome::Completed(None),
        Ending::InputRequired(question) => Outcome::InputRequired(Some(said(question))),
        Ending::Halted(halt) => halted(halt),
    }
}

fn halted(halt: Halt) -> Outcome {
    match halt {
        // Ignored by the runtime (the Task is already canceled or ended).
        Halt::Stopped => Outcome::Canceled(None),
        Halt::Failed(why) => Outcome::Failed(Some(said(&why))),
    }
}

/// The runtime's side of a run, over the `task` import.
struct TaskRuntime {
    /// The echo fallback's artifact (unused by scenarios, which name their own).
    reply_artifact_id: String,
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

impl echo::Runtime for TaskRuntime {
    fn emit(&mut self, piece: Piece<'_>) -> Result<(), Halt> {
        let artifact = Artifact {
            name: Some(REPLY_ARTIFACT_NAME.to_owned()),
            ..artifact(&self.reply_artifact_id, vec![text_part(piece.text)])
        };
        task::update_artifact(&artifact, piece.append, piece.last_chunk).map_err(halt)
    }
}

impl TaskSink for TaskRuntime {
    fn working(&mut self) -> Result<(), Halt> {
        task::update_status(None).map_err(halt)
    }

    fn artifact(
        &mut self,
        artifact_id: &str,
        parts: &[PartSpec],
        append: bool,
        last_chunk: bool,
    ) -> Result<(), Halt> {
        let parts = parts.iter().map(part).collect();
        task::update_artifact(&artifact(artifact_id, parts), append, last_chunk).map_err(halt)
    }
}

fn halt(error: EmitError) -> Halt {
    match error {
        EmitError::Stopped => Halt::Stopped,
        EmitError::Invalid(why) => Halt::Failed(format!("an update was refused: {why}")),
        EmitError::Limit(why) => Halt::Failed(format!("an update is over a limit: {why}")),
        EmitError::Unavailable(why) => Halt::Failed(format!("an update could not be saved: {why}")),
    }
}

fn artifact(artifact_id: &str, parts: Vec<Part>) -> Artifact {
    Artifact {
        artifact_id: artifact_id.to_owned(),
        name: None,
        description: None,
        parts,
        metadata: None,
        extensions: Vec::new(),
    }
}

fn part(spec: &PartSpec) -> Part {
    let content = match spec.content {
        Content::Text(text) => PartContent::Text(text.to_owned()),
        Content::Raw(bytes) => PartContent::Raw(bytes.to_vec()),
        Content::Url(url) => PartContent::Url(url.to_owned()),
        Content::Data(json) => PartContent::Data(json.to_owned()),
    };
    Part {
        content,
        media_type: spec.media_type.map(str::to_owned),
        filename: spec.filename.map(str::to_owned),
        metadata: None,
    }
}

fn text_part(text: &str) -> Part {
    Part {
        content: PartContent::Text(text.to_owned()),
        media_type: None,
        filename: None,
        metadata: None,
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
export!(TckAgent);

//! `agent-fixture`: an agent component (world `toolnexus:a2a/any-agent`: every export) whose
//! behaviour the text of the request's message picks, for the host's tests
//! (`host/wasm/tests/all/agents*.rs`). Commands, `name` or `name:argument`:
//!
//! - `updates:N`: N rounds of a status update `step i` and an artifact update (artifact `a`,
//!   created in round 0, then appended to, the last round its last chunk); then `completed`
//!   with `done`. An update refused ends the run `failed` with `<kind>: <message>`.
//! - `outcome:KIND`: ends with that outcome (`completed`, `failed`, `rejected`, `canceled`,
//!   `input-required`, `auth-required`), its message the kind.
//! - `reply:TEXT`: a direct reply of TEXT.
//! - `remember:TEXT`: keeps TEXT in the instance's linear memory; `completed` with
//!   `remembered=<what the run before kept on this instance>` (empty on a fresh instance).
//! - `request`: `completed`, its message describing the request (`task=… context=…
//!   continued=… history=… metadata=… owner=…`).
//! - `config`: `completed`, its message the settings `configure` was given (`name=value`,
//!   comma-separated).
//! - `hang`: computes forever. `sleep`: waits on the clock forever.
//! - `hoard`: allocates until the memory limit stops it.
//! - `trap`: traps.
//! - `flood`: emits status updates until one is refused; `failed` with `<kind>: <message>`.
//! - `oversized:BYTES`: one status update of BYTES bytes of text; `completed` or `failed` with
//!   `<kind>: <message>`.
//! - `bad-update-metadata`: a status update whose metadata is a JSON array; reports as
//!   `oversized` does. `bad-data`: one whose data part is not JSON.
//! - `bad-outcome-metadata`: `completed` with a message whose metadata is not JSON.
//! - `wait-cancel`: waits until `is-canceled` says the Task was canceled, then `completed`
//!   (which the host ignores).
//! - `canceled`: `completed`, its message every cancel this instance was told of through
//!   `scoped-cancel` (`task=… context=… owner=… tenant=…`, `;`-separated); `agent.cancel`,
//!   which the host no longer calls when `scoped-cancel` is exported, adds `unscoped task=…`.
//!
//! - `fetch:URL`: one GET through `wasi:http`; `completed` with `status N`, or `failed` with
//!   the host's error (`HttpRequestDenied`, …).
//! - `buffer-bodies:N`: N outgoing requests, never sent, each body written as far as its
//!   stream takes without waiting; `completed` with `buffered=<bytes the host took>`.
//! - `wedge-body`: writes into an outgoing request's body without ever sending the request, so
//!   the write waits inside the host forever (no `allow-hosts` needed).
//!
//! `configure` refuses a setting `refuse` (any value), to test a refused start.

wit_bindgen::generate!({
    path: "../../wit/a2a",
    world: "any-agent",
});

use exports::toolnexus::a2a::agent::Guest as AgentGuest;
use exports::toolnexus::a2a::config::Guest as ConfigGuest;
use exports::toolnexus::a2a::scoped_cancel::{CanceledTask, Guest as ScopedCancelGuest};
mod fetch;

use std::sync::Mutex;
use toolnexus::a2a::task;
use toolnexus::a2a::types::{
    Artifact, EmitError, Message, Outcome, Part, PartContent, Request, Role,
};

/// The settings of this instance (configuration, not a Task's state).
/// What the last `remember:TEXT` run on this instance kept in linear memory.
static REMEMBERED: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

static SETTINGS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// The cancels this instance was told of, for `canceled`.
static CANCELS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn told_of_cancel(what: String) {
    CANCELS.lock().unwrap_or_else(|e| e.into_inner()).push(what);
}

impl ScopedCancelGuest for Fixture {
    fn cancel(task: CanceledTask) {
        told_of_cancel(format!(
            "task={} context={} owner={} tenant={}",
            task.task_id,
            task.context_id,
            task.owner.as_deref().unwrap_or("-"),
            task.tenant.as_deref().unwrap_or("-")
        ));
    }
}

struct Fixture;

impl ConfigGuest for Fixture {
    fn configure(settings: Vec<(String, String)>) -> Result<(), String> {
        if settings.iter().any(|(name, _)| name == "refuse") {
            return Err("the fixture refuses the setting \"refuse\"".into());
        }
        *SETTINGS.lock().unwrap_or_else(|e| e.into_inner()) = settings;
        Ok(())
    }
}

impl AgentGuest for Fixture {
    fn handle(request: Request) -> Outcome {
        let text = text_of(&request.message);
        let (command, argument) = text.split_once(':').unwrap_or((text.as_str(), ""));
        match command {
            "updates" => updates(argument.parse().unwrap_or(0)),
            "outcome" => outcome(argument),
            "reply" => Outcome::Reply(said(argument)),
            "remember" => {
                let mut last = REMEMBERED.lock().unwrap_or_else(|e| e.into_inner());
                let before = std::mem::replace(&mut *last, argument.to_owned());
                Outcome::Completed(Some(said(&format!("remembered={before}"))))
            }
            "request" => Outcome::Completed(Some(said(&describe(&request)))),
            "config" => {
                let settings = SETTINGS.lock().unwrap_or_else(|e| e.into_inner());
                let listed: Vec<String> =
                    settings.iter().map(|(n, v)| format!("{n}={v}")).collect();
                Outcome::Completed(Some(said(&listed.join(","))))
            }
            "hang" => loop {
                std::hint::black_box(&request);
            },
            "sleep" => loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            },
            "hoard" => {
                let mut held: Vec<Vec<u8>> = Vec::new();
                loop {
                    held.push(vec![1; 1 << 20]);
                    std::hint::black_box(&held);
                }
            }
            "trap" => std::process::abort(),
            "buffer-bodies" => match fetch::buffer_bodies(argument.parse().unwrap_or(0)) {
                Ok(bytes) => Outcome::Completed(Some(said(&format!("buffered={bytes}")))),
                Err(e) => Outcome::Failed(Some(said(&e))),
            },
            "wedge-body" => match fetch::wedge_body() {
                Ok(_) => Outcome::Completed(None),
                Err(e) => Outcome::Failed(Some(said(&e))),
            },
            "fetch" => match fetch::fetch(argument) {
                Ok(status) => Outcome::Completed(Some(said(&format!("status {status}")))),
                Err(e) => Outcome::Failed(Some(said(&e))),
            },
            "flood" => {
                let mut sent = 0u64;
                loop {
                    if let Err(e) = task::update_status(Some(&said(&format!("flood {sent}")))) {
                        return failed(e);
                    }
                    sent += 1;
                }
            }
            "oversized" => {
                let bytes = argument.parse().unwrap_or(0);
                report(task::update_status(Some(&said(&"x".repeat(bytes)))))
            }
            "bad-update-metadata" => {
                let mut message = said("bad");
                message.metadata = Some("[1, 2]".into());
                report(task::update_status(Some(&message)))
            }
            "bad-data" => {
                let mut message = said("bad");
                message.parts[0].content = PartContent::Data("{not json".into());
                report(task::update_status(Some(&message)))
            }
            "bad-outcome-metadata" => {
                let mut message = said("done");
                message.metadata = Some("not json".into());
                Outcome::Completed(Some(message))
            }
            "canceled" => {
                let cancels = CANCELS.lock().unwrap_or_else(|e| e.into_inner());
                Outcome::Completed(Some(said(&cancels.join(";"))))
            }
            "wait-cancel" => {
                while !task::is_canceled() {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Outcome::Completed(Some(said("ignored")))
            }
            other => Outcome::Rejected(Some(said(&format!("no command {other:?}")))),
        }
    }

    fn cancel(task_id: String, _context_id: String) {
        told_of_cancel(format!("unscoped task={task_id}"));
    }
}

fn updates(rounds: usize) -> Outcome {
    for i in 0..rounds {
        if let Err(e) = task::update_status(Some(&said(&format!("step {i}")))) {
            return failed(e);
        }
        let artifact = Artifact {
            artifact_id: "a".into(),
            name: None,
            description: None,
            parts: vec![text_part(&i.to_string())],
            metadata: None,
            extensions: Vec::new(),
        };
        if let Err(e) = task::update_artifact(&artifact, i > 0, i + 1 == rounds) {
            return failed(e);
        }
    }
    Outcome::Completed(Some(said("done")))
}

fn outcome(kind: &str) -> Outcome {
    let message = Some(said(kind));
    match kind {
        "completed" => Outcome::Completed(message),
        "failed" => Outcome::Failed(message),
        "rejected" => Outcome::Rejected(message),
        "canceled" => Outcome::Canceled(message),
        "input-required" => Outcome::InputRequired(message),
        "auth-required" => Outcome::AuthRequired(message),
        other => Outcome::Rejected(Some(said(&format!("no outcome {other:?}")))),
    }
}

fn describe(request: &Request) -> String {
    format!(
        "task={} context={} continued={} history={} metadata={} owner={} modes={}",
        request.task_id,
        request.context_id,
        request.continued,
        request.history.len(),
        request.metadata.as_deref().unwrap_or("none"),
        request.owner.as_deref().unwrap_or("none"),
        request.accepted_output_modes.join("|"),
    )
}

/// `completed` with `ok` if the update was taken, else `failed` naming the refusal.
fn report(result: Result<(), EmitError>) -> Outcome {
    match result {
        Ok(()) => Outcome::Completed(Some(said("ok"))),
        Err(e) => failed(e),
    }
}

fn failed(error: EmitError) -> Outcome {
    let text = match error {
        EmitError::Stopped => "stopped".to_owned(),
        EmitError::Invalid(m) => format!("invalid: {m}"),
        EmitError::Limit(m) => format!("limit: {m}"),
        EmitError::Unavailable(m) => format!("unavailable: {m}"),
    };
    Outcome::Failed(Some(said(&text)))
}

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
export!(Fixture);

//! A component's stderr is discarded unless the debug option forwards it to the host's
//! `tracing` log.
//!
//! Forwarded lines can reach a subscriber from any thread, so these tests install one global
//! subscriber for the whole test binary; it records only component log lines
//! ([`COMPONENT_TARGET`]), and each test looks only at the lines of components named after it,
//! so other tests running beside them (and their components) cannot disturb what they see.

use std::sync::{Arc, Mutex};
use toolnexus::TaskStore;
use toolnexus::wasm::{CacheDir, ComponentSource, WasmTaskStore};
use toolnexus::wasm::{Sandboxed, SandboxedDir};
use toolnexus_conformance::HOSTILE_COMPONENT;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// The `tracing` target of the lines a component writes to its stderr.
const COMPONENT_TARGET: &str = "toolnexus::component";

/// Records (target, component field, message) of every component log line.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<(String, String, String)>>>);

struct Fields {
    component: String,
    message: String,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "component" => self.component = format!("{value:?}"),
            "message" => self.message = format!("{value:?}"),
            _ => {}
        }
    }
}

impl Subscriber for Capture {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == COMPONENT_TARGET
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields {
            component: String::new(),
            message: String::new(),
        };
        event.record(&mut fields);
        self.0.lock().unwrap().push((
            event.metadata().target().to_owned(),
            fields.component,
            fields.message,
        ));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// The one global subscriber of this test binary, installed by whichever test comes first.
fn capture() -> &'static Capture {
    static CAPTURE: std::sync::OnceLock<Capture> = std::sync::OnceLock::new();
    CAPTURE.get_or_init(|| {
        let capture = Capture::default();
        tracing::subscriber::set_global_default(capture.clone()).unwrap();
        capture
    })
}

/// What components named `name` logged.
fn from_component(capture: &Capture, name: &str) -> Vec<(String, String, String)> {
    capture
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|(target, component, _)| target == COMPONENT_TARGET && component == name)
        .cloned()
        .collect()
}

fn named_hostile(name: &str, forward: bool, dir: &std::path::Path) -> WasmTaskStore {
    WasmTaskStore::builder(ComponentSource::Bytes {
        name: name.into(),
        bytes: HOSTILE_COMPONENT.into(),
    })
    .cache(CacheDir::Off)
    .dir(dir)
    .forward_stderr(forward)
    .build()
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn stderr_reaches_the_log_only_when_forwarded() {
    let capture = capture();
    let tmp = tempfile::tempdir().unwrap();

    let quiet = named_hostile("stderr-log.wasm", false, tmp.path());
    assert_eq!(quiet.get("stderr").await.unwrap(), None);
    drop(quiet); // instances (and their streams) go away with the store
    assert!(
        from_component(capture, "stderr-log.wasm").is_empty(),
        "stderr is discarded by default"
    );

    let loud = named_hostile("stderr-log.wasm", true, tmp.path());
    assert_eq!(loud.get("stderr").await.unwrap(), None);
    drop(loud);
    let lines = from_component(capture, "stderr-log.wasm");
    assert!(
        lines
            .iter()
            .any(|(_, component, message)| component == "stderr-log.wasm"
                && message == "hostile component says hello on stderr"),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn forwarded_stderr_cannot_forge_log_lines_or_drive_a_terminal() {
    let capture = capture();
    let tmp = tempfile::tempdir().unwrap();
    let loud = named_hostile("stderr-log-ctrl.wasm", true, tmp.path());
    assert_eq!(loud.get("stderr-ctrl").await.unwrap(), None);
    drop(loud);
    // Each stderr line is one event, attributed to the component; what a line holds cannot
    // end it early, move the cursor or reorder text.
    let lines = from_component(capture, "stderr-log-ctrl.wasm");
    let messages: Vec<&str> = lines.iter().map(|(_, _, m)| m.as_str()).collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    for message in &messages {
        assert!(
            !message.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "a control character reached the log: {message:?}"
        );
    }
    assert!(
        messages[0].starts_with("\\u{1b}[2J\\u{1b}[H\\rINFO"),
        "{messages:?}"
    );
    assert!(
        messages[1].contains("\\u{202e}gnp.exe\\u{7}"),
        "{messages:?}"
    );
}

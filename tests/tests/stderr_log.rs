//! A component's stderr is discarded unless the debug option forwards it to the host's
//! `tracing` log. (Its own test binary: it installs a global subscriber.)

use std::sync::{Arc, Mutex};
use toolnexus::TaskStore;
use toolnexus::wasm::{CacheDir, ComponentSource, WasmTaskStore};
use toolnexus_conformance::HOSTILE_COMPONENT;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Records (target, component field, message) of every event.
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
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
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

/// The one global subscriber of this test binary.
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
        .filter(|(target, component, _)| target == "toolnexus::component" && component == name)
        .cloned()
        .collect()
}

fn hostile(forward: bool, dir: &std::path::Path) -> WasmTaskStore {
    named_hostile("hostile.wasm", forward, dir)
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

    let quiet = hostile(false, tmp.path());
    assert_eq!(quiet.get("stderr").await.unwrap(), None);
    drop(quiet); // instances (and their streams) go away with the store
    assert!(
        from_component(capture, "hostile.wasm").is_empty(),
        "stderr is discarded by default"
    );

    let loud = hostile(true, tmp.path());
    assert_eq!(loud.get("stderr").await.unwrap(), None);
    drop(loud);
    let lines = from_component(capture, "hostile.wasm");
    assert!(
        lines
            .iter()
            .any(|(_, component, message)| component == "hostile.wasm"
                && message == "hostile component says hello on stderr"),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn forwarded_stderr_cannot_forge_log_lines_or_drive_a_terminal() {
    let capture = capture();
    let tmp = tempfile::tempdir().unwrap();
    let loud = named_hostile("hostile-ctrl.wasm", true, tmp.path());
    assert_eq!(loud.get("stderr-ctrl").await.unwrap(), None);
    drop(loud);
    // Each stderr line is one event, attributed to the component; what a line holds cannot
    // end it early, move the cursor or reorder text.
    let lines = from_component(capture, "hostile-ctrl.wasm");
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

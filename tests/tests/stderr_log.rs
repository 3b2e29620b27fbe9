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

fn hostile(forward: bool, dir: &std::path::Path) -> WasmTaskStore {
    WasmTaskStore::builder(ComponentSource::Bytes {
        name: "hostile.wasm".into(),
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
    let capture = Capture::default();
    tracing::subscriber::set_global_default(capture.clone()).unwrap();
    let tmp = tempfile::tempdir().unwrap();

    let quiet = hostile(false, tmp.path());
    assert_eq!(quiet.get("stderr").await.unwrap(), None);
    drop(quiet); // instances (and their streams) go away with the store
    let from_component = |c: &Capture| {
        c.0.lock()
            .unwrap()
            .iter()
            .filter(|(target, _, _)| target == "toolnexus::component")
            .cloned()
            .collect::<Vec<_>>()
    };
    assert!(
        from_component(&capture).is_empty(),
        "stderr is discarded by default"
    );

    let loud = hostile(true, tmp.path());
    assert_eq!(loud.get("stderr").await.unwrap(), None);
    drop(loud);
    let lines = from_component(&capture);
    assert!(
        lines
            .iter()
            .any(|(_, component, message)| component == "hostile.wasm"
                && message == "hostile component says hello on stderr"),
        "{lines:?}"
    );
}

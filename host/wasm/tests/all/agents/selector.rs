//! `wasm:` agent selectors: a component file with limits and settings, the embedded agents,
//! and clear errors for what is wrong.

use crate::agents::harness::{AGENT_FIXTURE, run, service, status};
use std::time::Duration;
use toolnexus_core::StoreError;
use toolnexus_wasm::agent::{agent_builder_from_selector, agent_from_selector};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_selector_loads_a_component_file_with_its_limits_and_settings() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fixture.wasm");
    std::fs::write(&path, AGENT_FIXTURE).unwrap();
    let selector = format!(
        "wasm:{}?timeout=90s&max-memory=64MiB&max-instances=2&cache=off&model=small&x=a%26b",
        path.display()
    );
    let agent = agent_from_selector(&selector).unwrap();
    assert_eq!(
        agent.name(),
        "fixture.wasm",
        "named by its file, not its directory"
    );
    assert_eq!(agent.timeout(), Duration::from_secs(90));
    let service = service(agent);
    let task = run(&service, "config").await;
    assert_eq!(
        status(&task),
        (
            "TASK_STATE_COMPLETED".to_owned(),
            "model=small,x=a&b".to_owned()
        )
    );
}

#[test]
fn bad_selectors_are_refused_with_what_is_wrong() {
    let invalid = |selector: &str| match agent_builder_from_selector(selector) {
        Err(StoreError::InvalidSelector { reason, .. }) => reason,
        other => panic!("{selector}: expected InvalidSelector, got {other:?}"),
    };
    assert!(invalid("wasm:a.wasm?timeout=forever").contains("\"timeout\" must be a duration"));
    assert!(invalid("wasm:a.wasm?dir=x").contains("\"dir\" is an option of store components"));
    assert!(invalid("wasm:").contains("no component"));
    let missing = agent_from_selector("wasm:no-such-agent.wasm").unwrap_err();
    assert!(
        matches!(&missing, StoreError::Load { reason, .. } if reason.contains("cannot read")),
        "{missing}"
    );
    let dir = tempfile::tempdir().unwrap();
    let not_a_component = dir.path().join("x.wasm");
    std::fs::write(&not_a_component, b"hello").unwrap();
    let err = agent_from_selector(&format!("wasm:{}", not_a_component.display())).unwrap_err();
    assert!(err.to_string().contains("not a WebAssembly file"), "{err}");
}

#[test]
fn a_store_component_is_not_an_agent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.wasm");
    std::fs::write(&path, toolnexus_wasm::FILE_STORE_COMPONENT).unwrap();
    let err = agent_from_selector(&format!("wasm:{}", path.display())).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("not an agent component: it does not export toolnexus:a2a/agent@0.1.0"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_embedded_agents_load_by_name() {
    // In the repository both are built (a packaged copy of the crate has neither).
    for (name, bytes) in [
        ("echo", toolnexus_wasm::ECHO_AGENT_COMPONENT),
        ("tck", toolnexus_wasm::TCK_AGENT_COMPONENT),
    ] {
        assert!(!bytes.is_empty(), "{name} is embedded");
        let agent = agent_from_selector(&format!("wasm:{name}")).unwrap();
        assert_eq!(agent.name(), name);
    }
    let service = service(agent_from_selector("wasm:echo").unwrap());
    let task = run(&service, "hello").await;
    assert_eq!(status(&task).0, "TASK_STATE_COMPLETED", "{task}");
}

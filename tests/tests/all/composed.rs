//! The lifecycle-guard middleware, composed over the file store into one component.
//!
//! `conformance.rs` runs the whole suite against the composed component (`guarded`); this module
//! covers what only the guard does, and composition itself.

use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use toolnexus::wasm::SandboxedDir;
use toolnexus::wasm::{ComponentSource, WasmTaskStore};
use toolnexus::{FileTaskStore, PushConfig, StoreError, Task, TaskStore};
use toolnexus_compose::{ComposeError, compose, compose_chain};
use toolnexus_conformance::{
    GUARDED_FILE_STORE_COMPONENT, HOSTILE_COMPONENT, LIFECYCLE_GUARD_COMPONENT, snapshot, state,
    task,
};

fn load(name: &str, bytes: &[u8], dir: &Path) -> Result<WasmTaskStore, StoreError> {
    WasmTaskStore::builder(ComponentSource::Bytes {
        name: name.into(),
        bytes: bytes.into(),
    })
    .dir(dir)
    .build()
}

fn guarded(dir: &Path) -> WasmTaskStore {
    load("guarded-file-store.wasm", GUARDED_FILE_STORE_COMPONENT, dir).expect("guarded store loads")
}

fn with_state(id: &str, state: &str) -> Task {
    task(json!({"id": id, "status": {"state": state}}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaving_a_terminal_state_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = guarded(dir.path());
    // The composition exports the guard's interfaces only: the file store's `lean` (a save
    // the host would make straight to it) is not a way around the guard.
    assert!(!store.supports_lean());
    let terminal = [
        "completed",
        "canceled",
        "failed",
        "rejected",
        "TASK_STATE_COMPLETED",
        "TASK_STATE_CANCELED",
        "TASK_STATE_FAILED",
        "TASK_STATE_REJECTED",
    ];
    for (i, from) in terminal.into_iter().enumerate() {
        let id = format!("t{i}");
        store.save(&with_state(&id, "working")).await.unwrap();
        store.save(&with_state(&id, from)).await.unwrap();
        let before = snapshot(dir.path());
        for to in [
            "working",
            "submitted",
            "TASK_STATE_WORKING",
            "completed-ish",
        ] {
            let err = store.save(&with_state(&id, to)).await.unwrap_err();
            let StoreError::Rejected { reason, .. } = &err else {
                panic!("{from} → {to}: expected Rejected, got {err:?}");
            };
            assert!(reason.contains("terminal state"), "{reason}");
            assert!(reason.contains(from) && reason.contains(to), "{reason}");
            assert_eq!(err.blame(), toolnexus::Blame::Caller);
        }
        // A version without any state leaves the terminal state too.
        let err = store.save(&task(json!({"id": id}))).await.unwrap_err();
        assert!(matches!(err, StoreError::Rejected { .. }), "{err:?}");
        assert_eq!(snapshot(dir.path()), before, "a refused save wrote nothing");
        let got = store.get(&id).await.unwrap().unwrap();
        assert_eq!(state(&got), from);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_else_passes_through_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let store = guarded(dir.path());
    let path = [
        "submitted",
        "working",
        "input-required",
        "TASK_STATE_WORKING",
        "auth-required",
        "working",
        "completed",
    ];
    for s in path {
        store.save(&with_state("flow", s)).await.unwrap();
        assert_eq!(state(&store.get("flow").await.unwrap().unwrap()), s);
    }
    // Staying in the terminal state passes: a retried write, an artifact added, a re-spelling.
    let with_artifact = task(json!({
        "id": "flow",
        "status": {"state": "completed"},
        "artifacts": [{"artifactId": "a1", "parts": [{"kind": "text", "text": "late"}]}],
    }));
    store.save(&with_artifact).await.unwrap();
    assert_eq!(store.get("flow").await.unwrap(), Some(with_artifact));
    store
        .save(&with_state("flow", "TASK_STATE_COMPLETED"))
        .await
        .unwrap();
    // Moving from one terminal state to another is leaving the first.
    assert!(matches!(
        store.save(&with_state("flow", "failed")).await,
        Err(StoreError::Rejected { .. })
    ));
    // Tasks without a status are not guarded at all.
    store
        .save(&task(json!({"id": "plain", "n": 1})))
        .await
        .unwrap();
    store
        .save(&task(json!({"id": "plain", "n": 2})))
        .await
        .unwrap();
    assert_eq!(
        store.get("plain").await.unwrap().unwrap().get("n").unwrap(),
        2
    );
    // Deleting a terminal Task is not a transition; afterwards the id starts afresh.
    assert!(store.delete("flow").await.unwrap());
    store.save(&with_state("flow", "submitted")).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guard_reads_and_writes_the_file_store_format() {
    let dir = tempfile::tempdir().unwrap();
    // A Task completed by a store without the guard…
    let native = FileTaskStore::new(dir.path()).unwrap();
    native.save(&with_state("done", "completed")).await.unwrap();
    // …is protected by the guard over the same directory…
    let store = guarded(dir.path());
    assert!(matches!(
        store.save(&with_state("done", "working")).await,
        Err(StoreError::Rejected { .. })
    ));
    // …and what the guard writes, the native store reads.
    let t =
        task(json!({"id": "a/b", "status": {"state": "working"}, "n": 12345678901234567890u64}));
    store.save(&t).await.unwrap();
    assert_eq!(native.get("a/b").await.unwrap(), Some(t));
    assert!(dir.path().join("a%2Fb.json").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_stored_version_fails_the_save_and_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.json"),
        b"{\"id\": \"bad\", \"status\": ",
    )
    .unwrap();
    let before = snapshot(dir.path());
    let store = guarded(dir.path());
    let err = store.save(&with_state("bad", "working")).await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert_eq!(snapshot(dir.path()), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_middleware_alone_is_not_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let err = load(
        "lifecycle-guard.wasm",
        LIFECYCLE_GUARD_COMPONENT,
        dir.path(),
    )
    .unwrap_err();
    let StoreError::Load { reason, .. } = &err else {
        panic!("expected Load, got {err:?}");
    };
    assert!(reason.contains("toolnexus:task-store/"), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn middlewares_stack() {
    let dir = tempfile::tempdir().unwrap();
    let twice = compose_chain(
        &[LIFECYCLE_GUARD_COMPONENT, LIFECYCLE_GUARD_COMPONENT],
        toolnexus::wasm::FILE_STORE_COMPONENT,
    )
    .expect("two guards compose over the file store");
    let store = load("guard-guard-file-store.wasm", &twice, dir.path()).unwrap();
    store.save(&with_state("s", "completed")).await.unwrap();
    assert!(matches!(
        store.save(&with_state("s", "working")).await,
        Err(StoreError::Rejected { .. })
    ));
    let page = store.list(&Default::default()).await.unwrap();
    assert_eq!(page.tasks.len(), 1);
}

/// The guard has no rule about push configs: they pass through to the file store underneath,
/// into its files, whatever state the Task is in, and go with the Task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_configs_pass_through_the_guard_to_the_file_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = guarded(dir.path());
    assert!(store.supports_push_configs());
    store.save(&with_state("p", "completed")).await.unwrap();
    let config = PushConfig::from_json(r#"{"id":"c1","url":"https://example.com/hook"}"#).unwrap();
    store.save_push_config("p", &config).await.unwrap();
    assert_eq!(
        store.get_push_config("p", "c1").await.unwrap(),
        Some(config.clone())
    );
    assert_eq!(
        store.list_push_configs("p").await.unwrap(),
        vec![config.clone()]
    );
    // Where the file store keeps it, as the native store reads it.
    let native = FileTaskStore::new(dir.path()).unwrap();
    assert_eq!(
        native.get_push_config("p", "c1").await.unwrap(),
        Some(config.clone())
    );
    assert!(store.delete_push_config("p", "c1").await.unwrap());
    assert_eq!(store.get_push_config("p", "c1").await.unwrap(), None);
    store.save_push_config("p", &config).await.unwrap();
    assert!(store.delete("p").await.unwrap());
    assert!(store.list_push_configs("p").await.unwrap().is_empty());
}

#[test]
fn composition_errors_name_what_does_not_fit() {
    // The file store imports no task-store interface: it is not a middleware.
    let err = compose(
        toolnexus::wasm::FILE_STORE_COMPONENT,
        toolnexus::wasm::FILE_STORE_COMPONENT,
    )
    .unwrap_err();
    assert!(matches!(err, ComposeError::NotAMiddleware), "{err}");
    // The hostile component is a store exporting only `store` and `config`; the guard needs
    // all four interfaces.
    let err = compose(LIFECYCLE_GUARD_COMPONENT, HOSTILE_COMPONENT).unwrap_err();
    let ComposeError::MissingExport { interface } = &err else {
        panic!("expected MissingExport, got {err}");
    };
    assert!(
        [
            "toolnexus:task-store/store",
            "toolnexus:task-store/config",
            "toolnexus:task-store/catalog",
            "toolnexus:task-store/push-configs"
        ]
        .contains(&interface.as_str()),
        "{interface}"
    );
    assert!(err.to_string().contains("does not export"), "{err}");
    // Not components at all.
    assert!(matches!(
        compose(LIFECYCLE_GUARD_COMPONENT, b"\0asm\x01\0\0\0"),
        Err(ComposeError::NotAComponent {
            role: toolnexus_compose::Role::Store,
            ..
        })
    ));
    // The composed output of the build is itself a valid composition input: guard it again.
    let again = compose(LIFECYCLE_GUARD_COMPONENT, GUARDED_FILE_STORE_COMPONENT).unwrap();
    assert!(again.len() > GUARDED_FILE_STORE_COMPONENT.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_composed_component_is_shared_safely() {
    // Many instances of the composed component (the host pools them) over one directory.
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(guarded(dir.path()));
    let mut handles = Vec::new();
    for i in 0..16 {
        let store = Arc::clone(&store);
        handles.push(tokio::spawn(async move {
            let id = format!("c{i}");
            for s in ["submitted", "working", "completed"] {
                store.save(&with_state(&id, s)).await.unwrap();
            }
            assert!(store.save(&with_state(&id, "working")).await.is_err());
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    for i in 0..16 {
        let got = store.get(&format!("c{i}")).await.unwrap().unwrap();
        assert_eq!(state(&got), "completed");
    }
}

//! Lies and faults: answers that are not the task asked for, traps, attacks from many callers
//! at once, hostile messages, and calls the component does not implement all end in typed
//! errors that blame the component.

use super::*;
use toolnexus::wasm::{Sandboxed, SandboxedDir};

#[tokio::test(flavor = "multi_thread")]
async fn answers_that_are_not_the_task_asked_for_blame_the_component() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    for (id, want) in [
        ("other-id", "returned the Task with id \"someone-else\""),
        ("not-json", "not valid JSON"),
        ("not-object", "must be a JSON object"),
    ] {
        let err = store.get(id).await.unwrap_err();
        assert!(matches!(err, StoreError::Component { .. }), "{id}: {err}");
        assert!(err.to_string().contains(want), "{id}: {err}");
        assert!(
            err.to_string().contains("hostile.wasm"),
            "{id}: the error names the component: {err}"
        );
    }
    still_serves(&store).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trap_is_a_typed_error_and_the_instance_is_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    for _ in 0..3 {
        let err = store.get("trap").await.unwrap_err();
        assert!(matches!(err, StoreError::Component { .. }), "{err}");
        assert!(err.to_string().contains("trapped"), "{err}");
        still_serves(&store).await;
    }
    let err = store.save(&task(json!({"id": "trap"}))).await.unwrap_err();
    assert!(err.to_string().contains("trapped"), "{err}");
    store.save(&task(json!({"id": "fine"}))).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn attacks_from_many_callers_at_once_leave_the_store_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(
        hostile()
            .dir(tmp.path())
            .timeout(Duration::from_millis(200))
            .max_instances(4)
            .build()
            .unwrap(),
    );
    let mut calls = Vec::new();
    for i in 0..24 {
        let store = Arc::clone(&store);
        let id = ["loop", "trap", "other-id", "nothing"][i % 4];
        calls.push(tokio::spawn(async move { (id, store.get(id).await) }));
    }
    for call in calls {
        let (id, result) = call.await.unwrap();
        match id {
            "nothing" => assert_eq!(result.unwrap(), None),
            _ => assert!(result.is_err(), "{id} must fail"),
        }
    }
    still_serves(&store).await;
}

/// What a component says (its errors, the panic message in a trap) reaches logs, terminals and
/// A2A clients cut to a few KiB, with control characters escaped.
#[tokio::test(flavor = "multi_thread")]
async fn component_messages_are_cut_and_their_control_characters_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let store = hostile().dir(tmp.path()).build().unwrap();
    let huge = store
        .get("error-huge:10000000")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        huge.len() < 5 * 1024,
        "{} bytes reached the caller",
        huge.len()
    );
    assert!(
        huge.contains("more bytes cut"),
        "{}",
        &huge[huge.len() - 80..]
    );
    for id in ["error-ctrl", "panic-ctrl"] {
        let text = store.get(id).await.unwrap_err().to_string();
        assert!(
            !text.chars().any(char::is_control),
            "{id}: a control character reached the caller: {text:?}"
        );
        assert!(
            !text.contains('\u{202e}'),
            "{id}: a bidi override reached the caller"
        );
        // A trap carries the guest's backtrace (its function names are the guest's too), not
        // the panic message, which went to its stderr.
        let expected = if id == "panic-ctrl" {
            "trapped: "
        } else {
            "\\u{1b}[2J"
        };
        assert!(text.contains(expected), "{id}: {text}");
    }
    still_serves(&store).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn list_and_delete_are_unsupported_without_the_catalog_interface() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    assert!(!store.supports_catalog());
    assert!(!store.supports_lean());
    let err = store
        .list(&toolnexus::ListQuery::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Unsupported {
                operation: "list",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("does not support list"), "{err}");
    let err = store.delete("x").await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Unsupported {
                operation: "delete",
                ..
            }
        ),
        "{err}"
    );
    let builtin = WasmTaskStore::file_store(tmp.path().join("b")).unwrap();
    assert!(builtin.supports_catalog());
    assert!(builtin.supports_lean());
}

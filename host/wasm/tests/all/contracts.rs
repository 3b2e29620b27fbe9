//! The contract as this host checks it, proven with a tiny store component written in the
//! component text format: versions, conditions, conflicts, the timestamp filter, total size and
//! an unknown outcome come through, and answers the contract rules out are component errors; a
//! component without `push-configs` answers "unsupported" for them; a component of another
//! contract version is refused naming both versions. Plus the built-in file store and the
//! `lock-lease-ms` setting. `push-configs` itself is in `push_configs.rs`.

use std::time::Duration;
use toolnexus_core::{Expect, ListQuery, PushConfig, StoreError, Task, TaskStore, Timestamp};
use toolnexus_wasm::{
    CATALOG_INTERFACE, CacheDir, ComponentSource, STORE_INTERFACE, WasmTaskStore,
};
use toolnexus_wasm::{Sandboxed, SandboxedDir};

/// A bump allocator for the canonical ABI (8-byte aligned; tests make few calls) and a helper
/// that zeroes the 64-byte answer area at 0 and returns its address.
const CORE_COMMON: &str = r#"
    (memory (export "memory") 2)
    (global $next (mut i32) (i32.const 1024))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $p i32)
      (local.set $p (i32.and (i32.add (global.get $next) (i32.const 7)) (i32.const -8)))
      (global.set $next (i32.add (local.get $p) (local.get 3)))
      (local.get $p))
    (func $answer (result i32)
      (memory.fill (i32.const 0) (i32.const 0) (i32.const 64))
      (i32.const 0))
"#;

const OPTS: &str = r#"(memory (core memory $i "memory")) (realloc (core func $i "realloc"))"#;

/// A store holding one Task, `{"id":"t"}`, at version 7:
/// - `get` answers that Task at `get_version`, whatever the id;
/// - `save` on `version(7)` answers version 8, on `version(9)` `outcome-unknown`, on `any`
///   version 5 (or, with `conflict_on_any`, a conflict), and anything else a conflict with
///   current version 7;
/// - `list` answers an empty last page with total size `total`, or, when given a
///   status-timestamp-after, `invalid-input` with the text it received (an echo);
/// - `delete` finds nothing.
fn component(get_version: u64, conflict_on_any: bool, total: u64) -> Vec<u8> {
    let conflict_on_any = i32::from(conflict_on_any);
    let text = format!(
        r#"(component
  (core module $m
    {CORE_COMMON}
    (data (i32.const 512) "{{\"id\":\"t\"}}")
    (data (i32.const 576) "at version 7")
    (data (i32.const 640) "flush failed after the rename")
    (func (export "get") (param i32 i32) (result i32)
      (drop (call $answer))
      (i32.store8 (i32.const 8) (i32.const 1))
      (i32.store (i32.const 16) (i32.const 512))
      (i32.store (i32.const 20) (i32.const 10))
      (i64.store (i32.const 24) (i64.const {get_version}))
      (i32.const 0))
    (func (export "save") (param i32 i32 i32 i64) (result i32)
      (drop (call $answer))
      (if (i32.and (i32.eq (local.get 2) (i32.const 2)) (i64.eq (local.get 3) (i64.const 7)))
        (then
          (i64.store (i32.const 8) (i64.const 8))
          (return (i32.const 0))))
      (if (i32.and (i32.eq (local.get 2) (i32.const 2)) (i64.eq (local.get 3) (i64.const 9)))
        (then
          (i32.store8 (i32.const 0) (i32.const 1))
          (i32.store8 (i32.const 8) (i32.const 4))
          (i32.store (i32.const 16) (i32.const 640))
          (i32.store (i32.const 20) (i32.const 29))
          (return (i32.const 0))))
      (if (i32.and (i32.eqz (local.get 2)) (i32.eqz (i32.const {conflict_on_any})))
        (then
          (i64.store (i32.const 8) (i64.const 5))
          (return (i32.const 0))))
      (i32.store8 (i32.const 0) (i32.const 1))
      (i32.store8 (i32.const 8) (i32.const 3))
      (i32.store8 (i32.const 16) (i32.const 1))
      (i64.store (i32.const 24) (i64.const 7))
      (i32.store (i32.const 32) (i32.const 576))
      (i32.store (i32.const 36) (i32.const 12))
      (i32.const 0))
    (func (export "list") (param i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32) (result i32)
      (drop (call $answer))
      (if (local.get 6)
        (then
          (i32.store8 (i32.const 0) (i32.const 1))
          (i32.store (i32.const 16) (local.get 7))
          (i32.store (i32.const 20) (local.get 8))
          (return (i32.const 0))))
      (i64.store (i32.const 32) (i64.const {total}))
      (i32.const 0))
    (func (export "delete") (param i32 i32) (result i32) (call $answer)))
  (core instance $i (instantiate $m))
  (type $version-conflict (record (field "current" (option u64)) (field "message" string)))
  (type $store-error (variant (case "invalid-input" string) (case "corrupt" string) (case "io" string) (case "conflict" $version-conflict) (case "outcome-unknown" string) (case "other" string)))
  (type $stored-task (record (field "task" string) (field "version" u64)))
  (type $condition (variant (case "any") (case "absent") (case "version" u64)))
  (type $list-query (record (field "context-id" (option string)) (field "state" (option string)) (field "status-timestamp-after" (option string)) (field "page-size" u32) (field "page-token" (option string))))
  (type $task-page (record (field "tasks" (list string)) (field "next-page-token" (option string)) (field "total-size" u64)))
  (func $get (param "id" string) (result (result (option $stored-task) (error $store-error)))
    (canon lift (core func $i "get") {OPTS}))
  (func $save (param "task" string) (param "condition" $condition) (result (result u64 (error $store-error)))
    (canon lift (core func $i "save") {OPTS}))
  (func $list (param "query" $list-query) (result (result $task-page (error $store-error)))
    (canon lift (core func $i "list") {OPTS}))
  (func $delete (param "id" string) (result (result bool (error $store-error)))
    (canon lift (core func $i "delete") {OPTS}))
  (instance $store
    (export "version-conflict" (type $version-conflict))
    (export "store-error" (type $store-error))
    (export "stored-task" (type $stored-task))
    (export "condition" (type $condition))
    (export "get" (func $get))
    (export "save" (func $save)))
  (instance $catalog
    (export "store-error" (type $store-error))
    (export "list-query" (type $list-query))
    (export "task-page" (type $task-page))
    (export "list" (func $list))
    (export "delete" (func $delete)))
  (export "{STORE_INTERFACE}" (instance $store))
  (export "{CATALOG_INTERFACE}" (instance $catalog)))"#
    );
    wat::parse_str(text).expect("the fixture is valid WAT")
}

fn build(name: &str, bytes: Vec<u8>) -> Result<WasmTaskStore, StoreError> {
    let tmp = tempfile::tempdir().unwrap();
    WasmTaskStore::builder(ComponentSource::Bytes {
        name: name.into(),
        bytes: bytes.into(),
    })
    .cache(CacheDir::Off)
    .dir(tmp.path())
    .timeout(Duration::from_secs(10))
    .build()
}

fn task(id: &str) -> Task {
    Task::from_json(&format!(r#"{{"id":"{id}"}}"#)).unwrap()
}

fn assert_unsupported(result: Result<impl std::fmt::Debug, StoreError>, what: &str) {
    match result {
        Err(StoreError::Unsupported { operation, .. }) => assert_eq!(operation, what),
        other => panic!("expected Unsupported {what:?}, got {other:?}"),
    }
}

fn is_component_error(err: &StoreError, says: &str) -> bool {
    matches!(err, StoreError::Component { reason, .. } if reason.contains(says))
}

/// A component that does not export `push-configs`: the four methods answer "unsupported"
/// with the operation name of the trait's defaults, which callers match on.
#[tokio::test(flavor = "multi_thread")]
async fn a_component_without_push_configs_answers_unsupported_for_them() {
    let config = PushConfig::from_json(r#"{"id":"c1","url":"https://example.com/hook"}"#).unwrap();
    let store = build("plain.wasm", component(7, false, 0)).unwrap();
    assert!(!store.supports_push_configs());
    assert!(!TaskStore::supports_push_configs(&store));
    let what = "push notification configs";
    assert_unsupported(store.save_push_config("t", &config).await, what);
    assert_unsupported(store.get_push_config("t", "c1").await, what);
    assert_unsupported(store.list_push_configs("t").await, what);
    assert_unsupported(store.delete_push_config("t", "c1").await, what);
    // Everything else still works.
    assert!(store.get("t").await.unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_returns_versions_and_saves_on_conditions() {
    let store = build("new.wasm", component(7, false, 0)).unwrap();
    assert!(store.supports_versions());
    let (found, version) = store.get_versioned("t").await.unwrap().unwrap();
    assert_eq!(found.id(), "t");
    assert_eq!(version, 7);
    assert_eq!(store.get("t").await.unwrap().unwrap().id(), "t");
    // The condition reaches the component: only version(7) is answered with 8.
    assert_eq!(
        store
            .save_versioned(&task("t"), Expect::Version(7))
            .await
            .unwrap(),
        8
    );
    assert_eq!(
        store.save_versioned(&task("t"), Expect::Any).await.unwrap(),
        5
    );
    store.save(&task("t")).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conflict_is_a_conflict_error_with_the_current_version() {
    let store = build("new.wasm", component(7, false, 0)).unwrap();
    for expect in [Expect::Version(3), Expect::Absent] {
        match store.save_versioned(&task("t"), expect).await {
            Err(StoreError::Conflict {
                id,
                expected,
                current,
            }) => {
                assert_eq!(id, "t");
                assert_eq!(expected, expect);
                assert_eq!(current, Some(7));
            }
            other => panic!("expected a conflict for {expect}, got {other:?}"),
        }
    }
    // `save_if` (the trait's default over versions) reads version 3, saves on it, and sees the
    // conflict as "not saved".
    let stale = build("stale.wasm", component(3, false, 0)).unwrap();
    assert!(!stale.save_if(&task("t"), Some(&task("t"))).await.unwrap());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conflict_the_condition_rules_out_is_a_component_error() {
    let store = build("liar.wasm", component(7, true, 0)).unwrap();
    // No condition, so no conflict can arise: both the plain and the versioned save say so.
    let err = store.save(&task("t")).await.unwrap_err();
    assert!(is_component_error(&err, "cannot conflict"), "{err}");
    let err = store
        .save_versioned(&task("t"), Expect::Any)
        .await
        .unwrap_err();
    assert!(is_component_error(&err, "cannot conflict"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_version_0_is_a_component_error() {
    let store = build("zero.wasm", component(0, false, 0)).unwrap();
    let err = store.get_versioned("t").await.unwrap_err();
    assert!(is_component_error(&err, "version 0"), "{err}");
    let err = store.get("t").await.unwrap_err();
    assert!(is_component_error(&err, "version 0"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_list_reports_total_size_and_passes_the_timestamp_as_rfc_3339() {
    let store = build("new.wasm", component(7, false, 42)).unwrap();
    let page = store.list(&ListQuery::default()).await.unwrap();
    assert_eq!(page.total_size, Some(42));
    // The fixture echoes the filter it received as `invalid-input`, which is the query's fault.
    let query = ListQuery {
        status_timestamp_after: Some(Timestamp::parse("2025-06-01T14:00:00.5+02:00").unwrap()),
        ..ListQuery::default()
    };
    match store.list(&query).await {
        Err(StoreError::InvalidQuery { reason }) => {
            assert_eq!(reason, "2025-06-01T12:00:00.5Z");
        }
        other => panic!("expected InvalidQuery, got {other:?}"),
    }
}

/// A save the component cannot say took effect is `OutcomeUnknown`, its message kept: the
/// caller re-reads instead of retrying blindly.
#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_outcome_is_said_as_such() {
    let store = build("unsure.wasm", component(7, false, 0)).unwrap();
    match store.save_versioned(&task("t"), Expect::Version(9)).await {
        Err(StoreError::OutcomeUnknown { store, reason }) => {
            assert!(store.contains("unsure.wasm"), "{store}");
            assert_eq!(reason, "flush failed after the rename");
        }
        other => panic!("expected OutcomeUnknown, got {other:?}"),
    }
}

/// Earlier contract versions (never released) and later ones are refused at load, naming the
/// version the component exports and the one this host speaks.
#[test]
fn a_store_of_another_contract_version_is_refused_naming_both() {
    for theirs in ["0.1.0", "0.2.0", "0.3.0", "0.5.0", "1.0.0"] {
        let bytes = wat::parse_str(format!(
            r#"(component
                 (instance $store)
                 (export "toolnexus:task-store/store@{theirs}" (instance $store)))"#
        ))
        .unwrap();
        let msg = build("other.wasm", bytes).unwrap_err().to_string();
        assert!(
            msg.contains(&format!("toolnexus:task-store/store@{theirs}")),
            "{msg}"
        );
        assert!(msg.contains(STORE_INTERFACE), "{msg}");
        assert!(msg.contains("does not speak"), "{msg}");
    }
}

/// A patch version of ours is ours: it is checked against the contract's shape.
#[test]
fn a_store_of_the_wrong_shape_is_checked_against_the_contract() {
    let bytes = wat::parse_str(
        r#"(component
             (instance $store)
             (export "toolnexus:task-store/store@0.4.7" (instance $store)))"#,
    )
    .unwrap();
    let msg = build("empty.wasm", bytes).unwrap_err().to_string();
    assert!(
        msg.contains(&format!("exports do not match {STORE_INTERFACE}")),
        "{msg}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_builtin_file_store_speaks_the_contract() {
    let tmp = tempfile::tempdir().unwrap();
    let store = WasmTaskStore::file_store(tmp.path()).unwrap();
    assert!(store.supports_push_configs());
    let v1 = store
        .save_versioned(&task("a"), Expect::Absent)
        .await
        .unwrap();
    assert_eq!(v1, 1);
    assert_eq!(store.get_versioned("a").await.unwrap().unwrap().1, 1);
    match store.save_versioned(&task("a"), Expect::Absent).await {
        Err(StoreError::Conflict { current, .. }) => assert_eq!(current, Some(1)),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(
        store
            .save_versioned(&task("a"), Expect::Version(1))
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store.list(&ListQuery::default()).await.unwrap().total_size,
        Some(1)
    );
}

#[test]
fn the_lock_lease_is_passed_to_the_component() {
    let tmp = tempfile::tempdir().unwrap();
    let build = |lease: Duration| {
        WasmTaskStore::builder(ComponentSource::BuiltinFileStore)
            .dir(tmp.path())
            .lock_lease(lease)
            .build()
    };
    build(Duration::from_secs(30)).unwrap();
    // The file store refuses a lease under 10 ms: proof that the setting reached it.
    let msg = build(Duration::from_millis(5)).unwrap_err().to_string();
    assert!(msg.contains("refused its settings"), "{msg}");
    assert!(msg.contains("lock-lease-ms"), "{msg}");
}

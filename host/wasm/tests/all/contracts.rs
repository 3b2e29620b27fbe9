//! The earlier versions of the contract this host speaks, each proven with a tiny store component
//! written in the component text format: a 0.1.0 component still loads and serves `get`, `save`
//! and `list`, and answers "unsupported" for what 0.1 lacks (never a faked version); a 0.2.0
//! component's versions, conditions, conflicts, timestamp filter and total size come through,
//! and answers the contract rules out are component errors; neither keeps push configs. Plus
//! the built-in file store, which targets 0.3.0, and the `lock-lease-ms` setting. 0.3.0's
//! `push-configs` is in `push_configs.rs`.

use std::time::Duration;
use toolnexus_core::{Expect, ListQuery, PushConfig, StoreError, Task, TaskStore, Timestamp};
use toolnexus_wasm::{
    CacheDir, ComponentSource, ContractVersion, STORE_INTERFACE, STORE_INTERFACE_0_1,
    STORE_INTERFACE_0_2, WasmTaskStore,
};

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

/// A 0.1.0 store with a catalog: `get` finds nothing, `save` succeeds, `list` answers an empty
/// last page, `delete` finds nothing.
fn component_0_1() -> Vec<u8> {
    let text = format!(
        r#"(component
  (core module $m
    {CORE_COMMON}
    (func (export "get") (param i32 i32) (result i32) (call $answer))
    (func (export "save") (param i32 i32) (result i32) (call $answer))
    (func (export "list") (param i32 i32 i32 i32 i32 i32 i32 i32 i32 i32) (result i32) (call $answer))
    (func (export "delete") (param i32 i32) (result i32) (call $answer)))
  (core instance $i (instantiate $m))
  (type $store-error (variant (case "invalid-input" string) (case "corrupt" string) (case "io" string) (case "other" string)))
  (type $list-query (record (field "context-id" (option string)) (field "state" (option string)) (field "page-size" u32) (field "page-token" (option string))))
  (type $task-page (record (field "tasks" (list string)) (field "next-page-token" (option string))))
  (func $get (param "id" string) (result (result (option string) (error $store-error)))
    (canon lift (core func $i "get") {OPTS}))
  (func $save (param "task" string) (result (result (error $store-error)))
    (canon lift (core func $i "save") {OPTS}))
  (func $list (param "query" $list-query) (result (result $task-page (error $store-error)))
    (canon lift (core func $i "list") {OPTS}))
  (func $delete (param "id" string) (result (result bool (error $store-error)))
    (canon lift (core func $i "delete") {OPTS}))
  (instance $store
    (export "store-error" (type $store-error))
    (export "get" (func $get))
    (export "save" (func $save)))
  (instance $catalog
    (export "store-error" (type $store-error))
    (export "list-query" (type $list-query))
    (export "task-page" (type $task-page))
    (export "list" (func $list))
    (export "delete" (func $delete)))
  (export "{STORE_INTERFACE_0_1}" (instance $store))
  (export "toolnexus:task-store/catalog@0.1.0" (instance $catalog)))"#
    );
    wat::parse_str(text).expect("the fixture is valid WAT")
}

/// A 0.2.0 store holding one Task, `{"id":"t"}`, at version 7:
/// - `get` answers that Task at `get_version`, whatever the id;
/// - `save` on `version(7)` answers version 8, on `any` version 5 (or, with `conflict_on_any`,
///   a conflict), and anything else a conflict with current version 7;
/// - `list` answers an empty last page with total size `total`, or, when given a
///   status-timestamp-after, `invalid-input` with the text it received (an echo);
/// - `delete` finds nothing.
fn component_0_2(get_version: u64, conflict_on_any: bool, total: u64) -> Vec<u8> {
    let conflict_on_any = i32::from(conflict_on_any);
    let text = format!(
        r#"(component
  (core module $m
    {CORE_COMMON}
    (data (i32.const 512) "{{\"id\":\"t\"}}")
    (data (i32.const 576) "at version 7")
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
  (type $store-error (variant (case "invalid-input" string) (case "corrupt" string) (case "io" string) (case "conflict" $version-conflict) (case "other" string)))
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
  (export "{STORE_INTERFACE_0_2}" (instance $store))
  (export "toolnexus:task-store/catalog@0.2.0" (instance $catalog)))"#
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

#[tokio::test(flavor = "multi_thread")]
async fn a_0_1_component_loads_and_answers_unsupported_for_versions() {
    let store = build("old.wasm", component_0_1()).unwrap();
    assert_eq!(store.contract_version(), ContractVersion::V0_1);
    assert!(!store.supports_versions());
    assert!(store.supports_catalog());
    // What 0.1 has still works.
    assert_eq!(store.get("t").await.unwrap(), None);
    store.save(&task("t")).await.unwrap();
    assert!(!store.delete("t").await.unwrap());
    // What it lacks is unsupported, never faked.
    assert_unsupported(store.get_versioned("t").await, "versions");
    for expect in [Expect::Any, Expect::Absent, Expect::Version(1)] {
        assert_unsupported(store.save_versioned(&task("t"), expect).await, "versions");
    }
    assert_unsupported(store.save_if(&task("t"), None).await, "versions");
}

/// 0.1 and 0.2 have no `push-configs`: the four methods answer "unsupported" with the
/// operation name of the trait's defaults, which callers match on.
#[tokio::test(flavor = "multi_thread")]
async fn components_of_0_1_and_0_2_load_and_answer_unsupported_for_push_configs() {
    let config = PushConfig::from_json(r#"{"id":"c1","url":"https://example.com/hook"}"#).unwrap();
    for (name, bytes) in [
        ("old.wasm", component_0_1()),
        ("new.wasm", component_0_2(7, false, 0)),
    ] {
        let store = build(name, bytes).unwrap();
        assert!(!store.supports_push_configs(), "{name}");
        assert!(!TaskStore::supports_push_configs(&store), "{name}");
        let what = "push notification configs";
        assert_unsupported(store.save_push_config("t", &config).await, what);
        assert_unsupported(store.get_push_config("t", "c1").await, what);
        assert_unsupported(store.list_push_configs("t").await, what);
        assert_unsupported(store.delete_push_config("t", "c1").await, what);
        // Everything else still works.
        assert_eq!(store.get("t").await.unwrap().is_some(), name == "new.wasm");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_0_1_component_lists_without_total_size_or_timestamp_filter() {
    let store = build("old.wasm", component_0_1()).unwrap();
    let page = store.list(&ListQuery::default()).await.unwrap();
    assert!(page.tasks.is_empty());
    assert_eq!(page.next_page_token, None);
    assert_eq!(page.total_size, None);
    let query = ListQuery {
        status_timestamp_after: Some(Timestamp::parse("2025-06-01T12:00:00Z").unwrap()),
        ..ListQuery::default()
    };
    assert_unsupported(
        store.list(&query).await,
        "list filter status-timestamp-after",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_0_2_component_returns_versions_and_saves_on_conditions() {
    let store = build("new.wasm", component_0_2(7, false, 0)).unwrap();
    assert_eq!(store.contract_version(), ContractVersion::V0_2);
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
async fn a_0_2_conflict_is_a_conflict_error_with_the_current_version() {
    let store = build("new.wasm", component_0_2(7, false, 0)).unwrap();
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
    let stale = build("stale.wasm", component_0_2(3, false, 0)).unwrap();
    assert!(!stale.save_if(&task("t"), Some(&task("t"))).await.unwrap());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_0_2_conflict_the_condition_rules_out_is_a_component_error() {
    let store = build("liar.wasm", component_0_2(7, true, 0)).unwrap();
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
async fn a_0_2_version_0_is_a_component_error() {
    let store = build("zero.wasm", component_0_2(0, false, 0)).unwrap();
    let err = store.get_versioned("t").await.unwrap_err();
    assert!(is_component_error(&err, "version 0"), "{err}");
    let err = store.get("t").await.unwrap_err();
    assert!(is_component_error(&err, "version 0"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_0_2_list_reports_total_size_and_passes_the_timestamp_as_rfc_3339() {
    let store = build("new.wasm", component_0_2(7, false, 42)).unwrap();
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

#[test]
fn a_store_of_another_contract_version_is_refused_naming_every_version_spoken() {
    let bytes = wat::parse_str(
        r#"(component
             (instance $store)
             (export "toolnexus:task-store/store@0.4.0" (instance $store)))"#,
    )
    .unwrap();
    let msg = build("future.wasm", bytes).unwrap_err().to_string();
    assert!(msg.contains("toolnexus:task-store/store@0.4.0"), "{msg}");
    assert!(msg.contains(STORE_INTERFACE), "{msg}");
    assert!(msg.contains(STORE_INTERFACE_0_2), "{msg}");
    assert!(msg.contains(STORE_INTERFACE_0_1), "{msg}");
}

#[test]
fn a_0_1_store_of_the_wrong_shape_is_checked_against_0_1() {
    let bytes = wat::parse_str(format!(
        r#"(component
             (instance $store)
             (export "{STORE_INTERFACE_0_1}" (instance $store)))"#
    ))
    .unwrap();
    let msg = build("empty.wasm", bytes).unwrap_err().to_string();
    assert!(
        msg.contains(&format!("exports do not match {STORE_INTERFACE_0_1}")),
        "{msg}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_builtin_file_store_speaks_0_3() {
    let tmp = tempfile::tempdir().unwrap();
    let store = WasmTaskStore::file_store(tmp.path()).unwrap();
    assert_eq!(store.contract_version(), ContractVersion::V0_3);
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

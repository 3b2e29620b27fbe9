//! The contract's `push-configs`: a tiny component written in the component text format
//! whose answers are whatever a test gives it, so every answer the contract rules out is seen
//! to be a component error (a config of another id, an unsorted list, an id twice, too many or
//! too large configs, text that is not a config); and the built-in file store, whose configs
//! survive a fresh store over the same directory and go with their Task.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Duration;
use toolnexus_core::{PushConfig, StoreError, Task, TaskStore};
use toolnexus_wasm::{
    CacheDir, ComponentSource, PUSH_CONFIGS_INTERFACE, STORE_INTERFACE, WasmTaskStore,
};
use toolnexus_wasm::{Sandboxed, SandboxedDir};

/// What the fixture's `push-configs` answers: `get` this text (or `none`) whatever is asked,
/// `list` these texts in this order.
struct Answers<'a> {
    get: Option<&'a str>,
    list: Vec<&'a str>,
}

/// `bytes` as a WAT string literal, every byte escaped.
fn wat_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for b in bytes {
        let _ = write!(out, "\\{b:02x}");
    }
    out
}

/// A store with `push-configs` (and no catalog): `store.get` finds nothing, `store.save`
/// answers version 1, `push-configs.set` succeeds, `delete` answers `true`, and `get` and
/// `list` answer [`Answers`]. Strings sit in data segments from 4096 on (the same text once);
/// the bump allocator for the host's arguments starts past them.
fn component(answers: &Answers) -> Vec<u8> {
    let mut data = String::new();
    let mut at = 4096usize;
    let mut placed: HashMap<String, (usize, usize)> = HashMap::new();
    let mut place = |text: &str, data: &mut String, at: &mut usize| -> (usize, usize) {
        *placed.entry(text.to_owned()).or_insert_with(|| {
            let _ = writeln!(
                data,
                "(data (i32.const {at}) \"{}\")",
                wat_bytes(text.as_bytes())
            );
            let spot = (*at, text.len());
            *at += (text.len() + 7) & !7;
            spot
        })
    };
    let get = answers.get.map(|text| place(text, &mut data, &mut at));
    let items: Vec<(usize, usize)> = answers
        .list
        .iter()
        .map(|text| place(text, &mut data, &mut at))
        .collect();
    let array = at;
    let mut pairs = Vec::with_capacity(items.len() * 8);
    for (ptr, len) in &items {
        pairs.extend_from_slice(&(*ptr as u32).to_le_bytes());
        pairs.extend_from_slice(&(*len as u32).to_le_bytes());
    }
    let _ = writeln!(data, "(data (i32.const {array}) \"{}\")", wat_bytes(&pairs));
    at += pairs.len();
    let heap = (at + 0xffff) & !0xffff;
    let pages = heap / 0x10000 + 1;
    let get_body = match get {
        None => String::new(),
        Some((ptr, len)) => format!(
            "(i32.store8 (i32.const 8) (i32.const 1))
             (i32.store (i32.const 12) (i32.const {ptr}))
             (i32.store (i32.const 16) (i32.const {len}))"
        ),
    };
    let list_len = items.len();
    let text = format!(
        r#"(component
  (core module $m
    (memory (export "memory") {pages})
    {data}
    (global $next (mut i32) (i32.const {heap}))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $p i32)
      (local.set $p (i32.and (i32.add (global.get $next) (i32.const 7)) (i32.const -8)))
      (global.set $next (i32.add (local.get $p) (local.get 3)))
      (local.get $p))
    (func $answer (result i32)
      (memory.fill (i32.const 0) (i32.const 0) (i32.const 64))
      (i32.const 0))
    (func (export "get") (param i32 i32) (result i32) (call $answer))
    (func (export "save") (param i32 i32 i32 i64) (result i32)
      (drop (call $answer))
      (i64.store (i32.const 8) (i64.const 1))
      (i32.const 0))
    (func (export "push-set") (param i32 i32 i32 i32) (result i32) (call $answer))
    (func (export "push-get") (param i32 i32 i32 i32) (result i32)
      (drop (call $answer))
      {get_body}
      (i32.const 0))
    (func (export "push-list") (param i32 i32) (result i32)
      (drop (call $answer))
      (i32.store (i32.const 8) (i32.const {array}))
      (i32.store (i32.const 12) (i32.const {list_len}))
      (i32.const 0))
    (func (export "push-delete") (param i32 i32 i32 i32) (result i32)
      (drop (call $answer))
      (i32.store8 (i32.const 8) (i32.const 1))
      (i32.const 0)))
  (core instance $i (instantiate $m))
  (type $version-conflict (record (field "current" (option u64)) (field "message" string)))
  (type $store-error (variant (case "invalid-input" string) (case "corrupt" string) (case "io" string) (case "conflict" $version-conflict) (case "outcome-unknown" string) (case "other" string)))
  (type $stored-task (record (field "task" string) (field "version" u64)))
  (type $condition (variant (case "any") (case "absent") (case "version" u64)))
  (func $get (param "id" string) (result (result (option $stored-task) (error $store-error)))
    (canon lift (core func $i "get") {OPTS}))
  (func $save (param "task" string) (param "condition" $condition) (result (result u64 (error $store-error)))
    (canon lift (core func $i "save") {OPTS}))
  (func $push-set (param "task-id" string) (param "config" string) (result (result (error $store-error)))
    (canon lift (core func $i "push-set") {OPTS}))
  (func $push-get (param "task-id" string) (param "config-id" string) (result (result (option string) (error $store-error)))
    (canon lift (core func $i "push-get") {OPTS}))
  (func $push-list (param "task-id" string) (result (result (list string) (error $store-error)))
    (canon lift (core func $i "push-list") {OPTS}))
  (func $push-delete (param "task-id" string) (param "config-id" string) (result (result bool (error $store-error)))
    (canon lift (core func $i "push-delete") {OPTS}))
  (instance $store
    (export "version-conflict" (type $version-conflict))
    (export "store-error" (type $store-error))
    (export "stored-task" (type $stored-task))
    (export "condition" (type $condition))
    (export "get" (func $get))
    (export "save" (func $save)))
  (instance $push
    (export "store-error" (type $store-error))
    (export "set" (func $push-set))
    (export "get" (func $push-get))
    (export "list" (func $push-list))
    (export "delete" (func $push-delete)))
  (export "{STORE_INTERFACE}" (instance $store))
  (export "{PUSH_CONFIGS_INTERFACE}" (instance $push)))"#
    );
    wat::parse_str(text).expect("the fixture is valid WAT")
}

const OPTS: &str = r#"(memory (core memory $i "memory")) (realloc (core func $i "realloc"))"#;

fn build(answers: &Answers) -> WasmTaskStore {
    let tmp = tempfile::tempdir().unwrap();
    WasmTaskStore::builder(ComponentSource::Bytes {
        name: "push.wasm".into(),
        bytes: component(answers).into(),
    })
    .cache(CacheDir::Off)
    .dir(tmp.path())
    .timeout(Duration::from_secs(10))
    .build()
    .unwrap()
}

fn config(text: &str) -> PushConfig {
    PushConfig::from_json(text).unwrap()
}

#[track_caller]
fn assert_component_error<T: std::fmt::Debug>(result: Result<T, StoreError>, says: &str) {
    match result {
        Err(StoreError::Component { reason, .. }) => {
            assert!(reason.contains(says), "{reason:?} does not say {says:?}")
        }
        other => panic!("expected a component error saying {says:?}, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_with_push_configs_is_served_and_its_good_answers_believed() {
    let store = build(&Answers {
        get: Some(r#"{"id":"c1","url":"https://example.com/a"}"#),
        list: vec![r#"{"id":"a"}"#, r#"{"id":"b","n":1}"#, r#"{"id":"ba"}"#],
    });
    assert!(store.supports_push_configs());
    assert!(TaskStore::supports_push_configs(&store));
    store
        .save_push_config("t", &config(r#"{"id":"c1"}"#))
        .await
        .unwrap();
    let found = store.get_push_config("t", "c1").await.unwrap().unwrap();
    assert_eq!(
        found.as_json(),
        r#"{"id":"c1","url":"https://example.com/a"}"#
    );
    let ids: Vec<String> = store
        .list_push_configs("t")
        .await
        .unwrap()
        .iter()
        .map(|c| c.id().to_owned())
        .collect();
    assert_eq!(ids, ["a", "b", "ba"]);
    assert!(store.delete_push_config("t", "c1").await.unwrap());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_miss_and_an_empty_list_are_answers_not_errors() {
    let store = build(&Answers {
        get: None,
        list: vec![],
    });
    assert_eq!(store.get_push_config("t", "c1").await.unwrap(), None);
    assert!(store.list_push_configs("t").await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn empty_ids_are_refused_before_the_component_is_called() {
    let store = build(&Answers {
        get: None,
        list: vec![],
    });
    assert!(matches!(
        store.get_push_config("t", "").await,
        Err(StoreError::InvalidPushConfig { .. })
    ));
    assert!(matches!(
        store.delete_push_config("t", "").await,
        Err(StoreError::InvalidPushConfig { .. })
    ));
    assert!(matches!(
        store.list_push_configs("").await,
        Err(StoreError::InvalidId { .. })
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_get_answering_another_config_is_a_component_error() {
    let store = build(&Answers {
        get: Some(r#"{"id":"other"}"#),
        list: vec![],
    });
    assert_component_error(
        store.get_push_config("t", "c1").await,
        "returned the config with id \"other\"",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_that_are_not_configs_are_component_errors() {
    for bad in [
        "not json",
        "[1]",
        r#"{"url":"u"}"#,
        r#"{"id":""}"#,
        r#"{"id":7}"#,
    ] {
        let store = build(&Answers {
            get: Some(bad),
            list: vec![r#"{"id":"a"}"#, bad],
        });
        assert_component_error(store.get_push_config("t", "c1").await, "not a push config");
        assert_component_error(store.list_push_configs("t").await, "not a push config");
    }
    let oversized = format!(r#"{{"id":"c1","pad":"{}"}}"#, "x".repeat(70_000));
    let store = build(&Answers {
        get: Some(&oversized),
        list: vec![],
    });
    assert_component_error(store.get_push_config("t", "c1").await, "over the limit");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unsorted_list_or_an_id_twice_is_a_component_error() {
    for list in [
        vec![r#"{"id":"b"}"#, r#"{"id":"a"}"#],
        vec![r#"{"id":"a"}"#, r#"{"id":"a","n":2}"#],
        // Byte order, not character or locale order: "B" (0x42) sorts before "a" (0x61).
        vec![r#"{"id":"a"}"#, r#"{"id":"B"}"#],
    ] {
        let store = build(&Answers { get: None, list });
        assert_component_error(store.list_push_configs("t").await, "not sorted by id");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_list_past_its_bounds_is_a_component_error() {
    let store = build(&Answers {
        get: None,
        list: vec![r#"{"id":"a"}"#; 401],
    });
    assert_component_error(store.list_push_configs("t").await, "returned 401 configs");
    // 300 configs (under the count bound) of 60 KB each: 18 MB, over the 16 MiB bound.
    let large = format!(r#"{{"id":"c","pad":"{}"}}"#, "x".repeat(60_000));
    let store = build(&Answers {
        get: None,
        list: vec![large.as_str(); 300],
    });
    assert_component_error(store.list_push_configs("t").await, "bytes of configs");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_file_store_keeps_configs_across_a_fresh_store_and_drops_them_with_the_task() {
    let tmp = tempfile::tempdir().unwrap();
    let first = WasmTaskStore::file_store(tmp.path()).unwrap();
    assert!(first.supports_push_configs());
    let task = Task::from_json(r#"{"id":"t/1","status":{"state":"working"}}"#).unwrap();
    first.save(&task).await.unwrap();
    let c2 = config(r#"{"id":"c2","url":"https://example.com/2","token":"s"}"#);
    let c1 = config(r#"{"id":"c1","url":"https://example.com/1"}"#);
    first.save_push_config("t/1", &c2).await.unwrap();
    first.save_push_config("t/1", &c1).await.unwrap();
    first.save_push_config("other", &c1).await.unwrap();
    drop(first);

    let fresh = WasmTaskStore::file_store(tmp.path()).unwrap();
    assert_eq!(
        fresh.get_push_config("t/1", "c2").await.unwrap(),
        Some(c2.clone())
    );
    assert_eq!(
        fresh.list_push_configs("t/1").await.unwrap(),
        vec![c1.clone(), c2.clone()]
    );
    // A replacement is whole.
    let c1_new = config(r#"{"id":"c1","url":"https://example.com/new"}"#);
    fresh.save_push_config("t/1", &c1_new).await.unwrap();
    assert_eq!(
        fresh.get_push_config("t/1", "c1").await.unwrap(),
        Some(c1_new)
    );
    assert!(fresh.delete_push_config("t/1", "c2").await.unwrap());
    assert!(!fresh.delete_push_config("t/1", "c2").await.unwrap());
    assert_eq!(fresh.get_push_config("t/1", "c2").await.unwrap(), None);
    // Deleting the Task takes its configs, and only its.
    assert!(fresh.delete("t/1").await.unwrap());
    assert!(fresh.list_push_configs("t/1").await.unwrap().is_empty());
    assert_eq!(fresh.list_push_configs("other").await.unwrap(), vec![c1]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_file_store_writes_a_config_as_given_and_reports_a_foreign_file_as_corrupt() {
    // The config file is `.push/<Task file stem>/<config file name>`, holding the text as
    // given; a file there that does not hold the config its name says is corrupt, never
    // passed on.
    let tmp = tempfile::tempdir().unwrap();
    let store = WasmTaskStore::file_store(tmp.path()).unwrap();
    store
        .save_push_config("t", &config(r#"{"id":"c1"}"#))
        .await
        .unwrap();
    let file = tmp.path().join(".push").join("t").join("c1.json");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), r#"{"id":"c1"}"#);
    std::fs::write(&file, r#"{"id":"c9"}"#).unwrap();
    match store.get_push_config("t", "c1").await {
        Err(StoreError::Corrupt { reason, .. }) => assert!(reason.contains("c9"), "{reason}"),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

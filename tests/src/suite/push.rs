//! The push-notification config behaviours every store that keeps them must have (the four
//! `*_push_config*` methods of `TaskStore`), and the one every store must have: a store that
//! does not keep them says so and answers `Unsupported` everywhere. One behaviour per function,
//! listed once by [`for_each_push_case!`](crate::for_each_push_case).

use crate::{StoreFactory, task};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use toolnexus::{PushConfig, StoreError, TaskStore};

/// Calls `$callback!(case, case, …)` with the name of every behaviour in this module, as
/// [`for_each_case!`](crate::for_each_case) does for the Task behaviours.
#[macro_export]
macro_rules! for_each_push_case {
    ($callback:ident) => {
        $callback!(
            push_support_is_all_or_nothing,
            push_configs_round_trip_and_replace_by_id,
            push_configs_list_by_id_and_per_task,
            push_config_misses_are_none_and_false,
            push_configs_go_with_their_task,
            push_configs_survive_a_fresh_store,
            push_invalid_input_is_a_typed_error_and_changes_nothing,
            push_concurrent_saves_all_land,
            push_odd_ids_round_trip_and_stay_distinct
        );
    };
}

/// A config from a JSON object, as the A2A layer stores one.
fn config(value: Value) -> PushConfig {
    PushConfig::from_value(value).expect("test config is valid")
}

fn hook(id: &str, n: u64) -> PushConfig {
    config(json!({"id": id, "url": format!("https://example.com/hook/{n}"), "n": n}))
}

/// A config as JSON, for comparing what came back with what was saved (equal as JSON: a store
/// may keep the text in another spelling).
fn as_value(config: &PushConfig) -> Value {
    Value::Object(config.to_map())
}

fn values(configs: &[PushConfig]) -> Vec<Value> {
    configs.iter().map(as_value).collect()
}

fn ids(configs: &[PushConfig]) -> Vec<&str> {
    configs.iter().map(PushConfig::id).collect()
}

/// The store over `dir`, which must say it keeps push configs (the behaviours below are for
/// such stores; [`push_support_is_all_or_nothing`] covers the others).
fn open_keeping_configs(f: &dyn StoreFactory, dir: &Path) -> Arc<dyn TaskStore> {
    let store = f.open(dir);
    assert!(
        store.supports_push_configs(),
        "{} does not keep push configs",
        store.describe()
    );
    store
}

/// A store that keeps push configs does all four operations; one that does not says
/// `supports_push_configs() == false` and answers every one of them `Unsupported`, never a
/// silent miss.
pub async fn push_support_is_all_or_nothing(f: &dyn StoreFactory, dir: &Path) {
    let store = f.open(dir);
    let c = hook("c", 1);
    if store.supports_push_configs() {
        store.save_push_config("t", &c).await.unwrap();
        let got = store.get_push_config("t", "c").await.unwrap();
        assert_eq!(got.as_ref().map(as_value), Some(as_value(&c)));
        assert_eq!(
            values(&store.list_push_configs("t").await.unwrap()),
            [as_value(&c)]
        );
        assert!(store.delete_push_config("t", "c").await.unwrap());
        return;
    }
    let unsupported = |what: &str, err: StoreError| {
        assert!(
            matches!(err, StoreError::Unsupported { .. }),
            "{what}: expected Unsupported, got {err}"
        );
    };
    unsupported("save", store.save_push_config("t", &c).await.unwrap_err());
    unsupported("get", store.get_push_config("t", "c").await.unwrap_err());
    unsupported("list", store.list_push_configs("t").await.unwrap_err());
    unsupported(
        "delete",
        store.delete_push_config("t", "c").await.unwrap_err(),
    );
}

/// A saved config comes back equal as JSON; a save with the same config id replaces it.
pub async fn push_configs_round_trip_and_replace_by_id(f: &dyn StoreFactory, dir: &Path) {
    let store = open_keeping_configs(f, dir);
    let first = config(json!({
        "id": "c1",
        "url": "https://example.com/hook",
        "token": "tok-ü",
        "authentication": {"schemes": ["Bearer"], "credentials": "sealed:abc"},
        "nested": {"list": [1, 2.5, null, true, "x"]},
    }));
    store.save_push_config("task-1", &first).await.unwrap();
    let got = store.get_push_config("task-1", "c1").await.unwrap();
    assert_eq!(got.as_ref().map(as_value), Some(as_value(&first)));
    assert_eq!(got.unwrap().id(), "c1");

    let second = config(json!({"id": "c1", "url": "https://example.org/other"}));
    store.save_push_config("task-1", &second).await.unwrap();
    let got = store.get_push_config("task-1", "c1").await.unwrap();
    assert_eq!(
        got.as_ref().map(as_value),
        Some(as_value(&second)),
        "replaced"
    );
    let all = store.list_push_configs("task-1").await.unwrap();
    assert_eq!(values(&all), [as_value(&second)], "one config per id");
}

/// A listing is every config of that Task, by config id in byte order, and never one of
/// another Task (even one whose id is a prefix of it or differs only in case).
pub async fn push_configs_list_by_id_and_per_task(f: &dyn StoreFactory, dir: &Path) {
    let store = open_keeping_configs(f, dir);
    // Saved out of order; `B` < `a` < `a/b` < `b` < `é` in bytes.
    let of_a = ["b", "é", "a", "B", "a/b"];
    for (n, id) in of_a.iter().enumerate() {
        store
            .save_push_config("a", &hook(id, n as u64))
            .await
            .unwrap();
    }
    for (task_id, id) in [("ab", "z"), ("A", "y"), ("b", "a")] {
        store
            .save_push_config(task_id, &hook(id, 99))
            .await
            .unwrap();
    }
    let listed = store.list_push_configs("a").await.unwrap();
    assert_eq!(ids(&listed), ["B", "a", "a/b", "b", "é"]);
    for config in &listed {
        let n = of_a.iter().position(|id| *id == config.id()).unwrap();
        assert_eq!(as_value(config), as_value(&hook(config.id(), n as u64)));
    }
    assert_eq!(ids(&store.list_push_configs("ab").await.unwrap()), ["z"]);
    assert_eq!(ids(&store.list_push_configs("A").await.unwrap()), ["y"]);
    assert_eq!(ids(&store.list_push_configs("b").await.unwrap()), ["a"]);
    assert!(store.list_push_configs("none").await.unwrap().is_empty());
    assert_eq!(
        store.get_push_config("b", "b").await.unwrap(),
        None,
        "a's, not b's"
    );
}

/// A miss is `None` and a delete of nothing is `false`, never an error; a deleted config is
/// gone, and deleting it again is `false`.
pub async fn push_config_misses_are_none_and_false(f: &dyn StoreFactory, dir: &Path) {
    let store = open_keeping_configs(f, dir);
    assert_eq!(store.get_push_config("t", "c").await.unwrap(), None);
    assert!(!store.delete_push_config("t", "c").await.unwrap());
    assert!(store.list_push_configs("t").await.unwrap().is_empty());

    store.save_push_config("t", &hook("c", 1)).await.unwrap();
    store.save_push_config("t", &hook("keep", 2)).await.unwrap();
    assert_eq!(store.get_push_config("t", "other").await.unwrap(), None);
    assert!(!store.delete_push_config("t", "other").await.unwrap());
    assert!(store.delete_push_config("t", "c").await.unwrap());
    assert_eq!(store.get_push_config("t", "c").await.unwrap(), None);
    assert!(
        !store.delete_push_config("t", "c").await.unwrap(),
        "idempotent"
    );
    assert_eq!(ids(&store.list_push_configs("t").await.unwrap()), ["keep"]);
    // A config saved again after its delete is back.
    store.save_push_config("t", &hook("c", 3)).await.unwrap();
    let got = store.get_push_config("t", "c").await.unwrap();
    assert_eq!(got.as_ref().map(as_value), Some(as_value(&hook("c", 3))));
}

/// Deleting a Task deletes its configs, and only its configs.
pub async fn push_configs_go_with_their_task(f: &dyn StoreFactory, dir: &Path) {
    let store = open_keeping_configs(f, dir);
    for id in ["gone", "stays"] {
        store.save(&task(json!({"id": id}))).await.unwrap();
        store.save_push_config(id, &hook("c1", 1)).await.unwrap();
        store.save_push_config(id, &hook("c2", 2)).await.unwrap();
    }
    assert!(store.delete("gone").await.unwrap());
    let reader = if f.durable() { f.open(dir) } else { store };
    assert!(reader.list_push_configs("gone").await.unwrap().is_empty());
    assert_eq!(reader.get_push_config("gone", "c1").await.unwrap(), None);
    assert_eq!(
        ids(&reader.list_push_configs("stays").await.unwrap()),
        ["c1", "c2"]
    );
    // A new Task with the old id starts with no configs, and can have some again.
    reader.save(&task(json!({"id": "gone"}))).await.unwrap();
    assert!(reader.list_push_configs("gone").await.unwrap().is_empty());
    reader
        .save_push_config("gone", &hook("c3", 3))
        .await
        .unwrap();
    assert_eq!(
        ids(&reader.list_push_configs("gone").await.unwrap()),
        ["c3"]
    );
}

/// What a store saved, a fresh store over the same storage sees (durable stores; an in-memory
/// store is "reopened" as itself), replacements and deletes included.
pub async fn push_configs_survive_a_fresh_store(f: &dyn StoreFactory, dir: &Path) {
    let first = open_keeping_configs(f, dir);
    first.save_push_config("t", &hook("a", 1)).await.unwrap();
    first.save_push_config("t", &hook("b", 2)).await.unwrap();
    first.save_push_config("t", &hook("a", 3)).await.unwrap();
    first.save_push_config("t", &hook("gone", 4)).await.unwrap();
    assert!(first.delete_push_config("t", "gone").await.unwrap());
    let reader = if f.durable() { f.open(dir) } else { first };
    let listed = reader.list_push_configs("t").await.unwrap();
    assert_eq!(
        values(&listed),
        [as_value(&hook("a", 3)), as_value(&hook("b", 2))]
    );
    let got = reader.get_push_config("t", "b").await.unwrap();
    assert_eq!(got.as_ref().map(as_value), Some(as_value(&hook("b", 2))));
    assert_eq!(reader.get_push_config("t", "gone").await.unwrap(), None);
}

/// An empty Task id is `InvalidId`, an empty config id and a document that is not a config
/// are `InvalidPushConfig`; none of them changes anything.
pub async fn push_invalid_input_is_a_typed_error_and_changes_nothing(
    f: &dyn StoreFactory,
    dir: &Path,
) {
    let store = open_keeping_configs(f, dir);
    store.save_push_config("t", &hook("c", 1)).await.unwrap();
    let invalid_id = |what: &str, err: StoreError| {
        assert!(
            matches!(err, StoreError::InvalidId { .. }),
            "{what}: expected InvalidId, got {err}"
        );
    };
    invalid_id(
        "save",
        store.save_push_config("", &hook("c", 2)).await.unwrap_err(),
    );
    invalid_id("get", store.get_push_config("", "c").await.unwrap_err());
    invalid_id("list", store.list_push_configs("").await.unwrap_err());
    invalid_id(
        "delete",
        store.delete_push_config("", "c").await.unwrap_err(),
    );
    let invalid_config = |what: &str, err: StoreError| {
        assert!(
            matches!(err, StoreError::InvalidPushConfig { .. }),
            "{what}: expected InvalidPushConfig, got {err}"
        );
    };
    invalid_config("get", store.get_push_config("t", "").await.unwrap_err());
    invalid_config(
        "delete",
        store.delete_push_config("t", "").await.unwrap_err(),
    );
    // What is not a config never reaches a store: it cannot be made into one.
    for text in [
        "not json",
        "[]",
        r#"{"url":"https://example.com"}"#,
        r#"{"id":""}"#,
        r#"{"id":7}"#,
        r#"{"id":"c"} {}"#,
    ] {
        invalid_config(text, PushConfig::from_json(text).unwrap_err());
    }
    let huge = json!({"id": "c", "pad": "x".repeat(toolnexus::MAX_PUSH_CONFIG_BYTES)});
    invalid_config("too large", PushConfig::from_value(huge).unwrap_err());

    let reader = if f.durable() { f.open(dir) } else { store };
    let listed = reader.list_push_configs("t").await.unwrap();
    assert_eq!(
        values(&listed),
        [as_value(&hook("c", 1))],
        "nothing changed"
    );
}

/// Many concurrent saves of distinct configs of one Task all land (through several store
/// instances over the same storage when the store is durable).
pub async fn push_concurrent_saves_all_land(f: &dyn StoreFactory, dir: &Path) {
    let stores: Vec<Arc<dyn TaskStore>> = if f.durable() {
        (0..2).map(|_| open_keeping_configs(f, dir)).collect()
    } else {
        vec![open_keeping_configs(f, dir)]
    };
    let mut writers = Vec::new();
    for i in 0..48u64 {
        let store = Arc::clone(&stores[i as usize % stores.len()]);
        writers.push(tokio::spawn(async move {
            store
                .save_push_config("shared", &hook(&format!("c{i:02}"), i))
                .await
        }));
    }
    for writer in writers {
        writer.await.unwrap().unwrap();
    }
    let listed = stores[0].list_push_configs("shared").await.unwrap();
    let want: Vec<Value> = (0..48u64)
        .map(|i| as_value(&hook(&format!("c{i:02}"), i)))
        .collect();
    assert_eq!(values(&listed), want);
}

/// Task ids and config ids that are hostile as file names all work, stay distinct and
/// round-trip, through a fresh store when the store is durable.
pub async fn push_odd_ids_round_trip_and_stay_distinct(f: &dyn StoreFactory, dir: &Path) {
    let long = "x".repeat(10_000);
    let long2 = format!("{}y", "x".repeat(9_999));
    let odd = [
        "a/b",
        "a_b",
        "a%2Fb",
        "..",
        ".",
        ".push",
        ".tmp-1234",
        "x.json",
        "日本",
        "nul\0byte",
        "../../etc/passwd",
        long.as_str(),
        long2.as_str(),
    ];
    let store = open_keeping_configs(f, dir);
    for (n, id) in odd.iter().enumerate() {
        // The odd id as the Task's, and as a config id of one plain Task.
        store
            .save_push_config(id, &hook(id, n as u64))
            .await
            .unwrap_or_else(|e| panic!("task {id:?}: {e}"));
        store
            .save_push_config("plain", &hook(id, n as u64))
            .await
            .unwrap_or_else(|e| panic!("config {id:?}: {e}"));
    }
    let reader = if f.durable() { f.open(dir) } else { store };
    for (n, id) in odd.iter().enumerate() {
        let want = as_value(&hook(id, n as u64));
        let of_task = reader.list_push_configs(id).await.unwrap();
        assert_eq!(values(&of_task), std::slice::from_ref(&want), "task {id:?}");
        let got = reader.get_push_config("plain", id).await.unwrap();
        assert_eq!(got.as_ref().map(as_value), Some(want), "config {id:?}");
    }
    let mut sorted: Vec<&str> = odd.to_vec();
    sorted.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    assert_eq!(
        ids(&reader.list_push_configs("plain").await.unwrap()),
        sorted
    );
}

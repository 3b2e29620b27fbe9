//! Directory interchange between store implementations (Rust, JavaScript, Python): the Tasks and
//! push configs every implementation must write the same files for and read back from the
//! others, the save, read and list steps, and the interchange tests themselves, written once and
//! run against each store that is not Rust's (`tests/all/js_store.rs`, `python_store.rs`). Each
//! test takes the store under test as a [`StoreFactory`] and puts it beside the native store
//! (`FileTaskStore`) and the Rust file-store component.

use crate::{StoreFactory, snapshot, task, vectors};
use serde_json::json;
use std::collections::BTreeSet;
use toolnexus::wasm::WasmTaskStore;
use toolnexus::{FileTaskStore, ListQuery, PushConfig, Task, TaskStore};

/// The shared vectors plus Tasks whose ids are hostile as file names (escapes, dots, NUL,
/// non-ASCII, and ids long enough to get a hashed name).
pub fn interchange_tasks() -> Vec<Task> {
    let odd = [
        "..",
        ".",
        "a/b",
        "a%2Fb",
        "nul\0byte",
        ".hidden",
        ".tmp-1234",
        "x.json",
        "é/日本語/🚀",
        "\u{ff5e}",
        "~",
        "%",
    ];
    let mut tasks: Vec<Task> = vectors().into_iter().map(|(_, t)| t).collect();
    assert!(
        tasks.iter().all(|t| !odd.contains(&t.id())),
        "a vector's id collides with an odd id below"
    );
    for (i, id) in odd.into_iter().enumerate() {
        tasks.push(task(json!({"id": id, "n": i, "contextId": "odd"})));
    }
    tasks.push(task(json!({"id": "x".repeat(10_000), "n": "long"})));
    tasks.push(task(
        json!({"id": format!("{}/", "é".repeat(300)), "n": "long-escaped"}),
    ));
    tasks
}

/// Push configs whose Task and config ids are hostile as file names (escapes, dots, non-ASCII,
/// a Task id long enough for a hashed name), several per Task.
pub fn interchange_push_configs() -> Vec<(String, PushConfig)> {
    let tasks = ["t1", "a/b", "..", "é/日本語", &"x".repeat(300)].map(str::to_owned);
    let configs = ["c1", "c/1", ".", "-", "B", "日本", "~"];
    let mut all = Vec::new();
    for (i, task_id) in tasks.iter().enumerate() {
        for (j, config_id) in configs.iter().enumerate().skip(i % 3) {
            let config = json!({
                "id": config_id,
                "url": format!("https://example.com/hook/{i}/{j}"),
                "token": "secret",
                "n": 9007199254740993_u64,
            });
            all.push((task_id.clone(), PushConfig::from_value(config).unwrap()));
        }
    }
    all
}

/// The configs of `task_id` in `configs`, by config id (byte order), as a store lists them.
pub fn expected_configs(configs: &[(String, PushConfig)], task_id: &str) -> Vec<PushConfig> {
    let mut theirs: Vec<PushConfig> = configs
        .iter()
        .filter(|(t, _)| t == task_id)
        .map(|(_, c)| c.clone())
        .collect();
    theirs.sort_by(|a, b| a.id().as_bytes().cmp(b.id().as_bytes()));
    theirs
}

/// Saves every Task, in order.
pub async fn save_all(store: &dyn TaskStore, tasks: &[Task]) {
    for t in tasks {
        store
            .save(t)
            .await
            .unwrap_or_else(|e| panic!("saving {:?}: {e}", t.id()));
    }
}

/// Asserts `store` holds every Task as given.
pub async fn assert_reads_all(store: &dyn TaskStore, tasks: &[Task]) {
    for t in tasks {
        let got = store
            .get(t.id())
            .await
            .unwrap_or_else(|e| panic!("getting {:?} from {}: {e}", t.id(), store.describe()));
        assert_eq!(
            got.as_ref(),
            Some(t),
            "{:?} via {}",
            t.id(),
            store.describe()
        );
    }
}

/// Every Task, walking pages of 7.
pub async fn list_all(store: &dyn TaskStore) -> Vec<Task> {
    let mut query = ListQuery {
        page_size: 7,
        ..Default::default()
    };
    let mut all = Vec::new();
    loop {
        let page = store.list(&query).await.unwrap();
        all.extend(page.tasks);
        match page.next_page_token {
            Some(token) => query.page_token = Some(token),
            None => return all,
        }
    }
}

/// The store under test reads every Task the native store and the Rust component wrote, and
/// lists them as the native store does.
pub async fn reads_and_lists_what_the_rust_stores_wrote(theirs: &dyn StoreFactory) {
    let tasks = interchange_tasks();
    let native_dir = tempfile::tempdir().unwrap();
    let native = FileTaskStore::new(native_dir.path()).unwrap();
    save_all(&native, &tasks).await;
    let component_dir = tempfile::tempdir().unwrap();
    let component = WasmTaskStore::file_store(component_dir.path()).unwrap();
    save_all(&component, &tasks).await;

    for dir in [native_dir.path(), component_dir.path()] {
        let store = theirs.open(dir);
        assert_reads_all(&*store, &tasks).await;
        assert_eq!(list_all(&*store).await, list_all(&native).await);
    }
}

/// The native store and the Rust component read and list what the store under test wrote, an
/// overwrite and a delete included, at the version it counted.
pub async fn rust_stores_read_and_list_what_it_wrote(theirs: &dyn StoreFactory) {
    let tasks = interchange_tasks();
    let dir = tempfile::tempdir().unwrap();
    let store = theirs.open(dir.path());
    save_all(&*store, &tasks).await;
    // Overwrite one, delete one: the Rust stores see the latest state.
    let changed = task(json!({"id": "a/b", "n": "changed"}));
    store.save(&changed).await.unwrap();
    assert!(store.delete("x.json").await.unwrap());
    let expected: Vec<Task> = tasks
        .into_iter()
        .filter(|t| t.id() != "x.json")
        .map(|t| if t.id() == "a/b" { changed.clone() } else { t })
        .collect();

    let native = FileTaskStore::new(dir.path()).unwrap();
    let component = WasmTaskStore::file_store(dir.path()).unwrap();
    assert_reads_all(&native, &expected).await;
    assert_reads_all(&component, &expected).await;
    assert_eq!(native.get("x.json").await.unwrap(), None);
    assert_eq!(component.get("x.json").await.unwrap(), None);
    let mut sorted = expected.clone();
    sorted.sort_by_cached_key(|t| toolnexus::query::SortKey::of(t.id(), t.as_map()));
    assert_eq!(list_all(&native).await, sorted);
    assert_eq!(list_all(&component).await, sorted);
    assert_eq!(list_all(&*store).await, sorted);
    // Two saves of "a/b" by the store under test: the Rust stores read the version it counted.
    assert_eq!(
        native.get_versioned("a/b").await.unwrap().map(|(_, v)| v),
        Some(2)
    );
}

/// The store under test and the native store, saving the same Tasks, write the same files: the
/// same names (percent escapes, hashed long names) and the same bytes.
pub async fn writes_directories_byte_identical_to_the_rust_stores(theirs: &dyn StoreFactory) {
    let tasks = interchange_tasks();
    let rust_dir = tempfile::tempdir().unwrap();
    save_all(&FileTaskStore::new(rust_dir.path()).unwrap(), &tasks).await;
    let their_dir = tempfile::tempdir().unwrap();
    save_all(&*theirs.open(their_dir.path()), &tasks).await;
    let rust_files = snapshot(rust_dir.path());
    assert_eq!(
        rust_files.len(),
        2 * tasks.len(),
        "one file and one version record per Task, no temp files"
    );
    assert_same_files(&rust_files, &snapshot(their_dir.path()));
}

/// Push configs across implementations: the store under test and the native store write the
/// same files (names and bytes) under `.push/`, the store under test reads and lists what the
/// native store wrote and the Rust stores what it wrote, and a Task's delete by one takes its
/// configs for all.
pub async fn shares_push_configs_in_byte_identical_files(theirs: &dyn StoreFactory) {
    let configs = interchange_push_configs();
    let rust_dir = tempfile::tempdir().unwrap();
    let their_dir = tempfile::tempdir().unwrap();
    let native = FileTaskStore::new(rust_dir.path()).unwrap();
    let writer = theirs.open(their_dir.path());
    assert!(writer.supports_push_configs());
    for (task_id, config) in &configs {
        native.save_push_config(task_id, config).await.unwrap();
        writer.save_push_config(task_id, config).await.unwrap();
    }
    let rust_files = snapshot(rust_dir.path());
    assert_eq!(
        rust_files.len(),
        configs.len(),
        "one file per config, no temp files"
    );
    assert!(
        rust_files
            .iter()
            .all(|(name, _)| name.starts_with(".push/"))
    );
    assert_same_files(&rust_files, &snapshot(their_dir.path()));

    // Each reads what the other wrote: the store under test the Rust directory, the native
    // store and the Rust component its own.
    let reader = theirs.open(rust_dir.path());
    let component = WasmTaskStore::file_store(their_dir.path()).unwrap();
    let native_reader = FileTaskStore::new(their_dir.path()).unwrap();
    let readers: [&dyn TaskStore; 3] = [&*reader, &component, &native_reader];
    for (task_id, config) in &configs {
        for reader in readers {
            let got = reader.get_push_config(task_id, config.id()).await.unwrap();
            assert_eq!(
                got.as_ref(),
                Some(config),
                "{task_id:?} via {}",
                reader.describe()
            );
        }
    }
    let task_ids: BTreeSet<&str> = configs.iter().map(|(t, _)| t.as_str()).collect();
    for task_id in &task_ids {
        let want = expected_configs(&configs, task_id);
        for reader in readers {
            let listed = reader.list_push_configs(task_id).await.unwrap();
            assert_eq!(listed, want, "{task_id:?} via {}", reader.describe());
        }
    }

    // A Task deleted by one store takes its configs for the others; the rest stay. The store
    // under test deletes a Task the native store saved; the Rust component an id never saved as
    // a Task in the other directory, whose configs go all the same.
    let deleted = "a/b";
    native.save(&task(json!({"id": deleted}))).await.unwrap();
    assert!(reader.delete(deleted).await.unwrap());
    assert!(native.list_push_configs(deleted).await.unwrap().is_empty());
    assert!(!component.delete(deleted).await.unwrap());
    assert!(writer.list_push_configs(deleted).await.unwrap().is_empty());
    for reader in [&native as &dyn TaskStore, &*writer] {
        assert_eq!(
            reader.list_push_configs("t1").await.unwrap(),
            expected_configs(&configs, "t1")
        );
    }
}

/// Two [`snapshot`]s hold the same file names, then the same bytes in every file (the names
/// first, so a difference in naming shows as that).
fn assert_same_files(rust_files: &[(String, Vec<u8>)], their_files: &[(String, Vec<u8>)]) {
    assert_eq!(
        rust_files.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        their_files.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        "the same file names (percent escapes, hashed long names)"
    );
    assert_eq!(rust_files, their_files, "the same bytes in every file");
}

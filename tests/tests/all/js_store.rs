//! toolnexus across languages, driven from Rust:
//!
//! - the JavaScript store component (`js/store/`, built with componentize-js) loaded through the
//!   host like any `wasm:` store and run through the whole conformance suite;
//! - directory interchange: the JavaScript store and the Rust stores read each other's
//!   directories and write byte-identical ones (`docs/on-disk-format.md`);
//! - the Rust file-store component transpiled by jco and run inside Node.js (`js/node-host/`),
//!   reading a directory the Rust host wrote and writing Tasks the Rust host reads back.
//!
//! These tests need Node.js 20+ and npm on `PATH`; the harness that builds the JavaScript side
//! is [`toolnexus_conformance::node`]. Without them each test prints a skip message and passes,
//! unless `TOOLNEXUS_REQUIRE_NODE=1` (set in CI), which makes their absence a failure. The first
//! test to run installs `js/node_modules` with `npm ci` (only when missing or older than
//! `js/package-lock.json`) and builds both JavaScript artifacts under `<target>/js/`; the build
//! scripts skip work whose inputs did not change.
//!
//! Speed is measured elsewhere: `cargo run --release -p toolnexus-bench --bin tn-js-figures`
//! prints the size, compile and latency figures `docs/write-your-own-store.md` quotes.

use serde_json::json;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use toolnexus::wasm::{CacheDir, CacheOutcome, ComponentSource, WasmTaskStore};
use toolnexus::{
    Durability, FileTaskStore, ListQuery, PushConfig, StoreError, Task, TaskStore, resolve_store,
};
use toolnexus_conformance::interchange::{
    assert_reads_all, expected_configs, interchange_push_configs, interchange_tasks, list_all,
    save_all,
};
use toolnexus_conformance::node::{Js, js, parse_lines, run};
use toolnexus_conformance::{StoreFactory, snapshot, suite, task};

/// Opens the JavaScript store component over a directory, as any `wasm:` component.
struct JsStore {
    wasm: PathBuf,
    durability: Durability,
}

impl JsStore {
    fn new(js: &Js, durability: Durability) -> Self {
        JsStore {
            wasm: js.store_wasm.clone(),
            durability,
        }
    }
}

impl StoreFactory for JsStore {
    fn open(&self, dir: &Path) -> Arc<dyn TaskStore> {
        Arc::new(
            WasmTaskStore::builder(ComponentSource::File(self.wasm.clone()))
                .dir(dir)
                .durability(self.durability)
                .build()
                .expect("the JavaScript store component opens"),
        )
    }
    fn durable(&self) -> bool {
        true
    }
}

macro_rules! js_conformance {
    ($module:ident, $durability:expr, [$($case:ident),* $(,)?]) => {
        mod $module {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    let Some(js) = js() else { return };
                    let dir = tempfile::tempdir().unwrap();
                    suite::$case(&JsStore::new(js, $durability), dir.path()).await;
                }
            )*
        }
    };
}

macro_rules! js_conformance_all {
    ($($case:ident),* $(,)?) => {
        js_conformance!(conformance, Durability::Full, [$($case),*]);
        js_conformance!(conformance_relaxed, Durability::Relaxed, [$($case),*]);
    };
}

// The same cases as conformance.rs runs against every Rust store.
toolnexus_conformance::for_each_case!(js_conformance_all);
// The push-notification config cases, in a module of their own (the callback names its modules).
mod push_cases {
    use super::*;
    toolnexus_conformance::for_each_push_case!(js_conformance_all);
}

fn js_store(js: &Js, dir: &Path) -> Arc<dyn TaskStore> {
    JsStore::new(js, Durability::Full).open(dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_format_rules_pass_their_node_unit_tests() {
    let Some(js) = js() else { return };
    let out = run(Command::new(&js.node)
        .current_dir(&js.js_dir)
        .args(["--test", "store/test/"]));
    let out = out.unwrap_or_else(|e| panic!("{e}"));
    assert!(out.contains("# fail 0"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_store_loads_through_a_wasm_selector() {
    let Some(js) = js() else { return };
    let dir = tempfile::tempdir().unwrap();
    let selector = format!(
        "wasm:{}?dir={}",
        js.store_wasm.display(),
        dir.path().display()
    );
    let store = tokio::task::spawn_blocking(move || resolve_store(selector))
        .await
        .unwrap()
        .expect("the selector loads the JavaScript store");
    let t = task(json!({"id": "via-selector", "n": 9007199254740993_u64}));
    store.save(&t).await.unwrap();
    assert_eq!(store.get("via-selector").await.unwrap(), Some(t));
    assert!(dir.path().join("via-selector.json").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_store_reads_and_lists_what_the_rust_stores_wrote() {
    let Some(js) = js() else { return };
    let tasks = interchange_tasks();
    let native_dir = tempfile::tempdir().unwrap();
    let native = FileTaskStore::new(native_dir.path()).unwrap();
    save_all(&native, &tasks).await;
    let component_dir = tempfile::tempdir().unwrap();
    let component = WasmTaskStore::file_store(component_dir.path()).unwrap();
    save_all(&component, &tasks).await;

    for dir in [native_dir.path(), component_dir.path()] {
        let js_store = js_store(js, dir);
        assert_reads_all(&*js_store, &tasks).await;
        assert_eq!(list_all(&*js_store).await, list_all(&native).await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_stores_read_and_list_what_the_js_store_wrote() {
    let Some(js) = js() else { return };
    let tasks = interchange_tasks();
    let dir = tempfile::tempdir().unwrap();
    let js_store = js_store(js, dir.path());
    save_all(&*js_store, &tasks).await;
    // Overwrite one, delete one: the Rust stores see the latest state.
    let changed = task(json!({"id": "a/b", "n": "changed"}));
    js_store.save(&changed).await.unwrap();
    assert!(js_store.delete("x.json").await.unwrap());
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
    let mut sorted = expected.clone();
    sorted.sort_by_cached_key(|t| toolnexus::query::SortKey::of(t.id(), t.as_map()));
    assert_eq!(list_all(&native).await, sorted);
    assert_eq!(list_all(&*js_store).await, sorted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_and_rust_stores_write_byte_identical_directories() {
    let Some(js) = js() else { return };
    let tasks = interchange_tasks();
    let rust_dir = tempfile::tempdir().unwrap();
    save_all(&FileTaskStore::new(rust_dir.path()).unwrap(), &tasks).await;
    let js_dir = tempfile::tempdir().unwrap();
    save_all(&*js_store(js, js_dir.path()), &tasks).await;
    let rust_files = snapshot(rust_dir.path());
    let js_files = snapshot(js_dir.path());
    assert_eq!(
        rust_files.len(),
        2 * tasks.len(),
        "one file and one version record per Task, no temp files"
    );
    assert_eq!(
        rust_files.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        js_files.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        "the same file names (percent escapes, hashed long names)"
    );
    assert_eq!(rust_files, js_files, "the same bytes in every file");
}

/// Every file under `dir`, recursively, as `(path from dir, bytes)`, sorted.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let name = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((name, fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Push configs across implementations: the JavaScript store, the native store and the Rust
/// component write the same files (names and bytes) under `.push/`, each reads and lists what
/// the others wrote, and a Task's delete by one takes its configs for all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_and_rust_stores_share_push_configs_in_byte_identical_files() {
    let Some(js) = js() else { return };
    let configs = interchange_push_configs();
    let rust_dir = tempfile::tempdir().unwrap();
    let js_dir = tempfile::tempdir().unwrap();
    let native = FileTaskStore::new(rust_dir.path()).unwrap();
    let js_writer = js_store(js, js_dir.path());
    assert!(js_writer.supports_push_configs());
    for (task_id, config) in &configs {
        native.save_push_config(task_id, config).await.unwrap();
        js_writer.save_push_config(task_id, config).await.unwrap();
    }
    let rust_files = tree(rust_dir.path());
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
    assert_eq!(
        rust_files.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        tree(js_dir.path())
            .iter()
            .map(|(n, _)| n)
            .collect::<Vec<_>>(),
        "the same file names (percent escapes, hashed long names)"
    );
    assert_eq!(
        rust_files,
        tree(js_dir.path()),
        "the same bytes in every file"
    );

    // Each reads what the other wrote: the JavaScript store the Rust directory, the native
    // store and the Rust component the JavaScript one.
    let js_reader = js_store(js, rust_dir.path());
    let component = WasmTaskStore::file_store(js_dir.path()).unwrap();
    let native_reader = FileTaskStore::new(js_dir.path()).unwrap();
    let readers: [&dyn TaskStore; 3] = [&*js_reader, &component, &native_reader];
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
    let task_ids: std::collections::BTreeSet<&str> =
        configs.iter().map(|(t, _)| t.as_str()).collect();
    for task_id in &task_ids {
        let want = expected_configs(&configs, task_id);
        for reader in readers {
            let listed = reader.list_push_configs(task_id).await.unwrap();
            assert_eq!(listed, want, "{task_id:?} via {}", reader.describe());
        }
    }

    // A Task deleted by one store takes its configs for the others; the rest stay. The
    // JavaScript store deletes a Task the native store saved; the Rust component an id never
    // saved as a Task, whose configs go all the same.
    let deleted = "a/b";
    native.save(&task(json!({"id": deleted}))).await.unwrap();
    assert!(js_reader.delete(deleted).await.unwrap());
    assert!(native.list_push_configs(deleted).await.unwrap().is_empty());
    assert!(!component.delete(deleted).await.unwrap());
    assert!(
        js_writer
            .list_push_configs(deleted)
            .await
            .unwrap()
            .is_empty()
    );
    for reader in [&native as &dyn TaskStore, &*js_writer] {
        assert_eq!(
            reader.list_push_configs("t1").await.unwrap(),
            expected_configs(&configs, "t1")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_store_reports_foreign_and_corrupt_files_as_corrupt() {
    let Some(js) = js() else { return };
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.json"), r#"{"id":"b"}"#).unwrap();
    fs::write(
        dir.path().join("truncated.json"),
        r#"{"id":"truncated","x":"#,
    )
    .unwrap();
    fs::write(dir.path().join("array.json"), "[1]").unwrap();
    fs::write(
        dir.path().join("latin1.json"),
        b"{\"id\":\"latin1\",\"x\":\"\xff\"}",
    )
    .unwrap();
    let store = js_store(js, dir.path());
    for (id, file) in [
        ("a", "a.json"),
        ("truncated", "truncated.json"),
        ("array", "array.json"),
        ("latin1", "latin1.json"),
    ] {
        match store.get(id).await {
            Err(StoreError::Corrupt { reason, .. }) => {
                assert!(reason.contains(file), "{id}: {reason}")
            }
            other => panic!("{id}: expected a corrupt error, got {other:?}"),
        }
        // The Rust store classifies the same file the same way.
        let native = FileTaskStore::new(dir.path()).unwrap();
        assert!(
            matches!(native.get(id).await, Err(StoreError::Corrupt { .. })),
            "{id}"
        );
    }
    assert!(matches!(
        store.list(&ListQuery::default()).await,
        Err(StoreError::Corrupt { .. })
    ));
    // Nothing was changed by any of it.
    assert_eq!(snapshot(dir.path()).len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_store_reports_storage_failures_as_io_and_changes_nothing() {
    let Some(js) = js() else { return };
    let dir = tempfile::tempdir().unwrap();
    let before = task(json!({"id": "kept", "v": 1}));
    js_store(js, dir.path()).save(&before).await.unwrap();
    let read_only = WasmTaskStore::builder(ComponentSource::File(js.store_wasm.clone()))
        .dir(dir.path())
        .read_only(true)
        .build()
        .unwrap();
    for t in [
        task(json!({"id": "kept", "v": 2})),
        task(json!({"id": "new"})),
    ] {
        let err = read_only.save(&t).await.unwrap_err();
        assert!(matches!(err, StoreError::Io { .. }), "{err}");
    }
    assert!(matches!(
        read_only.delete("kept").await,
        Err(StoreError::Io { .. })
    ));
    assert_eq!(read_only.get("kept").await.unwrap(), Some(before));
    assert_eq!(
        snapshot(dir.path()).len(),
        2,
        "the Task file and its record"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_store_sweeps_only_stale_temp_files() {
    let Some(js) = js() else { return };
    let dir = tempfile::tempdir().unwrap();
    let stale = dir.path().join(".tmp-00000000000000000000000000000001");
    let fresh = dir.path().join(".tmp-00000000000000000000000000000002");
    for path in [&stale, &fresh] {
        fs::write(path, "{").unwrap();
    }
    fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(2 * 60 * 60))
        .unwrap();
    let store = js_store(js, dir.path());
    assert_eq!(store.get("anything").await.unwrap(), None);
    assert!(
        !stale.exists(),
        "a temp file older than an hour is a crash leftover"
    );
    assert!(
        fresh.exists(),
        "a young temp file may belong to a live writer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_runs_the_rust_file_store_over_a_directory_the_rust_host_wrote() {
    let Some(js) = js() else { return };
    let tasks = interchange_tasks();
    let dir = tempfile::tempdir().unwrap();
    let host = WasmTaskStore::file_store(dir.path()).unwrap();
    save_all(&host, &tasks).await;

    let ids: String = tasks
        .iter()
        .map(|t| format!("{}\n", json!(t.id())))
        .chain(["\"never-saved\"\n".to_owned()])
        .collect();
    let got = parse_lines(&js.node_host(dir.path(), &["get"], &ids));
    let mut expected: Vec<Option<Task>> = tasks.iter().cloned().map(Some).collect();
    expected.push(None);
    assert_eq!(got, expected);

    let listed = parse_lines(&js.node_host(dir.path(), &["list", "5"], ""));
    let listed: Vec<Task> = listed.into_iter().map(Option::unwrap).collect();
    assert_eq!(
        listed,
        list_all(&host).await,
        "the same Tasks in the same order"
    );
}

/// The Rust file store's push configs in Node: what the Rust host saved, Node lists and gets;
/// what Node saves and deletes, the Rust host sees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_runs_the_rust_file_stores_push_configs_over_the_rust_hosts_directory() {
    let Some(js) = js() else { return };
    let dir = tempfile::tempdir().unwrap();
    let host = WasmTaskStore::file_store(dir.path()).unwrap();
    let config = |id: &str| {
        PushConfig::from_value(json!({"id": id, "url": format!("https://example.com/{id}")}))
            .unwrap()
    };
    for id in ["c2", "c/1"] {
        host.save_push_config("a/b", &config(id)).await.unwrap();
    }
    let listed = js.node_host(dir.path(), &["push-list", "a/b"], "");
    assert_eq!(
        listed,
        format!("{}\n{}\n", config("c/1").as_json(), config("c2").as_json())
    );
    let got = js.node_host(dir.path(), &["push-get", "a/b", "c2", "none"], "");
    assert_eq!(got, format!("{}\nnull\n", config("c2").as_json()));

    let inputs = tempfile::tempdir().unwrap();
    let file = inputs.path().join("c3.json");
    fs::write(&file, config("c3").as_json()).unwrap();
    js.node_host(dir.path(), &["push-set", "a/b", file.to_str().unwrap()], "");
    let deleted = js.node_host(dir.path(), &["push-delete", "a/b", "c2", "c2"], "");
    assert_eq!(deleted, "true\nfalse\n");
    assert_eq!(
        host.list_push_configs("a/b").await.unwrap(),
        vec![config("c/1"), config("c3")]
    );
}

/// The Rust file store checks its Task files itself under a host that does not say it checks
/// `get` answers (Node does not pass `answers-checked`): a corrupt file is the component's own
/// `corrupt` error naming the file, never its text passed through. Under the Rust host, which
/// does say so, the host reports the same file (`files.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_file_store_checks_task_files_where_the_host_does_not() {
    let Some(js) = js() else { return };
    let dir = tempfile::tempdir().unwrap();
    let host = WasmTaskStore::file_store(dir.path()).unwrap();
    host.save(&task(json!({"id": "t"}))).await.unwrap();
    for (text, want) in [
        (r#"{"id":"t","n":"#, "corrupt: corrupt task file /t.json: "),
        (
            r#"{"id":"u"}"#,
            r#"corrupt: corrupt task file /t.json: holds task "u", not "t""#,
        ),
    ] {
        fs::write(dir.path().join("t.json"), text).unwrap();
        let out = js.node_program(&js.node_bindings, dir.path(), &["get", "t"], "");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{text}: answered {:?}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(out.stdout.is_empty(), "{text}: nothing is printed");
        assert!(stderr.contains(want), "{text}: {stderr}");
        let err = host.get("t").await.unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{text}: {err}");
        assert!(err.to_string().contains("t.json"), "{text}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_host_reads_back_what_node_wrote() {
    let Some(js) = js() else { return };
    let tasks = interchange_tasks();
    let inputs = tempfile::tempdir().unwrap();
    let files: Vec<String> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let path = inputs.path().join(format!("{i}.json"));
            fs::write(&path, t.as_json()).unwrap();
            path.to_str().unwrap().to_owned()
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["save"];
    args.extend(files.iter().map(String::as_str));
    js.node_host(dir.path(), &args, "");

    let host = WasmTaskStore::file_store(dir.path()).unwrap();
    assert_reads_all(&host, &tasks).await;
    assert_reads_all(&FileTaskStore::new(dir.path()).unwrap(), &tasks).await;
    // Written as the Rust host writes: the same file names, the same bytes, no temp files left.
    let rust_dir = tempfile::tempdir().unwrap();
    save_all(&FileTaskStore::new(rust_dir.path()).unwrap(), &tasks).await;
    assert_eq!(snapshot(dir.path()), snapshot(rust_dir.path()));

    // Deletes from Node are seen by the Rust host too.
    let out = js.node_host(dir.path(), &["delete", "a/b", "a/b"], "");
    assert_eq!(out, "true\nfalse\n");
    assert_eq!(host.get("a/b").await.unwrap(), None);
}

/// The JavaScript component answers bad input with `invalid-input`, whose input the Rust host
/// never lets through (it checks Tasks and ids itself): so call it from Node, transpiled by jco.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_store_component_refuses_invalid_input_and_changes_nothing() {
    let Some(js) = js() else { return };
    let inputs = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("not-json", "nope", "task is not valid JSON"),
        ("array", "[1]", "task must be a JSON object, found array"),
        ("no-id", r#"{"status":{}}"#, r#"task has no "id" member"#),
        (
            "number-id",
            r#"{"id":7}"#,
            r#"task "id" must be a string, found number"#,
        ),
        (
            "empty-id",
            r#"{"id":""}"#,
            r#"task "id" is an empty string"#,
        ),
    ];
    for (name, text, message) in cases {
        let path = inputs.path().join(name);
        fs::write(&path, text).unwrap();
        let output = js.node_program(
            &js.js_store_bindings,
            dir.path(),
            &["save", path.to_str().unwrap()],
            "",
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains(&format!("error: invalid-input: {message}")),
            "{name}: {stderr}"
        );
    }
    let output = js.node_program(&js.js_store_bindings, dir.path(), &["get", ""], "");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("error: invalid-input: task id is empty"),
        "{stderr}"
    );
    assert!(snapshot(dir.path()).is_empty(), "nothing was written");

    // And the same component, in Node, writes what the Rust host reads.
    let t = task(json!({"id": "from-js-in-node", "n": -0.0}));
    let path = inputs.path().join("good");
    fs::write(&path, t.as_json()).unwrap();
    let output = js.node_program(
        &js.js_store_bindings,
        dir.path(),
        &["save", path.to_str().unwrap()],
        "",
    );
    assert!(output.status.success(), "{output:?}");
    let host = WasmTaskStore::file_store(dir.path()).unwrap();
    assert_eq!(host.get("from-js-in-node").await.unwrap(), Some(t));
}

/// The compiled JavaScript component is cached on disk: a load that bypasses this process's
/// memo (a new process, in effect) reads the compiled form instead of compiling again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_store_component_is_reused_from_the_disk_cache() {
    let Some(js) = js() else { return };
    // Whatever the first load did, the compiled form is in the cache now.
    let data = tempfile::tempdir().unwrap();
    let (_, cached) = WasmTaskStore::builder(ComponentSource::File(js.store_wasm.clone()))
        .dir(data.path())
        .cache(CacheDir::At(js.cache.clone()))
        .memoize(false)
        .build_with_report()
        .unwrap();
    assert_eq!(
        cached.outcome,
        CacheOutcome::Disk,
        "a compiled component is reused from the cache"
    );
}

/// Across languages in one component: the Rust lifecycle-guard middleware composed over the
/// JavaScript store guards it exactly as it guards the Rust file store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_guard_composes_over_the_js_store() {
    let Some(js) = js() else { return };
    let js_store = fs::read(&js.store_wasm).unwrap();
    let composed =
        toolnexus_compose::compose(toolnexus_conformance::LIFECYCLE_GUARD_COMPONENT, &js_store)
            .expect("the guard composes over the JavaScript store");
    let dir = tempfile::tempdir().unwrap();
    let cache = js.cache.clone();
    let path = dir.path().to_owned();
    let store = tokio::task::spawn_blocking(move || {
        WasmTaskStore::builder(ComponentSource::Bytes {
            name: "guard+js-store.wasm".into(),
            bytes: composed.into(),
        })
        .dir(path)
        .cache(CacheDir::At(cache))
        .build()
    })
    .await
    .unwrap()
    .expect("the composed component loads");
    let with_state = |s: &str| task(json!({"id": "mixed", "status": {"state": s}}));
    store.save(&with_state("working")).await.unwrap();
    store
        .save(&with_state("TASK_STATE_COMPLETED"))
        .await
        .unwrap();
    let before = snapshot(dir.path());
    let err = store.save(&with_state("working")).await.unwrap_err();
    assert!(matches!(err, StoreError::Rejected { .. }), "{err:?}");
    assert_eq!(snapshot(dir.path()), before, "a refused save wrote nothing");
    // What the composition wrote is the shared on-disk format: the native store reads it.
    let native = FileTaskStore::new(dir.path()).unwrap();
    assert_eq!(
        native.get("mixed").await.unwrap(),
        Some(with_state("TASK_STATE_COMPLETED"))
    );
}

/// Processes racing conditional saves of one Task over one directory: the native store, the
/// Rust component and the JavaScript component at once. Each acknowledged save has a version
/// of its own, one past the version it read; the stored Task is the last winner's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_rust_and_native_processes_race_conditional_saves_with_one_winner_per_version() {
    let Some(js) = js() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    fs::create_dir_all(&dir).unwrap();
    let rust = tmp.path().join("store.wasm");
    fs::write(&rust, toolnexus::wasm::FILE_STORE_COMPONENT).unwrap();
    let racers = [
        ("native", format!("file:{}", dir.display())),
        (
            "rust",
            format!("wasm:{}?dir={}", rust.display(), dir.display()),
        ),
        (
            "js",
            format!("wasm:{}?dir={}", js.store_wasm.display(), dir.display()),
        ),
    ];
    // Each racer loads its store (the JavaScript one takes longest), says `ready`, and waits
    // for the go, so they race however long the loading took.
    let mut children: Vec<_> = racers
        .iter()
        .map(|(tag, selector)| {
            let mut child = Command::new(env!("CARGO_BIN_EXE_tn-racer"))
                .args([selector.as_str(), "raced", tag, "60", "2000", "gate"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("the racer starts");
            let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
            let mut ready = String::new();
            std::io::BufRead::read_line(&mut stdout, &mut ready).unwrap();
            assert_eq!(ready.trim(), "ready", "racer {tag}");
            (*tag, child, stdout)
        })
        .collect();
    for (_, child, _) in &mut children {
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"go\n").unwrap();
    }
    let mut wins = Vec::new();
    let mut losses = 0;
    for (tag, mut child, mut stdout) in children {
        let mut lines = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut lines).unwrap();
        assert!(child.wait().unwrap().success(), "racer {tag} failed");
        for line in lines.lines() {
            let words: Vec<&str> = line.split(' ').collect();
            match words[0] {
                "win" => {
                    let base: u64 = words[1].parse().unwrap();
                    let new: u64 = words[2].parse().unwrap();
                    assert_eq!(new, base + 1, "{tag}: {line}");
                    wins.push((new, tag, words[3].to_owned()));
                }
                "lose" => {
                    let base: u64 = words[1].parse().unwrap();
                    let current: u64 = words[2].parse().unwrap();
                    assert!(current > base, "{tag}: {line}");
                    losses += 1;
                }
                _ => {}
            }
        }
    }
    let mut versions: Vec<u64> = wins.iter().map(|w| w.0).collect();
    versions.sort();
    let unique = versions.len();
    versions.dedup();
    assert_eq!(versions.len(), unique, "a version was acknowledged twice");
    assert!(
        losses > 0,
        "the racers never raced: the test proves nothing"
    );
    for store in [
        js_store(js, &dir),
        Arc::new(FileTaskStore::new(&dir).unwrap()) as Arc<dyn TaskStore>,
    ] {
        let (task, version) = store.get_versioned("raced").await.unwrap().unwrap();
        assert_eq!(version, wins.len() as u64);
        let (_, tag, seq) = wins.iter().find(|w| w.0 == version).unwrap();
        assert_eq!(task.get("writer").unwrap(), *tag);
        assert_eq!(task.get("seq").unwrap().to_string(), *seq);
    }
}

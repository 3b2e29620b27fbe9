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

use crate::processes::race_across_implementations;
use serde_json::json;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};
use toolnexus::wasm::{CacheDir, ComponentSource, WasmTaskStore};
use toolnexus::wasm::{Sandboxed, SandboxedDir};
use toolnexus::{FileTaskStore, ListQuery, PushConfig, StoreError, Task, TaskStore};
use toolnexus_conformance::component_harness::{self, StoreComponent};
use toolnexus_conformance::interchange::{
    self, assert_reads_all, interchange_tasks, list_all, save_all,
};
use toolnexus_conformance::node::{Js, js, parse_lines, run};
use toolnexus_conformance::{StoreFactory, snapshot, task};

/// The JavaScript store component, or `None` to skip: what the suite's tests below open.
fn component() -> Option<StoreComponent> {
    js().map(Js::store)
}

// The same cases as conformance.rs runs against every Rust store, at both durabilities.
toolnexus_conformance::component_conformance!();

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_format_rules_pass_their_node_unit_tests() {
    let Some(js) = js() else { return };
    let out = run(Command::new(&js.node)
        .current_dir(&js.js_dir)
        .args(["--test", "store/test/"]));
    let out = out.unwrap_or_else(|e| panic!("{e}"));
    assert!(out.contains("# fail 0"), "{out}");
}

// Beside the suite, what every store component not written in Rust is tested for: the same
// tests as the Python store's (`python_store.rs`), written once in `component_harness` and
// `interchange` (directory interchange with the Rust stores).
toolnexus_conformance::component_tests! {
    js_store_loads_through_a_wasm_selector => component_harness::loads_through_a_wasm_selector,
    /// The compiled JavaScript component (a JavaScript engine and the store) is cached on disk.
    js_store_component_is_reused_from_the_disk_cache =>
        component_harness::is_reused_from_the_disk_cache,
    js_store_reads_and_lists_what_the_rust_stores_wrote =>
        interchange::reads_and_lists_what_the_rust_stores_wrote,
    rust_stores_read_and_list_what_the_js_store_wrote =>
        interchange::rust_stores_read_and_list_what_it_wrote,
    js_and_rust_stores_write_byte_identical_directories =>
        interchange::writes_directories_byte_identical_to_the_rust_stores,
    js_and_rust_stores_share_push_configs_in_byte_identical_files =>
        interchange::shares_push_configs_in_byte_identical_files,
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
    let store = js.store().open(dir.path());
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
    js.store().open(dir.path()).save(&before).await.unwrap();
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
    let store = js.store().open(dir.path());
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
/// Rust component and the JavaScript component at once (`python_store.rs` races the Python one
/// beside them). Each acknowledged save has a version of its own, one past the version it read;
/// the stored Task is the last winner's, as the JavaScript store and the native store read it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_rust_and_native_processes_race_conditional_saves_with_one_winner_per_version() {
    let Some(js) = js() else { return };
    let others = |dir: &Path| vec![("js", js.store().selector(dir))];
    race_across_implementations(others, &js.store()).await;
}

//! toolnexus across languages, driven from Rust:
//!
//! - the JavaScript store component (`js/store/`, built with componentize-js) loaded through the
//!   host like any `wasm:` store and run through the whole conformance suite;
//! - directory interchange: the JavaScript store and the Rust stores read each other's
//!   directories and write byte-identical ones (`docs/on-disk-format.md`);
//! - the Rust file-store component transpiled by jco and run inside Node.js (`js/node-host/`),
//!   reading a directory the Rust host wrote and writing Tasks the Rust host reads back.
//!
//! These tests need Node.js 20+ and npm on `PATH`. Without them each test prints a skip message
//! and passes, unless `TOOLNEXUS_REQUIRE_NODE=1` (set in CI), which makes their absence a
//! failure. The first test to run installs `js/node_modules` with `npm ci` (only when missing or
//! older than `js/package-lock.json`) and builds both JavaScript artifacts under
//! `<target>/js/`; the build scripts skip work whose inputs did not change.
//!
//! `load_figures_and_call_latency` prints size, compile and latency figures: run it with
//! `cargo test -p toolnexus-conformance --test js_store figures -- --nocapture` (after removing
//! `<target>/js/component-cache` for a cold-compile figure).

use serde_json::json;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};
use toolnexus::{
    CacheDir, CacheOutcome, ComponentSource, Durability, FileTaskStore, ListQuery, LoadReport,
    StoreError, Task, TaskStore, WasmTaskStore, resolve_store,
};
use toolnexus_conformance::{StoreFactory, snapshot, suite, task, vectors};

/// Set to `1` to make a missing Node.js or npm a test failure instead of a skip.
const REQUIRE_NODE: &str = "TOOLNEXUS_REQUIRE_NODE";
const MIN_NODE_MAJOR: u32 = 20;

/// Everything the JavaScript side built, ready for the tests.
struct Js {
    node: PathBuf,
    js_dir: PathBuf,
    /// The JavaScript store component.
    store_wasm: PathBuf,
    /// jco's transpiled Rust file store, for `js/node-host/main.mjs`.
    node_bindings: PathBuf,
    /// jco's transpiled JavaScript store component, for the same program.
    js_store_bindings: PathBuf,
    /// The compiled-component cache the tests use (`<target>/js/component-cache`).
    cache: PathBuf,
    /// How this process first got the compiled JavaScript component: compiled (cold cache) or
    /// loaded from the cache.
    first_load: LoadReport,
}

/// `Ok(None)` when Node.js is missing and not required; `Err` when setting up failed.
static JS: OnceLock<Result<Option<Js>, String>> = OnceLock::new();

/// The built JavaScript side, or `None` (after a skip message) if Node.js is not installed.
fn js() -> Option<&'static Js> {
    match JS.get_or_init(set_up) {
        Ok(js) => js.as_ref(),
        Err(e) => panic!("setting up the JavaScript tests failed:\n{e}"),
    }
}

fn set_up() -> Result<Option<Js>, String> {
    let required = std::env::var(REQUIRE_NODE).is_ok_and(|v| v == "1");
    let tools = find_tool("node").and_then(|node| {
        check_node_version(&node)?;
        Ok((node, find_tool("npm")?))
    });
    let (node, npm) = match tools {
        Ok(tools) => tools,
        Err(why) if required => {
            return Err(format!(
                "{why}, and {REQUIRE_NODE}=1 requires the JavaScript tests to run: \
                 install Node.js {MIN_NODE_MAJOR}+ with npm"
            ));
        }
        Err(why) => {
            // Straight to stderr, past the test harness's capture, so a skip is never silent.
            let _ = writeln!(
                std::io::stderr(),
                "skipping the JavaScript tests: {why}; install Node.js {MIN_NODE_MAJOR}+ (with \
                 npm) to run them (set {REQUIRE_NODE}=1 to make this a failure)"
            );
            return Ok(None);
        }
    };

    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
        .to_path_buf();
    let js_dir = repo.join("js");
    let out = target_dir(&repo).join("js");
    fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;

    // One builder at a time across processes (two test binaries, two `cargo test` runs).
    let lock = fs::File::create(out.join(".build.lock"))
        .and_then(|f| f.lock().map(|()| f))
        .map_err(|e| format!("cannot lock {}: {e}", out.display()))?;
    npm_ci_if_stale(&npm, &js_dir)?;
    let store_wasm = out.join("store/toolnexus-js-store.wasm");
    run(Command::new(&node)
        .current_dir(&js_dir)
        .arg("store/build.mjs")
        .arg("--out")
        .arg(&store_wasm))?;
    let rust_component = out.join("file-store.wasm");
    if fs::read(&rust_component).ok().as_deref() != Some(toolnexus::FILE_STORE_COMPONENT) {
        fs::write(&rust_component, toolnexus::FILE_STORE_COMPONENT)
            .map_err(|e| format!("cannot write {}: {e}", rust_component.display()))?;
    }
    let node_bindings = out.join("node-host/file-store");
    let js_store_bindings = out.join("node-host/js-store");
    for (component, bindings) in [
        (&rust_component, &node_bindings),
        (&store_wasm, &js_store_bindings),
    ] {
        run(Command::new(&node)
            .current_dir(&js_dir)
            .arg("node-host/build.mjs")
            .arg("--component")
            .arg(component)
            .arg("--out")
            .arg(bindings))?;
    }
    drop(lock);

    // Compile once here, before any test runs: every test after this finds the component
    // compiled in this process, instead of several compiling 12 MB of JavaScript engine at once.
    // The compiled form is cached under <target>/js, so later runs load it in a fraction of a
    // second; remove that directory to measure a cold compile again.
    let cache = out.join("component-cache");
    let data = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (_, first_load) = WasmTaskStore::builder(ComponentSource::File(store_wasm.clone()))
        .dir(data.path())
        .cache(CacheDir::At(cache.clone()))
        .build_with_report()
        .map_err(|e| format!("the JavaScript store component does not load: {e}"))?;
    Ok(Some(Js {
        node,
        js_dir,
        store_wasm,
        node_bindings,
        js_store_bindings,
        cache,
        first_load,
    }))
}

/// The cargo target directory this test binary lives in (`<target>/<profile>/deps/js_store-…`).
fn target_dir(repo: &Path) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.ancestors()
                .find(|dir| dir.file_name().is_some_and(|n| n == "deps"))
                .and_then(|deps| deps.parent()?.parent().map(Path::to_path_buf))
        })
        .unwrap_or_else(|| repo.join("target"))
}

fn find_tool(name: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| format!("{name} not found on PATH"))
}

fn check_node_version(node: &Path) -> Result<(), String> {
    let output = Command::new(node)
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", node.display()))?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let major = version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse::<u32>().ok());
    match major {
        Some(major) if major >= MIN_NODE_MAJOR => Ok(()),
        _ => Err(format!(
            "Node.js {version:?} at {} is older than {MIN_NODE_MAJOR}",
            node.display()
        )),
    }
}

/// Runs `npm ci` unless `js/node_modules` was installed from the current lockfile.
fn npm_ci_if_stale(npm: &Path, js_dir: &Path) -> Result<(), String> {
    let lockfile = js_dir.join("package-lock.json");
    let stamp = js_dir.join("node_modules/.toolnexus-package-lock.json");
    let wanted =
        fs::read(&lockfile).map_err(|e| format!("cannot read {}: {e}", lockfile.display()))?;
    if fs::read(&stamp).ok() == Some(wanted.clone()) {
        return Ok(());
    }
    run(Command::new(npm)
        .current_dir(js_dir)
        .args(["ci", "--no-audit", "--no-fund"]))?;
    fs::write(&stamp, wanted).map_err(|e| format!("cannot write {}: {e}", stamp.display()))
}

/// Runs a command to completion: its stdout on success, everything it said on failure.
fn run(command: &mut Command) -> Result<String, String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {command:?}: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.status.success() {
        Ok(stdout)
    } else {
        Err(format!(
            "{command:?} failed ({}):\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

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

// The same cases as tests/conformance.rs runs against every Rust store.
toolnexus_conformance::for_each_case!(js_conformance_all);

/// The shared vectors plus Tasks whose ids are hostile as file names (escapes, dots, NUL,
/// non-ASCII, and ids long enough to get a hashed name).
fn interchange_tasks() -> Vec<Task> {
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

async fn save_all(store: &dyn TaskStore, tasks: &[Task]) {
    for t in tasks {
        store
            .save(t)
            .await
            .unwrap_or_else(|e| panic!("saving {:?}: {e}", t.id()));
    }
}

async fn assert_reads_all(store: &dyn TaskStore, tasks: &[Task]) {
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
async fn list_all(store: &dyn TaskStore) -> Vec<Task> {
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
    sorted.sort_by(|a, b| a.id().cmp(b.id()));
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
        tasks.len(),
        "one file per Task, no temp files"
    );
    assert_eq!(
        rust_files.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        js_files.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        "the same file names (percent escapes, hashed long names)"
    );
    assert_eq!(rust_files, js_files, "the same bytes in every file");
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
    assert_eq!(snapshot(dir.path()).len(), 1);
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

/// Runs `js/node-host/main.mjs` over `dir` with a transpiled component, to completion.
fn node_program(js: &Js, bindings: &Path, dir: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(&js.node)
        .current_dir(&js.js_dir)
        .arg("node-host/main.mjs")
        .arg("--bindings")
        .arg(bindings)
        .arg("--dir")
        .arg(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// The Node.js program over the transpiled Rust file store; its stdout.
fn node_host(js: &Js, dir: &Path, args: &[&str], stdin: &str) -> String {
    let output = node_program(js, &js.node_bindings, dir, args, stdin);
    assert!(
        output.status.success(),
        "node-host/main.mjs {args:?} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn parse_lines(out: &str) -> Vec<Option<Task>> {
    out.lines()
        .map(|line| (line != "null").then(|| Task::from_json(line).expect("a Task per line")))
        .collect()
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
    let got = parse_lines(&node_host(js, dir.path(), &["get"], &ids));
    let mut expected: Vec<Option<Task>> = tasks.iter().cloned().map(Some).collect();
    expected.push(None);
    assert_eq!(got, expected);

    let listed = parse_lines(&node_host(js, dir.path(), &["list", "5"], ""));
    let listed: Vec<Task> = listed.into_iter().map(Option::unwrap).collect();
    assert_eq!(
        listed,
        list_all(&host).await,
        "the same Tasks in the same order"
    );
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
    node_host(js, dir.path(), &args, "");

    let host = WasmTaskStore::file_store(dir.path()).unwrap();
    assert_reads_all(&host, &tasks).await;
    assert_reads_all(&FileTaskStore::new(dir.path()).unwrap(), &tasks).await;
    // Written as the Rust host writes: the same file names, the same bytes, no temp files left.
    let rust_dir = tempfile::tempdir().unwrap();
    save_all(&FileTaskStore::new(rust_dir.path()).unwrap(), &tasks).await;
    assert_eq!(snapshot(dir.path()), snapshot(rust_dir.path()));

    // Deletes from Node are seen by the Rust host too.
    let out = node_host(js, dir.path(), &["delete", "a/b", "a/b"], "");
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
        let output = node_program(
            js,
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
    let output = node_program(js, &js.js_store_bindings, dir.path(), &["get", ""], "");
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
    let output = node_program(
        js,
        &js.js_store_bindings,
        dir.path(),
        &["save", path.to_str().unwrap()],
        "",
    );
    assert!(output.status.success(), "{output:?}");
    let host = WasmTaskStore::file_store(dir.path()).unwrap();
    assert_eq!(host.get("from-js-in-node").await.unwrap(), Some(t));
}

fn mean_micros(total: Duration, calls: u32) -> u128 {
    total.as_micros() / u128::from(calls)
}

/// Per-call latency of `save` then `get` (mean, microseconds), after one warm-up call.
async fn call_latency(store: &dyn TaskStore, calls: u32) -> (u128, u128) {
    let t = task(json!({"id": "bench-task", "status": {"state": "working"}, "n": 0}));
    store.save(&t).await.unwrap();
    let started = Instant::now();
    for _ in 0..calls {
        store.save(&t).await.unwrap();
    }
    let save = mean_micros(started.elapsed(), calls);
    let started = Instant::now();
    for _ in 0..calls {
        store.get("bench-task").await.unwrap();
    }
    (save, mean_micros(started.elapsed(), calls))
}

/// Prints the figures docs/write-your-own-store.md quotes; asserts only what is not timing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_figures_and_call_latency() {
    let Some(js) = js() else { return };
    // Whatever the first load did, the compiled form is in the cache now: a load that bypasses
    // this process's memo reads it from disk instead of compiling again.
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
    let size = fs::metadata(&js.store_wasm).unwrap().len();
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    println!(
        "JavaScript store component: {:.1} MiB ({size} bytes); Rust file store: {:.2} MiB",
        mib(size),
        mib(toolnexus::FILE_STORE_COMPONENT.len() as u64)
    );
    let first = match js.first_load.outcome {
        CacheOutcome::Compiled => "compiled (cold cache)",
        CacheOutcome::Disk => "loaded from the disk cache (remove it for a cold figure)",
        CacheOutcome::Memory => "already in memory",
    };
    println!(
        "JavaScript store load: first load in this process {first} in {:.2} s; from the disk \
         cache {:.3} s; instantiation {:.3} s",
        js.first_load.load.as_secs_f64(),
        cached.load.as_secs_f64(),
        cached.instantiate.as_secs_f64()
    );
    const CALLS: u32 = 100;
    for durability in [Durability::Full, Durability::Relaxed] {
        let dir = tempfile::tempdir().unwrap();
        let js_store = JsStore::new(js, durability).open(dir.path());
        let (js_save, js_get) = call_latency(&*js_store, CALLS).await;
        let dir = tempfile::tempdir().unwrap();
        let rust = WasmTaskStore::builder(ComponentSource::BuiltinFileStore)
            .dir(dir.path())
            .durability(durability)
            .build()
            .unwrap();
        let (rust_save, rust_get) = call_latency(&rust, CALLS).await;
        println!(
            "{durability:?} durability, mean of {CALLS}: JavaScript component save {js_save} µs, \
             get {js_get} µs; Rust component save {rust_save} µs, get {rust_get} µs"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    for durability in ["full", "relaxed"] {
        let out = node_host(
            js,
            dir.path(),
            &["--durability", durability, "bench", "100"],
            "",
        );
        println!(
            "Rust component in Node.js (jco + preview2-shim): {}",
            out.trim()
        );
    }
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

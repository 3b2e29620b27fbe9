//! The Python store component (`python/store/`, built with componentize-py), driven from Rust:
//!
//! - loaded through the host like any `wasm:` store and run through the whole conformance suite;
//! - directory interchange: the Python store and the Rust stores read each other's directories
//!   and write byte-identical ones, push configs included (`docs/on-disk-format.md`);
//! - its own unit tests, under the host's python3;
//! - processes: Python, Rust and JavaScript components and the native store racing conditional
//!   saves on one directory, and Python writers and racers killed with SIGKILL mid-save.
//!
//! These tests need python3 on `PATH`; the harness that builds the component is
//! [`toolnexus_conformance::python_store`]. Without it each test prints a skip message and
//! passes, unless `TOOLNEXUS_REQUIRE_PYTHON_STORE=1` (set in CI), which makes its absence a
//! failure. The first test to run builds the component (`scripts/build-python-store.sh`, which
//! skips the build when its inputs did not change) and compiles it once for the process.

use crate::processes::{
    LEASE_MS, LIVE_LEASE_MS, Outcomes, RACER, assert_whole_version, no_temp_files, spawn_racer,
    spawn_writer,
};
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};
use toolnexus::wasm::{CacheDir, CacheOutcome, ComponentSource, WasmTaskStore};
use toolnexus::{Durability, Expect, FileTaskStore, Task, TaskStore, resolve_store};
use toolnexus_conformance::interchange::{
    assert_reads_all, expected_configs, interchange_push_configs, interchange_tasks, list_all,
    save_all,
};
use toolnexus_conformance::python_store::{PythonStore, python_store};
use toolnexus_conformance::{StoreFactory, snapshot, suite, task};

/// Opens the Python store component over a directory, as any `wasm:` component.
struct PyStore {
    wasm: PathBuf,
    cache: PathBuf,
    durability: Durability,
}

impl PyStore {
    fn new(py: &PythonStore, durability: Durability) -> Self {
        PyStore {
            wasm: py.store_wasm.clone(),
            cache: py.cache.clone(),
            durability,
        }
    }

    fn builder(&self, dir: &Path) -> toolnexus::wasm::WasmTaskStoreBuilder {
        WasmTaskStore::builder(ComponentSource::File(self.wasm.clone()))
            .dir(dir)
            .durability(self.durability)
            .cache(CacheDir::At(self.cache.clone()))
    }
}

impl StoreFactory for PyStore {
    fn open(&self, dir: &Path) -> Arc<dyn TaskStore> {
        Arc::new(
            self.builder(dir)
                .build()
                .expect("the Python store component opens"),
        )
    }
    fn durable(&self) -> bool {
        true
    }
}

macro_rules! python_conformance {
    ($module:ident, $durability:expr, [$($case:ident),* $(,)?]) => {
        mod $module {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    let Some(py) = python_store() else { return };
                    let dir = tempfile::tempdir().unwrap();
                    suite::$case(&PyStore::new(py, $durability), dir.path()).await;
                }
            )*
        }
    };
}

macro_rules! python_conformance_all {
    ($($case:ident),* $(,)?) => {
        python_conformance!(conformance, Durability::Full, [$($case),*]);
        python_conformance!(conformance_relaxed, Durability::Relaxed, [$($case),*]);
    };
}

// The same cases as conformance.rs runs against every Rust store.
toolnexus_conformance::for_each_case!(python_conformance_all);
// The push-notification config cases, in a module of their own (the callback names its modules).
mod push_cases {
    use super::*;
    toolnexus_conformance::for_each_push_case!(python_conformance_all);
}

fn py_store(py: &PythonStore, dir: &Path) -> Arc<dyn TaskStore> {
    PyStore::new(py, Durability::Full).open(dir)
}

/// The store's modules pass their own unit tests under the host's python3 (the component runs
/// the same modules inside CPython for WASI).
#[test]
fn python_store_passes_its_unit_tests() {
    let Some(py) = python_store() else { return };
    let output = Command::new(&py.python)
        .current_dir(&py.repo)
        .args(["-m", "unittest", "discover", "-s", "python/store/tests"])
        .stdin(Stdio::null())
        .output()
        .expect("python3 runs");
    // unittest reports on stderr: "Ran N tests in …", then "OK" or "FAILED (…)".
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the unit tests failed:\n{report}");
    let ran: u32 = report
        .lines()
        .find_map(|line| line.strip_prefix("Ran ")?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no \"Ran N tests\" line:\n{report}"));
    assert!(ran > 0, "no unit test ran:\n{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_store_loads_through_a_wasm_selector() {
    let Some(py) = python_store() else { return };
    let dir = tempfile::tempdir().unwrap();
    let selector = format!(
        "wasm:{}?dir={}",
        py.store_wasm.display(),
        dir.path().display()
    );
    let store = tokio::task::spawn_blocking(move || resolve_store(selector))
        .await
        .unwrap()
        .expect("the selector loads the Python store");
    let t = task(json!({"id": "via-selector", "n": 9007199254740993_u64}));
    store.save(&t).await.unwrap();
    assert_eq!(store.get("via-selector").await.unwrap(), Some(t));
    assert!(dir.path().join("via-selector.json").is_file());
}

/// The compiled Python component (CPython and the store, some 18 MB) is cached on disk: a load
/// that bypasses this process's memo (a new process, in effect) reads the compiled form instead
/// of compiling again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_store_component_is_reused_from_the_disk_cache() {
    let Some(py) = python_store() else { return };
    let data = tempfile::tempdir().unwrap();
    let (_, cached) = WasmTaskStore::builder(ComponentSource::File(py.store_wasm.clone()))
        .dir(data.path())
        .cache(CacheDir::At(py.cache.clone()))
        .memoize(false)
        .build_with_report()
        .unwrap();
    assert_eq!(
        cached.outcome,
        CacheOutcome::Disk,
        "a compiled component is reused from the cache"
    );
    eprintln!(
        "python store component: first load {:?} ({:?}, instantiate {:?}); from the disk cache \
         {:?} (instantiate {:?})",
        py.first_load.load,
        py.first_load.outcome,
        py.first_load.instantiate,
        cached.load,
        cached.instantiate
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_store_reads_and_lists_what_the_rust_stores_wrote() {
    let Some(py) = python_store() else { return };
    let tasks = interchange_tasks();
    let native_dir = tempfile::tempdir().unwrap();
    let native = FileTaskStore::new(native_dir.path()).unwrap();
    save_all(&native, &tasks).await;
    let component_dir = tempfile::tempdir().unwrap();
    let component = WasmTaskStore::file_store(component_dir.path()).unwrap();
    save_all(&component, &tasks).await;

    for dir in [native_dir.path(), component_dir.path()] {
        let python = py_store(py, dir);
        assert_reads_all(&*python, &tasks).await;
        assert_eq!(list_all(&*python).await, list_all(&native).await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_stores_read_and_list_what_the_python_store_wrote() {
    let Some(py) = python_store() else { return };
    let tasks = interchange_tasks();
    let dir = tempfile::tempdir().unwrap();
    let python = py_store(py, dir.path());
    save_all(&*python, &tasks).await;
    // Overwrite one, delete one: the Rust stores see the latest state.
    let changed = task(json!({"id": "a/b", "n": "changed"}));
    python.save(&changed).await.unwrap();
    assert!(python.delete("x.json").await.unwrap());
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
    assert_eq!(list_all(&*python).await, sorted);
    // Two saves of "a/b" by the Python store: the Rust stores read the version it counted.
    assert_eq!(
        native.get_versioned("a/b").await.unwrap().map(|(_, v)| v),
        Some(2)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_and_rust_stores_write_byte_identical_directories() {
    let Some(py) = python_store() else { return };
    let tasks = interchange_tasks();
    let rust_dir = tempfile::tempdir().unwrap();
    save_all(&FileTaskStore::new(rust_dir.path()).unwrap(), &tasks).await;
    let python_dir = tempfile::tempdir().unwrap();
    save_all(&*py_store(py, python_dir.path()), &tasks).await;
    let rust_files = snapshot(rust_dir.path());
    let python_files = snapshot(python_dir.path());
    assert_eq!(
        rust_files.len(),
        2 * tasks.len(),
        "one file and one version record per Task, no temp files"
    );
    assert_eq!(
        rust_files.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        python_files.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        "the same file names (percent escapes, hashed long names)"
    );
    assert_eq!(rust_files, python_files, "the same bytes in every file");
}

/// Push configs across implementations: the Python store and the native store write the same
/// files (names and bytes) under `.push/`, the Python store reads and lists what the native
/// store wrote and the Rust stores what it wrote, and a Task's delete by one takes its configs
/// for all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_and_rust_stores_share_push_configs_in_byte_identical_files() {
    let Some(py) = python_store() else { return };
    let configs = interchange_push_configs();
    let rust_dir = tempfile::tempdir().unwrap();
    let python_dir = tempfile::tempdir().unwrap();
    let native = FileTaskStore::new(rust_dir.path()).unwrap();
    let python_writer = py_store(py, python_dir.path());
    assert!(python_writer.supports_push_configs());
    for (task_id, config) in &configs {
        native.save_push_config(task_id, config).await.unwrap();
        python_writer
            .save_push_config(task_id, config)
            .await
            .unwrap();
    }
    let rust_files = snapshot(rust_dir.path());
    let python_files = snapshot(python_dir.path());
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
        python_files.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        "the same file names (percent escapes, hashed long names)"
    );
    assert_eq!(rust_files, python_files, "the same bytes in every file");

    let python_reader = py_store(py, rust_dir.path());
    let component = WasmTaskStore::file_store(python_dir.path()).unwrap();
    let native_reader = FileTaskStore::new(python_dir.path()).unwrap();
    let readers: [&dyn TaskStore; 3] = [&*python_reader, &component, &native_reader];
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

    // A Task deleted by one store takes its configs for the others; the rest stay. The Python
    // store deletes a Task the native store saved; the Rust component an id never saved as a
    // Task in the Python store's directory, whose configs go all the same.
    let deleted = "a/b";
    native.save(&task(json!({"id": deleted}))).await.unwrap();
    assert!(python_reader.delete(deleted).await.unwrap());
    assert!(native.list_push_configs(deleted).await.unwrap().is_empty());
    assert!(!component.delete(deleted).await.unwrap());
    assert!(
        python_writer
            .list_push_configs(deleted)
            .await
            .unwrap()
            .is_empty()
    );
    for reader in [&native as &dyn TaskStore, &*python_writer] {
        assert_eq!(
            reader.list_push_configs("t1").await.unwrap(),
            expected_configs(&configs, "t1")
        );
    }
}

/// A writer or racer process whose stdout is read on a thread of its own: each line is signalled
/// on `lines` as it arrives (so a test can wait for it), and every line comes back at the end.
struct Watched {
    tag: &'static str,
    child: Child,
    lines: mpsc::Receiver<Instant>,
    reader: thread::JoinHandle<Vec<String>>,
}

/// How long a live process may stay silent before a test gives up on it (a wedged store).
const SILENCE: Duration = Duration::from_secs(120);

impl Watched {
    fn new(tag: &'static str, mut child: Child) -> Self {
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        let reader = thread::spawn(move || {
            let mut all = Vec::new();
            for line in out.lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(Instant::now());
                all.push(line);
            }
            all
        });
        Watched {
            tag,
            child,
            lines,
            reader,
        }
    }

    /// Waits for the next line and says when it came.
    ///
    /// # Panics
    ///
    /// If the process ended (its error is on the test's stderr) or said nothing for [`SILENCE`].
    fn next_line(&self) -> Instant {
        self.lines
            .recv_timeout(SILENCE)
            .unwrap_or_else(|e| panic!("{} printed no further line: {e}", self.tag))
    }

    /// Kills the process with SIGKILL and adds what it printed to `outcomes`.
    fn kill(mut self, outcomes: &mut Outcomes) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        let lines = self.reader.join().unwrap();
        outcomes.read(self.tag, lines.join("\n").as_bytes());
    }
}

/// Processes racing conditional saves of one Task over one directory: the Python component, the
/// Rust component, the native store and (with Node.js) the JavaScript component at once. Each
/// acknowledged save has a version of its own, one past the version it read; the stored Task is
/// the last winner's, as the Python store and the native store read it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_rust_js_and_native_processes_race_conditional_saves_with_one_winner_per_version() {
    let Some(py) = python_store() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    std::fs::create_dir_all(&dir).unwrap();
    let rust = tmp.path().join("store.wasm");
    std::fs::write(&rust, toolnexus::wasm::FILE_STORE_COMPONENT).unwrap();
    let mut racers = vec![
        ("native", format!("file:{}", dir.display())),
        (
            "rust",
            format!("wasm:{}?dir={}", rust.display(), dir.display()),
        ),
        ("python", py.selector(&dir)),
    ];
    // Node.js is optional here (required in CI, where this always has four racers).
    if let Some(js) = toolnexus_conformance::node::js() {
        let js_selector = format!(
            "wasm:{}?dir={}&cache={}",
            js.store_wasm.display(),
            dir.display(),
            js.cache.display()
        );
        racers.push(("js", js_selector));
    }
    // Each racer loads its store, says `ready`, and waits for the go, so they race however
    // long the loading took. No lock is ever stale: a long lease, none broken.
    let mut children: Vec<_> = racers
        .iter()
        .map(|(tag, selector)| {
            let mut child = Command::new(RACER)
                .args([
                    selector.as_str(),
                    "raced",
                    tag,
                    "60",
                    &LIVE_LEASE_MS.to_string(),
                    "gate",
                ])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("the racer starts");
            let mut out = BufReader::new(child.stdout.take().unwrap());
            let mut ready = String::new();
            out.read_line(&mut ready).unwrap();
            assert_eq!(ready.trim(), "ready", "racer {tag}");
            (*tag, child, out)
        })
        .collect();
    for (_, child, _) in &mut children {
        child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    }
    let mut outcomes = Outcomes::default();
    for (tag, _, out) in &mut children {
        outcomes.read(tag, out);
    }
    for (tag, mut child, _) in children {
        assert!(child.wait().unwrap().success(), "racer {tag} failed");
    }
    outcomes.check_chain();
    assert!(
        !outcomes.losses.is_empty(),
        "the racers never raced (no conflicts): the test proves nothing"
    );
    for tag in racers.iter().map(|(tag, _)| *tag) {
        assert!(
            outcomes.wins.iter().any(|w| w.2 == tag),
            "racer {tag} never won: it did not race"
        );
    }
    let (_, _, writer, seq) = outcomes
        .wins
        .iter()
        .max_by_key(|w| w.1)
        .expect("someone won");
    for store in [
        py_store(py, &dir),
        Arc::new(FileTaskStore::new(&dir).unwrap()) as Arc<dyn TaskStore>,
    ] {
        let (task, version) = store.get_versioned("raced").await.unwrap().unwrap();
        assert_eq!(
            version,
            outcomes.wins.len() as u64,
            "every acknowledged save is one version, none more ({})",
            store.describe()
        );
        assert_eq!(task.get("writer").unwrap(), writer.as_str());
        assert_eq!(task.get("seq").unwrap(), &json!(seq));
        assert_eq!(task.get("base").unwrap(), &json!(version - 1));
    }
    assert!(no_temp_files(&dir));
}

/// After processes were killed over `dir`: the Task is one whole version, at least as new as
/// every acknowledged save and, at that version, the acknowledged Task, through the Python store
/// and the native store. Then the next conditional save (by the Python store or the native one,
/// `python_saves`) succeeds, a lock left by a killed writer broken after its lease; the Python
/// store reads it back. Returns how long that save took.
async fn check_after_kills(
    py: &PythonStore,
    dir: &Path,
    outcomes: &mut Outcomes,
    tags: &[&str],
    round: u64,
    python_saves: bool,
) -> Duration {
    outcomes.check_chain();
    let newest = outcomes.wins.iter().map(|w| w.1).max().unwrap_or(0);
    let python = py_store(py, dir);
    let native: Arc<dyn TaskStore> = Arc::new(FileTaskStore::new(dir).unwrap());
    let mut seen = None;
    for store in [&python, &native] {
        let (task, version) = store
            .get_versioned("killed")
            .await
            .unwrap_or_else(|e| panic!("round {round}, {}: {e}", store.describe()))
            .expect("an acknowledged save survives");
        assert!(
            version >= newest,
            "version {version} < acknowledged {newest}"
        );
        assert_whole_version(&task, tags, 0);
        if version == newest
            && let Some((_, _, writer, seq)) = outcomes.wins.iter().find(|w| w.1 == newest)
        {
            assert_eq!(
                (task.get("writer").unwrap(), task.get("seq").unwrap()),
                (&json!(writer), &json!(seq)),
                "the acknowledged save is what is stored"
            );
        }
        assert!(
            seen.replace((task.clone(), version))
                .is_none_or(|s| s == (task, version)),
            "the Python and native stores read the same"
        );
    }
    let (_, version) = seen.unwrap();

    let lease = Duration::from_millis(LEASE_MS);
    let saver: Arc<dyn TaskStore> = if python_saves {
        Arc::new(
            PyStore::new(py, Durability::Full)
                .builder(dir)
                .lock_lease(lease)
                .build()
                .unwrap(),
        )
    } else {
        Arc::new(FileTaskStore::with_options(dir, Durability::Full, lease).unwrap())
    };
    let next = task(json!({
        "id": "killed", "writer": "check", "base": version, "seq": round,
        "pad": "check".repeat(4096 / 5),
    }));
    let started = Instant::now();
    let saved = saver
        .save_versioned(&next, Expect::Version(version))
        .await
        .unwrap_or_else(|e| {
            panic!(
                "round {round}: the Task is blocked after the lease ({}): {e}",
                saver.describe()
            )
        });
    let waited = started.elapsed();
    assert_eq!(saved, version + 1);
    assert!(
        waited < 3 * lease,
        "round {round}: {waited:?} for a lock whose lease is {lease:?}"
    );
    assert_eq!(
        python.get_versioned("killed").await.unwrap(),
        Some((next, saved))
    );
    outcomes.wins.push((version, saved, "check".into(), round));
    waited
}

/// Who holds the Task's lock (`.~killed.l`) in `dir`, by the Task text a saver writes into it:
/// `Some("python")` when a Python process was killed holding it mid-save, `Some("")` for a lock
/// taken but not yet written, `None` when there is none.
fn lock_holder(dir: &Path) -> Option<&'static str> {
    let text = std::fs::read(dir.join(".~killed.l")).ok()?;
    let text = String::from_utf8_lossy(&text);
    Some(
        ["python", "native"]
            .into_iter()
            .find(|tag| text.contains(&format!(r#""writer":"{tag}""#)))
            .unwrap_or(""),
    )
}

/// Sleeps until `at`: the moment a kill is to land, chosen after an event (no waiting on
/// anything).
fn sleep_until(at: Instant) {
    thread::sleep(at.saturating_duration_since(Instant::now()));
}

/// A Python-component writer (plain saves) and a native racer beside it on one Task, both killed
/// with SIGKILL while saving: no torn Task, nothing acknowledged lost.
#[tokio::test(flavor = "multi_thread")]
async fn python_writers_killed_mid_write_never_leave_a_torn_task() {
    let Some(py) = python_store() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    let python_selector = format!("{}&lease-ms={LEASE_MS}", py.selector(&dir));
    let file_selector = format!("file:{}", dir.display());
    let mut outcomes = Outcomes::default();
    let mut longest_wait = Duration::ZERO;
    let mut python_locks = 0;
    for round in 0..6u64 {
        let python = Watched::new(
            "python",
            spawn_writer(&python_selector, "killed", "python", 0),
        );
        let native = Watched::new(
            "native",
            spawn_racer(&file_selector, "killed", "native", 0, LEASE_MS),
        );
        // The writer says `ready` once its first save is acknowledged, then saves on with no
        // line to wait for: kill it a few milliseconds on, at a different point each round.
        let ready = python.next_line();
        native.next_line();
        sleep_until(ready + Duration::from_millis(3 + 7 * round));
        python.kill(&mut outcomes);
        native.kill(&mut outcomes);
        python_locks += usize::from(lock_holder(&dir) == Some("python"));
        let tags = ["python", "native", "check"];
        let waited = check_after_kills(py, &dir, &mut outcomes, &tags, round, round % 2 == 0);
        longest_wait = longest_wait.max(waited.await);
    }
    eprintln!(
        "python writers: {python_locks} of 6 killed holding the Task's lock; longest wait for \
         the Task after a kill {longest_wait:?}"
    );
}

/// A Python-component racer and a native one, killed with SIGKILL mid-save at a different point
/// of an attempt each round: every acknowledged save stays, no version is acknowledged twice, a
/// lock left behind blocks the next conditional save at most its lease.
#[tokio::test(flavor = "multi_thread")]
async fn python_racers_killed_mid_save_lose_nothing_acknowledged_and_block_at_most_a_lease() {
    let Some(py) = python_store() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    let python_selector = py.selector(&dir);
    let file_selector = format!("file:{}", dir.display());
    let mut outcomes = Outcomes::default();
    let mut longest_wait = Duration::ZERO;
    let mut python_locks = 0;
    const ROUNDS: u64 = 12;
    for round in 0..ROUNDS {
        let python = Watched::new(
            "python",
            spawn_racer(&python_selector, "killed", "python", 0, LEASE_MS),
        );
        let native = Watched::new(
            "native",
            spawn_racer(&file_selector, "killed", "native", 0, LEASE_MS),
        );
        python.next_line();
        native.next_line();
        // The event: the Python racer answered its `k`-th attempt. Its next attempt (a get, then
        // the save) takes about as long as the one before it, so the kill lands at a different
        // fraction of that attempt each round, from its start to its end.
        let k = 2 + round % 3;
        let mut last = python.next_line();
        let mut attempt = Duration::ZERO;
        for _ in 1..k {
            let now = python.next_line();
            attempt = now - last;
            last = now;
        }
        // Every other round the native racer goes first, and the Python racer, then alone,
        // wins each attempt: its kill lands in a save that writes (beside the native racer,
        // most of its saves are conflicts, which write nothing). One of its first two attempts
        // alone may wait out a lock the native racer left; the third is timed. Each way of
        // killing goes through six fractions of an attempt.
        let fraction = ((round / 2) % 6) as f64 / 5.0;
        if round % 2 == 1 {
            native.kill(&mut outcomes);
            python.next_line();
            last = python.next_line();
            let now = python.next_line();
            attempt = now - last;
            last = now;
            sleep_until(last + attempt.mul_f64(fraction));
            python.kill(&mut outcomes);
        } else {
            sleep_until(last + attempt.mul_f64(fraction));
            python.kill(&mut outcomes);
            native.kill(&mut outcomes);
        }
        python_locks += usize::from(lock_holder(&dir) == Some("python"));
        let tags = ["python", "native", "check"];
        let waited = check_after_kills(py, &dir, &mut outcomes, &tags, round, round % 2 == 1);
        longest_wait = longest_wait.max(waited.await);
    }
    assert!(
        outcomes.wins.iter().any(|w| w.2 == "python"),
        "the Python racers never saved anything: the test proves nothing"
    );
    eprintln!(
        "python racers: {python_locks} of {ROUNDS} killed holding the Task's lock; longest wait \
         for the Task after a kill {longest_wait:?} (lease {LEASE_MS} ms); {} acknowledged saves",
        outcomes.wins.len()
    );
}

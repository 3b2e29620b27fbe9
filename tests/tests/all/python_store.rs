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
    LEASE_MS, Outcomes, assert_whole_version, race_across_implementations, spawn_racer,
    spawn_writer,
};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};
use toolnexus::{Durability, Expect, FileTaskStore, TaskStore};
use toolnexus_conformance::component_harness::{self, StoreComponent};
use toolnexus_conformance::python_store::{PythonStore, python_store};
use toolnexus_conformance::{StoreFactory, interchange, task};

/// The Python store component, or `None` to skip: what the suite's tests below open.
fn component() -> Option<StoreComponent> {
    python_store().map(PythonStore::store)
}

// The same cases as conformance.rs runs against every Rust store, at both durabilities.
toolnexus_conformance::component_conformance!();

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

// Beside the suite, what every store component not written in Rust is tested for: the same
// tests as the JavaScript store's (`js_store.rs`), written once in `component_harness` and
// `interchange` (directory interchange with the Rust stores).
toolnexus_conformance::component_tests! {
    python_store_loads_through_a_wasm_selector => component_harness::loads_through_a_wasm_selector,
    /// The compiled Python component (CPython and the store, some 18 MB) is cached on disk.
    python_store_component_is_reused_from_the_disk_cache =>
        component_harness::is_reused_from_the_disk_cache,
    python_store_reads_and_lists_what_the_rust_stores_wrote =>
        interchange::reads_and_lists_what_the_rust_stores_wrote,
    rust_stores_read_and_list_what_the_python_store_wrote =>
        interchange::rust_stores_read_and_list_what_it_wrote,
    python_and_rust_stores_write_byte_identical_directories =>
        interchange::writes_directories_byte_identical_to_the_rust_stores,
    python_and_rust_stores_share_push_configs_in_byte_identical_files =>
        interchange::shares_push_configs_in_byte_identical_files,
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
    // Node.js is optional here (required in CI, where this always has four racers).
    let js = toolnexus_conformance::node::js();
    let others = |dir: &Path| {
        let mut others = vec![("python", py.store().selector(dir))];
        others.extend(js.map(|js| ("js", js.store().selector(dir))));
        others
    };
    race_across_implementations(others, &py.store()).await;
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
    let python = py.store().open(dir);
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
        Arc::new(py.store().builder(dir).lock_lease(lease).build().unwrap())
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
    let python_selector = format!("{}&lease-ms={LEASE_MS}", py.store().selector(&dir));
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
    let python_selector = py.store().selector(&dir);
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

//! The Python store component, built and ready for Rust code to drive: the harness behind
//! `tests/all/python_store.rs`.
//!
//! [`python_store`] (shared by every test of a process) needs `python3` on `PATH`. It runs
//! `scripts/build-python-store.sh`, which installs componentize-py into
//! `<target>/python-store-venv` on first use (network to PyPI) and builds
//! `<target>/python/store/toolnexus-python-store.wasm` from `python/store/src/`, skipping the
//! build when its inputs did not change. One process at a time builds (a lock file in
//! `<target>/python/`), so concurrent test binaries and `cargo` runs are safe. Then it loads the
//! component once, so every test after finds it compiled: CPython makes the component some 18 MB,
//! whose compile takes seconds; the compiled form is cached in `<target>/python/component-cache`
//! (remove it to measure a cold compile again), which child processes are pointed at too.
//!
//! Skip or fail: without `python3`, [`python_store`] prints a skip message and returns `None`, so
//! the Python store's tests pass vacuously on a machine without it — unless
//! [`REQUIRE_PYTHON_STORE`] (`TOOLNEXUS_REQUIRE_PYTHON_STORE=1`, set in CI) is set, which makes
//! its absence a failure. A failed build is always a failure.

use crate::node::{find_tool, run, target_dir};
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use toolnexus::wasm::{CacheDir, ComponentSource, LoadReport, WasmTaskStore};

/// Set to `1` to make a missing `python3` a test failure instead of a skip.
pub const REQUIRE_PYTHON_STORE: &str = "TOOLNEXUS_REQUIRE_PYTHON_STORE";

/// The built Python store component.
#[derive(Debug)]
pub struct PythonStore {
    /// The host's `python3` (it builds the component and runs the store's unit tests).
    pub python: PathBuf,
    /// The repository's root (`python/store/` is below it).
    pub repo: PathBuf,
    /// The Python store component.
    pub store_wasm: PathBuf,
    /// The compiled-component cache (`<target>/python/component-cache`) holding it.
    pub cache: PathBuf,
    /// How this process first got the compiled component: compiled (cold cache) or loaded from
    /// the cache.
    pub first_load: LoadReport,
}

/// `Ok(None)` when `python3` is missing and not required; `Err` when setting up failed.
static PYTHON_STORE: OnceLock<Result<Option<PythonStore>, String>> = OnceLock::new();

/// The built Python store, shared by every caller in this process, or `None` (after a skip
/// message on stderr) if `python3` is missing and [`REQUIRE_PYTHON_STORE`] is not `1`.
///
/// # Panics
///
/// If the build fails, or `python3` is missing while [`REQUIRE_PYTHON_STORE`] is `1`.
pub fn python_store() -> Option<&'static PythonStore> {
    match PYTHON_STORE.get_or_init(set_up) {
        Ok(store) => store.as_ref(),
        Err(e) => panic!("setting up the Python store tests failed:\n{e}"),
    }
}

fn set_up() -> Result<Option<PythonStore>, String> {
    let required = std::env::var(REQUIRE_PYTHON_STORE).is_ok_and(|v| v == "1");
    let python = match find_tool("python3") {
        Ok(python) => python,
        Err(why) if required => {
            return Err(format!(
                "{why}, and {REQUIRE_PYTHON_STORE}=1 requires the Python store tests to run: \
                 install python3 with venv"
            ));
        }
        Err(why) => {
            // Straight to stderr, past the test harness's capture, so a skip is never silent.
            let _ = writeln!(
                std::io::stderr(),
                "skipping the Python store tests: {why}; install python3 (with venv) to run \
                 them (set {REQUIRE_PYTHON_STORE}=1 to make this a failure)"
            );
            return Ok(None);
        }
    };
    PythonStore::build(python).map(Some)
}

impl PythonStore {
    /// Builds the component with `scripts/build-python-store.sh` (skipped by the script when its
    /// inputs did not change) and loads it once (compiling it, or reading its compiled form from
    /// the cache), so callers after this find it compiled.
    pub fn build(python: PathBuf) -> Result<PythonStore, String> {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("tests/ is inside the repository")
            .to_path_buf();
        let target = target_dir(&repo);
        let out = target.join("python");
        fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;

        // One builder at a time across processes (two test binaries, two `cargo` runs).
        let lock = fs::File::create(out.join(".build.lock"))
            .and_then(|f| f.lock().map(|()| f))
            .map_err(|e| format!("cannot lock {}: {e}", out.display()))?;
        let wanted = out.join("store/toolnexus-python-store.wasm");
        // The script's python3 is the one found here, first on PATH; its virtual environment
        // goes into the same target directory as the component (the script reads
        // CARGO_TARGET_DIR, which cargo does not pass to tests).
        let stdout = run(Command::new("bash")
            .arg(repo.join("scripts/build-python-store.sh"))
            .arg("--out")
            .arg(&wanted)
            .env("CARGO_TARGET_DIR", &target)
            .current_dir(&repo))?;
        let store_wasm = stdout
            .lines()
            .last()
            .map(|line| PathBuf::from(line.trim()))
            .filter(|path| path.is_file())
            .ok_or_else(|| {
                format!(
                    "build-python-store.sh printed no component path as its last line:\n{stdout}"
                )
            })?;
        drop(lock);

        // Compile once here, before any test runs: every test after this finds the component
        // compiled in this process, instead of several compiling CPython at once.
        let cache = out.join("component-cache");
        let data = tempfile::tempdir().map_err(|e| e.to_string())?;
        let (_, first_load) = WasmTaskStore::builder(ComponentSource::File(store_wasm.clone()))
            .dir(data.path())
            .cache(CacheDir::At(cache.clone()))
            .build_with_report()
            .map_err(|e| format!("the Python store component does not load: {e}"))?;
        Ok(PythonStore {
            python,
            repo,
            store_wasm,
            cache,
            first_load,
        })
    }

    /// The component as a `wasm:` selector over `dir`, with its compiled form from
    /// [`PythonStore::cache`], for another process (`tn-racer`, `tn-writer`) to load quickly.
    pub fn selector(&self, dir: &Path) -> String {
        format!(
            "wasm:{}?dir={}&cache={}",
            self.store_wasm.display(),
            dir.display(),
            self.cache.display()
        )
    }
}

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
//! Skip or fail ([`crate::component_harness`]): without `python3`, [`python_store`] prints a skip
//! message and returns `None`, so the Python store's tests pass vacuously on a machine without it
//! — unless [`REQUIRE_PYTHON_STORE`] (`TOOLNEXUS_REQUIRE_PYTHON_STORE=1`, set in CI) is set,
//! which makes its absence a failure. A failed build is always a failure.

use crate::component_harness::{
    OptionalTool, StoreComponent, compile_once, find_tool, lock_build_dir, repo_root, run,
    target_dir,
};
use std::path::PathBuf;
use std::process::Command;
use toolnexus::wasm::LoadReport;

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

static PYTHON_STORE: OptionalTool<PythonStore> =
    OptionalTool::new("the Python store tests", REQUIRE_PYTHON_STORE, || {
        "python3 (with venv)".into()
    });

/// The built Python store, shared by every caller in this process, or `None` (after a skip
/// message on stderr) if `python3` is missing and [`REQUIRE_PYTHON_STORE`] is not `1`.
///
/// # Panics
///
/// If the build fails, or `python3` is missing while [`REQUIRE_PYTHON_STORE`] is `1`.
pub fn python_store() -> Option<&'static PythonStore> {
    PYTHON_STORE.get(|| find_tool("python3"), PythonStore::build)
}

impl PythonStore {
    /// Builds the component with `scripts/build-python-store.sh` (skipped by the script when its
    /// inputs did not change) and loads it once (compiling it, or reading its compiled form from
    /// the cache), so callers after this find it compiled.
    pub fn build(python: PathBuf) -> Result<PythonStore, String> {
        let repo = repo_root();
        let target = target_dir(&repo);
        let out = target.join("python");
        let lock = lock_build_dir(&out)?;
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

        // Compile once here, before any test runs (CPython and the store, some 18 MB).
        let cache = out.join("component-cache");
        let first_load = compile_once(&store_wasm, &cache, "the Python store component")?;
        Ok(PythonStore {
            python,
            repo,
            store_wasm,
            cache,
            first_load,
        })
    }

    /// The Python store component, to open or name in a selector.
    pub fn store(&self) -> StoreComponent {
        StoreComponent::new(&self.store_wasm, &self.cache, self.first_load)
    }
}

//! What the harnesses of store components built by a toolchain the machine may lack share: the
//! JavaScript store ([`crate::node`], Node.js) and the Python store ([`crate::python_store`],
//! python3).
//!
//! - Skip or require ([`OptionalTool`]): each harness is set up once per process and shared.
//!   Without its tool, its tests print a skip message and pass vacuously, unless the group's
//!   environment variable is `1` (set in CI), which makes the tool's absence a failure. A failed
//!   set-up is always a failure.
//! - Building: the repository's root, the cargo target directory, a build directory under it
//!   with its lock (one builder at a time across processes), running a build command, and
//!   compiling the built component once per process into a cache.
//! - The built component ([`StoreComponent`]): opened over a directory by tests (a
//!   [`StoreFactory`]) or named by a `wasm:` selector for another process, with what every such
//!   component is tested for beside the interchange tests ([`crate::interchange`]): the whole
//!   suite ([`component_conformance!`](crate::component_conformance)), a load through a
//!   selector and the disk cache.

use crate::{StoreFactory, task};
use serde_json::json;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use toolnexus::wasm::{
    CacheDir, CacheOutcome, ComponentSource, LoadReport, WasmTaskStore, WasmTaskStoreBuilder,
};
use toolnexus::wasm::{Sandboxed, SandboxedDir};
use toolnexus::{Durability, TaskStore, resolve_store};

/// A harness of type `T`, set up at most once per process, for a group of tests that needs a
/// tool.
pub struct OptionalTool<T> {
    /// `Ok(None)` when the tool is missing and not required; `Err` when setting up failed.
    cell: OnceLock<Result<Option<T>, String>>,
    /// The group, as messages name it: "the Python store tests".
    tests: &'static str,
    /// The environment variable that, set to `1`, makes the tool's absence a failure.
    require: &'static str,
    /// What to install to run the group: "python3 (with venv)" (a function, so that it may
    /// name a constant such as a minimum version).
    install: fn() -> String,
}

impl<T> OptionalTool<T> {
    /// A harness not yet set up (for a `static`).
    pub const fn new(tests: &'static str, require: &'static str, install: fn() -> String) -> Self {
        OptionalTool {
            cell: OnceLock::new(),
            tests,
            require,
            install,
        }
    }

    /// The harness, set up by the first caller in this process: `find` looks for the tool,
    /// `build` sets up the harness with what it found. `None` (after a skip message on stderr)
    /// if the tool is missing and not required.
    ///
    /// # Panics
    ///
    /// If `build` fails, or the tool is missing while the group's variable is `1`.
    pub fn get<Found>(
        &self,
        find: impl FnOnce() -> Result<Found, String>,
        build: impl FnOnce(Found) -> Result<T, String>,
    ) -> Option<&T> {
        let set_up = || match find() {
            Ok(found) => build(found).map(Some),
            Err(why) => self.missing(&why),
        };
        match self.cell.get_or_init(set_up) {
            Ok(harness) => harness.as_ref(),
            Err(e) => panic!("setting up {} failed:\n{e}", self.tests),
        }
    }

    /// The tool is missing, for `why`: a failure if required, else a skip.
    fn missing(&self, why: &str) -> Result<Option<T>, String> {
        let (tests, require, install) = (self.tests, self.require, (self.install)());
        if std::env::var(require).is_ok_and(|v| v == "1") {
            return Err(format!(
                "{why}, and {require}=1 requires {tests} to run: install {install}"
            ));
        }
        // Straight to stderr, past the test harness's capture, so a skip is never silent.
        let _ = writeln!(
            std::io::stderr(),
            "skipping {tests}: {why}; install {install} to run them (set {require}=1 to make \
             this a failure)"
        );
        Ok(None)
    }
}

/// The repository's root (`tests/` is below it).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
        .to_path_buf()
}

/// The cargo target directory the running executable was built in.
///
/// Found by walking up from the executable to the first directory holding `CACHEDIR.TAG`, the
/// file cargo writes at the root of every target directory (and only there: never in
/// `<profile>/` or `deps/`). That holds wherever the executable sits below it: a test binary in
/// `<target>/<profile>/deps/all-…`, a binary in `<target>/<profile>/tn-js-figures`, either
/// under `<target>/<triple>/` when cross-compiling, and a target directory moved by
/// `CARGO_TARGET_DIR` or `build.target-dir` (which cargo does not pass to what it runs, so the
/// executable's location is the one reliable source). Only if the executable is not in a target
/// directory (copied elsewhere) does this fall back to `CARGO_TARGET_DIR` (a relative one taken
/// from the repository root), then `<repo>/target`.
pub fn target_dir(repo: &Path) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.ancestors()
                .skip(1)
                .find(|dir| dir.join("CACHEDIR.TAG").is_file())
                .map(Path::to_path_buf)
        })
        .or_else(|| {
            std::env::var_os("CARGO_TARGET_DIR")
                .filter(|dir| !dir.is_empty())
                .map(|dir| repo.join(dir))
        })
        .unwrap_or_else(|| repo.join("target"))
}

/// The first `name` on `PATH`.
pub fn find_tool(name: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| format!("{name} not found on PATH"))
}

/// Runs a command to completion: its stdout on success, everything it said on failure.
pub fn run(command: &mut Command) -> Result<String, String> {
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

/// Creates the build directory `out` and takes its lock (`out/.build.lock`): one builder at a
/// time across processes (two test binaries, two `cargo` runs), until the file returned is
/// dropped.
pub fn lock_build_dir(out: &Path) -> Result<fs::File, String> {
    fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    fs::File::create(out.join(".build.lock"))
        .and_then(|f| f.lock().map(|()| f))
        .map_err(|e| format!("cannot lock {}: {e}", out.display()))
}

/// Loads the store component `wasm` (`what` names it in errors) once, compiling it or reading its
/// compiled form from `cache`, so that every test after this finds it compiled in this process,
/// instead of several compiling a whole language runtime at once. The compiled form stays in
/// `cache`, so later runs load it in a fraction of a second; remove that directory to measure a
/// cold compile again.
pub fn compile_once(wasm: &Path, cache: &Path, what: &str) -> Result<LoadReport, String> {
    let data = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (_, report) = WasmTaskStore::builder(ComponentSource::File(wasm.to_path_buf()))
        .dir(data.path())
        .cache(CacheDir::At(cache.to_path_buf()))
        .build_with_report()
        .map_err(|e| format!("{what} does not load: {e}"))?;
    Ok(report)
}

/// A built store component, opened as any `wasm:` component with its compiled form from its
/// harness's cache.
#[derive(Debug, Clone)]
pub struct StoreComponent {
    /// The component file.
    pub wasm: PathBuf,
    /// The compiled-component cache its harness compiled it into.
    pub cache: PathBuf,
    /// How its harness first got the compiled component: compiled (cold cache) or loaded from
    /// the cache ([`compile_once`]).
    pub first_load: LoadReport,
    /// How hard its saves work to survive power loss.
    pub durability: Durability,
}

impl StoreComponent {
    /// The component `wasm`, compiled into `cache` as `first_load` says, at
    /// [`Durability::Full`].
    pub fn new(wasm: &Path, cache: &Path, first_load: LoadReport) -> Self {
        StoreComponent {
            wasm: wasm.to_path_buf(),
            cache: cache.to_path_buf(),
            first_load,
            durability: Durability::Full,
        }
    }

    /// The same component at `durability`.
    pub fn durability(&self, durability: Durability) -> Self {
        StoreComponent {
            durability,
            ..self.clone()
        }
    }

    /// A builder of the store over `dir`, for options beyond these.
    pub fn builder(&self, dir: &Path) -> WasmTaskStoreBuilder {
        WasmTaskStore::builder(ComponentSource::File(self.wasm.clone()))
            .dir(dir)
            .durability(self.durability)
            .cache(CacheDir::At(self.cache.clone()))
    }

    /// The store over `dir` as a `wasm:` selector, with its compiled form from the cache, for
    /// another process (`tn-racer`, `tn-writer`) to load quickly.
    pub fn selector(&self, dir: &Path) -> String {
        let durability = match self.durability {
            Durability::Full => "",
            Durability::Relaxed => "&durability=relaxed",
        };
        format!(
            "wasm:{}?dir={}&cache={}{durability}",
            self.wasm.display(),
            dir.display(),
            self.cache.display()
        )
    }
}

impl StoreFactory for StoreComponent {
    fn open(&self, dir: &Path) -> Arc<dyn TaskStore> {
        let store = self.builder(dir).build();
        Arc::new(store.unwrap_or_else(|e| panic!("{} opens: {e}", self.wasm.display())))
    }
    fn durable(&self) -> bool {
        true
    }
}

/// Instantiates the whole suite ([`for_each_case!`](crate::for_each_case) and
/// [`for_each_push_case!`](crate::for_each_push_case)) as tests of a built store component, at
/// both durabilities: modules `conformance` and `conformance_relaxed`, and the same two in
/// `push_cases`. The calling module defines `fn component() -> Option<StoreComponent>`: its
/// harness's component, or `None` to skip.
#[macro_export]
macro_rules! component_conformance {
    () => {
        use $crate::component_conformance;
        $crate::for_each_case!(component_conformance);
        // The push-notification config cases, in a module of their own (the callback names its
        // modules).
        mod push_cases {
            use super::*;
            $crate::for_each_push_case!(component_conformance);
        }
    };
    (@module $module:ident, $durability:ident, [$($case:ident),*]) => {
        mod $module {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    let Some(store) = component() else { return };
                    let store = store.durability(toolnexus::Durability::$durability);
                    let dir = tempfile::tempdir().unwrap();
                    $crate::suite::$case(&store, dir.path()).await;
                }
            )*
        }
    };
    ($($case:ident),* $(,)?) => {
        $crate::component_conformance!(@module conformance, Full, [$($case),*]);
        $crate::component_conformance!(@module conformance_relaxed, Relaxed, [$($case),*]);
    };
}

/// Defines each `name` as a test of the calling module's `component()` (see
/// [`component_conformance!`](crate::component_conformance)): `name => test`, where `test` is an
/// async function taking the component (`&StoreComponent`, or `&dyn StoreFactory`). So the
/// tests every store component gets are written once, and each store's file names its own.
#[macro_export]
macro_rules! component_tests {
    ($($(#[$doc:meta])* $name:ident => $test:path),* $(,)?) => {
        $(
            $(#[$doc])*
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some(store) = component() else { return };
                $test(&store).await;
            }
        )*
    };
}

/// The component loads through a plain `wasm:` selector (no options but the directory) and
/// stores a Task where the on-disk format puts it.
pub async fn loads_through_a_wasm_selector(component: &StoreComponent) {
    let dir = tempfile::tempdir().unwrap();
    let selector = format!(
        "wasm:{}?dir={}",
        component.wasm.display(),
        dir.path().display()
    );
    let store = tokio::task::spawn_blocking(move || resolve_store(selector))
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("the selector loads {}: {e}", component.wasm.display()));
    let t = task(json!({"id": "via-selector", "n": 9007199254740993_u64}));
    store.save(&t).await.unwrap();
    assert_eq!(store.get("via-selector").await.unwrap(), Some(t));
    assert!(dir.path().join("via-selector.json").is_file());
}

/// The compiled component is cached on disk: a load that bypasses this process's memo (a new
/// process, in effect) reads the compiled form instead of compiling again. Prints both loads'
/// figures.
pub async fn is_reused_from_the_disk_cache(component: &StoreComponent) {
    let first_load = component.first_load;
    let data = tempfile::tempdir().unwrap();
    let (_, cached) = component
        .builder(data.path())
        .memoize(false)
        .build_with_report()
        .unwrap();
    assert_eq!(
        cached.outcome,
        CacheOutcome::Disk,
        "a compiled component is reused from the cache"
    );
    eprintln!(
        "{}: first load {:?} ({:?}, instantiate {:?}); from the disk cache {:?} (instantiate \
         {:?})",
        component.wasm.display(),
        first_load.load,
        first_load.outcome,
        first_load.instantiate,
        cached.load,
        cached.instantiate
    );
}

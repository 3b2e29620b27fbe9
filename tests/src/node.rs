//! The JavaScript side of toolnexus, built and ready for Rust code to drive: the harness behind
//! `tests/all/js_store.rs` and the `tn-js-figures` benchmark (`bench/src/js_figures.rs`).
//!
//! [`Js::build`] (or, shared by every test of a process, [`js`]) needs Node.js
//! [`MIN_NODE_MAJOR`]+ and npm on `PATH`. It installs `js/node_modules` with `npm ci` (only when
//! missing or older than `js/package-lock.json`) and builds, under `<target>/js/`:
//!
//! - `store/toolnexus-js-store.wasm`: the JavaScript store component (`js/store/`,
//!   componentize-js);
//! - `agent/toolnexus-js-agent.wasm`: the echo agent in JavaScript (`js/agent/`,
//!   componentize-js; world `toolnexus:a2a/configurable-agent`);
//! - `node-host/file-store/` and `node-host/js-store/`: the Rust file store and that JavaScript
//!   component transpiled by jco, for the Node.js program `js/node-host/main.mjs`;
//! - `component-cache/`: the compiled forms of the JavaScript components (remove it to measure a
//!   cold compile again).
//!
//! The build scripts skip work whose inputs did not change, and one process at a time builds
//! (a lock file in `<target>/js/`), so concurrent test binaries and `cargo` runs are safe.
//!
//! Skip or fail ([`crate::component_harness`]): without Node.js or npm, [`js`] prints a skip message
//! and returns `None`, so the JavaScript tests pass vacuously on a machine without them — unless
//! [`REQUIRE_NODE`] (`TOOLNEXUS_REQUIRE_NODE=1`, set in CI) is set, which makes their absence a
//! failure. A failed build is always a failure.

use crate::component_harness::{
    OptionalTool, StoreComponent, compile_once, lock_build_dir, repo_root,
};
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use toolnexus::Task;
use toolnexus::wasm::Sandboxed;
use toolnexus::wasm::agent::WasmAgent;
use toolnexus::wasm::{CacheDir, ComponentSource, LoadReport};

// Where they were first written, for the callers that found them here.
pub use crate::component_harness::{find_tool, run, target_dir};

/// Set to `1` to make a missing Node.js or npm a test failure instead of a skip.
pub const REQUIRE_NODE: &str = "TOOLNEXUS_REQUIRE_NODE";
/// The oldest Node.js major version the JavaScript side supports.
pub const MIN_NODE_MAJOR: u32 = 20;

/// Everything the JavaScript side built.
#[derive(Debug)]
pub struct Js {
    /// The `node` executable.
    pub node: PathBuf,
    /// The repository's `js/` directory (sources, `package.json`, `node_modules`).
    pub js_dir: PathBuf,
    /// The JavaScript store component.
    pub store_wasm: PathBuf,
    /// The echo agent component in JavaScript.
    pub agent_wasm: PathBuf,
    /// jco's transpiled Rust file store, for `js/node-host/main.mjs`.
    pub node_bindings: PathBuf,
    /// jco's transpiled JavaScript store component, for the same program.
    pub js_store_bindings: PathBuf,
    /// The compiled-component cache (`<target>/js/component-cache`), holding both components.
    pub cache: PathBuf,
    /// How this process first got the compiled JavaScript component: compiled (cold cache) or
    /// loaded from the cache.
    pub first_load: LoadReport,
}

static JS: OptionalTool<Js> = OptionalTool::new("the JavaScript tests", REQUIRE_NODE, || {
    format!("Node.js {MIN_NODE_MAJOR}+ (with npm)")
});

/// The built JavaScript side, shared by every caller in this process, or `None` (after a skip
/// message on stderr) if Node.js or npm is missing and [`REQUIRE_NODE`] is not `1`.
///
/// # Panics
///
/// If the build fails, or Node.js or npm is missing while [`REQUIRE_NODE`] is `1`.
pub fn js() -> Option<&'static Js> {
    JS.get(find_node_and_npm, |(node, npm)| Js::build(node, npm))
}

/// `node` (version [`MIN_NODE_MAJOR`] or later) and `npm` on `PATH`, or why not.
pub fn find_node_and_npm() -> Result<(PathBuf, PathBuf), String> {
    let node = find_tool("node")?;
    check_node_version(&node)?;
    Ok((node, find_tool("npm")?))
}

impl Js {
    /// Installs `js/node_modules` if stale, builds the JavaScript artifacts under `<target>/js/`
    /// (each skipped when its inputs did not change) and loads the JavaScript store and agent
    /// components once (compiling them, or reading their compiled forms from the cache), so
    /// callers after this find them compiled.
    pub fn build(node: PathBuf, npm: PathBuf) -> Result<Js, String> {
        let repo = repo_root();
        let js_dir = repo.join("js");
        let out = target_dir(&repo).join("js");
        let lock = lock_build_dir(&out)?;
        npm_ci_if_stale(&npm, &js_dir)?;
        let store_wasm = out.join("store/toolnexus-js-store.wasm");
        run(Command::new(&node)
            .current_dir(&js_dir)
            .arg("store/build.mjs")
            .arg("--out")
            .arg(&store_wasm))?;
        let agent_wasm = out.join("agent/toolnexus-js-agent.wasm");
        run(Command::new(&node)
            .current_dir(&js_dir)
            .arg("agent/build.mjs")
            .arg("--out")
            .arg(&agent_wasm))?;
        let rust_component = out.join("file-store.wasm");
        if fs::read(&rust_component).ok().as_deref() != Some(toolnexus::wasm::FILE_STORE_COMPONENT)
        {
            fs::write(&rust_component, toolnexus::wasm::FILE_STORE_COMPONENT)
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

        // Compile once here, before any test runs (12 MB of JavaScript engine).
        let cache = out.join("component-cache");
        let first_load = compile_once(&store_wasm, &cache, "the JavaScript store component")?;
        // The agent likewise (into the same cache), and instantiated once: an agent the host
        // refuses fails here, naming why, rather than in the middle of a test.
        WasmAgent::builder(ComponentSource::File(agent_wasm.clone()))
            .cache(CacheDir::At(cache.clone()))
            .build()
            .map_err(|e| format!("the JavaScript agent component does not load: {e}"))?;
        Ok(Js {
            node,
            js_dir,
            store_wasm,
            agent_wasm,
            node_bindings,
            js_store_bindings,
            cache,
            first_load,
        })
    }

    /// The JavaScript store component, to open or name in a selector.
    pub fn store(&self) -> StoreComponent {
        StoreComponent::new(&self.store_wasm, &self.cache, self.first_load)
    }

    /// Runs `js/node-host/main.mjs` over `dir` with a transpiled component (`bindings`: one of
    /// [`Js::node_bindings`], [`Js::js_store_bindings`]) to completion, with `stdin` as its input.
    pub fn node_program(&self, bindings: &Path, dir: &Path, args: &[&str], stdin: &str) -> Output {
        let mut child = Command::new(&self.node)
            .current_dir(&self.js_dir)
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
    ///
    /// # Panics
    ///
    /// If the program fails, with what it said on stderr.
    pub fn node_host(&self, dir: &Path, args: &[&str], stdin: &str) -> String {
        let output = self.node_program(&self.node_bindings, dir, args, stdin);
        assert!(
            output.status.success(),
            "node-host/main.mjs {args:?} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }
}

/// Parses the node program's output: one Task, or `null`, per line.
pub fn parse_lines(out: &str) -> Vec<Option<Task>> {
    out.lines()
        .map(|line| (line != "null").then(|| Task::from_json(line).expect("a Task per line")))
        .collect()
}

/// `Ok` if `node --version` is [`MIN_NODE_MAJOR`] or later.
pub fn check_node_version(node: &Path) -> Result<(), String> {
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
pub fn npm_ci_if_stale(npm: &Path, js_dir: &Path) -> Result<(), String> {
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

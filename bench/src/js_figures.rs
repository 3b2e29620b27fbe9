//! `tn-js-figures`: the JavaScript store's figures that `docs/write-your-own-store.md` quotes —
//! component sizes, load (compile or disk cache) and instantiation times, and the mean per-call
//! `save`/`get` latency of the JavaScript component next to the Rust component's, for both
//! durabilities, plus the Rust component run inside Node.js by jco.
//!
//! ```sh
//! cargo run --release -p toolnexus-bench --bin tn-js-figures
//! ```
//!
//! Remove `<target>/js/component-cache` first for a cold-compile figure. Needs Node.js 20+ and
//! npm on `PATH` (it builds the JavaScript side as the tests do, with
//! `toolnexus_conformance::node`); without them it says so and exits with status 2.

use anyhow::{Context as _, anyhow};
use serde_json::json;
use std::time::{Duration, Instant};
use toolnexus::wasm::{CacheDir, CacheOutcome, ComponentSource, WasmTaskStore};
use toolnexus::wasm::{Sandboxed, SandboxedDir};
use toolnexus::{Durability, TaskStore};
use toolnexus_conformance::node::{Js, MIN_NODE_MAJOR, find_node_and_npm};
use toolnexus_conformance::task;

/// Calls per latency figure.
const CALLS: u32 = 100;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let (node, npm) = match find_node_and_npm() {
        Ok(tools) => tools,
        Err(why) => {
            eprintln!("tn-js-figures: {why}; it needs Node.js {MIN_NODE_MAJOR}+ with npm on PATH");
            std::process::exit(2);
        }
    };
    let js = tokio::task::spawn_blocking(move || Js::build(node, npm))
        .await?
        .map_err(|e| anyhow!("building the JavaScript side failed:\n{e}"))?;

    // The build loaded the component once, filling the disk cache: a load that bypasses this
    // process's memo now reads the compiled form from disk.
    let data = tempfile::tempdir()?;
    let (_, cached) = WasmTaskStore::builder(ComponentSource::File(js.store_wasm.clone()))
        .dir(data.path())
        .cache(CacheDir::At(js.cache.clone()))
        .memoize(false)
        .build_with_report()
        .context("loading the JavaScript store component from the cache")?;

    let size = std::fs::metadata(&js.store_wasm)?.len();
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    println!(
        "JavaScript store component: {:.1} MiB ({size} bytes); Rust file store: {:.2} MiB",
        mib(size),
        mib(toolnexus::wasm::FILE_STORE_COMPONENT.len() as u64)
    );
    let first = match js.first_load.outcome {
        CacheOutcome::Compiled => "compiled (cold cache)",
        CacheOutcome::Disk => "loaded from the disk cache (remove it for a cold figure)",
        CacheOutcome::Memory => "already in memory",
    };
    let from_cache = match cached.outcome {
        CacheOutcome::Disk => "from the disk cache",
        CacheOutcome::Compiled => "compiled again (the disk cache was not used)",
        CacheOutcome::Memory => "from memory",
    };
    println!(
        "JavaScript store load: first load in this process {first} in {:.2} s; {from_cache} \
         {:.3} s; instantiation {:.3} s",
        js.first_load.load.as_secs_f64(),
        cached.load.as_secs_f64(),
        cached.instantiate.as_secs_f64()
    );

    for durability in [Durability::Full, Durability::Relaxed] {
        let dir = tempfile::tempdir()?;
        let js_store = WasmTaskStore::builder(ComponentSource::File(js.store_wasm.clone()))
            .dir(dir.path())
            .durability(durability)
            .build()
            .context("opening the JavaScript store component")?;
        let (js_save, js_get) = call_latency(&js_store, CALLS).await?;
        let dir = tempfile::tempdir()?;
        let rust = WasmTaskStore::builder(ComponentSource::BuiltinFileStore)
            .dir(dir.path())
            .durability(durability)
            .build()
            .context("opening the Rust file-store component")?;
        let (rust_save, rust_get) = call_latency(&rust, CALLS).await?;
        println!(
            "{durability:?} durability, mean of {CALLS}: JavaScript component save {js_save} µs, \
             get {js_get} µs; Rust component save {rust_save} µs, get {rust_get} µs"
        );
    }

    let dir = tempfile::tempdir()?;
    let calls = CALLS.to_string();
    for durability in ["full", "relaxed"] {
        let out = js.node_host(
            dir.path(),
            &["--durability", durability, "bench", &calls],
            "",
        );
        println!(
            "Rust component in Node.js (jco + preview2-shim): {}",
            out.trim()
        );
    }
    Ok(())
}

fn mean_micros(total: Duration, calls: u32) -> u128 {
    total.as_micros() / u128::from(calls)
}

/// Per-call latency of `save` then `get` (mean, microseconds), after one warm-up call.
async fn call_latency(store: &dyn TaskStore, calls: u32) -> anyhow::Result<(u128, u128)> {
    let t = task(json!({"id": "bench-task", "status": {"state": "working"}, "n": 0}));
    store.save(&t).await?;
    let started = Instant::now();
    for _ in 0..calls {
        store.save(&t).await?;
    }
    let save = mean_micros(started.elapsed(), calls);
    let started = Instant::now();
    for _ in 0..calls {
        store.get("bench-task").await?;
    }
    Ok((save, mean_micros(started.elapsed(), calls)))
}

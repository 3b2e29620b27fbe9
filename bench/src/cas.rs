//! What a conditional save costs against a plain save, for every store, in one run.
//!
//! ```text
//! cargo run --release -p toolnexus-bench --bin tn-cas -- [--iterations 2000] \
//!     [--postgres postgres://…] [--js path/to/js-store.wasm]
//! ```
//!
//! For each store, one loop alternates a plain `save` of one Task with a conditional
//! `save_versioned(.., Expect::Version(v))` of another, `v` being the version the previous
//! conditional save returned (so every conditional save succeeds: this is the cost of the check,
//! not of losing). Both Tasks are small (about 300 bytes). Prints one JSON object per store with
//! the median and 99th percentile of each, in microseconds, and their ratio.

use clap::Parser;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;
use toolnexus::wasm::SandboxedDir;
use toolnexus::wasm::{ComponentSource, WasmTaskStore};
use toolnexus::{Durability, Expect, FileTaskStore, InMemoryTaskStore, Task, TaskStore};

#[derive(Parser)]
struct Args {
    /// Saves of each kind per store.
    #[arg(long, default_value_t = 2000)]
    iterations: usize,
    /// Also measure a PostgreSQL store (a selector; a table of its own is used).
    #[arg(long)]
    postgres: Option<String>,
    /// Also measure the JavaScript store component at this path.
    #[arg(long)]
    js: Option<std::path::PathBuf>,
}

fn task(id: &str, n: usize) -> anyhow::Result<Task> {
    Ok(Task::try_from(json!({
        "id": id, "contextId": "bench", "kind": "task",
        "status": {"state": "working", "timestamp": "2026-12-01T00:00:00.000Z"},
        "history": [{"role": "user", "kind": "message", "messageId": format!("m-{n}"),
                     "parts": [{"kind": "text", "text": "x".repeat(160)}]}],
    }))?)
}

fn micros(mut samples: Vec<f64>) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    let round = |x: f64| (x * 10.0).round() / 10.0;
    (round(at(0.5)), round(at(0.99)))
}

async fn measure(name: &str, store: Arc<dyn TaskStore>, n: usize) -> anyhow::Result<()> {
    let run = format!("{}", std::process::id());
    let (plain_id, cas_id) = (format!("plain-{run}"), format!("cas-{run}"));
    let mut version = store
        .save_versioned(&task(&cas_id, 0)?, Expect::Any)
        .await?;
    store.save(&task(&plain_id, 0)?).await?;
    let (mut plain, mut cas) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 1..=n {
        let t = task(&plain_id, i)?;
        let started = Instant::now();
        store.save(&t).await?;
        plain.push(started.elapsed().as_secs_f64() * 1e6);
        let t = task(&cas_id, i)?;
        let started = Instant::now();
        version = store.save_versioned(&t, Expect::Version(version)).await?;
        cas.push(started.elapsed().as_secs_f64() * 1e6);
    }
    let _ = store.delete(&plain_id).await;
    let _ = store.delete(&cas_id).await;
    let (p50, p99) = micros(plain);
    let (c50, c99) = micros(cas);
    println!(
        "{}",
        json!({
            "store": name,
            "iterations": n,
            "plain_save_us": {"p50": p50, "p99": p99},
            "conditional_save_us": {"p50": c50, "p99": c99},
            "ratio_p50": ((c50 / p50) * 100.0).round() / 100.0,
        })
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let tmp = tempfile::tempdir()?;
    let n = args.iterations;
    measure("memory", Arc::new(InMemoryTaskStore::new()), n).await?;
    for (name, durability) in [("full", Durability::Full), ("relaxed", Durability::Relaxed)] {
        let dir = tmp.path().join(format!("native-{name}"));
        let store = FileTaskStore::with_durability(&dir, durability)?;
        measure(&format!("file ({name})"), Arc::new(store), n).await?;
        let dir = tmp.path().join(format!("component-{name}"));
        let store = WasmTaskStore::builder(ComponentSource::BuiltinFileStore)
            .dir(&dir)
            .durability(durability)
            .build()?;
        measure(&format!("component ({name})"), Arc::new(store), n).await?;
    }
    if let Some(js) = &args.js {
        let dir = tmp.path().join("js");
        let store = WasmTaskStore::builder(ComponentSource::File(js.clone()))
            .dir(&dir)
            .build()?;
        measure("javascript component (full)", Arc::new(store), n).await?;
    }
    if let Some(selector) = &args.postgres {
        let store = tokio::task::block_in_place(|| toolnexus::resolve_store(selector.as_str()))?;
        measure("postgres", store, n).await?;
    }
    Ok(())
}

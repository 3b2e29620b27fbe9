//! `tn-profile`: one operation in a loop, for a profiler (`valgrind --tool=callgrind`, `perf`).
//!
//! `tn-profile file|wasm get|save LARGE_TASK.json N [full|relaxed]` (full durability unless
//! told; relaxed leaves the disk's flushes out of a save, to see what the store itself costs).
//! On a current-thread Tokio runtime; with `TN_PROFILE_WORKERS=N`, on a multi-thread one of N
//! workers, as `tn-compare` and a server run.

use std::sync::Arc;
use toolnexus::wasm::SandboxedDir;
use toolnexus::wasm::{ComponentSource, WasmTaskStore};
use toolnexus::{Durability, FileTaskStore, Task, TaskStore};

fn main() -> anyhow::Result<()> {
    let runtime = match std::env::var("TN_PROFILE_WORKERS") {
        Ok(n) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n.parse()?)
            .enable_all()
            .build()?,
        Err(_) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
    };
    runtime.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (store, op, task, n, durability) = match args.as_slice() {
        [store, op, task, n] => (store, op, task, n, Durability::Full),
        [store, op, task, n, durability] => (
            store,
            op,
            task,
            n,
            match durability.as_str() {
                "full" => Durability::Full,
                "relaxed" => Durability::Relaxed,
                other => anyhow::bail!("durability is full or relaxed, not {other:?}"),
            },
        ),
        _ => anyhow::bail!("usage: tn-profile file|wasm get|save TASK.json N [full|relaxed]"),
    };
    let task = Task::from_json(&std::fs::read_to_string(task)?)?;
    let n: usize = n.parse()?;
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn TaskStore> = match store.as_str() {
        "file" => Arc::new(FileTaskStore::with_durability(dir.path(), durability)?),
        "wasm" => Arc::new(
            WasmTaskStore::builder(ComponentSource::BuiltinFileStore)
                .dir(dir.path())
                .durability(durability)
                .build()?,
        ),
        other => anyhow::bail!("unknown store {other}"),
    };
    store.save(&task).await?;
    for _ in 0..n {
        match op.as_str() {
            "get" => drop(store.get(task.id()).await?),
            "save" => store.save(&task).await?,
            other => anyhow::bail!("unknown op {other}"),
        }
    }
    Ok(())
}

//! `tn-profile`: one operation in a loop, for a profiler (`valgrind --tool=callgrind`, `perf`).
//!
//! `tn-profile file|wasm get|save LARGE_TASK.json N`

use std::sync::Arc;
use toolnexus::wasm::WasmTaskStore;
use toolnexus::{FileTaskStore, Task, TaskStore};

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [store, op, task, n] = args.as_slice() else {
        anyhow::bail!("usage: tn-profile file|wasm get|save TASK.json N");
    };
    let task = Task::from_json(&std::fs::read_to_string(task)?)?;
    let n: usize = n.parse()?;
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn TaskStore> = match store.as_str() {
        "file" => Arc::new(FileTaskStore::new(dir.path())?),
        "wasm" => Arc::new(WasmTaskStore::file_store(dir.path())?),
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

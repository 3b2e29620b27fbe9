//! `--stored-tasks N`: the Tasks a store holds before the load, so that a figure shows whether
//! a server's cost grows with its store. Written straight into a file store's directory by the
//! native file store (relaxed durability: a preparation, not a measurement), in the format every
//! file-backed server reads (`file:`, `wasm:builtin?dir=`, a composed component's `dir=`).

use anyhow::Context;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use toolnexus::{Durability, FileTaskStore, Task, TaskStore};

/// Saves `count` completed echo Tasks (each with its message and a "reply" artifact, as the
/// echo agent leaves them) into `dir`, eight at a time.
pub async fn fill(dir: &Path, count: usize) -> anyhow::Result<()> {
    let store: Arc<dyn TaskStore> = Arc::new(
        FileTaskStore::with_durability(dir, Durability::Relaxed)
            .with_context(|| format!("opening {} to fill it", dir.display()))?,
    );
    let mut next = 0;
    while next < count {
        let batch = (next..count.min(next + 8)).map(|n| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let task = stored_task(n)?;
                store.save(&task).await.map_err(anyhow::Error::from)
            })
        });
        for saved in batch.collect::<Vec<_>>() {
            saved.await??;
        }
        next += 8;
    }
    Ok(())
}

fn stored_task(n: usize) -> anyhow::Result<Task> {
    let id = uuid::Uuid::new_v4().to_string();
    let text = format!("stored task {n}");
    let task = json!({
        "id": id, "contextId": uuid::Uuid::new_v4().to_string(), "kind": "task",
        "status": {"state": "completed", "timestamp": "2026-01-01T00:00:00.000Z"},
        "history": [{"kind": "message", "role": "user", "messageId": format!("m-{n}"),
            "parts": [{"kind": "text", "text": text}]}],
        "artifacts": [{"artifactId": "reply", "parts": [{"kind": "text", "text": text}]}],
    });
    Ok(Task::try_from(task)?)
}

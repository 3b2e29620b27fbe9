//! Listing a large file store: the time of one page (the first, and one from the middle) and
//! the process's peak resident memory, for the native store and the file-store component, one
//! store per process so that each peak is its own.
//!
//! ```text
//! cargo run --release -p toolnexus-bench --bin tn-list -- --store native
//! cargo run --release -p toolnexus-bench --bin tn-list -- --store component
//! ```
//!
//! The first run fills `--dir` (default `target/list-bench`) with `--tasks` small Tasks (about
//! 600 bytes each) through the native store; later runs reuse them. Prints one JSON object.

use toolnexus_bench::proc_status;

use clap::Parser;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;
use toolnexus::wasm::WasmTaskStore;
use toolnexus::{Durability, FileTaskStore, ListQuery, Task, TaskStore};

#[derive(Parser)]
struct Args {
    /// `native` or `component`.
    #[arg(long)]
    store: String,
    /// How many Tasks the directory holds.
    #[arg(long, default_value_t = 100_000)]
    tasks: usize,
    /// The directory (filled on first use).
    #[arg(long, default_value = "target/list-bench")]
    dir: PathBuf,
    /// Tasks per page.
    #[arg(long, default_value_t = 50)]
    page_size: usize,
}

fn id(n: usize) -> String {
    format!("task-{n:07}")
}

fn task(n: usize) -> Result<Task, toolnexus::StoreError> {
    Task::try_from(json!({
        "id": id(n),
        "contextId": format!("ctx-{}", n % 100),
        "kind": "task",
        "status": {"state": if n.is_multiple_of(3) { "completed" } else { "working" },
                   "timestamp": format!("2026-11-30T12:{:02}:{:02}.000Z", (n / 60) % 60, n % 60)},
        "history": [{"role": "user", "kind": "message", "messageId": format!("m-{n}"),
                     "parts": [{"kind": "text", "text": "x".repeat(300)}]}],
    }))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    std::fs::create_dir_all(&args.dir)?;
    let present = std::fs::read_dir(&args.dir)?.count();
    if present < args.tasks {
        let filler = FileTaskStore::with_durability(&args.dir, Durability::Relaxed)?;
        for n in 0..args.tasks {
            filler.save(&task(n)?).await?;
        }
    }
    let before = proc_status::memory_mib("VmHWM");
    let store: Box<dyn TaskStore> = match args.store.as_str() {
        "native" => Box::new(FileTaskStore::new(&args.dir)?),
        "component" => Box::new(WasmTaskStore::file_store(&args.dir)?),
        other => anyhow::bail!("--store must be native or component, not {other:?}"),
    };
    let mut pages = Vec::new();
    // The token of a page that starts in the middle of the listing (newest first).
    let middle = {
        let t = task(args.tasks / 2)?;
        toolnexus_format::query::SortKey::of(t.id(), t.as_map()).encode()
    };
    for (name, token) in [("first", None), ("middle", Some(middle))] {
        let query = ListQuery {
            page_size: args.page_size,
            page_token: token,
            ..ListQuery::default()
        };
        let started = Instant::now();
        let outcome = store.list(&query).await;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        pages.push(json!({
            "page": name,
            "ms": (ms * 10.0).round() / 10.0,
            "outcome": match outcome {
                Ok(page) => format!("{} tasks of {:?}", page.tasks.len(), page.total_size),
                Err(e) => e.to_string().chars().take(200).collect(),
            },
            "peak_rss_mib": proc_status::memory_mib("VmHWM"),
        }));
    }
    println!(
        "{}",
        json!({
            "store": args.store,
            "tasks": args.tasks,
            "page_size": args.page_size,
            "peak_rss_before_mib": before,
            "pages": pages,
        })
    );
    Ok(())
}

//! `tn-dirsave`: many threads saving distinct Tasks into one directory through
//! `toolnexus_format::DirStore` (what the native file store and the file-store component both
//! run), without Tokio or a component in the way: where the directory's own cost under
//! concurrency shows, for `perf record` and for comparing two builds of the format.
//!
//! ```text
//! cargo build --release -p toolnexus-bench --bin tn-dirsave
//! target/release/tn-dirsave --callers 64 --rounds 40 --durability full
//! perf record -g target/release/tn-dirsave --callers 64 --rounds 40
//! target/release/tn-dirsave --callers 64 --rounds 40 --cap 8   # at most 8 saving at once
//! ```
//!
//! Prints one JSON object: saves, seconds, saves per second.

use clap::{Parser, ValueEnum};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Instant;
use toolnexus_format::{DirStore, Durability};

#[derive(Clone, Copy, ValueEnum)]
enum Level {
    Full,
    Relaxed,
}

#[derive(Parser)]
struct Args {
    /// Threads saving at once, each its own Task id.
    #[arg(long, default_value_t = 64)]
    callers: usize,
    /// Saves per thread.
    #[arg(long, default_value_t = 40)]
    rounds: usize,
    #[arg(long, value_enum, default_value_t = Level::Full)]
    durability: Level,
    /// At most this many threads inside a save at once (default: no cap).
    #[arg(long)]
    cap: Option<usize>,
    /// The directory to save into (emptied first; default: a temp directory under `target/`).
    #[arg(long)]
    dir: Option<PathBuf>,
}

/// A counting semaphore for `--cap`.
struct Cap {
    inside: Mutex<usize>,
    freed: Condvar,
    max: usize,
}

impl Cap {
    fn enter(&self) {
        // Nothing panics while holding the count, so a poisoned lock still holds a true one.
        let mut inside = self.inside.lock().unwrap_or_else(PoisonError::into_inner);
        while *inside >= self.max {
            inside = self
                .freed
                .wait(inside)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *inside += 1;
    }

    fn leave(&self) {
        *self.inside.lock().unwrap_or_else(PoisonError::into_inner) -= 1;
        self.freed.notify_one();
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let temp;
    let dir = match args.dir {
        Some(dir) => {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir)?;
            dir
        }
        None => {
            std::fs::create_dir_all("target")?;
            temp = tempfile::tempdir_in("target")?;
            temp.path().to_path_buf()
        }
    };
    let durability = match args.durability {
        Level::Full => Durability::Full,
        Level::Relaxed => Durability::Relaxed,
    };
    let store = Arc::new(DirStore::new(&dir, durability));
    let cap = Arc::new(Cap {
        inside: Mutex::new(0),
        freed: Condvar::new(),
        max: args.cap.unwrap_or(usize::MAX),
    });
    // About 1 KiB, like the comparative benchmark's small Task.
    let pad = "x".repeat(900);
    let started = Instant::now();
    let threads: Vec<_> = (0..args.callers)
        .map(|i| {
            let (store, cap) = (Arc::clone(&store), Arc::clone(&cap));
            let id = format!("c-{i}");
            let text = format!(r#"{{"id":"{id}","pad":"{pad}"}}"#);
            std::thread::spawn(move || -> anyhow::Result<()> {
                for _ in 0..args.rounds {
                    cap.enter();
                    let saved = store.save_checked(&id, &text);
                    cap.leave();
                    saved?;
                }
                Ok(())
            })
        })
        .collect();
    for thread in threads {
        thread
            .join()
            .map_err(|_| anyhow::anyhow!("a saving thread panicked"))??;
    }
    let seconds = started.elapsed().as_secs_f64();
    let saves = args.callers * args.rounds;
    println!(
        "{}",
        serde_json::json!({
            "callers": args.callers,
            "cap": args.cap,
            "saves": saves,
            "seconds": seconds,
            "saves_per_s": saves as f64 / seconds,
        })
    );
    Ok(())
}

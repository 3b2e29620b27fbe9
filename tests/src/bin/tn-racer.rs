//! Test helper: races conditional saves of one Task through a store, as fast as it can.
//!
//! `tn-racer SELECTOR ID WRITER ATTEMPTS LEASE_MS` — each attempt reads the Task and its
//! version `v` (0 when there is none), then saves `{"id": ID, "writer": WRITER, "base": v,
//! "seq": i, "pad": "…"}` on condition "still at version v" (or "still absent"). After each
//! answer it prints one line, flushed: `win <base> <new version> <seq>` once the store
//! acknowledged the save, `lose <base> <current version or 0>` on a conflict. `ATTEMPTS` 0 means
//! forever (until killed). Prints `ready` first; with a sixth argument `gate`, then waits for a
//! line on standard input before its first attempt, so a test can start several racers at
//! once however long each took to load its store. Exits non-zero on any other error.
//!
//! `LEASE_MS` is the Task lock lease (file and component stores), so a test that kills racers
//! need not wait out the 10 s default.
//!
//! `ATTEMPTS` `delete` deletes the Task once instead, and prints `deleted <true|false>` once the
//! store acknowledged it.

use serde_json::json;
use std::io::Write;
use std::time::Duration;
use toolnexus::{Expect, FileTaskStore, StoreError, Task, TaskStore, resolve_store};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [selector, id, writer, attempts, lease_ms, rest @ ..] = args.as_slice() else {
        eprintln!("usage: tn-racer SELECTOR ID WRITER ATTEMPTS LEASE_MS [gate]");
        std::process::exit(2);
    };
    let gated = rest.first().is_some_and(|a| a == "gate");
    let delete = attempts == "delete";
    let attempts: u64 = match delete {
        true => 1,
        false => attempts.parse().expect("ATTEMPTS is a number or delete"),
    };
    let lease: u64 = lease_ms.parse().expect("LEASE_MS is a number");
    let store: std::sync::Arc<dyn TaskStore> = match selector.strip_prefix("file:") {
        Some(dir) => std::sync::Arc::new(
            FileTaskStore::with_options(
                dir,
                toolnexus::Durability::Full,
                Duration::from_millis(lease),
            )
            .unwrap_or_else(|e| fail(e)),
        ),
        None if selector.starts_with("wasm:") => {
            resolve_store(format!("{selector}&lease-ms={lease}").as_str())
                .unwrap_or_else(|e| fail(e))
        }
        None => resolve_store(selector.as_str()).unwrap_or_else(|e| fail(e)),
    };
    let pad = writer.repeat(4096 / writer.len().max(1));
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready").unwrap();
    out.flush().unwrap();
    if gated {
        let mut go = String::new();
        std::io::stdin()
            .read_line(&mut go)
            .unwrap_or_else(|e| fail(e));
    }
    if delete {
        let existed = store.delete(id).await.unwrap_or_else(|e| fail(e));
        writeln!(out, "deleted {existed}").unwrap();
        out.flush().unwrap();
        return;
    }
    let mut seq = 0;
    while attempts == 0 || seq < attempts {
        let current = store.get_versioned(id).await.unwrap_or_else(|e| fail(e));
        let base = current.as_ref().map_or(0, |(_, v)| *v);
        let expect = match base {
            0 => Expect::Absent,
            v => Expect::Version(v),
        };
        let task = Task::try_from(
            json!({"id": id, "writer": writer, "base": base, "seq": seq, "pad": pad}),
        )
        .unwrap();
        match store.save_versioned(&task, expect).await {
            Ok(new) => writeln!(out, "win {base} {new} {seq}").unwrap(),
            Err(StoreError::Conflict { current, .. }) => {
                writeln!(out, "lose {base} {}", current.unwrap_or(0)).unwrap()
            }
            Err(e) => fail(e),
        }
        out.flush().unwrap();
        seq += 1;
    }
}

fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!("tn-racer: {e}");
    std::process::exit(3)
}

//! Test helper: saves `COUNT` versions of one Task through a store, as fast as it can.
//!
//! `tn-writer SELECTOR ID WRITER COUNT` — each version is
//! `{"id": ID, "writer": WRITER, "seq": i, "pad": "…"}` with a few KiB of padding, so a torn
//! write would be visible. `COUNT` 0 means forever (until killed). Prints `ready` after the first
//! save. Exits non-zero on any error.

use serde_json::json;
use std::io::Write;
use toolnexus::{Task, resolve_store};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [selector, id, writer, count] = args.as_slice() else {
        eprintln!("usage: tn-writer SELECTOR ID WRITER COUNT");
        std::process::exit(2);
    };
    let count: u64 = count.parse().expect("COUNT is a number");
    let store = resolve_store(selector.as_str()).unwrap_or_else(|e| {
        eprintln!("tn-writer: {e}");
        std::process::exit(3)
    });
    let pad = writer.repeat(4096 / writer.len().max(1));
    let mut seq = 0;
    while count == 0 || seq < count {
        let task =
            Task::try_from(json!({"id": id, "writer": writer, "seq": seq, "pad": pad})).unwrap();
        if let Err(e) = store.save(&task).await {
            eprintln!("tn-writer: {e}");
            std::process::exit(3);
        }
        if seq == 0 {
            println!("ready");
            std::io::stdout().flush().unwrap();
        }
        seq += 1;
    }
}

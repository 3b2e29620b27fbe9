//! Load on an A2A server over HTTP: N keep-alive connections, each sending one request after
//! another for D seconds after a warm-up; requests per second, latency percentiles and every
//! error, by kind.
//!
//! ```text
//! # one workload against a running server
//! cargo run --release -p toolnexus-bench --bin tn-serve-load -- \
//!     --url http://127.0.0.1:8081/ --workload send [--protocol 1.0|0.3] \
//!     [--connections 16] [--duration 10] [--warmup 2]
//! # every workload against every server, each started (and killed) by this process
//! cargo build --release -p tnstore
//! cargo run --release -p toolnexus-bench --bin tn-serve-load -- --matrix
//! # the same with 10,000 Tasks in each file-backed server's store before the load
//! cargo run --release -p toolnexus-bench --bin tn-serve-load -- --matrix --stored-tasks 10000
//! # 10,000 Tasks into a directory, for a server started over it by hand
//! cargo run --release -p toolnexus-bench --bin tn-serve-load -- --fill ./tasks --stored-tasks 10000
//! # how long a server takes from its start to its first answer, over 10 starts
//! cargo run --release -p toolnexus-bench --bin tn-serve-load -- \
//!     --url http://127.0.0.1:8081/ --cold-start 10 --label composed -- \
//!     target/release/tnstore serve --addr 127.0.0.1:8081 --component 'composed.wasm?dir=…'
//! ```
//!
//! Workloads (each connection is one task running them back to back):
//!
//! - `send`: one message, answered once its Task is `completed`. With `--protocol 1.0`
//!   (`A2A-Version: 1.0`) that is one blocking `SendMessage` (`returnImmediately: false`) whose
//!   result must be `{"task": …}` in `TASK_STATE_COMPLETED` with the echoed "reply" artifact.
//!   With `--protocol 0.3` it is `message/send` and, if the Task it answers is not yet
//!   `completed`, `tasks/get` of it again and again until it is (no pause between polls by
//!   default): the whole exchange is one logical request, timed and counted as one, and the
//!   GetTask calls it took are reported (`gets_per_send`).
//! - `get`: GetTask (`tasks/get`) of a Task created, one per connection, before the warm-up.
//! - `mixed`: on each connection, one `send` then four `get`s of the Task it just sent, over and
//!   over; latencies are reported for all requests and per operation.
//! - `stream`: `SendStreamingMessage` (`message/stream`) answered as `text/event-stream`, read to
//!   the end: every `data:` line must be a JSON-RPC response to this request whose result is one
//!   event (`task`, `statusUpdate`, `artifactUpdate`; 0.3: `kind` of `task`, `status-update`,
//!   `artifact-update`), the "reply" artifact must come and the last status must be completed.
//!
//! An error is anything but HTTP 200 with a well-formed answer: a transport failure, another
//! status, a JSON-RPC error, a result of the wrong shape or state. Errors are counted by kind
//! and reported (with a few samples); their latencies are left out of the percentiles. Errors
//! during the warm-up are reported separately. A request still running when the time is up is
//! finished and counted; requests/s divides by the time until the last one finished.
//!
//! Prints one JSON object per run on stdout and a table of all runs on stderr.
//!
//! `--matrix` runs `send`, `get`, `mixed` and `stream` against, in turn: `tnstore serve
//! --echo-delay-ms 0` (`target/release/tnstore`, `--tnstore`) over `memory`, `file:<tmp>`,
//! `wasm:builtin?dir=<tmp>` and PostgreSQL, and `bench/python/sdk_echo_server.py` (the A2A
//! Python SDK's server, a venv made from `bench/python/requirements.txt` under
//! `target/serve-load-venv` when `--python` is not given) over its memory and SQLite stores:
//! a fresh server, store and port per workload, killed after it. PostgreSQL is the server in
//! `--postgres` or `TOOLNEXUS_TEST_POSTGRES_URL`, else a throwaway durable cluster from
//! `scripts/pg-cluster.sh start --durable` (its own state file, stopped at the end), else
//! skipped with a note; each run uses a table of its own (`tn_serve_load_<pid>_<n>`, left in
//! a database that was given). `stream` is skipped, with a note, on a server whose agent card
//! says `capabilities.streaming` is not true.

mod a2a_client;
mod answer_checks;
mod cli;
mod cold_start;
mod cpu_usage;
mod http_client;
mod latency_stats;
mod load_run;
mod matrix;
mod outcome;
mod report;
mod server_prerequisites;
mod server_process;
mod stored_tasks;
mod stream_check;

use anyhow::Context;
use clap::Parser;
use cli::Args;
use load_run::{RunSpec, run};
use matrix::matrix;
use report::{Output, table};
use std::time::Duration;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut out = Output {
        rows: Vec::new(),
        file: match &args.json_out {
            Some(path) => Some(std::fs::File::create(path)?),
            None => None,
        },
    };
    if let Some(runs) = args.cold_start {
        let url = args.url.clone().context("--url is required")?;
        return cold_start::cold_start(&url, runs, &args.command, &args.label).await;
    }
    if let Some(dir) = &args.fill {
        let count = args.stored_tasks;
        stored_tasks::fill(dir, count).await?;
        eprintln!("tn-serve-load: {count} Tasks saved in {}", dir.display());
        return Ok(());
    }
    if args.matrix {
        let result = matrix(&args, &mut out).await;
        eprint!("\n{}", table(&out.rows));
        return result;
    } else {
        let url = args.url.clone().context("--url is required")?;
        let spec = RunSpec {
            label: args.label.clone(),
            server: args.label.clone(),
            store: "-".into(),
            url,
            workload: args.workload,
            protocol: args.protocol,
            connections: args.connections,
            duration: Duration::from_secs_f64(args.duration),
            warmup: Duration::from_secs_f64(args.warmup),
            poll_interval: Duration::from_millis(args.poll_interval_ms),
            server_pid: None,
        };
        let record = run(spec).await?;
        out.emit(record)?;
    }
    eprint!("\n{}", table(&out.rows));
    Ok(())
}

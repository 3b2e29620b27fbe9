//! 64 concurrent calls to a hostile component's blocking and looping behaviours, with a
//! well-behaved call beside them: how long the good call takes, and the process's threads,
//! descriptors and resident memory before, during and after (once Tokio's idle blocking
//! threads have timed out).
//!
//! ```text
//! cargo run --release -p toolnexus-bench --bin tn-storm -- --instances 72
//! cargo run --release -p toolnexus-bench --bin tn-storm -- --instances 8
//! ```
//!
//! Prints one JSON object. With more instances than hostile calls, the good call gets an
//! instance of its own and should take about its own work; with fewer, it waits for a permit,
//! at most `ceil(64 / instances)` deadlines.

use toolnexus::wasm::{Sandboxed, SandboxedDir};
use toolnexus_bench::proc_status;

use clap::Parser;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolnexus::TaskStore;

#[derive(Parser)]
struct Args {
    /// Instances of the store (`instances=`).
    #[arg(long, default_value_t = 72)]
    instances: usize,
    /// Hostile calls at once.
    #[arg(long, default_value_t = 64)]
    calls: usize,
    /// The per-call deadline, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    timeout_ms: u64,
    /// How long to wait after the storm for idle threads to end, in seconds (Tokio keeps an
    /// idle blocking thread for 10 s).
    #[arg(long, default_value_t = 12)]
    settle_s: u64,
}

#[derive(Debug, Clone, Copy, serde::Serialize)]
struct Sample {
    threads: usize,
    fds: usize,
    rss_mib: f64,
}

fn sample() -> Sample {
    Sample {
        threads: proc_status::threads(),
        fds: proc_status::descriptors(),
        rss_mib: proc_status::memory_mib("VmRSS"),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let tmp = tempfile::tempdir()?;
    let timeout = Duration::from_millis(args.timeout_ms);
    let store = Arc::new(
        toolnexus_conformance::hostile_builder()
            .dir(tmp.path())
            .timeout(timeout)
            .max_instances(args.instances)
            .build()?,
    );
    // Warm: one good call, so the baseline includes the first instance and the blocking pool.
    store.get("nothing").await?;
    tokio::time::sleep(Duration::from_secs(args.settle_s)).await;
    let baseline = sample();

    let behaviours = ["sleep-forever", "loop", "sleep:60000", "hoard:500"];
    let started = Instant::now();
    let storm: Vec<_> = (0..args.calls)
        .map(|i| {
            let store = Arc::clone(&store);
            let id = behaviours[i % behaviours.len()];
            tokio::spawn(async move { store.get(id).await.is_err() })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let during = sample();
    let good_started = Instant::now();
    let good = store.get("nothing").await;
    let good_ms = good_started.elapsed().as_secs_f64() * 1000.0;
    let mut failed = 0;
    for call in storm {
        failed += usize::from(call.await.unwrap_or(true));
    }
    let storm_ms = started.elapsed().as_secs_f64() * 1000.0;
    let right_after = sample();
    tokio::time::sleep(Duration::from_secs(args.settle_s)).await;
    let settled = sample();
    println!(
        "{}",
        serde_json::json!({
            "instances": args.instances,
            "hostile_calls": args.calls,
            "hostile_calls_failed": failed,
            "timeout_ms": args.timeout_ms,
            "good_call_ok": good.is_ok(),
            "good_call_ms": (good_ms * 10.0).round() / 10.0,
            "storm_ms": storm_ms.round(),
            "baseline": baseline,
            "during": during,
            "right_after": right_after,
            "after_settling": settled,
        })
    );
    Ok(())
}

//! The host's peak memory while agent components hoard what the sandbox lets them: linear
//! memory up to each instance's cap (`hoard`), and outgoing request bodies written and never
//! sent (`buffer-bodies`), every instance at once. What it reports against is the bound
//! `docs/security.md` ("Limits") derives from the defaults: the memory budget of all instances
//! together (1 GiB) plus what unsent bodies may buffer (about 43 MiB an instance, 16 instances),
//! over the process's own size before the runs.
//!
//! ```text
//! cargo bench -p toolnexus-wasm --bench hoard_rss -- memory
//! cargo bench -p toolnexus-wasm --bench hoard_rss -- bodies
//! cargo bench -p toolnexus-wasm --bench hoard_rss -- both
//! ```
//!
//! One phase per process (the kernel's high-water mark, `VmHWM`, only rises); prints one JSON
//! object. Linux only (it reads `/proc/self/status`).

#[allow(dead_code)]
#[path = "../tests/all/agents/harness.rs"]
mod harness;

use std::time::Instant;
use toolnexus_wasm::outgoing_http::OUTGOING_BODY_CHUNK_BYTES;

/// A memory field of `/proc/self/status` (`VmRSS`, `VmHWM`), in MiB.
fn mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// Bodies each `buffer-bodies` run keeps: more than an instance's 1,024 host resources allow
/// (three each: request, body, stream), so the run stops at the handle limit, fully hoarded.
const BODIES_PER_RUN: usize = 400;

#[tokio::main]
async fn main() {
    // `cargo bench` passes `--bench`; the phase is the first other argument.
    let phase = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .unwrap_or_else(|| "both".into());
    let agent = harness::fixture()
        .build()
        .expect("the fixture agent builds");
    let service = std::sync::Arc::new(harness::service(agent));
    let before = mib("VmRSS");
    let instances = toolnexus_wasm::agent::DEFAULT_AGENT_INSTANCES;
    let texts: Vec<String> = (0..instances)
        .map(|n| match phase.as_str() {
            "memory" => "hoard".to_owned(),
            "bodies" => format!("buffer-bodies:{BODIES_PER_RUN}"),
            _ if n % 2 == 0 => "hoard".to_owned(),
            _ => format!("buffer-bodies:{BODIES_PER_RUN}"),
        })
        .collect();
    let started = Instant::now();
    let runs: Vec<_> = texts
        .into_iter()
        .map(|text| {
            let service = std::sync::Arc::clone(&service);
            tokio::spawn(async move { harness::status(&harness::run(&service, &text).await) })
        })
        .collect();
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    for run in runs {
        let (state, message) = run.await.expect("a run");
        // Counts by state and by the first words of the message (the limit that stopped it).
        let why: String = message
            .split_whitespace()
            .take(6)
            .collect::<Vec<_>>()
            .join(" ");
        *outcomes.entry(format!("{state}: {why}")).or_default() += 1;
    }
    let elapsed = started.elapsed();
    let budget_mib = toolnexus_wasm::agent::DEFAULT_AGENT_MEMORY_TOTAL as f64 / (1 << 20) as f64;
    let bodies_mib =
        (instances * (1024 / 3) * 2 * OUTGOING_BODY_CHUNK_BYTES) as f64 / (1 << 20) as f64;
    let peak = mib("VmHWM");
    println!(
        "{}",
        serde_json::json!({
            "phase": phase,
            "runs": instances,
            "seconds": elapsed.as_secs_f64(),
            "rss_before_mib": before,
            "peak_mib": peak,
            "peak_over_before_mib": peak - before,
            "bound_over_before_mib": budget_mib + bodies_mib,
            "outcomes": outcomes,
        })
    );
}

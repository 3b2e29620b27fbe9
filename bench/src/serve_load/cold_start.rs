//! `--cold-start N -- <command…>`: how long a server takes from its process start to its first
//! answer. Each of N runs starts the command, sends `GET <url>.well-known/agent-card.json` again
//! and again (a fresh connection each time, no pause) until one answers 200, then kills the
//! process. The figure is the time from the spawn to that 200: process start, compile or
//! compiled-cache load, listening, and (for a `wasi:http` component) the instantiation that
//! answers the first request. Reports every run and the median.

use crate::http_client::{HttpConnection, Target};
use anyhow::{Context, bail};
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Gives up on a run after this long without a 200.
const RUN_LIMIT: Duration = Duration::from_secs(120);

pub async fn cold_start(
    url: &str,
    runs: usize,
    command: &[String],
    label: &str,
) -> anyhow::Result<()> {
    let (program, args) = command
        .split_first()
        .context("--cold-start needs the server's command after `--`")?;
    let target = Target::parse(url)?;
    let card_path = format!("{}.well-known/agent-card.json", target.path);
    let mut times_ms = Vec::with_capacity(runs);
    for run in 0..runs {
        let started = Instant::now();
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {program}"))?;
        let answered = loop {
            let mut connection = HttpConnection::new(target.clone());
            let ok = connection
                .request(hyper::Method::GET, &card_path, &[], String::new())
                .await
                .is_ok_and(|response| response.status() == hyper::StatusCode::OK);
            if ok {
                break Some(started.elapsed());
            }
            if started.elapsed() > RUN_LIMIT {
                break None;
            }
            if let Some(status) = child.try_wait()? {
                bail!("run {run}: {program} exited ({status}) before it answered");
            }
            tokio::task::yield_now().await;
        };
        let _ = child.kill();
        let _ = child.wait();
        let Some(elapsed) = answered else {
            bail!("run {run}: no 200 from {url} within {RUN_LIMIT:?}");
        };
        times_ms.push(elapsed.as_secs_f64() * 1000.0);
    }
    let mut sorted = times_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN);
    println!(
        "{}",
        json!({"label": label, "cold_start_ms": times_ms, "median_ms": median,
               "min_ms": sorted.first(), "max_ms": sorted.last()})
    );
    eprintln!(
        "{label}: cold start median {median:.1} ms over {} runs (min {:.1}, max {:.1})",
        sorted.len(),
        sorted.first().unwrap_or(&f64::NAN),
        sorted.last().unwrap_or(&f64::NAN)
    );
    Ok(())
}

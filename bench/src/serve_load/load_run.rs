//! One run: N connections, warm-up, measurement, and the JSON record of what was measured.

use crate::a2a_client::A2aClient;
use crate::cli::{Protocol, Workload};
use crate::cpu_usage::Cpu;
use crate::http_client::Target;
use crate::latency_stats::latency_summary;
use crate::outcome::{Failure, fail};
use anyhow::bail;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct RunSpec {
    pub label: String,
    pub server: String,
    pub store: String,
    pub url: String,
    pub workload: Workload,
    pub protocol: Protocol,
    pub connections: usize,
    pub duration: Duration,
    pub warmup: Duration,
    pub poll_interval: Duration,
    /// The server's process, when this process started it (for its CPU time).
    pub server_pid: Option<u32>,
}

#[derive(Default)]
struct Tally {
    /// Latencies in microseconds of successful requests, all and per operation.
    all: Vec<u64>,
    send: Vec<u64>,
    get: Vec<u64>,
    errors: BTreeMap<String, u64>,
    samples: Vec<String>,
    warmup_errors: BTreeMap<String, u64>,
    polls: u64,
    sends: u64,
    events: u64,
    streams: u64,
    /// TCP connections opened (one per connection unless the server closed some).
    connects: u64,
    finished: Option<Instant>,
}

impl Tally {
    fn error(&mut self, measuring: bool, failure: Failure) {
        let map = if measuring {
            &mut self.errors
        } else {
            &mut self.warmup_errors
        };
        *map.entry(failure.kind).or_default() += 1;
        if self.samples.len() < 3 {
            let phase = if measuring { "" } else { "(warm-up) " };
            self.samples.push(format!("{phase}{}", failure.detail));
        }
    }

    fn merge(&mut self, other: Tally) {
        self.all.extend(other.all);
        self.send.extend(other.send);
        self.get.extend(other.get);
        for (k, v) in other.errors {
            *self.errors.entry(k).or_default() += v;
        }
        for (k, v) in other.warmup_errors {
            *self.warmup_errors.entry(k).or_default() += v;
        }
        for s in other.samples {
            if self.samples.len() < 3 {
                self.samples.push(s);
            }
        }
        self.polls += other.polls;
        self.sends += other.sends;
        self.events += other.events;
        self.streams += other.streams;
        self.connects += other.connects;
        self.finished = self.finished.max(other.finished);
    }
}

#[derive(Clone, Copy)]
enum Op {
    Send,
    Get,
    Stream,
}

async fn connection(
    spec: Arc<RunSpec>,
    mut conn: A2aClient,
    seed_task: Option<String>,
    measure_from: Instant,
    end: Instant,
) -> Tally {
    let mut tally = Tally::default();
    let mut latest = seed_task;
    let mut step: u64 = 0;
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        let measuring = now >= measure_from;
        let op = match spec.workload {
            Workload::Send => Op::Send,
            Workload::Get => Op::Get,
            Workload::Stream => Op::Stream,
            Workload::Mixed if step.is_multiple_of(5) || latest.is_none() => Op::Send,
            Workload::Mixed => Op::Get,
        };
        step += 1;
        let started = Instant::now();
        let outcome = match op {
            Op::Send => conn.send().await,
            Op::Get => match latest.as_deref() {
                Some(id) => conn.get(id).await,
                None => Err(fail("no task", "no Task to get")),
            },
            Op::Stream => conn.stream().await,
        };
        let micros = started.elapsed().as_micros() as u64;
        match outcome {
            Ok(done) => {
                if let (Op::Send, Some(id)) = (op, done.task_id)
                    && spec.workload == Workload::Mixed
                {
                    latest = Some(id);
                }
                if measuring {
                    tally.all.push(micros);
                    match op {
                        Op::Send => {
                            tally.send.push(micros);
                            tally.sends += 1;
                            tally.polls += done.polls;
                        }
                        Op::Get => tally.get.push(micros),
                        Op::Stream => {
                            tally.streams += 1;
                            tally.events += done.events;
                        }
                    }
                }
            }
            Err(failure) => {
                let transport = failure.kind == "transport";
                tally.error(measuring, failure);
                if transport {
                    // Do not spin on a refused connection.
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        }
    }
    tally.finished = Some(Instant::now());
    tally.connects = conn.http.connects;
    tally
}

pub async fn run(spec: RunSpec) -> anyhow::Result<Value> {
    let spec = Arc::new(spec);
    let target = Target::parse(&spec.url)?;
    let mut conns = Vec::with_capacity(spec.connections);
    let mut seeds = Vec::with_capacity(spec.connections);
    for _ in 0..spec.connections {
        let mut conn = A2aClient::new(target.clone(), spec.protocol, spec.poll_interval);
        // `get` and `mixed` read a Task made on this connection before the warm-up.
        let seed = if matches!(spec.workload, Workload::Get | Workload::Mixed) {
            match conn.send().await {
                Ok(done) => done.task_id,
                Err(f) => bail!("cannot create the Task to get: {}", f.detail),
            }
        } else {
            None
        };
        conns.push(conn);
        seeds.push(seed);
    }
    let start = Instant::now();
    let measure_from = start + spec.warmup;
    let end = measure_from + spec.duration;
    let handles: Vec<_> = conns
        .into_iter()
        .zip(seeds)
        .map(|(conn, seed)| {
            tokio::spawn(connection(Arc::clone(&spec), conn, seed, measure_from, end))
        })
        .collect();
    // CPU use over the measured window only (the warm-up left out).
    tokio::time::sleep_until(measure_from.into()).await;
    let cpu_before = Cpu::now(spec.server_pid);
    let mut tally = Tally::default();
    for handle in handles {
        tally.merge(handle.await?);
    }
    let seconds = tally
        .finished
        .map_or(spec.duration, |f| f.saturating_duration_since(measure_from))
        .as_secs_f64();
    let errors: u64 = tally.errors.values().sum();
    let warmup_errors: u64 = tally.warmup_errors.values().sum();
    let mut record = json!({
        "label": spec.label,
        "server": spec.server,
        "store": spec.store,
        "url": spec.url,
        "protocol": spec.protocol.name(),
        "workload": spec.workload.name(),
        "connections": spec.connections,
        "warmup_s": spec.warmup.as_secs_f64(),
        "measured_s": (seconds * 1000.0).round() / 1000.0,
        "unix_time": std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        "cores": std::thread::available_parallelism().map_or(0, usize::from),
        "cpu_s": Cpu::report(cpu_before, Cpu::now(spec.server_pid), spec.server_pid.is_some()),
    });
    let summary = latency_summary(std::mem::take(&mut tally.all), seconds);
    for (k, v) in summary.as_object().into_iter().flatten() {
        record[k] = v.clone();
    }
    record["errors"] = json!(errors);
    // Connections the server closed and the client opened again (0 with keep-alive honoured).
    record["reconnects"] = json!(tally.connects.saturating_sub(spec.connections as u64));
    record["error_kinds"] = json!(tally.errors);
    record["warmup_errors"] = json!(warmup_errors);
    if warmup_errors > 0 {
        record["warmup_error_kinds"] = json!(tally.warmup_errors);
    }
    if !tally.samples.is_empty() {
        record["error_samples"] = json!(tally.samples);
    }
    if spec.workload == Workload::Mixed {
        record["by_op"] = json!({
            "send": latency_summary(std::mem::take(&mut tally.send), seconds),
            "get": latency_summary(std::mem::take(&mut tally.get), seconds),
        });
    }
    if spec.protocol == Protocol::V0_3 && tally.sends > 0 {
        // How many tasks/get calls a 0.3 send needed to see its Task completed.
        record["gets_per_send"] =
            json!((tally.polls as f64 / tally.sends as f64 * 100.0).round() / 100.0);
    }
    if tally.streams > 0 {
        record["events_per_stream"] =
            json!((tally.events as f64 / tally.streams as f64 * 100.0).round() / 100.0);
    }
    Ok(record)
}

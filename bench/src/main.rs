//! `tn-compare`: every store side by side, in one run on this machine.
//!
//! Measures our stores (memory; native file and the file-store component, each at full and
//! relaxed durability; other store components given with `--store-component`, such as the
//! JavaScript and Python stores, the same way; PostgreSQL when given a server with
//! `--postgres`), the bare syscalls a
//! file store cannot avoid (the floor), component start-up, and — from a JSON file written by
//! `bench/peers.py` — the Python A2A SDK's stores and a Python file store. Writes `results.md`,
//! `results.json` and `chart.png` to `--out`, and prints the target ratios. Run it through
//! `scripts/bench.sh`, which builds it in release mode and sets up the Python side.

use anyhow::{Context, Result, bail};
use clap::Parser;
use serde_json::{Value, json};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolnexus::wasm::{CacheDir, ComponentSource, WasmTaskStore};
use toolnexus::wasm::{Sandboxed, SandboxedDir};
use toolnexus::{Durability, FileTaskStore, InMemoryTaskStore, Task, TaskStore};

mod chart;
mod store_components;

use store_components::StoreComponent;

#[derive(Parser)]
#[command(about = "Benchmark every toolnexus store against the Python peers and the syscall floor")]
struct Args {
    /// Timed operations per (store, op, size) for the small Task; the large one gets a fifth.
    #[arg(long, default_value_t = 2000)]
    iterations: usize,
    /// Results of `bench/peers.py` to include.
    #[arg(long)]
    peers: Option<PathBuf>,
    /// Directory for results.md, results.json and chart.png.
    #[arg(long, default_value = "target/bench")]
    out: PathBuf,
    /// The large Task (default: the long-history test vector).
    #[arg(long)]
    large: Option<PathBuf>,
    /// Write the small (~1 KiB) Task this benchmark uses to this file and exit, so the Python
    /// peers measure the very same document.
    #[arg(long)]
    emit_small: Option<PathBuf>,
    /// A TrueType font for the chart's labels.
    #[arg(
        long,
        default_value = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
    )]
    font: PathBuf,
    /// Where the stores write (a directory on the disk you want measured).
    #[arg(long)]
    workdir: Option<PathBuf>,
    /// A PostgreSQL server to measure the PostgreSQL store on
    /// (`postgres://user:password@host:port/db`; `scripts/pg-cluster.sh start --durable` makes a
    /// throwaway one). Without it, that store is skipped. It writes to a table of its own.
    #[arg(long, env = "TOOLNEXUS_BENCH_POSTGRES_URL")]
    postgres: Option<String>,
    /// Only the concurrent-save rows (8 and 64 callers), with `--iterations` saves per caller
    /// count: for comparing two builds on them without the other rows' disk traffic before.
    #[arg(long)]
    concurrent_only: bool,
    /// Instances of each component store (calls it runs at once); the store's default
    /// (`toolnexus::wasm::DEFAULT_MAX_INSTANCES`, within its memory budget) unless given.
    #[arg(long)]
    instances: Option<usize>,
    /// Another store component to measure as the built-in one is (same ops, sizes,
    /// durabilities, `--instances`, start-up), in rows named `wasm-LABEL`; repeatable
    /// (`--store-component js=store.wasm --store-component python=store.wasm`).
    #[arg(long = "store-component", value_name = "LABEL=PATH.wasm")]
    store_components: Vec<StoreComponent>,
    /// The cap on one instance's memory for every component store, in MiB (the store's
    /// default, 64, unless given). The JavaScript store needs more for repeated calls with the
    /// large Task: its engine lets the heap grow well past 64 MiB before it levels off (measured:
    /// the cap was hit after about 65 large gets at 64 MiB and after 4,400 calls of this
    /// benchmark's sequence at 128 MiB; at 256 MiB 26,000 calls ran).
    #[arg(long, value_name = "MIB")]
    component_memory_mib: Option<usize>,
}

/// A store's name and durability, as shown in the table.
type Label = (String, &'static str);

/// One measured line of the table.
#[derive(Debug, Clone)]
struct Record {
    store: String,
    durability: String,
    op: String,
    size: String,
    median_us: f64,
    p99_us: f64,
    mean_us: f64,
    ops_per_s: f64,
    iterations: usize,
}

impl Record {
    fn from_samples(
        store: &str,
        durability: &str,
        op: &str,
        size: &str,
        samples: &mut [Duration],
    ) -> Self {
        samples.sort_unstable();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let n = samples.len().max(1);
        let mean = samples.iter().map(|d| us(*d)).sum::<f64>() / n as f64;
        Record {
            store: store.into(),
            durability: durability.into(),
            op: op.into(),
            size: size.into(),
            median_us: us(samples[samples.len() / 2]),
            p99_us: us(samples[((samples.len() * 99) / 100).min(samples.len() - 1)]),
            mean_us: mean,
            ops_per_s: 1e6 / mean,
            iterations: samples.len(),
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "store": self.store, "durability": self.durability, "op": self.op, "size": self.size,
            "median_us": self.median_us, "p99_us": self.p99_us, "mean_us": self.mean_us,
            "ops_per_s": self.ops_per_s, "iterations": self.iterations,
        })
    }

    fn from_json(v: &Value) -> Option<Self> {
        Some(Record {
            store: v["store"].as_str()?.into(),
            durability: v["durability"].as_str()?.into(),
            op: v["op"].as_str()?.into(),
            size: v["size"].as_str()?.into(),
            median_us: v["median_us"].as_f64()?,
            p99_us: v["p99_us"].as_f64()?,
            mean_us: v["mean_us"].as_f64()?,
            ops_per_s: v["ops_per_s"].as_f64()?,
            iterations: v["iterations"].as_u64()? as usize,
        })
    }
}

fn small_task() -> Task {
    let text = "lorem ipsum dolor sit amet ".repeat(32);
    Task::try_from(json!({
        "id": "bench-small",
        "contextId": "ctx-bench",
        "kind": "task",
        "status": {"state": "working", "timestamp": "2026-11-30T05:01:02.345Z"},
        "history": [{"kind": "message", "role": "user", "messageId": "m-1",
                     "parts": [{"kind": "text", "text": text}]}],
    }))
    .expect("a valid Task")
}

fn with_id(task: &Task, id: String) -> Task {
    let mut v = task.clone().into_value();
    v["id"] = json!(id);
    Task::try_from(v).expect("still a Task")
}

async fn measure_store(
    out: &mut Vec<Record>,
    (name, durability): (&str, &str),
    store: &Arc<dyn TaskStore>,
    tasks: &[(&str, &Task, usize)],
) -> Result<()> {
    for &(size, task, iterations) in tasks {
        for _ in 0..iterations.min(50) {
            store.save(task).await?;
        }
        let mut samples = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let started = Instant::now();
            store.save(task).await?;
            samples.push(started.elapsed());
        }
        out.push(Record::from_samples(
            name,
            durability,
            "save",
            size,
            &mut samples,
        ));
        samples.clear();
        for _ in 0..iterations {
            let started = Instant::now();
            let got = store.get(task.id()).await?;
            samples.push(started.elapsed());
            if got.is_none() {
                bail!("{name} lost {}", task.id());
            }
        }
        out.push(Record::from_samples(
            name,
            durability,
            "get",
            size,
            &mut samples,
        ));
    }
    Ok(())
}

/// `callers` tasks saving distinct ids at once, for `rounds` rounds: latency per save, and
/// throughput as saves per second of wall time.
async fn measure_concurrent(
    (name, durability): (&str, &str),
    store: &Arc<dyn TaskStore>,
    callers: usize,
    rounds: usize,
) -> Result<Record> {
    let tasks: Arc<Vec<Task>> = Arc::new(
        (0..callers)
            .map(|i| with_id(&small_task(), format!("c-{i}")))
            .collect(),
    );
    let mut samples = Vec::with_capacity(callers * rounds);
    let started = Instant::now();
    for _ in 0..rounds {
        let handles: Vec<_> = (0..callers)
            .map(|i| {
                let (store, tasks) = (Arc::clone(store), Arc::clone(&tasks));
                tokio::spawn(async move {
                    let t = Instant::now();
                    store.save(&tasks[i]).await.map(|()| t.elapsed())
                })
            })
            .collect();
        for h in handles {
            samples.push(h.await??);
        }
    }
    let wall = started.elapsed();
    let mut record = Record::from_samples(
        name,
        durability,
        &format!("save-concurrent-{callers}"),
        "small",
        &mut samples,
    );
    record.ops_per_s = (callers * rounds) as f64 / wall.as_secs_f64();
    Ok(record)
}

/// The floor: what any file store must do. Save = create a unique temp file, write, (sync),
/// rename, (sync the directory); get = read the file.
fn measure_floor(out: &mut Vec<Record>, dir: &Path, tasks: &[(&str, &Task, usize)]) -> Result<()> {
    for (durability, sync) in [("full", true), ("relaxed", false)] {
        let dir = dir.join(format!("floor-{durability}"));
        fs::create_dir_all(&dir)?;
        for &(size, task, iterations) in tasks {
            let bytes = task.to_json().into_bytes();
            let target = dir.join(format!("{size}.json"));
            let mut samples = Vec::with_capacity(iterations);
            for i in 0..iterations + 20 {
                let started = Instant::now();
                let temp = dir.join(format!(".tmp-{i}"));
                let mut f = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&temp)?;
                f.write_all(&bytes)?;
                if sync {
                    f.sync_data()?;
                }
                drop(f);
                fs::rename(&temp, &target)?;
                if sync {
                    File::open(&dir)?.sync_all()?;
                }
                if i >= 20 {
                    samples.push(started.elapsed());
                }
            }
            out.push(Record::from_samples(
                "floor",
                durability,
                "save",
                size,
                &mut samples,
            ));
            samples.clear();
            for _ in 0..iterations {
                let started = Instant::now();
                let text = fs::read(&target)?;
                samples.push(started.elapsed());
                std::hint::black_box(text);
            }
            out.push(Record::from_samples(
                "floor",
                durability,
                "get",
                size,
                &mut samples,
            ));
        }
    }
    Ok(())
}

/// What handing one call to Tokio's blocking pool and back costs: the part of every file or
/// component call that an async store cannot avoid without blocking its caller's thread.
async fn measure_handoff(out: &mut Vec<Record>, iterations: usize) -> Result<()> {
    let mut samples = Vec::with_capacity(iterations);
    for i in 0..iterations + 50 {
        let started = Instant::now();
        tokio::task::spawn_blocking(|| std::hint::black_box(0)).await?;
        if i >= 50 {
            samples.push(started.elapsed());
        }
    }
    out.push(Record::from_samples(
        "handoff",
        "-",
        "spawn_blocking",
        "-",
        &mut samples,
    ));
    Ok(())
}

/// A component's start-up, each in a fresh engine state: `iterations` cached loads (with the
/// first instance and call), of which the first `cold_compiles` are preceded by a compile from
/// scratch.
async fn measure_component_start(
    out: &mut Vec<Record>,
    (store, source): (&str, ComponentSource),
    dir: &Path,
    iterations: usize,
    cold_compiles: usize,
) -> Result<()> {
    let cache = dir.join("component-cache");
    let data = match store {
        "wasm" => dir.join("start"),
        other => dir.join(format!("start-{other}")),
    };
    let builder = |cache: CacheDir| {
        WasmTaskStore::builder(source.clone())
            .dir(data.clone())
            .cache(cache)
            .memoize(false)
    };
    builder(CacheDir::At(cache.clone())).build()?;
    let (mut cold, mut cached, mut instantiate, mut first) = (vec![], vec![], vec![], vec![]);
    for i in 0..iterations {
        if i < cold_compiles {
            cold.push(builder(CacheDir::Off).build_with_report()?.1.load);
        }
        let started = Instant::now();
        let (store, report) = builder(CacheDir::At(cache.clone())).build_with_report()?;
        store.get("absent").await?;
        first.push(started.elapsed());
        cached.push(report.load);
        instantiate.push(report.instantiate);
    }
    for (op, samples) in [
        ("cold-compile", &mut cold),
        ("cached-load", &mut cached),
        ("instantiate", &mut instantiate),
        ("cached-load+first-call", &mut first),
    ] {
        if !samples.is_empty() {
            out.push(Record::from_samples(store, "-", op, "-", samples));
        }
    }
    Ok(())
}

/// A target the issue sets, checked against this run.
struct Target {
    what: String,
    value: f64,
    limit: f64,
    unit: &'static str,
}

impl Target {
    fn met(&self) -> bool {
        self.value <= self.limit
    }
}

fn find<'a>(
    records: &'a [Record],
    store: &str,
    durability: &str,
    op: &str,
    size: &str,
) -> Option<&'a Record> {
    records
        .iter()
        .find(|r| r.store == store && r.durability == durability && r.op == op && r.size == size)
}

fn targets(records: &[Record]) -> Vec<Target> {
    let mut out = Vec::new();
    let mut ratio = |what: String, a: Option<&Record>, b: Option<&Record>, limit: f64| {
        if let (Some(a), Some(b)) = (a, b) {
            out.push(Target {
                what,
                value: a.median_us / b.median_us,
                limit,
                unit: "×",
            });
        }
    };
    for durability in ["full", "relaxed"] {
        for size in ["small", "large"] {
            for (op, limit) in [("save", 1.25), ("get", 2.0)] {
                ratio(
                    format!("wasm {op} / native file {op} ({size}, {durability})"),
                    find(records, "wasm", durability, op, size),
                    find(records, "file", durability, op, size),
                    limit,
                );
            }
            for op in ["save", "get"] {
                ratio(
                    format!("native file {op} / syscall floor ({size}, {durability})"),
                    find(records, "file", durability, op, size),
                    find(records, "floor", durability, op, size),
                    1.3,
                );
            }
            for ours in ["file", "wasm"] {
                for peer in ["py-file", "py-a2a-sqlite"] {
                    for op in ["save", "get"] {
                        ratio(
                            format!("{ours} / {peer} {op} ({size}, {durability})"),
                            find(records, ours, durability, op, size),
                            find(records, peer, durability, op, size),
                            1.0,
                        );
                    }
                }
            }
        }
    }
    for size in ["small", "large"] {
        for op in ["save", "get"] {
            ratio(
                format!("memory / py-a2a-memory {op} ({size})"),
                find(records, "memory", "none", op, size),
                find(records, "py-a2a-memory", "none", op, size),
                1.0,
            );
        }
    }
    for durability in ["full", "relaxed"] {
        let wasm = find(records, "wasm", durability, "save-concurrent-8", "small");
        let file = find(records, "file", durability, "save-concurrent-8", "small");
        if let (Some(w), Some(f)) = (wasm, file) {
            // Throughput must be at least 0.8× native: express as native/wasm ≤ 1.25.
            out.push(Target {
                what: format!(
                    "native / wasm throughput, 8 callers ({durability}); target wasm ≥ 0.8× native"
                ),
                value: f.ops_per_s / w.ops_per_s,
                limit: 1.25,
                unit: "×",
            });
        }
    }
    if let Some(r) = find(records, "wasm", "-", "cached-load+first-call", "-") {
        out.push(Target {
            what: "cached component load + first call (median)".into(),
            value: r.median_us / 1000.0,
            limit: 10.0,
            unit: " ms",
        });
    }
    out
}

fn markdown(records: &[Record], targets: &[Target], machine: &str) -> String {
    let mut md = String::new();
    md.push_str(&format!("Machine: {machine}\n\n"));
    md.push_str("| store | durability | op | size | median µs | p99 µs | ops/s |\n|---|---|---|---|---:|---:|---:|\n");
    for r in records {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {:.1} | {:.1} | {:.0} |\n",
            r.store, r.durability, r.op, r.size, r.median_us, r.p99_us, r.ops_per_s
        ));
    }
    md.push_str("\n| target | measured | limit | met |\n|---|---:|---:|---|\n");
    for t in targets {
        md.push_str(&format!(
            "| {} | {:.2}{} | {:.2}{} | {} |\n",
            t.what,
            t.value,
            t.unit,
            t.limit,
            t.unit,
            if t.met() { "yes" } else { "**no**" }
        ));
    }
    md
}

fn machine() -> String {
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    format!(
        "{cpu}, {cores} cores, {} {}",
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    if let Some(path) = &args.emit_small {
        fs::write(path, small_task().to_json())?;
        return Ok(());
    }
    let large_path = args.large.clone().unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors/tasks/long-history.json")
    });
    let large = Task::from_json(
        &fs::read_to_string(&large_path)
            .with_context(|| format!("reading {}", large_path.display()))?,
    )?;
    let small = small_task();
    let n = args.iterations.max(10);
    let sizes: [(&str, &Task, usize); 2] =
        [("small", &small, n), ("large", &large, (n / 5).max(10))];
    let tmp = match &args.workdir {
        Some(dir) => tempfile::tempdir_in(dir)?,
        None => tempfile::tempdir()?,
    };
    let dir = tmp.path();

    store_components::check_unique(&args.store_components)?;
    let sandbox = store_components::Sandbox {
        instances: args.instances,
        memory_bytes: args.component_memory_mib.map(|mib| mib << 20),
        cache: store_components::cache_dir(args.workdir.as_deref()),
    };

    let mut records = Vec::new();
    if !args.concurrent_only {
        eprintln!("measuring the syscall floor…");
        measure_floor(&mut records, dir, &sizes)?;
        measure_handoff(&mut records, n).await?;
    }
    let mut stores: Vec<(Label, Arc<dyn TaskStore>)> = vec![
        (
            ("memory".into(), "none"),
            Arc::new(InMemoryTaskStore::new()),
        ),
        (
            ("file".into(), "full"),
            Arc::new(FileTaskStore::new(dir.join("file-full"))?),
        ),
        (
            ("file".into(), "relaxed"),
            Arc::new(FileTaskStore::with_durability(
                dir.join("file-relaxed"),
                Durability::Relaxed,
            )?),
        ),
    ];
    for (name, durability) in [("full", Durability::Full), ("relaxed", Durability::Relaxed)] {
        let store = store_components::open(
            ComponentSource::BuiltinFileStore,
            dir.join(format!("wasm-{name}")),
            durability,
            &sandbox,
        )?;
        stores.push((("wasm".into(), name), Arc::new(store)));
    }
    for component in &args.store_components {
        for (name, durability) in [("full", Durability::Full), ("relaxed", Durability::Relaxed)] {
            eprintln!("loading {} ({name})…", component.describe());
            let store = store_components::open_named(
                component,
                dir.join(format!("{}-{name}", component.store)),
                durability,
                &sandbox,
            )?;
            stores.push(((component.store.clone(), name), Arc::new(store)));
        }
    }
    // A failed call names its store, and for a given component the file it came from.
    let describe = |(store, durability): &Label| {
        let what = args
            .store_components
            .iter()
            .find(|c| &c.store == store)
            .map_or_else(|| store.clone(), StoreComponent::describe);
        format!("measuring {what}, {durability} durability")
    };
    match &args.postgres {
        Some(url) => {
            // A fresh table per run; full durability is the server's default (fsync and
            // synchronous_commit on), which `pg-cluster.sh start --durable` keeps.
            let table = format!("tn_compare_{}", std::process::id());
            let store = toolnexus::postgres::PostgresTaskStore::builder(url.as_str())
                .table(table)
                .connect()
                .await
                .context("connecting to the PostgreSQL server given by --postgres")?;
            stores.push((("postgres".into(), "full"), Arc::new(store)));
        }
        None => eprintln!(
            "skipping the PostgreSQL store: no server given (--postgres URL or \
             TOOLNEXUS_BENCH_POSTGRES_URL)"
        ),
    }
    if !args.concurrent_only {
        for (label, store) in &stores {
            eprintln!("measuring {} ({})…", label.0, label.1);
            measure_store(&mut records, (&label.0, label.1), store, &sizes)
                .await
                .with_context(|| describe(label))?;
        }
    }
    for callers in [8, 64] {
        for (label, store) in &stores {
            let rounds = (n / callers).clamp(10, 200);
            let record = measure_concurrent((&label.0, label.1), store, callers, rounds)
                .await
                .with_context(|| describe(label))?;
            records.push(record);
        }
    }
    if !args.concurrent_only {
        eprintln!("measuring component start-up…");
        let builtin = ("wasm", ComponentSource::BuiltinFileStore);
        measure_component_start(&mut records, builtin, dir, 20, 20).await?;
        // The JavaScript and Python components are 13–19 MB, each cold compile many seconds:
        // fewer samples, one compile from scratch.
        for component in &args.store_components {
            eprintln!("measuring {} start-up…", component.describe());
            let named = (component.store.as_str(), component.source());
            measure_component_start(&mut records, named, dir, 5, 1)
                .await
                .with_context(|| format!("measuring {} start-up", component.describe()))?;
        }
    }

    let mut peers_meta = Value::Null;
    if let Some(path) = &args.peers {
        let peers: Value = serde_json::from_str(
            &fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        )?;
        for r in peers["records"]
            .as_array()
            .context("peers JSON has no records")?
        {
            records.push(Record::from_json(r).with_context(|| format!("bad peer record {r}"))?);
        }
        peers_meta = json!({"python": peers["python"], "a2a_sdk": peers["a2a_sdk"]});
    }

    let targets = targets(&records);
    let machine = machine();
    fs::create_dir_all(&args.out)?;
    let md = markdown(&records, &targets, &machine);
    fs::write(args.out.join("results.md"), &md)?;
    let json = json!({
        "machine": machine,
        "peers": peers_meta,
        "records": records.iter().map(Record::to_json).collect::<Vec<_>>(),
        "targets": targets.iter().map(|t| json!({"target": t.what, "value": t.value, "limit": t.limit, "met": t.met()})).collect::<Vec<_>>(),
    });
    fs::write(
        args.out.join("results.json"),
        serde_json::to_string_pretty(&json)?,
    )?;
    chart::draw(&args.out.join("chart.png"), &args.font, &records)?;
    println!("{md}");
    println!(
        "wrote {}/results.md, results.json, chart.png",
        args.out.display()
    );
    Ok(())
}

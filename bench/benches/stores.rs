//! Criterion benchmarks for every store: `cargo bench -p toolnexus-bench --bench stores`.
//!
//! - `save/<size>/<store>`, `get/<size>/<store>`: one call, for a ~1 KiB Task and for the
//!   `long-history.json` test vector (~360 KiB), for memory, native file (full and relaxed durability)
//!   and the file-store component;
//! - `get-miss/<store>`: a `get` that finds nothing — the per-call overhead of each store;
//! - `concurrent-save/<callers>/<store>`: `callers` tasks saving distinct ids at once (one
//!   iteration = one round of `callers` saves);
//! - `component/*`: cold compile, cached load from the disk cache, instantiate, and a cached
//!   load plus the first call.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolnexus::wasm::{CacheDir, ComponentSource, LoadReport, WasmTaskStore};
use toolnexus::wasm::{Sandboxed, SandboxedDir};
use toolnexus::{Durability, FileTaskStore, InMemoryTaskStore, Task, TaskStore};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn small_task() -> Task {
    let text = "lorem ipsum dolor sit amet ".repeat(32);
    Task::try_from(json!({
        "id": "bench-1k",
        "contextId": "ctx-bench",
        "status": {"state": "working", "timestamp": "2026-11-30T05:01:02.345Z"},
        "history": [{"role": "user", "messageId": "m-1", "parts": [{"kind": "text", "text": text}]}],
    }))
    .unwrap()
}

fn long_task() -> Task {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors/tasks/long-history.json");
    Task::from_json(&std::fs::read_to_string(&path).expect("the test vectors are in tests/vectors"))
        .unwrap()
}

fn stores(dir: &Path) -> Vec<(&'static str, Arc<dyn TaskStore>)> {
    vec![
        ("memory", Arc::new(InMemoryTaskStore::new())),
        (
            "file",
            Arc::new(FileTaskStore::new(dir.join("file")).unwrap()),
        ),
        (
            "file-relaxed",
            Arc::new(
                FileTaskStore::with_durability(dir.join("relaxed"), Durability::Relaxed).unwrap(),
            ),
        ),
        (
            "wasm",
            Arc::new(WasmTaskStore::file_store(dir.join("wasm")).unwrap()),
        ),
        (
            "wasm-relaxed",
            Arc::new(
                WasmTaskStore::builder(ComponentSource::BuiltinFileStore)
                    .dir(dir.join("wasm-relaxed"))
                    .durability(Durability::Relaxed)
                    .build()
                    .unwrap(),
            ),
        ),
    ]
}

fn single_calls(c: &mut Criterion) {
    let rt = runtime();
    let tmp = tempfile::tempdir().unwrap();
    let stores = stores(tmp.path());
    for (size, task) in [("1KiB", small_task()), ("long-history", long_task())] {
        let mut group = c.benchmark_group(format!("save/{size}"));
        for (name, store) in &stores {
            group.bench_function(*name, |b| b.to_async(&rt).iter(|| store.save(&task)));
        }
        group.finish();
        let mut group = c.benchmark_group(format!("get/{size}"));
        for (name, store) in &stores {
            rt.block_on(store.save(&task)).unwrap();
            group.bench_function(*name, |b| {
                b.to_async(&rt)
                    .iter(|| async { store.get(task.id()).await.unwrap().unwrap() })
            });
        }
        group.finish();
    }
    let mut group = c.benchmark_group("get-miss");
    for (name, store) in &stores {
        group.bench_function(*name, |b| {
            b.to_async(&rt)
                .iter(|| async { store.get("absent").await.unwrap() })
        });
    }
    group.finish();
}

fn concurrent(c: &mut Criterion) {
    let rt = runtime();
    let tmp = tempfile::tempdir().unwrap();
    let stores = stores(tmp.path());
    let tasks: Vec<Task> = (0..64)
        .map(|i| {
            let mut v = small_task().into_value();
            v["id"] = json!(format!("bench-{i}"));
            Task::try_from(v).unwrap()
        })
        .collect();
    let tasks = Arc::new(tasks);
    for callers in [8usize, 64] {
        let mut group = c.benchmark_group(format!("concurrent-save/{callers}"));
        group.throughput(criterion::Throughput::Elements(callers as u64));
        for (name, store) in &stores {
            group.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.to_async(&rt).iter(|| {
                    let (store, tasks) = (Arc::clone(store), Arc::clone(&tasks));
                    async move {
                        let handles: Vec<_> = (0..callers)
                            .map(|i| {
                                let (store, tasks) = (Arc::clone(&store), Arc::clone(&tasks));
                                tokio::spawn(async move {
                                    store.save(&tasks[i % tasks.len()]).await.unwrap()
                                })
                            })
                            .collect();
                        for h in handles {
                            h.await.unwrap();
                        }
                    }
                })
            });
        }
        group.finish();
    }
}

fn component_start(c: &mut Criterion) {
    let rt = runtime();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let builder = |cache: CacheDir| {
        WasmTaskStore::builder(ComponentSource::BuiltinFileStore)
            .dir(tmp.path().join("data"))
            .cache(cache)
            .memoize(false)
    };
    // Fill the disk cache once.
    builder(CacheDir::At(cache.clone())).build().unwrap();

    let mut group = c.benchmark_group("component");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    // Each measures one part of a fresh load, as reported by `build_with_report`.
    type Part = fn(&LoadReport) -> Duration;
    let parts: [(&str, CacheDir, Part); 3] = [
        ("cold-compile", CacheDir::Off, |r| r.load),
        ("cached-load", CacheDir::At(cache.clone()), |r| r.load),
        ("instantiate", CacheDir::At(cache.clone()), |r| {
            r.instantiate
        }),
    ];
    for (name, cache_dir, part) in parts {
        group.bench_function(name, |b| {
            b.iter_custom(|n| {
                (0..n)
                    .map(|_| part(&builder(cache_dir.clone()).build_with_report().unwrap().1))
                    .sum()
            })
        });
    }
    group.bench_function("cached-load-and-first-call", |b| {
        b.iter_custom(|n| {
            let mut total = Duration::ZERO;
            for _ in 0..n {
                let started = Instant::now();
                let store = builder(CacheDir::At(cache.clone())).build().unwrap();
                rt.block_on(store.get("absent")).unwrap();
                total += started.elapsed();
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, single_calls, concurrent, component_start);
criterion_main!(benches);

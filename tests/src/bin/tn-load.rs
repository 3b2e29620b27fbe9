//! Test and measurement helper: loads a store component in a fresh process and reports how.
//!
//! `tn-load CACHE_DIR|off [COMPONENT|builtin]` prints one JSON line:
//! `{"outcome": "compiled"|"disk"|"memory", "load_us": …, "instantiate_us": …, "first_call_us": …}`
//! where `first_call_us` is one `get` of a missing id. Exits non-zero with a message on error.

use std::path::PathBuf;
use std::time::Instant;
use toolnexus::TaskStore;
use toolnexus::wasm::{CacheDir, CacheOutcome, ComponentSource, WasmTaskStore};
use toolnexus::wasm::{Sandboxed, SandboxedDir};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (cache, component) = match args.as_slice() {
        [cache] => (cache.clone(), "builtin".to_owned()),
        [cache, component] => (cache.clone(), component.clone()),
        _ => {
            eprintln!("usage: tn-load CACHE_DIR|off [COMPONENT|builtin]");
            std::process::exit(2);
        }
    };
    let cache = if cache == "off" {
        CacheDir::Off
    } else {
        CacheDir::At(PathBuf::from(cache))
    };
    let source = if component == "builtin" {
        ComponentSource::BuiltinFileStore
    } else {
        ComponentSource::File(component.into())
    };
    let data = tempfile::tempdir().expect("temp dir");
    let started = Instant::now();
    let (store, report) = WasmTaskStore::builder(source)
        .dir(data.path())
        .cache(cache)
        .build_with_report()
        .unwrap_or_else(|e| {
            eprintln!("tn-load: {e}");
            std::process::exit(3)
        });
    let built = started.elapsed();
    let call = Instant::now();
    assert!(store.get("absent").await.expect("first call").is_none());
    let first_call = call.elapsed();
    let outcome = match report.outcome {
        CacheOutcome::Compiled => "compiled",
        CacheOutcome::Disk => "disk",
        CacheOutcome::Memory => "memory",
    };
    println!(
        "{}",
        serde_json::json!({
            "outcome": outcome,
            "load_us": report.load.as_micros() as u64,
            "instantiate_us": report.instantiate.as_micros() as u64,
            "build_us": built.as_micros() as u64,
            "first_call_us": first_call.as_micros() as u64,
        })
    );
}

//! What a pathological component costs `build` (and so `resolve_store`) before the host can
//! refuse it: a component of a given size whose core code is built to be slow to compile, timed
//! and its peak memory read, one size per process.
//!
//! ```text
//! cargo run --release -p toolnexus-bench --bin tn-bomb -- --mib 16 --shape regalloc
//! ```
//!
//! Shapes: `regalloc` (functions of 1 MiB that keep 2,000 locals live through long chains of
//! arithmetic: register allocation's worst case here), `calls` (many small functions that call
//! each other: per-function overhead). Prints one JSON object.

use toolnexus::wasm::{Sandboxed, SandboxedDir};
use toolnexus_bench::proc_status;

use clap::Parser;
use std::time::Instant;
use toolnexus::wasm::{CacheDir, ComponentSource, WasmTaskStore};
use wasm_encoder::{
    CodeSection, Component, ExportKind, ExportSection, Function, FunctionSection, Instruction,
    Module, ModuleSection, TypeSection, ValType,
};

#[derive(Parser)]
struct Args {
    /// Size of the component, in MiB.
    #[arg(long, default_value_t = 16)]
    mib: usize,
    /// `regalloc` or `calls`.
    #[arg(long, default_value = "regalloc")]
    shape: String,
    /// The `max-component` limit to build under, in MiB (default: none, to measure the cost).
    #[arg(long)]
    limit_mib: Option<u64>,
}

const LOCALS: u32 = 2_000;

fn function(shape: &str, body_bytes: usize, index: u32, count: u32) -> Function {
    match shape {
        "calls" => {
            let mut f = Function::new([]);
            for k in 0..body_bytes / 3 {
                f.instruction(&Instruction::Call((index + 1 + k as u32) % count));
            }
            f.instruction(&Instruction::End);
            f
        }
        _ => {
            let mut f = Function::new([(LOCALS, ValType::I64)]);
            let mut k: u32 = 0;
            // Each step is about 9 bytes: get, get, add, set.
            for _ in 0..body_bytes / 9 {
                let (a, b, c) = (k % LOCALS, (k * 7 + 3) % LOCALS, (k * 13 + 5) % LOCALS);
                f.instruction(&Instruction::LocalGet(a));
                f.instruction(&Instruction::LocalGet(b));
                f.instruction(&Instruction::I64Add);
                f.instruction(&Instruction::LocalSet(c));
                k = k.wrapping_add(1);
            }
            f.instruction(&Instruction::End);
            f
        }
    }
}

fn bomb(shape: &str, bytes: usize) -> Vec<u8> {
    let (per_function, functions) = match shape {
        "calls" => (3 * 64, (bytes / (3 * 64)).max(1)),
        _ => (1 << 20, (bytes >> 20).max(1)),
    };
    let count = functions as u32;
    let mut types = TypeSection::new();
    types.ty().function([], []);
    let mut funcs = FunctionSection::new();
    let mut code = CodeSection::new();
    for i in 0..count {
        funcs.function(0);
        code.function(&function(shape, per_function, i, count));
    }
    let mut exports = ExportSection::new();
    exports.export("f0", ExportKind::Func, 0);
    let mut module = Module::new();
    module
        .section(&types)
        .section(&funcs)
        .section(&exports)
        .section(&code);
    let mut component = Component::new();
    component.section(&ModuleSection(&module));
    component.finish()
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let bytes = bomb(&args.shape, args.mib << 20);
    let before = proc_status::memory_mib("VmRSS");
    let tmp = tempfile::tempdir()?;
    let mut builder = WasmTaskStore::builder(ComponentSource::Bytes {
        name: "bomb.wasm".into(),
        bytes: bytes.clone().into(),
    })
    .cache(CacheDir::Off)
    .memoize(false)
    .dir(tmp.path());
    builder = builder.max_component_size(args.limit_mib.map_or(u64::MAX, |m| m << 20));
    let started = Instant::now();
    let outcome = builder.build();
    let seconds = started.elapsed().as_secs_f64();
    let peak = proc_status::memory_mib("VmHWM");
    let refused = match &outcome {
        Ok(_) => "loaded".to_owned(),
        Err(e) => e.to_string().chars().take(160).collect(),
    };
    println!(
        "{}",
        serde_json::json!({
            "shape": args.shape,
            "component_bytes": bytes.len(),
            "seconds": (seconds * 1000.0).round() / 1000.0,
            "rss_before_mib": before,
            "peak_rss_mib": peak,
            "outcome": refused,
        })
    );
    Ok(())
}

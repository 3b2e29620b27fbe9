//! `tn-compose`: puts middleware store components in front of a store component, writing one
//! component that loads with `wasm:` like any other store.
//!
//! ```text
//! tn-compose --middleware guard.wasm --store file-store.wasm --out guarded.wasm
//! ```
//!
//! Exit status: 0 on success, 2 when an input cannot be read or the components do not fit
//! together, 3 when the output cannot be written.

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "tn-compose",
    version,
    about = "Compose toolnexus middleware components over a store component"
)]
struct Args {
    /// A middleware component (world toolnexus:task-store/task-store-middleware). Repeat to
    /// stack several; the first is outermost (the host calls it first).
    #[arg(long = "middleware", short = 'm', required = true)]
    middlewares: Vec<PathBuf>,
    /// The store component the middlewares sit in front of (e.g. from `tnstore component`).
    #[arg(long, short = 's')]
    store: PathBuf,
    /// Where to write the composed component. Written atomically: temp file, then rename.
    #[arg(long, short = 'o')]
    out: PathBuf,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let read = |path: &PathBuf| {
        std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    let inputs = args
        .middlewares
        .iter()
        .map(read)
        .collect::<Result<Vec<_>, _>>()
        .and_then(|middlewares| Ok((middlewares, read(&args.store)?)));
    let (middlewares, store) = match inputs {
        Ok(inputs) => inputs,
        Err(message) => {
            eprintln!("tn-compose: {message}");
            return ExitCode::from(2);
        }
    };
    let refs: Vec<&[u8]> = middlewares.iter().map(Vec::as_slice).collect();
    let composed = match toolnexus_compose::compose_chain(&refs, &store) {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("tn-compose: {e}");
            return ExitCode::from(2);
        }
    };
    let tmp = args.out.with_extension("wasm.tmp");
    let written = std::fs::write(&tmp, &composed).and_then(|()| std::fs::rename(&tmp, &args.out));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        eprintln!("tn-compose: cannot write {}: {e}", args.out.display());
        return ExitCode::from(3);
    }
    println!(
        "wrote {} ({} bytes): {} middleware(s) over {}",
        args.out.display(),
        composed.len(),
        refs.len(),
        args.store.display()
    );
    ExitCode::SUCCESS
}

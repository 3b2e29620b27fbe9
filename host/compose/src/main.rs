//! `tn-compose`: puts middleware store components in front of a store component, writing one
//! component that loads with `wasm:` like any other store; or, with `a2a`, composes the whole
//! A2A stack (agent, A2A server, run bridge, store) into one `wasi:http` component.
//!
//! ```text
//! tn-compose --middleware guard.wasm --store file-store.wasm --out guarded.wasm
//! tn-compose a2a --agent echo --store file --out composed.wasm
//! wasmtime serve -Scli --dir ./tasks::/ composed.wasm
//! ```
//!
//! Exit status: 0 on success, 2 when an input cannot be read or the components do not fit
//! together, 3 when the output cannot be written.

use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use toolnexus_compose::embedded::{self, part};
use toolnexus_compose::{A2aParts, ComposeError};

#[derive(Parser)]
#[command(
    name = "tn-compose",
    version,
    about = "Compose toolnexus middleware components over a store component, or the whole A2A \
             stack into one wasi:http component (`tn-compose a2a`)",
    subcommand_negates_reqs = true,
    args_conflicts_with_subcommands = true
)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// A middleware component (world toolnexus:task-store/task-store-middleware). Repeat to
    /// stack several; the first is outermost (the host calls it first).
    #[arg(long = "middleware", short = 'm', required = true)]
    middlewares: Vec<PathBuf>,
    /// The store component the middlewares sit in front of (e.g. from `tnstore component`).
    #[arg(long, short = 's', required = true)]
    store: Option<PathBuf>,
    /// Where to write the composed component. Written atomically: temp file, then rename.
    #[arg(long, short = 'o', required = true)]
    out: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Compose an agent, the A2A server component and a store into one component exporting
    /// wasi:http/incoming-handler, which any wasi:http host serves (`wasmtime serve -Scli
    /// --dir <tasks>::/ out.wasm`, or `tnstore serve --component 'out.wasm?dir=<tasks>'`).
    A2a(A2aArgs),
}

#[derive(clap::Args)]
struct A2aArgs {
    /// The agent: `echo` or `tck` (embedded), or a path to an agent component (world
    /// toolnexus:a2a/agent-component). A file named like an embedded agent: `./echo`.
    #[arg(long, short = 'a', default_value = "echo")]
    agent: String,
    /// The store: `file` (the file store), `guarded` (the lifecycle guard over the file store),
    /// or a path to a store component exporting store and catalog of toolnexus:task-store@0.4.
    #[arg(long, short = 's', default_value = "file")]
    store: String,
    /// A middleware component over the store. Repeat to stack several; the first is outermost.
    #[arg(long = "middleware", short = 'm')]
    middlewares: Vec<PathBuf>,
    /// The A2A server component to use instead of the embedded one.
    #[arg(long)]
    server: Option<PathBuf>,
    /// The run bridge to use instead of the embedded one.
    #[arg(long)]
    bridge: Option<PathBuf>,
    /// Where to write the composed component. Written atomically: temp file, then rename.
    #[arg(long, short = 'o')]
    out: PathBuf,
}

/// Why `tn-compose` failed, and with which exit status.
enum Failure {
    /// The inputs cannot be read or do not fit: 2.
    Input(String),
    /// The output cannot be written: 3.
    Output(String),
}

impl From<ComposeError> for Failure {
    fn from(e: ComposeError) -> Failure {
        Failure::Input(e.to_string())
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let done = match args.command {
        Some(Command::A2a(a2a)) => compose_a2a(&a2a),
        None => compose_middlewares(
            &args.middlewares,
            args.store.as_deref().expect("clap requires --store"),
            args.out.as_deref().expect("clap requires --out"),
        ),
    };
    match done {
        Ok(summary) => {
            println!("{summary}");
            ExitCode::SUCCESS
        }
        Err(Failure::Input(message)) => {
            eprintln!("tn-compose: {message}");
            ExitCode::from(2)
        }
        Err(Failure::Output(message)) => {
            eprintln!("tn-compose: {message}");
            ExitCode::from(3)
        }
    }
}

fn read(path: &Path) -> Result<Vec<u8>, Failure> {
    std::fs::read(path).map_err(|e| Failure::Input(format!("cannot read {}: {e}", path.display())))
}

/// Writes `bytes` to a temp file beside `out`, then renames it over `out`: a reader never sees
/// half a component, and a failure leaves nothing behind.
fn write_atomically(out: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let tmp = out.with_extension("wasm.tmp");
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, out))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Failure::Output(format!("cannot write {}: {e}", out.display()))
        })
}

fn compose_middlewares(
    middlewares: &[PathBuf],
    store_path: &Path,
    out: &Path,
) -> Result<String, Failure> {
    let middlewares = middlewares
        .iter()
        .map(|path| read(path))
        .collect::<Result<Vec<_>, _>>()?;
    let store = read(store_path)?;
    let refs: Vec<&[u8]> = middlewares.iter().map(Vec::as_slice).collect();
    let composed = toolnexus_compose::compose_chain(&refs, &store)?;
    write_atomically(out, &composed)?;
    Ok(format!(
        "wrote {} ({} bytes): {} middleware(s) over {}",
        out.display(),
        composed.len(),
        refs.len(),
        store_path.display()
    ))
}

/// An embedded part, or the file at `path`.
fn embedded_or_file(
    path: Option<&Path>,
    bytes: &'static [u8],
    what: &'static str,
) -> Result<Vec<u8>, Failure> {
    match path {
        Some(path) => read(path),
        None => Ok(part(bytes, what)?.to_vec()),
    }
}

fn compose_a2a(args: &A2aArgs) -> Result<String, Failure> {
    let agent = match args.agent.as_str() {
        "echo" => part(embedded::ECHO_AGENT, "the echo agent")?.to_vec(),
        "tck" => part(embedded::TCK_AGENT, "the tck agent")?.to_vec(),
        path => read(Path::new(path))?,
    };
    let store = match args.store.as_str() {
        "file" => part(embedded::FILE_STORE, "the file store")?.to_vec(),
        "guarded" => embedded::guarded_file_store()?,
        path => read(Path::new(path))?,
    };
    let server = embedded_or_file(
        args.server.as_deref(),
        embedded::SERVER,
        "the A2A server component",
    )?;
    let bridge = embedded_or_file(args.bridge.as_deref(), embedded::BRIDGE, "the run bridge")?;
    let middlewares = args
        .middlewares
        .iter()
        .map(|path| read(path))
        .collect::<Result<Vec<_>, _>>()?;
    let middlewares: Vec<&[u8]> = middlewares.iter().map(Vec::as_slice).collect();
    let composed = toolnexus_compose::compose_a2a(&A2aParts {
        server: &server,
        bridge: &bridge,
        agent: &agent,
        store: &store,
        middlewares: &middlewares,
    })?;
    write_atomically(&args.out, &composed)?;
    Ok(format!(
        "wrote {} ({} bytes): agent {}, store {} under {} middleware(s); serve it with \
         `wasmtime serve -Scli --dir <tasks>::/ {}`",
        args.out.display(),
        composed.len(),
        args.agent,
        args.store,
        middlewares.len(),
        args.out.display()
    ))
}

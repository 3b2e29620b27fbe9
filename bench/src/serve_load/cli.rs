//! The command line: its flags, and the workloads, protocols and servers they name.

use clap::{Parser, ValueEnum};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "tn-serve-load", about = "Load on an A2A server over HTTP")]
pub struct Args {
    /// The server's JSON-RPC URL (without --matrix).
    #[arg(long, required_unless_present_any = ["matrix", "fill"])]
    pub url: Option<String>,
    /// What each connection does (without --matrix; --matrix runs them all).
    #[arg(long, value_enum, default_value_t = Workload::Send)]
    pub workload: Workload,
    /// The JSON-RPC dialect: A2A 1.0 (`SendMessage`, `A2A-Version: 1.0`) or 0.3
    /// (`message/send`, then `tasks/get` until the Task is completed).
    #[arg(long, value_enum, default_value_t = Protocol::V1_0)]
    pub protocol: Protocol,
    /// Concurrent keep-alive connections.
    #[arg(long, default_value_t = 16)]
    pub connections: usize,
    /// Seconds measured, after the warm-up.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Seconds of load before measuring.
    #[arg(long, default_value_t = 2.0)]
    pub warmup: f64,
    /// Milliseconds between two polls of a Task that is not completed yet (0.3 `send`).
    #[arg(long, default_value_t = 0)]
    pub poll_interval_ms: u64,
    /// The name of the target in the output (without --matrix).
    #[arg(long, default_value = "server")]
    pub label: String,
    /// Start each server and run every workload against it (see the module documentation).
    #[arg(long)]
    pub matrix: bool,
    /// --matrix: the `tnstore` binary.
    #[arg(long)]
    pub tnstore: Option<PathBuf>,
    /// --matrix: the dialect spoken to `tnstore serve` (0.3 for a server from before A2A 1.0).
    #[arg(long, value_enum, default_value_t = Protocol::V1_0)]
    pub tnstore_protocol: Protocol,
    /// --matrix: a Python with bench/python/requirements.txt installed (default: a venv under
    /// target/serve-load-venv, made if missing).
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// --matrix: a PostgreSQL server for `tnstore --store postgres://…` (default
    /// TOOLNEXUS_TEST_POSTGRES_URL, else a throwaway cluster from scripts/pg-cluster.sh).
    #[arg(long)]
    pub postgres: Option<String>,
    /// --matrix: only these servers (comma-separated).
    #[arg(long, value_delimiter = ',', value_enum)]
    pub servers: Vec<ServerKind>,
    /// --matrix: only these workloads (comma-separated).
    #[arg(long, value_delimiter = ',', value_enum)]
    pub workloads: Vec<Workload>,
    /// --matrix: the repository (scripts/, bench/python/, target/); default the one this binary
    /// was built from.
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Tasks in the store before the load: with --matrix, saved into each file-backed
    /// server's directory (`file`, `wasm`) before it starts (the others are run as they are,
    /// the record's `stored_tasks` says 0); with --fill, how many to save.
    #[arg(long, default_value_t = 0)]
    pub stored_tasks: usize,
    /// Instead of a load: save --stored-tasks Tasks into this directory (a file store's) and
    /// exit, for a server started over it by hand.
    #[arg(long, conflicts_with = "matrix")]
    pub fill: Option<PathBuf>,
    /// --matrix: also write the JSON lines to this file.
    #[arg(long)]
    pub json_out: Option<PathBuf>,
    /// Instead of a load: start the server command after `--` this many times and report how
    /// long each took from its start to its first 200 on `<url>.well-known/agent-card.json`.
    #[arg(long, requires = "url")]
    pub cold_start: Option<usize>,
    /// The server command for `--cold-start`.
    #[arg(last = true)]
    pub command: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum Workload {
    Send,
    Get,
    Mixed,
    Stream,
}

impl Workload {
    pub const ALL: [Workload; 4] = [
        Workload::Send,
        Workload::Get,
        Workload::Mixed,
        Workload::Stream,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Workload::Send => "send",
            Workload::Get => "get",
            Workload::Mixed => "mixed",
            Workload::Stream => "stream",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum Protocol {
    #[value(name = "1.0")]
    V1_0,
    #[value(name = "0.3")]
    V0_3,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::V1_0 => "1.0",
            Protocol::V0_3 => "0.3",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum ServerKind {
    TnMemory,
    TnFile,
    TnWasm,
    TnPostgres,
    PyMemory,
    PySqlite,
}

impl ServerKind {
    pub const ALL: [ServerKind; 6] = [
        ServerKind::TnMemory,
        ServerKind::TnFile,
        ServerKind::TnWasm,
        ServerKind::TnPostgres,
        ServerKind::PyMemory,
        ServerKind::PySqlite,
    ];
    pub fn server(self) -> &'static str {
        match self {
            ServerKind::TnMemory
            | ServerKind::TnFile
            | ServerKind::TnWasm
            | ServerKind::TnPostgres => "tnstore",
            ServerKind::PyMemory | ServerKind::PySqlite => "a2a-sdk",
        }
    }
    pub fn store(self) -> &'static str {
        match self {
            ServerKind::TnMemory | ServerKind::PyMemory => "memory",
            ServerKind::TnFile => "file",
            ServerKind::TnWasm => "wasm",
            ServerKind::TnPostgres => "postgres",
            ServerKind::PySqlite => "sqlite",
        }
    }
}

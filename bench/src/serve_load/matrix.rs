//! `--matrix`: start each server, run each workload against it, kill it.

use crate::cli::{Args, Protocol, ServerKind, Workload};
use crate::load_run::{RunSpec, run};
use crate::report::Output;
use crate::server_prerequisites::{Postgres, postgres, python_venv, repo_root, stop_cluster};
use crate::server_process::{Server, free_port};
use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::time::Duration;

fn skipped(kind: ServerKind, protocol: Protocol, workload: Workload, note: String) -> Value {
    json!({
        "server": kind.server(), "store": kind.store(), "protocol": protocol.name(),
        "workload": workload.name(), "skipped": true, "note": note,
        "rps": null, "p50_ms": null, "p99_ms": null, "max_ms": null, "errors": null,
    })
}

pub async fn matrix(args: &Args, out: &mut Output) -> anyhow::Result<()> {
    let root = args.root.clone().unwrap_or_else(repo_root);
    let tnstore = args
        .tnstore
        .clone()
        .unwrap_or_else(|| root.join("target/release/tnstore"));
    let servers: Vec<ServerKind> = if args.servers.is_empty() {
        ServerKind::ALL.to_vec()
    } else {
        args.servers.clone()
    };
    let workloads: Vec<Workload> = if args.workloads.is_empty() {
        Workload::ALL.to_vec()
    } else {
        args.workloads.clone()
    };
    let wants_tn = servers.iter().any(|s| s.server() == "tnstore");
    if wants_tn && !tnstore.exists() {
        bail!(
            "{} not found: build it with `cargo build --release -p tnstore` (or pass --tnstore)",
            tnstore.display()
        );
    }
    let python = if servers.iter().any(|s| s.server() == "a2a-sdk") {
        Some(match &args.python {
            Some(p) => p.clone(),
            None => python_venv(&root)?,
        })
    } else {
        None
    };
    let pg = if servers.contains(&ServerKind::TnPostgres) {
        Some(postgres(args, &root))
    } else {
        None
    };
    // Stores under target/, like the other benchmarks' (same disk as the build).
    let tmp = tempfile::Builder::new()
        .prefix("serve-load-")
        .tempdir_in(root.join("target"))?;
    let mut n = 0;
    let runs = async {
        for &kind in &servers {
            let protocol = match kind.server() {
                "tnstore" => args.tnstore_protocol,
                _ => Protocol::V1_0,
            };
            for &workload in &workloads {
                n += 1;
                let dir = tmp.path().join(format!("run-{n}"));
                std::fs::create_dir_all(&dir)?;
                let command = match kind {
                    ServerKind::PyMemory | ServerKind::PySqlite => {
                        let mut c =
                            std::process::Command::new(python.as_ref().context("no python")?);
                        let store = if kind == ServerKind::PyMemory {
                            "memory".to_owned()
                        } else {
                            format!("sqlite:{}", dir.join("tasks.db").display())
                        };
                        c.arg(root.join("bench/python/sdk_echo_server.py")).args([
                            "--port",
                            &free_port()?.to_string(),
                            "--store",
                            &store,
                        ]);
                        c
                    }
                    _ => {
                        let selector = match kind {
                            ServerKind::TnMemory => "memory".to_owned(),
                            ServerKind::TnFile => {
                                format!("file:{}", dir.join("tasks").display())
                            }
                            ServerKind::TnWasm => {
                                format!("wasm:builtin?dir={}", dir.join("tasks").display())
                            }
                            _ => match pg.as_ref() {
                                Some(Ok(pg)) => {
                                    let joint = if pg.url.contains('?') { '&' } else { '?' };
                                    format!(
                                        "{}{joint}table=tn_serve_load_{}_{n}",
                                        pg.url,
                                        std::process::id()
                                    )
                                }
                                Some(Err(why)) => {
                                    out.emit(skipped(
                                        kind,
                                        protocol,
                                        workload,
                                        format!("no PostgreSQL: {why}"),
                                    ))?;
                                    continue;
                                }
                                None => unreachable!("postgres looked up when wanted"),
                            },
                        };
                        let mut c = std::process::Command::new(&tnstore);
                        c.args(["--store", &selector, "serve"]).args([
                            "--addr",
                            "127.0.0.1:0",
                            "--echo-delay-ms",
                            "0",
                        ]);
                        c
                    }
                };
                let file_backed = matches!(kind, ServerKind::TnFile | ServerKind::TnWasm);
                let stored_tasks = if file_backed { args.stored_tasks } else { 0 };
                if stored_tasks > 0 {
                    crate::stored_tasks::fill(&dir.join("tasks"), stored_tasks).await?;
                }
                let what = format!("{} over {}", kind.server(), kind.store());
                let server = match Server::start(command, dir.join("stderr.log"), &what).await {
                    Ok(server) => server,
                    Err(e) => {
                        out.emit(skipped(
                            kind,
                            protocol,
                            workload,
                            format!("server did not start: {e:#}"),
                        ))?;
                        continue;
                    }
                };
                if workload == Workload::Stream && !server.streaming {
                    server.stop();
                    out.emit(skipped(
                        kind,
                        protocol,
                        workload,
                        "not run: the agent card says capabilities.streaming is not true".into(),
                    ))?;
                    continue;
                }
                eprintln!(
                    "tn-serve-load: {what}, {} {}, {} connections, {} s + {} s warm-up",
                    protocol.name(),
                    workload.name(),
                    args.connections,
                    args.duration,
                    args.warmup
                );
                let spec = RunSpec {
                    label: format!("{} {}", kind.server(), kind.store()),
                    server: kind.server().into(),
                    store: kind.store().into(),
                    url: server.url.clone(),
                    workload,
                    protocol,
                    connections: args.connections,
                    duration: Duration::from_secs_f64(args.duration),
                    warmup: Duration::from_secs_f64(args.warmup),
                    poll_interval: Duration::from_millis(args.poll_interval_ms),
                    server_pid: Some(server.child.id()),
                };
                let record = run(spec).await;
                let stderr_note = server.stop();
                let mut record = match record {
                    Ok(r) => r,
                    Err(e) => skipped(kind, protocol, workload, format!("failed: {e:#}")),
                };
                if let Some(note) = stderr_note {
                    record["server_stderr"] = json!(note);
                }
                record["stored_tasks"] = json!(stored_tasks);
                out.emit(record)?;
            }
        }
        Ok(())
    };
    // Ctrl-C drops the runs, and with them any server running (`Server` kills on drop); the cluster, if
    // this process started one, is still stopped.
    let result: anyhow::Result<()> = tokio::select! {
        result = runs => result,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
    };
    if let Some(Ok(Postgres {
        started_cluster: Some(state),
        ..
    })) = &pg
    {
        stop_cluster(&root, state);
    }
    result
}

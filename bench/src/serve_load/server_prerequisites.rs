//! What `--matrix` needs before starting servers: the repository, a Python with the A2A SDK,
//! and a PostgreSQL server (given, or a throwaway cluster).

use crate::cli::Args;
use crate::outcome::truncate;
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Stdio;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn status(command: &mut std::process::Command, what: &str) -> anyhow::Result<()> {
    let status = command
        .status()
        .with_context(|| format!("cannot run {what}"))?;
    if !status.success() {
        bail!("{what} failed: {status}");
    }
    Ok(())
}

pub fn python_venv(root: &Path) -> anyhow::Result<PathBuf> {
    let venv = root.join("target/serve-load-venv");
    let python = venv.join("bin/python");
    let stamp = venv.join("requirements.txt");
    let requirements = root.join("bench/python/requirements.txt");
    let wanted = std::fs::read_to_string(&requirements)?;
    if python.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(&wanted) {
        return Ok(python);
    }
    eprintln!(
        "tn-serve-load: making {} from bench/python/requirements.txt",
        venv.display()
    );
    status(
        std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv),
        "python3 -m venv",
    )?;
    status(
        std::process::Command::new(venv.join("bin/pip"))
            .args(["install", "-q", "-r"])
            .arg(&requirements),
        "pip install -r bench/python/requirements.txt",
    )?;
    std::fs::write(&stamp, wanted)?;
    Ok(python)
}

/// A PostgreSQL server: given, or a throwaway cluster this process started (and stops).
pub struct Postgres {
    pub url: String,
    pub started_cluster: Option<PathBuf>,
}

pub fn postgres(args: &Args, root: &Path) -> Result<Postgres, String> {
    if let Some(url) = args
        .postgres
        .clone()
        .or_else(|| std::env::var("TOOLNEXUS_TEST_POSTGRES_URL").ok())
        .filter(|u| !u.is_empty())
    {
        return Ok(Postgres {
            url,
            started_cluster: None,
        });
    }
    // A cluster of our own (own state file): never one another process is using.
    let state = root.join("target/serve-load-pg.env");
    let output = std::process::Command::new(root.join("scripts/pg-cluster.sh"))
        .args(["start", "--durable"])
        .env("PG_CLUSTER_STATE", &state)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run scripts/pg-cluster.sh: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "scripts/pg-cluster.sh start failed: {}",
            truncate(String::from_utf8_lossy(&output.stderr).trim(), 300)
        ));
    }
    let url = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    Ok(Postgres {
        url,
        started_cluster: Some(state),
    })
}

pub fn stop_cluster(root: &Path, state: &Path) {
    let _ = std::process::Command::new(root.join("scripts/pg-cluster.sh"))
        .arg("stop")
        .env("PG_CLUSTER_STATE", state)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status();
}

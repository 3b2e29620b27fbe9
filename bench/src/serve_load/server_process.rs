//! A server process started for `--matrix`: its URL read from its first line of output, its
//! agent card fetched, killed when dropped.

use crate::http_client::{HttpConnection, Target, read_body};
use crate::outcome::truncate;
use anyhow::{Context, bail};
use serde_json::Value;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

/// A server this process started; killed when dropped (also when Ctrl-C drops the matrix).
pub struct Server {
    pub child: std::process::Child,
    pub url: String,
    pub streaming: bool,
    stderr_log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    pub async fn start(
        mut command: std::process::Command,
        stderr_log: PathBuf,
        what: &str,
    ) -> anyhow::Result<Server> {
        let log = std::fs::File::create(&stderr_log)?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start {what}"))?;
        let stdout = child.stdout.take().context("no stdout")?;
        // A thread reads the server's stdout: the first line (sent here), then the rest, so
        // the server never blocks on a full pipe.
        let (first_line, line) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = std::io::BufReader::new(stdout).lines();
            let _ = first_line.send(lines.next());
            for _ in lines {}
        });
        let line =
            tokio::task::spawn_blocking(move || line.recv_timeout(Duration::from_secs(60))).await?;
        let url = match line {
            Ok(Some(Ok(line))) => line
                .strip_prefix("listening on ")
                .and_then(|rest| rest.split_whitespace().next())
                .map(str::to_owned),
            _ => None,
        };
        let Some(url) = url else {
            let _ = child.kill();
            let _ = child.wait();
            let log = std::fs::read_to_string(&stderr_log).unwrap_or_default();
            bail!(
                "{what} did not print `listening on URL`; its stderr:\n{}",
                truncate(&log, 2000)
            );
        };
        let mut server = Server {
            child,
            url,
            streaming: false,
            stderr_log,
        };
        let target = Target::parse(&server.url)?;
        let card_path = format!("{}.well-known/agent-card.json", target.path);
        let response = HttpConnection::new(target)
            .request(hyper::Method::GET, &card_path, &[], String::new())
            .await
            .map_err(|f| anyhow::anyhow!("{what}: GET {card_path}: {}", f.detail))?;
        let status = response.status();
        let body = read_body(response.into_body())
            .await
            .map_err(|f| anyhow::anyhow!("{what}: GET {card_path}: {}", f.detail))?;
        if status != hyper::StatusCode::OK {
            bail!("{what}: GET {card_path}: HTTP {status}");
        }
        let card: Value = serde_json::from_slice(&body)
            .with_context(|| format!("{what}: the agent card is not JSON"))?;
        server.streaming = card["capabilities"]["streaming"] == true;
        Ok(server)
    }

    /// Kills the server; a note on what it wrote to stderr, if anything.
    pub fn stop(self) -> Option<String> {
        let path = self.stderr_log.clone();
        drop(self);
        let log = std::fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
        (!lines.is_empty()).then(|| {
            format!(
                "server stderr ({} lines, first: {})",
                lines.len(),
                truncate(lines[0], 200)
            )
        })
    }
}

pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

//! Load on an A2A server over HTTP: N keep-alive connections, each sending one request after
//! another for D seconds after a warm-up; requests per second, latency percentiles and every
//! error, by kind.
//!
//! ```text
//! # one workload against a running server
//! cargo run --release -p toolnexus-bench --bin tn-serve-load -- \
//!     --url http://127.0.0.1:8081/ --workload send [--protocol 1.0|0.3] \
//!     [--connections 16] [--duration 10] [--warmup 2]
//! # every workload against every server, each started (and killed) by this process
//! cargo build --release -p tnstore
//! cargo run --release -p toolnexus-bench --bin tn-serve-load -- --matrix
//! ```
//!
//! Workloads (each connection is one task running them back to back):
//!
//! - `send`: one message, answered once its Task is `completed`. With `--protocol 1.0`
//!   (`A2A-Version: 1.0`) that is one blocking `SendMessage` (`returnImmediately: false`) whose
//!   result must be `{"task": …}` in `TASK_STATE_COMPLETED` with the echoed "reply" artifact.
//!   With `--protocol 0.3` it is `message/send` and, if the Task it answers is not yet
//!   `completed`, `tasks/get` of it again and again until it is (no pause between polls by
//!   default): the whole exchange is one logical request, timed and counted as one, and the
//!   GetTask calls it took are reported (`gets_per_send`).
//! - `get`: GetTask (`tasks/get`) of a Task created, one per connection, before the warm-up.
//! - `mixed`: on each connection, one `send` then four `get`s of the Task it just sent, over and
//!   over; latencies are reported for all requests and per operation.
//! - `stream`: `SendStreamingMessage` (`message/stream`) answered as `text/event-stream`, read to
//!   the end: every `data:` line must be a JSON-RPC response to this request whose result is one
//!   event (`task`, `statusUpdate`, `artifactUpdate`; 0.3: `kind` of `task`, `status-update`,
//!   `artifact-update`), the "reply" artifact must come and the last status must be completed.
//!
//! An error is anything but HTTP 200 with a well-formed answer: a transport failure, another
//! status, a JSON-RPC error, a result of the wrong shape or state. Errors are counted by kind
//! and reported (with a few samples); their latencies are left out of the percentiles. Errors
//! during the warm-up are reported separately. A request still running when the time is up is
//! finished and counted; requests/s divides by the time until the last one finished.
//!
//! Prints one JSON object per run on stdout and a table of all runs on stderr.
//!
//! `--matrix` runs `send`, `get`, `mixed` and `stream` against, in turn: `tnstore serve
//! --echo-delay-ms 0` (`target/release/tnstore`, `--tnstore`) over `memory`, `file:<tmp>`,
//! `wasm:builtin?dir=<tmp>` and PostgreSQL, and `bench/python/sdk_echo_server.py` (the A2A
//! Python SDK's server, a venv made from `bench/python/requirements.txt` under
//! `target/serve-load-venv` when `--python` is not given) over its memory and SQLite stores:
//! a fresh server, store and port per workload, killed after it. PostgreSQL is the server in
//! `--postgres` or `TOOLNEXUS_TEST_POSTGRES_URL`, else a throwaway durable cluster from
//! `scripts/pg-cluster.sh start --durable` (its own state file, stopped at the end), else
//! skipped with a note; each run uses a table of its own (`tn_serve_load_<pid>_<n>`, left in
//! a database that was given). `stream` is skipped, with a note, on a server whose agent card
//! says `capabilities.streaming` is not true.

use anyhow::{Context, bail};
use clap::{Parser, ValueEnum};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(name = "tn-serve-load", about = "Load on an A2A server over HTTP")]
struct Args {
    /// The server's JSON-RPC URL (without --matrix).
    #[arg(long, required_unless_present = "matrix")]
    url: Option<String>,
    /// What each connection does (without --matrix; --matrix runs them all).
    #[arg(long, value_enum, default_value_t = Workload::Send)]
    workload: Workload,
    /// The JSON-RPC dialect: A2A 1.0 (`SendMessage`, `A2A-Version: 1.0`) or 0.3
    /// (`message/send`, then `tasks/get` until the Task is completed).
    #[arg(long, value_enum, default_value_t = Protocol::V1_0)]
    protocol: Protocol,
    /// Concurrent keep-alive connections.
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// Seconds measured, after the warm-up.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds of load before measuring.
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Milliseconds between two polls of a Task that is not completed yet (0.3 `send`).
    #[arg(long, default_value_t = 0)]
    poll_interval_ms: u64,
    /// The name of the target in the output (without --matrix).
    #[arg(long, default_value = "server")]
    label: String,
    /// Start each server and run every workload against it (see the module documentation).
    #[arg(long)]
    matrix: bool,
    /// --matrix: the `tnstore` binary.
    #[arg(long)]
    tnstore: Option<PathBuf>,
    /// --matrix: the dialect spoken to `tnstore serve` (0.3 for a server from before A2A 1.0).
    #[arg(long, value_enum, default_value_t = Protocol::V1_0)]
    tnstore_protocol: Protocol,
    /// --matrix: a Python with bench/python/requirements.txt installed (default: a venv under
    /// target/serve-load-venv, made if missing).
    #[arg(long)]
    python: Option<PathBuf>,
    /// --matrix: a PostgreSQL server for `tnstore --store postgres://…` (default
    /// TOOLNEXUS_TEST_POSTGRES_URL, else a throwaway cluster from scripts/pg-cluster.sh).
    #[arg(long)]
    postgres: Option<String>,
    /// --matrix: only these servers (comma-separated).
    #[arg(long, value_delimiter = ',', value_enum)]
    servers: Vec<ServerKind>,
    /// --matrix: only these workloads (comma-separated).
    #[arg(long, value_delimiter = ',', value_enum)]
    workloads: Vec<Workload>,
    /// --matrix: the repository (scripts/, bench/python/, target/); default the one this binary
    /// was built from.
    #[arg(long)]
    root: Option<PathBuf>,
    /// --matrix: also write the JSON lines to this file.
    #[arg(long)]
    json_out: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
enum Workload {
    Send,
    Get,
    Mixed,
    Stream,
}

impl Workload {
    const ALL: [Workload; 4] = [
        Workload::Send,
        Workload::Get,
        Workload::Mixed,
        Workload::Stream,
    ];
    fn name(self) -> &'static str {
        match self {
            Workload::Send => "send",
            Workload::Get => "get",
            Workload::Mixed => "mixed",
            Workload::Stream => "stream",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
enum Protocol {
    #[value(name = "1.0")]
    V1_0,
    #[value(name = "0.3")]
    V0_3,
}

impl Protocol {
    fn name(self) -> &'static str {
        match self {
            Protocol::V1_0 => "1.0",
            Protocol::V0_3 => "0.3",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
enum ServerKind {
    TnMemory,
    TnFile,
    TnWasm,
    TnPostgres,
    PyMemory,
    PySqlite,
}

impl ServerKind {
    const ALL: [ServerKind; 6] = [
        ServerKind::TnMemory,
        ServerKind::TnFile,
        ServerKind::TnWasm,
        ServerKind::TnPostgres,
        ServerKind::PyMemory,
        ServerKind::PySqlite,
    ];
    fn server(self) -> &'static str {
        match self {
            ServerKind::TnMemory
            | ServerKind::TnFile
            | ServerKind::TnWasm
            | ServerKind::TnPostgres => "tnstore",
            ServerKind::PyMemory | ServerKind::PySqlite => "a2a-sdk",
        }
    }
    fn store(self) -> &'static str {
        match self {
            ServerKind::TnMemory | ServerKind::PyMemory => "memory",
            ServerKind::TnFile => "file",
            ServerKind::TnWasm => "wasm",
            ServerKind::TnPostgres => "postgres",
            ServerKind::PySqlite => "sqlite",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// One logical request.

/// Why a logical request failed: a short kind (counted) and the full text (sampled).
struct Failure {
    kind: String,
    detail: String,
}

fn fail(kind: impl Into<String>, detail: impl Into<String>) -> Failure {
    Failure {
        kind: kind.into(),
        detail: detail.into(),
    }
}

/// A wrong answer: `kind` names what was wrong (a few fixed kinds, counted), `detail` says how.
fn shape(kind: &str, detail: impl Into<String>) -> Failure {
    fail(format!("shape: {kind}"), detail)
}

/// What a successful logical request took besides its time.
#[derive(Default)]
struct Done {
    task_id: Option<String>,
    /// GetTask calls made to see a sent Task completed (0.3 `send`).
    polls: u64,
    /// Events read from a stream.
    events: u64,
}

/// `http://host:port/path` split for a raw HTTP/1.1 connection.
#[derive(Clone)]
struct Target {
    /// `host:port`, to connect to and for the Host header.
    authority: String,
    path: String,
}

impl Target {
    fn parse(url: &str) -> anyhow::Result<Target> {
        let Some(rest) = url.strip_prefix("http://") else {
            bail!("only http:// URLs are supported: {url}");
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let authority = if authority.contains(':') {
            authority.to_owned()
        } else {
            format!("{authority}:80")
        };
        Ok(Target {
            authority,
            path: path.to_owned(),
        })
    }
}

/// One kept-alive HTTP/1.1 connection (hyper's client connection, no pool): a request at a
/// time, reconnecting (and counting it) only when the server closed it.
struct Http {
    target: Target,
    sender: Option<hyper::client::conn::http1::SendRequest<String>>,
    connects: u64,
}

impl Http {
    fn new(target: Target) -> Http {
        Http {
            target,
            sender: None,
            connects: 0,
        }
    }

    /// A fresh connection to the target: its request sender.
    async fn connect(
        &mut self,
    ) -> Result<hyper::client::conn::http1::SendRequest<String>, Failure> {
        let what = |e: &dyn std::fmt::Display| {
            fail(
                "transport",
                format!("connect {}: {e}", self.target.authority),
            )
        };
        let stream = tokio::net::TcpStream::connect(&self.target.authority)
            .await
            .map_err(|e| what(&e))?;
        stream.set_nodelay(true).map_err(|e| what(&e))?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| what(&e))?;
        tokio::spawn(connection);
        self.connects += 1;
        Ok(sender)
    }

    async fn request(
        &mut self,
        method: hyper::Method,
        path: &str,
        headers: &[(&str, &str)],
        body: String,
    ) -> Result<hyper::Response<hyper::body::Incoming>, Failure> {
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", &self.target.authority);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(body)
            .map_err(|e| fail("request", e.to_string()))?;
        // The kept connection if it can take another request, else a new one.
        let mut sender = match self.sender.take() {
            Some(mut kept) => match kept.ready().await {
                Ok(()) => kept,
                Err(_) => self.connect().await?,
            },
            None => self.connect().await?,
        };
        let answer = tokio::time::timeout(Duration::from_secs(30), sender.send_request(request))
            .await
            .map_err(|_| fail("timeout", format!("no answer in 30 s from {path}")));
        self.sender = Some(sender);
        answer?.map_err(|e| fail("transport", format!("{path}: {e}")))
    }
}

/// The next data of a body; `None` at its end.
async fn next_chunk(
    body: &mut hyper::body::Incoming,
) -> Result<Option<hyper::body::Bytes>, hyper::Error> {
    use hyper::body::Body;
    loop {
        let frame = std::future::poll_fn(|cx| std::pin::Pin::new(&mut *body).poll_frame(cx)).await;
        match frame {
            None => return Ok(None),
            Some(Err(e)) => return Err(e),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    return Ok(Some(data));
                }
            }
        }
    }
}

/// A whole body, read within 30 s.
async fn read_body(mut body: hyper::body::Incoming) -> Result<Vec<u8>, Failure> {
    let read = async {
        let mut out = Vec::new();
        while let Some(chunk) = next_chunk(&mut body).await? {
            out.extend_from_slice(&chunk);
        }
        Ok::<_, hyper::Error>(out)
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .map_err(|_| fail("timeout", "body not read in 30 s"))?
        .map_err(|e| fail("transport", format!("reading the body: {e}")))
}

struct Conn {
    http: Http,
    protocol: Protocol,
    poll_interval: Duration,
    next_id: u64,
}

fn truncate(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_owned();
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

impl Conn {
    fn new(target: Target, protocol: Protocol, poll_interval: Duration) -> Conn {
        Conn {
            http: Http::new(target),
            protocol,
            poll_interval,
            next_id: 0,
        }
    }

    /// POSTs a JSON-RPC request; its id and the response (head; body unread).
    async fn post(
        &mut self,
        method: &str,
        params: Value,
        accept: &str,
    ) -> Result<(u64, hyper::Response<hyper::body::Incoming>), Failure> {
        self.next_id += 1;
        let id = self.next_id;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut headers = vec![("content-type", "application/json"), ("accept", accept)];
        if self.protocol == Protocol::V1_0 {
            headers.push(("A2A-Version", "1.0"));
        }
        let path = self.http.target.path.clone();
        let response = self
            .http
            .request(hyper::Method::POST, &path, &headers, body.to_string())
            .await
            .map_err(|f| Failure {
                detail: format!("{method}: {}", f.detail),
                ..f
            })?;
        Ok((id, response))
    }

    /// A unary JSON-RPC call: its `result`, or the failure.
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, Failure> {
        let (id, response) = self.post(method, params, "application/json").await?;
        let status = response.status();
        let body = read_body(response.into_body()).await.map_err(|f| Failure {
            detail: format!("{method}: {}", f.detail),
            ..f
        })?;
        if status != hyper::StatusCode::OK {
            return Err(fail(
                format!("http {}", status.as_u16()),
                format!(
                    "{method}: HTTP {status}: {}",
                    truncate(&String::from_utf8_lossy(&body), 300)
                ),
            ));
        }
        let value: Value = serde_json::from_slice(&body).map_err(|e| {
            shape(
                "answer not JSON",
                format!(
                    "{method}: answer is not JSON ({e}): {}",
                    truncate(&String::from_utf8_lossy(&body), 200)
                ),
            )
        })?;
        rpc_result(method, id, value)
    }

    async fn send(&mut self) -> Result<Done, Failure> {
        let message_id = uuid::Uuid::new_v4().to_string();
        match self.protocol {
            Protocol::V1_0 => {
                let params = json!({
                    "message": {"role": "ROLE_USER", "messageId": message_id,
                                "parts": [{"text": "hello"}]},
                    "configuration": {"returnImmediately": false},
                });
                let result = self.call("SendMessage", params).await?;
                let Some(task) = result.get("task") else {
                    return Err(shape(
                        "SendMessage result not {task}",
                        format!(
                            "SendMessage: result is not {{\"task\": …}}: {}",
                            truncate(&result.to_string(), 200)
                        ),
                    ));
                };
                let id = task_id(task, "SendMessage")?;
                let state = &task["status"]["state"];
                if state != "TASK_STATE_COMPLETED" {
                    return Err(shape(
                        "SendMessage answered before completed",
                        format!(
                            "SendMessage (returnImmediately false) answered state {state}, not TASK_STATE_COMPLETED"
                        ),
                    ));
                }
                check_reply(task, "SendMessage")?;
                Ok(Done {
                    task_id: Some(id),
                    ..Done::default()
                })
            }
            Protocol::V0_3 => {
                let params = json!({
                    "message": {"role": "user", "messageId": message_id, "kind": "message",
                                "parts": [{"kind": "text", "text": "hello"}]},
                });
                let mut task = self.call("message/send", params).await?;
                if task["kind"] != "task" {
                    return Err(shape(
                        "message/send result not a Task",
                        format!(
                            "message/send: result is not a Task: {}",
                            truncate(&task.to_string(), 200)
                        ),
                    ));
                }
                let id = task_id(&task, "message/send")?;
                let mut polls = 0;
                let started = Instant::now();
                loop {
                    match task["status"]["state"].as_str() {
                        Some("completed") => break,
                        Some("submitted" | "working") => {}
                        other => {
                            return Err(shape(
                                "Task not completed",
                                format!("Task {id} is in state {other:?}, not completed"),
                            ));
                        }
                    }
                    if started.elapsed() > Duration::from_secs(30) {
                        return Err(fail(
                            "timeout",
                            format!("Task {id} not completed after 30 s of polling"),
                        ));
                    }
                    if !self.poll_interval.is_zero() {
                        tokio::time::sleep(self.poll_interval).await;
                    }
                    task = self.call("tasks/get", json!({"id": id})).await?;
                    polls += 1;
                    if task_id(&task, "tasks/get")? != id {
                        return Err(shape("another Task", "tasks/get answered another Task"));
                    }
                }
                check_reply(&task, "tasks/get")?;
                Ok(Done {
                    task_id: Some(id),
                    polls,
                    events: 0,
                })
            }
        }
    }

    async fn get(&mut self, id: &str) -> Result<Done, Failure> {
        let (method, completed) = match self.protocol {
            Protocol::V1_0 => ("GetTask", "TASK_STATE_COMPLETED"),
            Protocol::V0_3 => ("tasks/get", "completed"),
        };
        let task = self.call(method, json!({"id": id})).await?;
        if task_id(&task, method)? != id {
            return Err(shape(
                "another Task",
                format!("{method} answered another Task"),
            ));
        }
        if task["status"]["state"] != completed {
            return Err(shape(
                "Task not completed",
                format!(
                    "{method}: Task in state {}, not {completed}",
                    task["status"]["state"]
                ),
            ));
        }
        Ok(Done::default())
    }

    async fn stream(&mut self) -> Result<Done, Failure> {
        let message_id = uuid::Uuid::new_v4().to_string();
        let (method, params) = match self.protocol {
            Protocol::V1_0 => (
                "SendStreamingMessage",
                json!({"message": {"role": "ROLE_USER", "messageId": message_id,
                                   "parts": [{"text": "hello"}]}}),
            ),
            Protocol::V0_3 => (
                "message/stream",
                json!({"message": {"role": "user", "messageId": message_id, "kind": "message",
                                   "parts": [{"kind": "text", "text": "hello"}]}}),
            ),
        };
        let (id, response) = self.post(method, params, "text/event-stream").await?;
        let status = response.status();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let mut body = response.into_body();
        if status != hyper::StatusCode::OK || !content_type.starts_with("text/event-stream") {
            let body = read_body(body).await.unwrap_or_default();
            let body = String::from_utf8_lossy(&body);
            // A JSON-RPC error answered as plain JSON is a JSON-RPC error, not a shape error.
            if status == hyper::StatusCode::OK
                && let Ok(value) = serde_json::from_str::<Value>(&body)
                && value.get("error").is_some()
            {
                rpc_result(method, id, value)?;
            }
            return Err(fail(
                if status == hyper::StatusCode::OK {
                    "shape: not text/event-stream".to_owned()
                } else {
                    format!("http {}", status.as_u16())
                },
                format!(
                    "{method}: HTTP {status}, content-type {content_type:?}: {}",
                    truncate(&body, 300)
                ),
            ));
        }
        let mut buffer: Vec<u8> = Vec::new();
        let mut check = StreamCheck::new(self.protocol, method, id);
        loop {
            let chunk = tokio::time::timeout(Duration::from_secs(30), next_chunk(&mut body))
                .await
                .map_err(|_| fail("timeout", format!("{method}: no event for 30 s")))?
                .map_err(|e| fail("transport", format!("{method}: reading the stream: {e}")))?;
            let Some(chunk) = chunk else { break };
            buffer.extend_from_slice(&chunk);
            // Whole lines only; an event ends at a blank line, but each `data:` line holds one
            // whole JSON-RPC response here, so lines suffice.
            while let Some(end) = buffer.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                check.line(&line)?;
            }
        }
        if !buffer.is_empty() {
            let rest = std::mem::take(&mut buffer);
            check.line(&rest)?;
        }
        check.finish()
    }
}

fn rpc_result(method: &str, id: u64, mut value: Value) -> Result<Value, Failure> {
    if let Some(error) = value.get("error") {
        let code = error["code"].as_i64().unwrap_or(0);
        return Err(fail(
            format!("rpc {code}"),
            format!(
                "{method}: JSON-RPC error {}",
                truncate(&error.to_string(), 300)
            ),
        ));
    }
    if value["id"] != json!(id) || value["jsonrpc"] != "2.0" {
        return Err(shape(
            "not a JSON-RPC response",
            format!(
                "{method}: not a JSON-RPC 2.0 response to id {id}: {}",
                truncate(&value.to_string(), 200)
            ),
        ));
    }
    match value.get_mut("result") {
        Some(result) => Ok(result.take()),
        None => Err(shape(
            "no result",
            format!("{method}: response has no result"),
        )),
    }
}

fn task_id(task: &Value, method: &str) -> Result<String, Failure> {
    match task["id"].as_str() {
        Some(id) if !id.is_empty() => Ok(id.to_owned()),
        _ => Err(shape(
            "no Task id",
            format!(
                "{method}: no Task id in {}",
                truncate(&task.to_string(), 200)
            ),
        )),
    }
}

/// The echo agent's answer: an artifact "reply" whose first part is the text sent.
fn check_reply(task: &Value, method: &str) -> Result<(), Failure> {
    let ok = task["artifacts"].as_array().is_some_and(|artifacts| {
        artifacts
            .iter()
            .any(|a| a["name"] == "reply" && a["parts"][0]["text"] == "hello")
    });
    if ok {
        Ok(())
    } else {
        Err(shape(
            "no reply artifact",
            format!("{method}: completed Task without the \"reply\" artifact echoing \"hello\""),
        ))
    }
}

/// Checks a stream's events one `data:` line at a time.
struct StreamCheck<'a> {
    protocol: Protocol,
    method: &'a str,
    id: u64,
    events: u64,
    saw_reply: bool,
    last_state: Option<String>,
}

impl<'a> StreamCheck<'a> {
    fn new(protocol: Protocol, method: &'a str, id: u64) -> Self {
        StreamCheck {
            protocol,
            method,
            id,
            events: 0,
            saw_reply: false,
            last_state: None,
        }
    }

    fn line(&mut self, line: &[u8]) -> Result<(), Failure> {
        let line = String::from_utf8_lossy(line);
        let line = line.trim_end_matches(['\r', '\n']);
        let Some(data) = line.strip_prefix("data:") else {
            // Blank lines end events; comments (`:`), `event:`, `id:` and `retry:` carry
            // nothing checked here.
            return Ok(());
        };
        let value: Value = serde_json::from_str(data.trim_start()).map_err(|e| {
            shape(
                "event not JSON",
                format!(
                    "{}: event data is not JSON ({e}): {}",
                    self.method,
                    truncate(data, 200)
                ),
            )
        })?;
        let result = rpc_result(self.method, self.id, value)?;
        self.events += 1;
        let (kind, event) = match self.protocol {
            Protocol::V1_0 => {
                let keys: Vec<&str> = result
                    .as_object()
                    .map(|o| o.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                match keys.as_slice() {
                    [k @ ("task" | "statusUpdate" | "artifactUpdate" | "message")] => {
                        (k.to_string(), result[*k].clone())
                    }
                    _ => {
                        return Err(shape(
                            "event not task/statusUpdate/artifactUpdate",
                            format!(
                                "{}: event result is not one of task, statusUpdate, artifactUpdate: {}",
                                self.method,
                                truncate(&result.to_string(), 200)
                            ),
                        ));
                    }
                }
            }
            Protocol::V0_3 => {
                let kind = match result["kind"].as_str() {
                    Some("task") => "task",
                    Some("status-update") => "statusUpdate",
                    Some("artifact-update") => "artifactUpdate",
                    Some("message") => "message",
                    _ => {
                        return Err(shape(
                            "event of unknown kind",
                            format!(
                                "{}: event without a known kind: {}",
                                self.method,
                                truncate(&result.to_string(), 200)
                            ),
                        ));
                    }
                };
                (kind.to_owned(), result)
            }
        };
        match kind.as_str() {
            "task" | "statusUpdate" => {
                if let Some(state) = event["status"]["state"].as_str() {
                    self.last_state = Some(state.to_owned());
                }
                if kind == "task" && check_reply(&event, self.method).is_ok() {
                    self.saw_reply = true;
                }
            }
            "artifactUpdate" => {
                let artifact = &event["artifact"];
                if artifact["name"] == "reply" && artifact["parts"][0]["text"] == "hello" {
                    self.saw_reply = true;
                }
            }
            _ => {
                return Err(shape(
                    "Message instead of Task",
                    format!("{}: the agent answered a Message, not a Task", self.method),
                ));
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<Done, Failure> {
        let completed = match self.protocol {
            Protocol::V1_0 => "TASK_STATE_COMPLETED",
            Protocol::V0_3 => "completed",
        };
        if self.events == 0 {
            return Err(shape(
                "empty stream",
                format!("{}: empty stream", self.method),
            ));
        }
        if self.last_state.as_deref() != Some(completed) {
            return Err(shape(
                "stream not completed",
                format!(
                    "{}: stream ended in state {:?}, not {completed}",
                    self.method, self.last_state
                ),
            ));
        }
        if !self.saw_reply {
            return Err(shape(
                "stream without reply artifact",
                format!("{}: stream without the \"reply\" artifact", self.method),
            ));
        }
        Ok(Done {
            events: self.events,
            ..Done::default()
        })
    }
}

// ---------------------------------------------------------------------------------------------
// One run: N connections, warm-up, measurement.

struct RunSpec {
    label: String,
    server: String,
    store: String,
    url: String,
    workload: Workload,
    protocol: Protocol,
    connections: usize,
    duration: Duration,
    warmup: Duration,
    poll_interval: Duration,
    /// The server's process, when this process started it (for its CPU time).
    server_pid: Option<u32>,
}

#[derive(Default)]
struct Tally {
    /// Latencies in microseconds of successful requests, all and per operation.
    all: Vec<u64>,
    send: Vec<u64>,
    get: Vec<u64>,
    errors: BTreeMap<String, u64>,
    samples: Vec<String>,
    warmup_errors: BTreeMap<String, u64>,
    polls: u64,
    sends: u64,
    events: u64,
    streams: u64,
    /// TCP connections opened (one per connection unless the server closed some).
    connects: u64,
    finished: Option<Instant>,
}

impl Tally {
    fn error(&mut self, measuring: bool, failure: Failure) {
        let map = if measuring {
            &mut self.errors
        } else {
            &mut self.warmup_errors
        };
        *map.entry(failure.kind).or_default() += 1;
        if self.samples.len() < 3 {
            let phase = if measuring { "" } else { "(warm-up) " };
            self.samples.push(format!("{phase}{}", failure.detail));
        }
    }

    fn merge(&mut self, other: Tally) {
        self.all.extend(other.all);
        self.send.extend(other.send);
        self.get.extend(other.get);
        for (k, v) in other.errors {
            *self.errors.entry(k).or_default() += v;
        }
        for (k, v) in other.warmup_errors {
            *self.warmup_errors.entry(k).or_default() += v;
        }
        for s in other.samples {
            if self.samples.len() < 3 {
                self.samples.push(s);
            }
        }
        self.polls += other.polls;
        self.sends += other.sends;
        self.events += other.events;
        self.streams += other.streams;
        self.connects += other.connects;
        self.finished = self.finished.max(other.finished);
    }
}

#[derive(Clone, Copy)]
enum Op {
    Send,
    Get,
    Stream,
}

async fn connection(
    spec: Arc<RunSpec>,
    mut conn: Conn,
    seed_task: Option<String>,
    measure_from: Instant,
    end: Instant,
) -> Tally {
    let mut tally = Tally::default();
    let mut latest = seed_task;
    let mut step: u64 = 0;
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        let measuring = now >= measure_from;
        let op = match spec.workload {
            Workload::Send => Op::Send,
            Workload::Get => Op::Get,
            Workload::Stream => Op::Stream,
            Workload::Mixed if step.is_multiple_of(5) || latest.is_none() => Op::Send,
            Workload::Mixed => Op::Get,
        };
        step += 1;
        let started = Instant::now();
        let outcome = match op {
            Op::Send => conn.send().await,
            Op::Get => match latest.as_deref() {
                Some(id) => conn.get(id).await,
                None => Err(fail("no task", "no Task to get")),
            },
            Op::Stream => conn.stream().await,
        };
        let micros = started.elapsed().as_micros() as u64;
        match outcome {
            Ok(done) => {
                if let (Op::Send, Some(id)) = (op, done.task_id)
                    && spec.workload == Workload::Mixed
                {
                    latest = Some(id);
                }
                if measuring {
                    tally.all.push(micros);
                    match op {
                        Op::Send => {
                            tally.send.push(micros);
                            tally.sends += 1;
                            tally.polls += done.polls;
                        }
                        Op::Get => tally.get.push(micros),
                        Op::Stream => {
                            tally.streams += 1;
                            tally.events += done.events;
                        }
                    }
                }
            }
            Err(failure) => {
                let transport = failure.kind == "transport";
                tally.error(measuring, failure);
                if transport {
                    // Do not spin on a refused connection.
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        }
    }
    tally.finished = Some(Instant::now());
    tally.connects = conn.http.connects;
    tally
}

/// CPU time so far, in clock ticks (Linux `/proc`): the whole machine's busy time, this
/// process's, and the server's when its pid is known.
#[derive(Clone, Copy, Default)]
struct Cpu {
    machine: u64,
    client: u64,
    server: u64,
}

impl Cpu {
    fn now(server: Option<u32>) -> Option<Cpu> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let fields: Vec<u64> = stat
            .lines()
            .next()?
            .split_whitespace()
            .skip(1)
            .filter_map(|f| f.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
        let machine = fields.iter().take(8).sum::<u64>()
            - fields.get(3).copied().unwrap_or(0)
            - fields.get(4).copied().unwrap_or(0);
        let process = |path: &str| -> Option<u64> {
            let stat = std::fs::read_to_string(path).ok()?;
            // Fields after the `(comm)`: utime and stime are the 12th and 13th.
            let rest = &stat[stat.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        };
        Some(Cpu {
            machine,
            client: process("/proc/self/stat")?,
            server: server
                .and_then(|pid| process(&format!("/proc/{pid}/stat")))
                .unwrap_or(0),
        })
    }

    /// CPU seconds between two readings: client, server, and everything else on the machine
    /// (other work there makes the figures worth little; for `tnstore` over PostgreSQL the
    /// database server is in "other").
    fn report(before: Option<Cpu>, after: Option<Cpu>, server_known: bool) -> Value {
        let (Some(b), Some(a)) = (before, after) else {
            return Value::Null;
        };
        let seconds = |ticks: u64| (ticks as f64 / 100.0 * 10.0).round() / 10.0;
        let machine = a.machine.saturating_sub(b.machine);
        let client = a.client.saturating_sub(b.client);
        let server = a.server.saturating_sub(b.server);
        let mut out = json!({
            "machine": seconds(machine),
            "client": seconds(client),
            "other": seconds(machine.saturating_sub(client + server)),
        });
        if server_known {
            out["server"] = json!(seconds(server));
        }
        out
    }
}

fn percentile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    // Nearest rank.
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64 / 1000.0
}

fn ms(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 100.0).round() / 100.0)
    } else {
        Value::Null
    }
}

fn latency_summary(mut samples: Vec<u64>, seconds: f64) -> Value {
    samples.sort_unstable();
    json!({
        "requests": samples.len(),
        "rps": (samples.len() as f64 / seconds).round(),
        "p50_ms": ms(percentile(&samples, 0.50)),
        "p99_ms": ms(percentile(&samples, 0.99)),
        "max_ms": ms(samples.last().map_or(f64::NAN, |&m| m as f64 / 1000.0)),
    })
}

async fn run(spec: RunSpec) -> anyhow::Result<Value> {
    let spec = Arc::new(spec);
    let target = Target::parse(&spec.url)?;
    let mut conns = Vec::with_capacity(spec.connections);
    let mut seeds = Vec::with_capacity(spec.connections);
    for _ in 0..spec.connections {
        let mut conn = Conn::new(target.clone(), spec.protocol, spec.poll_interval);
        // `get` and `mixed` read a Task made on this connection before the warm-up.
        let seed = if matches!(spec.workload, Workload::Get | Workload::Mixed) {
            match conn.send().await {
                Ok(done) => done.task_id,
                Err(f) => bail!("cannot create the Task to get: {}", f.detail),
            }
        } else {
            None
        };
        conns.push(conn);
        seeds.push(seed);
    }
    let start = Instant::now();
    let measure_from = start + spec.warmup;
    let end = measure_from + spec.duration;
    let handles: Vec<_> = conns
        .into_iter()
        .zip(seeds)
        .map(|(conn, seed)| {
            tokio::spawn(connection(Arc::clone(&spec), conn, seed, measure_from, end))
        })
        .collect();
    // CPU use over the measured window only (the warm-up left out).
    tokio::time::sleep_until(measure_from.into()).await;
    let cpu_before = Cpu::now(spec.server_pid);
    let mut tally = Tally::default();
    for handle in handles {
        tally.merge(handle.await?);
    }
    let seconds = tally
        .finished
        .map_or(spec.duration, |f| f.saturating_duration_since(measure_from))
        .as_secs_f64();
    let errors: u64 = tally.errors.values().sum();
    let warmup_errors: u64 = tally.warmup_errors.values().sum();
    let mut record = json!({
        "label": spec.label,
        "server": spec.server,
        "store": spec.store,
        "url": spec.url,
        "protocol": spec.protocol.name(),
        "workload": spec.workload.name(),
        "connections": spec.connections,
        "warmup_s": spec.warmup.as_secs_f64(),
        "measured_s": (seconds * 1000.0).round() / 1000.0,
        "unix_time": std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        "cores": std::thread::available_parallelism().map_or(0, usize::from),
        "cpu_s": Cpu::report(cpu_before, Cpu::now(spec.server_pid), spec.server_pid.is_some()),
    });
    let summary = latency_summary(std::mem::take(&mut tally.all), seconds);
    for (k, v) in summary.as_object().into_iter().flatten() {
        record[k] = v.clone();
    }
    record["errors"] = json!(errors);
    // Connections the server closed and the client opened again (0 with keep-alive honoured).
    record["reconnects"] = json!(tally.connects.saturating_sub(spec.connections as u64));
    record["error_kinds"] = json!(tally.errors);
    record["warmup_errors"] = json!(warmup_errors);
    if warmup_errors > 0 {
        record["warmup_error_kinds"] = json!(tally.warmup_errors);
    }
    if !tally.samples.is_empty() {
        record["error_samples"] = json!(tally.samples);
    }
    if spec.workload == Workload::Mixed {
        record["by_op"] = json!({
            "send": latency_summary(std::mem::take(&mut tally.send), seconds),
            "get": latency_summary(std::mem::take(&mut tally.get), seconds),
        });
    }
    if spec.protocol == Protocol::V0_3 && tally.sends > 0 {
        // How many tasks/get calls a 0.3 send needed to see its Task completed.
        record["gets_per_send"] =
            json!((tally.polls as f64 / tally.sends as f64 * 100.0).round() / 100.0);
    }
    if tally.streams > 0 {
        record["events_per_stream"] =
            json!((tally.events as f64 / tally.streams as f64 * 100.0).round() / 100.0);
    }
    Ok(record)
}

// ---------------------------------------------------------------------------------------------
// Output.

fn table(rows: &[Value]) -> String {
    let mut out = String::from(
        "| server | store | protocol | workload | req/s | p50 ms | p99 ms | max ms | errors | note |\n\
         |---|---|---|---|---:|---:|---:|---:|---:|---|\n",
    );
    let num = |v: &Value| match v {
        Value::Null => "-".to_owned(),
        v => v.to_string(),
    };
    for r in rows {
        let mut note = r["note"].as_str().unwrap_or("").to_owned();
        if let Some(g) = r.get("gets_per_send") {
            note = format!("{note}{}{g} tasks/get per send", sep(&note));
        }
        if let Some(by) = r.get("by_op") {
            note = format!(
                "{note}{}send p50 {} ms, get p50 {} ms",
                sep(&note),
                num(&by["send"]["p50_ms"]),
                num(&by["get"]["p50_ms"])
            );
        }
        let capacity = r["cores"].as_f64().unwrap_or(1.0) * r["measured_s"].as_f64().unwrap_or(0.0);
        if let Some(other) = r["cpu_s"]["other"].as_f64()
            && other > 0.1 * capacity
        {
            note = format!(
                "{note}{}{other} CPU s used by other processes or kernel threads",
                sep(&note)
            );
        }
        if r["reconnects"].as_u64().unwrap_or(0) > 0 {
            note = format!("{note}{}{} reconnects", sep(&note), r["reconnects"]);
        }
        if r["warmup_errors"].as_u64().unwrap_or(0) > 0 {
            note = format!("{note}{}{} warm-up errors", sep(&note), r["warmup_errors"]);
        }
        if let Some(kinds) = r["error_kinds"].as_object().filter(|k| !k.is_empty()) {
            let kinds: Vec<String> = kinds.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            note = format!("{note}{}{}", sep(&note), kinds.join(", "));
        }
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r["server"].as_str().unwrap_or(""),
            r["store"].as_str().unwrap_or(""),
            r["protocol"].as_str().unwrap_or(""),
            r["workload"].as_str().unwrap_or(""),
            num(&r["rps"]),
            num(&r["p50_ms"]),
            num(&r["p99_ms"]),
            num(&r["max_ms"]),
            num(&r["errors"]),
            note,
        ));
    }
    out
}

fn sep(s: &str) -> &'static str {
    if s.is_empty() { "" } else { "; " }
}

struct Output {
    rows: Vec<Value>,
    file: Option<std::fs::File>,
}

impl Output {
    fn emit(&mut self, record: Value) -> anyhow::Result<()> {
        use std::io::Write;
        let line = record.to_string();
        println!("{line}");
        if let Some(file) = &mut self.file {
            writeln!(file, "{line}")?;
        }
        self.rows.push(record);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// --matrix: start each server, run each workload, kill it.

/// A server this process started; killed when dropped (also when Ctrl-C drops the matrix).
struct Server {
    child: std::process::Child,
    url: String,
    streaming: bool,
    stderr_log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    async fn start(
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
        let response = Http::new(target)
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
    fn stop(self) -> Option<String> {
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

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn repo_root() -> PathBuf {
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

fn python_venv(root: &Path) -> anyhow::Result<PathBuf> {
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
struct Postgres {
    url: String,
    started_cluster: Option<PathBuf>,
}

fn postgres(args: &Args, root: &Path) -> Result<Postgres, String> {
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

fn stop_cluster(root: &Path, state: &Path) {
    let _ = std::process::Command::new(root.join("scripts/pg-cluster.sh"))
        .arg("stop")
        .env("PG_CLUSTER_STATE", state)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status();
}

fn skipped(kind: ServerKind, protocol: Protocol, workload: Workload, note: String) -> Value {
    json!({
        "server": kind.server(), "store": kind.store(), "protocol": protocol.name(),
        "workload": workload.name(), "skipped": true, "note": note,
        "rps": null, "p50_ms": null, "p99_ms": null, "max_ms": null, "errors": null,
    })
}

async fn matrix(args: &Args, out: &mut Output) -> anyhow::Result<()> {
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

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut out = Output {
        rows: Vec::new(),
        file: match &args.json_out {
            Some(path) => Some(std::fs::File::create(path)?),
            None => None,
        },
    };
    if args.matrix {
        let result = matrix(&args, &mut out).await;
        eprint!("\n{}", table(&out.rows));
        return result;
    } else {
        let url = args.url.clone().context("--url is required")?;
        let spec = RunSpec {
            label: args.label.clone(),
            server: args.label.clone(),
            store: "-".into(),
            url,
            workload: args.workload,
            protocol: args.protocol,
            connections: args.connections,
            duration: Duration::from_secs_f64(args.duration),
            warmup: Duration::from_secs_f64(args.warmup),
            poll_interval: Duration::from_millis(args.poll_interval_ms),
            server_pid: None,
        };
        let record = run(spec).await?;
        out.emit(record)?;
    }
    eprint!("\n{}", table(&out.rows));
    Ok(())
}

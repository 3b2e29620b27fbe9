//! What the push-notification tests share: a real webhook receiver (an axum server in the
//! test process) whose answers a test scripts, `tnstore serve` as a process whose log lines a
//! test can wait for, and JSON-RPC calls in either protocol version.

use crate::common::Serving;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// How long anything a test waits for may take, on a loaded machine too.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// What the receiver answers to one request (in order; 200 once the script is done).
#[derive(Debug, Clone)]
pub enum Answer {
    Status(u16),
    /// Never answer: the request stays open until the sender gives up or dies.
    Hold,
    /// 307 to this URL.
    Redirect(String),
}

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

struct ReceiverState {
    script: Mutex<VecDeque<Answer>>,
    requests: AtomicUsize,
    tx: mpsc::UnboundedSender<Received>,
}

/// A webhook receiver on 127.0.0.1.
pub struct Receiver {
    pub port: u16,
    state: Arc<ReceiverState>,
    rx: mpsc::UnboundedReceiver<Received>,
}

impl Receiver {
    pub async fn start(script: Vec<Answer>) -> Receiver {
        let (tx, rx) = mpsc::unbounded_channel();
        let state = Arc::new(ReceiverState {
            script: Mutex::new(script.into()),
            requests: AtomicUsize::new(0),
            tx,
        });
        let app = axum::Router::new()
            .fallback(receive)
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver { port, state, rx }
    }

    /// The receiver's URL for `path` on `host` (`127.0.0.1`, `localhost`).
    pub fn url(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.port)
    }

    /// Answers to come, after what is left of the script.
    pub fn script(&self, answers: Vec<Answer>) {
        self.state.script.lock().unwrap().extend(answers);
    }

    /// Requests received so far (a refused delivery never makes one).
    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// The next request (panics after [`DEADLINE`]).
    pub async fn next(&mut self) -> Received {
        tokio::time::timeout(DEADLINE, self.rx.recv())
            .await
            .expect("a delivery within the deadline")
            .expect("the receiver runs")
    }

    /// The next `n` requests.
    pub async fn take(&mut self, n: usize) -> Vec<Received> {
        let mut got = Vec::with_capacity(n);
        for _ in 0..n {
            got.push(self.next().await);
        }
        got
    }

    /// Requests until one whose Task is in the final `state` (0.3 name), that one included.
    pub async fn until_state(&mut self, state: &str) -> Vec<Received> {
        let mut got = Vec::new();
        loop {
            let next = self.next().await;
            let done = progress(&next.body).state == state;
            got.push(next);
            if done {
                return got;
            }
        }
    }
}

async fn receive(
    State(state): State<Arc<ReceiverState>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    let answer = state.script.lock().unwrap().pop_front();
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let _ = state.tx.send(Received {
        path: uri.path().to_owned(),
        headers,
        body,
    });
    match answer {
        None => StatusCode::OK.into_response(),
        Some(Answer::Status(code)) => StatusCode::from_u16(code).unwrap().into_response(),
        Some(Answer::Hold) => std::future::pending().await,
        Some(Answer::Redirect(to)) => {
            (StatusCode::TEMPORARY_REDIRECT, [("location", to)]).into_response()
        }
    }
}

/// Where a delivered Task is: its state (0.3 name), the step its status message names (-1:
/// none) and its artifact's part count. Every save of the `events:N:MS` scenario moves it
/// forward, so deliveries in save order have strictly growing progress.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Progress {
    pub rank: u8,
    pub parts: usize,
    pub step: i64,
    pub state: String,
}

pub fn progress(body: &Value) -> Progress {
    // A 1.0 StreamResponse (`task`, or `statusUpdate` for a Task over the size bound), or a
    // 0.3 Task.
    let task = body
        .get("task")
        .or_else(|| body.get("statusUpdate"))
        .unwrap_or(body);
    let state = task["status"]["state"]
        .as_str()
        .unwrap_or("")
        .trim_start_matches("TASK_STATE_")
        .to_lowercase()
        .replace('_', "-");
    let rank = match state.as_str() {
        "submitted" => 0,
        "working" => 1,
        _ => 2,
    };
    let step = task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .and_then(|t| t.strip_prefix("step "))
        .and_then(|n| n.parse().ok())
        .unwrap_or(-1);
    let parts = task["artifacts"][0]["parts"].as_array().map_or(0, Vec::len);
    Progress {
        rank,
        parts,
        step,
        state,
    }
}

/// Asserts that `deliveries` are in save order: strictly growing progress.
pub fn assert_in_save_order(deliveries: &[Received]) {
    let seen: Vec<Progress> = deliveries.iter().map(|d| progress(&d.body)).collect();
    for pair in seen.windows(2) {
        assert!(pair[0] < pair[1], "out of order: {seen:#?}");
    }
}

/// `tnstore serve --agent tck` as a process, its stderr lines readable; SIGKILLed when dropped.
pub struct Server {
    serving: Serving,
    pub url: String,
    lines: mpsc::UnboundedReceiver<String>,
}

impl Server {
    /// `tnstore --store <store> serve --addr 127.0.0.1:0 --agent tck <args>`, once it listens.
    pub fn start(store: &str, args: &[&str]) -> Server {
        Server::start_with_env(store, args, &[])
    }

    /// [`start`](Self::start) with these environment variables set too.
    pub fn start_with_env(store: &str, args: &[&str], env: &[(&str, &str)]) -> Server {
        let serve_args: Vec<&str> = ["--agent", "tck"].iter().chain(args).copied().collect();
        let mut serving = crate::common::serve(&["--store", store], &serve_args, |command| {
            command.stderr(Stdio::piped()).envs(env.iter().copied());
        });
        let (tx, lines) = mpsc::unbounded_channel();
        let stderr = serving.child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[tnstore] {line}");
                let _ = tx.send(line);
            }
        });
        let url = serving.url.clone();
        Server {
            serving,
            url,
            lines,
        }
    }

    /// The next log line that contains every one of `words` (panics after [`DEADLINE`]).
    pub async fn log_line(&mut self, words: &[&str]) -> String {
        let wait = async {
            while let Some(line) = self.lines.recv().await {
                if words.iter().all(|w| line.contains(w)) {
                    return line;
                }
            }
            panic!("tnstore ended without a line containing {words:?}");
        };
        tokio::time::timeout(DEADLINE, wait)
            .await
            .unwrap_or_else(|_| panic!("no log line containing {words:?}"))
    }

    /// SIGKILL, and waits for the process.
    pub fn kill(self) {
        self.serving.kill();
    }

    /// Waits for the process to end by itself (panics after [`DEADLINE`], killing it); how it
    /// ended.
    pub async fn ended(mut self) -> std::process::ExitStatus {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.serving.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "tnstore did not end within {DEADLINE:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// One JSON-RPC call; `version` "1.0" sends `A2A-Version: 1.0`, "0.3" none.
    pub async fn rpc(&self, version: &str, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut request = reqwest::Client::new().post(&self.url).json(&body);
        if version == "1.0" {
            request = request.header("A2A-Version", "1.0");
        }
        request.send().await.unwrap().json().await.unwrap()
    }

    /// A2A 1.0 `SendMessage` of `text`, with `config` as its push config; the Task id.
    pub async fn send_v1(&self, text: &str, config: Value) -> String {
        let mut params = json!({"message": {"role": "ROLE_USER", "messageId": format!("m-{text}"),
            "parts": [{"text": text}]}, "configuration": {"returnImmediately": true}});
        if !config.is_null() {
            params["configuration"]["taskPushNotificationConfig"] = config;
        }
        let sent = self.rpc("1.0", "SendMessage", params).await;
        sent["result"]["task"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("SendMessage answered {sent}"))
            .to_owned()
    }

    /// A2A 0.3 `message/send` of `text`, with `config` as its push config; the Task id.
    pub async fn send_v03(&self, text: &str, config: Value) -> String {
        let params = json!({"message": {"kind": "message", "role": "user",
            "messageId": format!("m03-{text}"), "parts": [{"kind": "text", "text": text}]},
            "configuration": {"blocking": false, "pushNotificationConfig": config}});
        let sent = self.rpc("0.3", "message/send", params).await;
        sent["result"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("message/send answered {sent}"))
            .to_owned()
    }
}

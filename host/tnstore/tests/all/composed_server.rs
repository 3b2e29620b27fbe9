//! The whole A2A stack as one component: an agent, the A2A server component, the run bridge and
//! a store, composed in-process by `toolnexus_compose` from the components it embeds, served by
//! a stock `wasi:http` host (`wasmtime serve` of the crates.io package `wasmtime-cli`) and by
//! ours (`tnstore serve --component`), with the Tasks in a directory that `tnstore get` reads.
//!
//! - The official A2A Python SDK (`tests/python/sdk_client.py`, as in `python_sdk.rs`) against
//!   each host, A2A 1.0 and 0.3, JSON-RPC and HTTP+JSON: `basic`, `stream` and `not-found` with
//!   the echo agent; with the tck agent, `cancel` and `subscribe-start` (sending
//!   `events:600:100`, a run of a minute, since the composed agent takes no settings) and
//!   `events` (its concurrent subscription checked as a reader of the store: each request runs
//!   in a fresh instance, so a subscription never shares the run's live events). Then `tnstore
//!   get` reads each Task the SDK saved through the component.
//!   Not run: `push-configs` (the component offers no push notifications) and the scenarios
//!   that SIGKILL a server and restart it (`subscribe-after-restart`, `events-start` /
//!   `events-after-restart`): they check the native server's startup recovery, which the
//!   component does not do (a run cut off by a kill stays `working`).
//! - Without Python: a blocking send, a send that returns immediately and completes after the
//!   response, and one format both ways (`tnstore get` reads what the component saved; the
//!   component reads what `tnstore save` saved); over the lifecycle guard composed over the
//!   file store; over the JavaScript store (`js/store`, built by npm; the Node.js policy of
//!   `tests/src/node.rs`).
//!
//! `wasmtime serve` is `TOOLNEXUS_WASMTIME_CLI` (`.ci/run` installs wasmtime-cli =48.0.8 into
//! `target/wasmtime-cli`); without it its tests print `SKIPPED: …` and pass, unless
//! `TOOLNEXUS_REQUIRE_WASMTIME_CLI=1` (CI), the policy of the Python SDK tests.

use crate::common;
use crate::python_sdk::{self, BINDINGS, PROTOCOLS, Runs};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;
use toolnexus_compose::embedded::{BRIDGE, ECHO_AGENT, FILE_STORE, SERVER, TCK_AGENT};
use toolnexus_compose::{A2aParts, compose_a2a};
use toolnexus_conformance::a2a_client::{follow_until, subscription};

const WASMTIME_ENV: &str = "TOOLNEXUS_WASMTIME_CLI";
const REQUIRE_WASMTIME_ENV: &str = "TOOLNEXUS_REQUIRE_WASMTIME_CLI";
/// What makes the tck agent slow (600 rounds, 100 ms apart): it looks at `is-canceled` between
/// rounds, so a cancel ends it at once.
const SLOW_TEXT: &str = "events:600:100";
/// How long a host may take to compile the composition and listen.
const START_LIMIT: Duration = Duration::from_secs(300);

/// `wasmtime serve`, or `None` (after printing why) when its tests may skip.
fn wasmtime_cli() -> Option<PathBuf> {
    let reason = match std::env::var_os(WASMTIME_ENV).filter(|p| !p.is_empty()) {
        Some(path) => match Command::new(&path).arg("--version").output() {
            Ok(out) if out.status.success() => return Some(PathBuf::from(path)),
            Ok(out) => format!(
                "{WASMTIME_ENV}={} does not run: {}",
                Path::new(&path).display(),
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(e) => format!(
                "{WASMTIME_ENV}={} does not run: {e}",
                Path::new(&path).display()
            ),
        },
        None => format!(
            "{WASMTIME_ENV} is not set to a wasmtime 48.0.8 binary with `serve` (`cargo install \
             wasmtime-cli --version =48.0.8`, as .ci/run does)"
        ),
    };
    if std::env::var(REQUIRE_WASMTIME_ENV).is_ok_and(|v| v == "1") {
        panic!("wasmtime serve is required ({REQUIRE_WASMTIME_ENV}=1) but unavailable: {reason}");
    }
    eprintln!(
        "SKIPPED: the composed A2A component on wasmtime serve: {reason}; set \
         {REQUIRE_WASMTIME_ENV}=1 to make this a failure."
    );
    None
}

/// Which host serves the composition.
enum Host {
    /// `wasmtime serve` at this path.
    Wasmtime(PathBuf),
    /// `tnstore serve --component`.
    Ours,
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Host::Wasmtime(_) => "wasmtime serve",
            Host::Ours => "tnstore serve --component",
        })
    }
}

/// A host serving a composition, killed when dropped; what it printed on stderr is kept for
/// failure messages.
struct Served {
    child: Child,
    url: String,
    log: Arc<Mutex<String>>,
}

impl Served {
    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes the composition of `agent`, the server, the bridge and `store` to `dir/name`.
fn compose_to(dir: &Path, name: &str, agent: &[u8], store: &[u8]) -> PathBuf {
    let composed = compose_a2a(&A2aParts {
        server: SERVER,
        bridge: BRIDGE,
        agent,
        store,
        middlewares: &[],
    })
    .expect("the embedded parts compose");
    let path = dir.join(name);
    std::fs::write(&path, composed).unwrap();
    path
}

/// Starts `host` serving `component` with `tasks` as its directory, and waits until it listens.
fn serve(host: &Host, component: &Path, tasks: &Path) -> Served {
    std::fs::create_dir_all(tasks).unwrap();
    let mut command = match host {
        Host::Wasmtime(wasmtime) => {
            let mut command = Command::new(wasmtime);
            command
                .arg("serve")
                .arg("-Scli")
                .arg(format!("--dir={}::/", tasks.display()))
                .args(["--addr", "127.0.0.1:0"])
                .arg(component);
            command
        }
        Host::Ours => {
            let mut command = common::tnstore_command();
            let cache = tasks.with_file_name("component-cache");
            command
                .env("TOOLNEXUS_CACHE_DIR", cache)
                .args(["serve", "--addr", "127.0.0.1:0", "--component"])
                .arg(format!("{}?dir={}", component.display(), tasks.display()));
            command
        }
    };
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{host} does not start: {e}"));
    // wasmtime says where it listens on stderr, tnstore on stdout; both streams are read to
    // their end (kept for failure messages), and the first line naming the address is the
    // event waited for.
    let log = Arc::new(Mutex::new(String::new()));
    let (found, listening) = mpsc::channel();
    let pipes: [Box<dyn Read + Send>; 2] = [
        Box::new(child.stdout.take().unwrap()),
        Box::new(child.stderr.take().unwrap()),
    ];
    for pipe in pipes {
        let (log, found) = (log.clone(), found.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = listening_url(&line) {
                    let _ = found.send(Some(url));
                }
                let mut log = log.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
            let _ = found.send(None);
        });
    }
    drop(found);
    let mut ended = 0;
    loop {
        match listening.recv_timeout(START_LIMIT) {
            Ok(Some(url)) => return Served { child, url, log },
            Ok(None) if ended == 0 => ended += 1,
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{host} did not listen on {} within {}s:\n{}",
                    component.display(),
                    START_LIMIT.as_secs(),
                    log.lock().unwrap()
                );
            }
        }
    }
}

/// The base URL in a host's "listening" line: wasmtime's `Serving HTTP on http://…/`,
/// tnstore's `listening on http://… …`.
fn listening_url(line: &str) -> Option<String> {
    let rest = line
        .strip_prefix("Serving HTTP on ")
        .or_else(|| line.strip_prefix("listening on "))?;
    let url = rest.split_whitespace().next()?;
    Some(if url.ends_with('/') {
        url.to_owned()
    } else {
        format!("{url}/")
    })
}

/// `tnstore --store file:<tasks> get <id>`: the Task as stored, or `None` when there is none.
fn tnstore_get(tasks: &Path, id: &str) -> Option<Value> {
    let selector = format!("file:{}", tasks.display());
    let out = common::run(&["--store", &selector, "get", id], "", |_| {});
    match out.status.code() {
        Some(0) => Some(serde_json::from_slice(&out.stdout).expect("tnstore get prints JSON")),
        Some(1) => None,
        _ => panic!(
            "tnstore get {id} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// The text of the artifacts of a stored Task (A2A 0.3 JSON), joined.
fn artifact_text(task: &Value) -> String {
    task["artifacts"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|a| a["parts"].as_array().into_iter().flatten())
        .filter_map(|p| p["text"].as_str())
        .collect()
}

fn drive_with_the_sdk(python: PathBuf, host: &Host) {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    let echo = compose_to(tmp.path(), "echo.wasm", ECHO_AGENT, FILE_STORE);
    let tck = compose_to(tmp.path(), "tck.wasm", TCK_AGENT, FILE_STORE);
    let mut runs = Runs::new(python, &format!("the composed component on {host}"));

    let served = serve(host, &echo, &tasks);
    let mut sent = Vec::new();
    for protocol in PROTOCOLS {
        for binding in BINDINGS {
            let scenarios = "basic,stream,not-found";
            if let Some(report) = runs.run(&served.url, protocol, binding, scenarios, &[]) {
                let id = report["results"]["basic"]["send"]["id"].as_str();
                sent.push(id.expect("basic reports its Task").to_owned());
            }
        }
    }
    drop(served);

    let served = serve(host, &tck, &tasks);
    for protocol in PROTOCOLS {
        for binding in BINDINGS {
            let slow = ["--slow-text", SLOW_TEXT];
            runs.run(
                &served.url,
                protocol,
                binding,
                "cancel,subscribe-start",
                &slow,
            );
            let store_reads = ["--store-subscriptions"];
            runs.run(&served.url, protocol, binding, "events", &store_reads);
        }
    }
    // Shown by the test harness only if the test fails.
    eprintln!("{host} printed:\n{}", served.log());
    drop(served);
    runs.finish();

    // One format everywhere: each Task the SDK sent through the component, read by tnstore.
    assert_eq!(sent.len(), PROTOCOLS.len() * BINDINGS.len());
    for id in sent {
        let task = tnstore_get(&tasks, &id).unwrap_or_else(|| panic!("no Task {id} on disk"));
        assert_eq!(task["id"], id.as_str());
        assert_eq!(task["status"]["state"], "completed", "{task}");
        assert_eq!(artifact_text(&task), "hello", "{task}");
    }
}

#[test]
fn the_python_sdk_drives_the_composed_component_on_wasmtime_serve() {
    let Some(wasmtime) = wasmtime_cli() else {
        return;
    };
    let Some(python) = python_sdk::python() else {
        return;
    };
    drive_with_the_sdk(python, &Host::Wasmtime(wasmtime));
}

#[test]
fn the_python_sdk_drives_the_composed_component_on_tnstore_serve() {
    let Some(python) = python_sdk::python() else {
        return;
    };
    drive_with_the_sdk(python, &Host::Ours);
}

/// A2A 1.0 over JSON-RPC to `served`; the whole response, which must be JSON.
async fn rpc(client: &reqwest::Client, served: &Served, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response = client
        .post(&served.url)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{method}: {e}\nthe host printed:\n{}", served.log()));
    let status = response.status();
    let text = response.text().await.unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "{method} answered {status} with no JSON ({e}): {text:?}\nthe host printed:\n{}",
            served.log()
        )
    })
}

/// A user message with a message id unique in the process.
fn message(text: &str) -> Value {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let id = format!(
        "m-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// Sends through `served`: a blocking send, then one that returns at once and completes after
/// the response (followed on a subscription); `tnstore get` reads both from `tasks`, and the
/// component reads a Task `tnstore save` wrote there. What the host printed is in the panic.
async fn round_trip(served: &Served, tasks: &Path) {
    let client = reqwest::Client::new();
    let url = &served.url;
    let context = || format!("{} printed:\n{}", served.url, served.log());

    let sent = rpc(
        &client,
        served,
        "SendMessage",
        json!({"message": message("hello")}),
    )
    .await;
    let task = &sent["result"]["task"];
    assert_eq!(
        task["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{sent}\n{}",
        context()
    );
    let id = task["id"].as_str().unwrap().to_owned();
    let stored = tnstore_get(tasks, &id).expect("the Task is on disk");
    assert_eq!(stored["status"]["state"], "completed", "{stored}");
    assert_eq!(artifact_text(&stored), "hello", "{stored}");

    // Returns at once; the run goes on after the response, in the same handler call.
    let params = json!({
        "message": message("later"),
        "configuration": {"returnImmediately": true},
    });
    let sent = rpc(&client, served, "SendMessage", params).await;
    let task = &sent["result"]["task"];
    let id = task["id"].as_str().unwrap().to_owned();
    assert_ne!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    // Panics if the Task is not completed within the deadline.
    let done = follow_until(subscription(&client, url, &id), "TASK_STATE_COMPLETED").await;
    // A subscription is refused once the Task is final, so it may have finished first: read it,
    // in A2A 1.0 like everything else here.
    let got = rpc(&client, served, "GetTask", json!({"id": id})).await;
    assert!(
        done || got["result"]["status"]["state"] == "TASK_STATE_COMPLETED",
        "{got}\n{}",
        context()
    );
    let stored = tnstore_get(tasks, &id).expect("the Task is on disk");
    assert_eq!(stored["status"]["state"], "completed", "{stored}");
    assert_eq!(artifact_text(&stored), "later", "{stored}");

    // And the other way: a Task tnstore saved, read through the component.
    let selector = format!("file:{}", tasks.display());
    let saved =
        r#"{"id":"from-tnstore","contextId":"c-1","kind":"task","status":{"state":"completed"}}"#;
    let out = common::run(&["--store", &selector, "save"], saved, |_| {});
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = rpc(&client, served, "GetTask", json!({"id": "from-tnstore"})).await;
    assert_eq!(got["result"]["id"], "from-tnstore", "{got}\n{}", context());
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_COMPLETED");
}

async fn round_trip_on(host: &Host, agent: &[u8], store: &[u8]) {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    let component = compose_to(tmp.path(), "composed.wasm", agent, store);
    let served = serve(host, &component, &tasks);
    round_trip(&served, &tasks).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_sent_through_the_component_on_wasmtime_serve_are_read_by_tnstore() {
    let Some(wasmtime) = wasmtime_cli() else {
        return;
    };
    round_trip_on(&Host::Wasmtime(wasmtime), ECHO_AGENT, FILE_STORE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_sent_through_the_component_on_tnstore_serve_are_read_by_tnstore() {
    round_trip_on(&Host::Ours, ECHO_AGENT, FILE_STORE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guarded_file_store_composes_and_serves() {
    let guarded = toolnexus_compose::embedded::guarded_file_store().unwrap();
    round_trip_on(&Host::Ours, TCK_AGENT, &guarded).await;
    if let Some(wasmtime) = wasmtime_cli() {
        round_trip_on(&Host::Wasmtime(wasmtime), ECHO_AGENT, &guarded).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_javascript_store_composes_and_serves() {
    let Some(js) = toolnexus_conformance::node::js() else {
        return;
    };
    let store = std::fs::read(&js.store_wasm).unwrap();
    round_trip_on(&Host::Ours, ECHO_AGENT, &store).await;
    if let Some(wasmtime) = wasmtime_cli() {
        round_trip_on(&Host::Wasmtime(wasmtime), ECHO_AGENT, &store).await;
    }
}

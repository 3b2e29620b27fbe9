//! The official A2A Python SDK (`a2a-sdk`, pinned in `tests/python/requirements.txt`) as the
//! client of the real `tnstore serve`: `tests/python/sdk_client.py` runs every scenario for A2A
//! 1.0 and 0.3, each over JSON-RPC and HTTP+JSON, against a server over the file store, the
//! file-store component and PostgreSQL. Per store:
//!
//! 1. a server whose echo agent answers after 200 ms: `basic`, `stream`, `not-found`, and
//!    `push-configs` (set, get, list and delete of push-notification configs, and a config sent
//!    with a message: `tnstore serve` offers push notifications over every store here);
//! 2. a server whose agent thinks for a minute (so a Task stays `working` until it is cancelled
//!    or the server is killed): `cancel`, `subscribe-start`; then SIGKILL, and a restart over the
//!    same store (which marks the interrupted Tasks `failed`): `subscribe-after-restart` for the
//!    Task each `subscribe-start` subscribed to.
//! 3. a server with the `tck` agent, whose `events:N:MS` messages emit N rounds of a status and
//!    an artifact update: `events` (a streaming send and a concurrent subscription each get
//!    exactly those events, in order) and `events-start`; then SIGKILL and a restart:
//!    `events-after-restart` (every event a stream saw before the crash is in the Task).
//!
//! The interpreter is `TOOLNEXUS_PYTHON` (one with `tests/python/requirements.txt` installed;
//! `.ci/run` makes one, `docs/python-sdk.md` shows how by hand). Without it the tests print
//! `SKIPPED: …` and pass, unless `TOOLNEXUS_REQUIRE_PYTHON_SDK=1` (CI), where that is a failure.
//! The PostgreSQL test also follows the PostgreSQL rules (`TOOLNEXUS_TEST_POSTGRES_URL` or a
//! throwaway cluster; `TOOLNEXUS_REQUIRE_POSTGRES=1`).
//!
//! Every run of the script is tried even when an earlier one failed; a test fails with every
//! failing run's command, exit status, stdout and stderr.

use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use toolnexus_conformance::pg::{self, TableGuard};

use crate::common;

const PYTHON_ENV: &str = "TOOLNEXUS_PYTHON";
const REQUIRE_ENV: &str = "TOOLNEXUS_REQUIRE_PYTHON_SDK";
const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/python/sdk_client.py"
);
pub(crate) const PROTOCOLS: [&str; 2] = ["1.0", "0.3"];
pub(crate) const BINDINGS: [&str; 2] = ["JSONRPC", "HTTP+JSON"];
/// The echo agent of the first server: quick, yet slow enough that a Task sent with
/// `return_immediately` is seen before it completes.
const QUICK_ECHO_MS: &str = "200";
/// The agent of the second server: a Task stays `working` until cancelled or killed, however
/// slowly the four combinations run before the kill.
const SLOW_ECHO_MS: &str = "60000";
/// One run of the script, at most (its own waits are 30 s each).
const RUN_LIMIT: Duration = Duration::from_secs(180);

/// The interpreter with the SDK, or `None` (after printing why) when the tests may skip.
pub(crate) fn python() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(PYTHON_ENV).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let reason = format!(
        "{PYTHON_ENV} is not set to a Python interpreter with tests/python/requirements.txt \
         installed (see docs/python-sdk.md)"
    );
    if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
        panic!("the Python A2A SDK is required ({REQUIRE_ENV}=1) but unavailable: {reason}");
    }
    eprintln!(
        "SKIPPED: the official A2A Python SDK client tests: {reason}; set {REQUIRE_ENV}=1 to \
         make this a failure."
    );
    None
}

/// A test's key for sealing webhook credentials (32 bytes as hex).
const PUSH_KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

/// `tnstore serve` over `selector` with `serve_args`, killed (SIGKILL) when dropped. Push
/// notifications are on (the default): the sealing key and the outbox are beside `cache`, in
/// the test's own directory.
fn serve_with(selector: &str, cache: &Path, serve_args: &[&str]) -> common::Serving {
    let dir = cache
        .parent()
        .expect("the cache is inside the test's directory");
    let key = dir.join("push.key");
    std::fs::write(&key, PUSH_KEY).unwrap();
    let (key, outbox) = (key.display().to_string(), dir.join("push-outbox"));
    let outbox = outbox.display().to_string();
    let mut args = vec!["--push-key-file", &key, "--push-outbox", &outbox];
    args.extend_from_slice(serve_args);
    common::serve(&["--store", selector], &args, |c| {
        c.env("TOOLNEXUS_CACHE_DIR", cache);
    })
}

/// `tnstore serve` over `selector`, killed (SIGKILL) when dropped.
fn start_server(selector: &str, cache: &Path, echo_ms: &str) -> common::Serving {
    serve_with(selector, cache, &["--echo-delay-ms", echo_ms])
}

/// `tnstore serve --agent tck` over `selector`, killed (SIGKILL) when dropped.
fn start_tck_server(selector: &str, cache: &Path) -> common::Serving {
    serve_with(selector, cache, &["--agent", "tck"])
}

/// The script's runs against one server, and what went wrong in them.
pub(crate) struct Runs {
    python: PathBuf,
    /// The server driven, for the failure message ("tnstore serve over files").
    server: String,
    failures: Vec<String>,
    count: usize,
}

impl Runs {
    pub(crate) fn new(python: PathBuf, server: &str) -> Runs {
        Runs {
            python,
            server: server.to_owned(),
            failures: Vec::new(),
            count: 0,
        }
    }

    /// Runs `sdk_client.py URL --protocol P --binding B --scenario S [extra]`; its JSON report
    /// when it succeeded, else `None` with the failure recorded.
    pub(crate) fn run(
        &mut self,
        url: &str,
        protocol: &str,
        binding: &str,
        scenario: &str,
        extra: &[&str],
    ) -> Option<Value> {
        self.count += 1;
        let mut command = Command::new(&self.python);
        command
            .arg(SCRIPT)
            .arg(url)
            .args(["--protocol", protocol, "--binding", binding])
            .args(["--scenario", scenario])
            .args(extra)
            .env("PYTHONUNBUFFERED", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1");
        // The server is on 127.0.0.1: no proxy (httpx honours these).
        for var in [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
        ] {
            command.env_remove(var);
        }
        let described = format!(
            "{} {SCRIPT} {url} --protocol {protocol} --binding {binding} --scenario {scenario} {}",
            self.python.display(),
            extra.join(" ")
        );
        let (status, stdout, stderr) = match run_limited(command, RUN_LIMIT) {
            Ok(output) => output,
            Err(e) => {
                self.fail(&described, &e, "", "");
                return None;
            }
        };
        let report = stdout
            .lines()
            .rev()
            .find_map(|line| serde_json::from_str::<Value>(line).ok());
        match (&status, &report) {
            (Some(0), Some(report)) if report["ok"] == true => Some(report.clone()),
            _ => {
                let status = status.map_or("killed".to_owned(), |c| format!("exit {c}"));
                self.fail(&described, &status, &stdout, &stderr);
                None
            }
        }
    }

    fn fail(&mut self, command: &str, status: &str, stdout: &str, stderr: &str) {
        self.failures.push(format!(
            "--- {command}\n{status}\nstdout:\n{}\nstderr:\n{}",
            stdout.trim_end(),
            stderr.trim_end()
        ));
    }

    pub(crate) fn finish(self) {
        assert!(
            self.failures.is_empty(),
            "the A2A Python SDK against {}: {} of {} runs failed\n{}",
            self.server,
            self.failures.len(),
            self.count,
            self.failures.join("\n")
        );
    }
}

/// Runs `command` to its end, or kills it after `limit`; its exit code (`None` when killed by a
/// signal), stdout and stderr.
fn run_limited(
    mut command: Command,
    limit: Duration,
) -> Result<(Option<i32>, String, String), String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the interpreter: {e}"))?;
    // Each pipe reaches its end when the interpreter exits (or closes it): that is the event
    // waited for, up to `limit`.
    let (closed, pipe_closed) = std::sync::mpsc::channel();
    let drain = |mut pipe: Box<dyn Read + Send>| {
        let closed = closed.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            let _ = closed.send(());
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + limit;
    let ended = (0..2).all(|_| {
        pipe_closed
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .is_ok()
    });
    if !ended {
        let _ = child.kill();
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    let status = ended.then_some(status);
    let (stdout, mut stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    if status.is_none() {
        stderr.push_str(&format!("\n(killed after {}s)", limit.as_secs()));
    }
    Ok((status.and_then(|s| s.code()), stdout, stderr))
}

/// Every scenario, every protocol and binding, against servers over `selector`.
fn drive(python: PathBuf, store: &str, selector: &str, cache: &Path) {
    let mut runs = Runs::new(python, &format!("tnstore serve over {store}"));

    let quick = start_server(selector, cache, QUICK_ECHO_MS);
    for protocol in PROTOCOLS {
        for binding in BINDINGS {
            runs.run(&quick.url, protocol, binding, "basic,stream,not-found", &[]);
            runs.run(&quick.url, protocol, binding, "push-configs", &[]);
        }
    }
    quick.kill();

    let slow = start_server(selector, cache, SLOW_ECHO_MS);
    let mut subscribed = Vec::new();
    for protocol in PROTOCOLS {
        for binding in BINDINGS {
            if let Some(report) =
                runs.run(&slow.url, protocol, binding, "cancel,subscribe-start", &[])
            {
                let id = report["results"]["subscribe-start"]["task_id"]
                    .as_str()
                    .expect("subscribe-start reports its task_id")
                    .to_owned();
                subscribed.push((protocol, binding, id));
            }
        }
    }
    slow.kill();

    let restarted = start_server(selector, cache, SLOW_ECHO_MS);
    for (protocol, binding, id) in &subscribed {
        runs.run(
            &restarted.url,
            protocol,
            binding,
            "subscribe-after-restart",
            &["--task-id", id],
        );
    }
    drop(restarted);

    let events = start_tck_server(selector, cache);
    let mut started = Vec::new();
    for protocol in PROTOCOLS {
        for binding in BINDINGS {
            runs.run(&events.url, protocol, binding, "events", &[]);
            if let Some(report) = runs.run(&events.url, protocol, binding, "events-start", &[]) {
                let result = &report["results"]["events-start"];
                let id = result["task_id"]
                    .as_str()
                    .expect("events-start reports its task_id");
                started.push((protocol, binding, id.to_owned(), result["seen"].to_string()));
            }
        }
    }
    events.kill();
    let restarted = start_tck_server(selector, cache);
    for (protocol, binding, id, seen) in &started {
        runs.run(
            &restarted.url,
            protocol,
            binding,
            "events-after-restart",
            &["--task-id", id, "--seen", seen],
        );
    }
    drop(restarted);
    runs.finish();
}

#[test]
fn the_python_sdk_drives_tnstore_serve_over_files() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let selector = format!("file:{}", tmp.path().join("tasks").display());
    drive(python, "files", &selector, &tmp.path().join("cache"));
    // The webhooks' secrets the scenarios set are sealed on disk; their URLs are not.
    let mut texts = Vec::new();
    read_all(&tmp.path().join("tasks"), &mut texts);
    assert!(texts.iter().any(|t| t.contains("push.example.invalid")));
    for secret in ["token-1", "secret-1", "token-2"] {
        assert!(
            !texts.iter().any(|t| t.contains(secret)),
            "{secret:?} is stored as given"
        );
    }
}

/// The text of every file under `dir`, recursively.
fn read_all(dir: &Path, texts: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            read_all(&path, texts);
        } else {
            texts.push(String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned());
        }
    }
}

#[test]
fn the_python_sdk_drives_tnstore_serve_over_the_component() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let selector = format!("wasm:builtin?dir={}", tmp.path().join("tasks").display());
    drive(
        python,
        "the file-store component",
        &selector,
        &tmp.path().join("cache"),
    );
}

#[test]
fn the_python_sdk_drives_tnstore_serve_over_postgres() {
    let Some(python) = python() else { return };
    let Some(server) = pg::server() else { return };
    let table = pg::unique_table("python_sdk");
    let _guard = TableGuard::new(&server, &table);
    let selector = server.selector(&format!("table={table}"));
    let tmp = tempfile::tempdir().unwrap();
    drive(python, "PostgreSQL", &selector, &tmp.path().join("cache"));
}

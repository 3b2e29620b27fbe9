//! `tnstore serve` stopped with SIGTERM while agents run: a run that can finish within
//! `--shutdown-grace` finishes `completed`, one that cannot ends `failed` with the stop's
//! message; either way the streams following them get their final event and end cleanly, the
//! process exits 0, and the store (read by a fresh process) has every acknowledged Task in the
//! state its clients saw last. A stream on a Task that waits for input ends cleanly; push
//! deliveries not made wait in the outbox and go out after the restart; a second signal exits
//! at once.

use crate::common;
use crate::common::call;
use crate::push_support::{Answer, Receiver, progress};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How long anything these tests wait for may take before the test calls it lost.
const PATIENCE: Duration = Duration::from_secs(60);

/// The status message of a Task whose run the stop cut (`toolnexus_a2a::RUN_STOPPED_MESSAGE`).
const STOPPED: &str = "the server stopped before the agent finished";

/// `tnstore serve` over a file store in `dir`, its native echo agent answering after
/// `echo_delay_ms`, with `--shutdown-grace grace`; its stderr piped, for [`exit_of`].
fn start(dir: &Path, echo_delay_ms: u64, grace: &str) -> common::Serving {
    start_with(dir, "native-echo", echo_delay_ms, grace)
}

/// [`start`] with `agent` (`native-echo`, or `echo`: the echo agent component, compiled into a
/// cache beside `dir`).
fn start_with(dir: &Path, agent: &str, echo_delay_ms: u64, grace: &str) -> common::Serving {
    let store = format!("file:{}", dir.display());
    let cache = dir.with_file_name("cache");
    common::serve(
        &["--store", &store],
        &[
            "--agent",
            agent,
            "--echo-delay-ms",
            &echo_delay_ms.to_string(),
            "--shutdown-grace",
            grace,
        ],
        |c| {
            c.stderr(Stdio::piped()).env("TOOLNEXUS_CACHE_DIR", cache);
        },
    )
}

/// A Task sent without waiting for it: its id.
async fn send(client: &reqwest::Client, url: &str, text: &str) -> String {
    let sent = call(
        client,
        url,
        "SendMessage",
        json!({"configuration": {"blocking": false}, "message": {"role": "user",
            "messageId": format!("m-{text}"), "parts": [{"kind": "text", "text": text}]}}),
    )
    .await;
    sent["result"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("acknowledged: {sent}"))
        .to_owned()
}

/// What a stream showed: each state in turn (A2A 1.0 names) with the status message's text,
/// then how it ended.
#[derive(Debug, PartialEq)]
enum Seen {
    State(String, String),
    /// The response ended: `true` when complete (its last chunk read), `false` when cut.
    End(bool),
}

/// Follows Task `id`'s stream (`SubscribeToTask`, A2A 1.0) in the background.
fn follow(client: &reqwest::Client, base: &str, id: &str) -> mpsc::UnboundedReceiver<Seen> {
    let (tx, rx) = mpsc::unbounded_channel();
    let request = toolnexus_conformance::a2a_client::subscription(client, base, id);
    tokio::spawn(async move {
        let mut response = request.send().await.expect("subscribed");
        assert!(response.status().is_success(), "{}", response.status());
        let mut pending = Vec::new();
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(_) => {
                    let _ = tx.send(Seen::End(false));
                    return;
                }
            };
            pending.extend_from_slice(&chunk);
            while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
                let frame: Vec<u8> = pending.drain(..end + 2).collect();
                let Some(data) = frame.strip_prefix(b"data: ") else {
                    continue;
                };
                let event: Value = serde_json::from_slice(data.trim_ascii_end()).unwrap();
                let status = match (event.get("task"), event.get("statusUpdate")) {
                    (Some(task), _) => &task["status"],
                    (None, Some(update)) => &update["status"],
                    (None, None) => continue,
                };
                let text = status["message"]["parts"][0]["text"]
                    .as_str()
                    .unwrap_or_default();
                let state = status["state"].as_str().unwrap_or_default();
                let _ = tx.send(Seen::State(state.to_owned(), text.to_owned()));
            }
        }
        let _ = tx.send(Seen::End(true));
    });
    rx
}

/// Waits until `stream` shows `state`.
async fn until_state(stream: &mut mpsc::UnboundedReceiver<Seen>, state: &str) {
    let wait = async {
        loop {
            match stream.recv().await {
                Some(Seen::State(seen, _)) if seen == state => return,
                Some(Seen::State(..)) => {}
                other => panic!("the stream ended before {state}: {other:?}"),
            }
        }
    };
    tokio::time::timeout(PATIENCE, wait)
        .await
        .unwrap_or_else(|_| panic!("no {state} within {PATIENCE:?}"));
}

/// The rest of `stream`, to its end.
async fn rest(stream: &mut mpsc::UnboundedReceiver<Seen>) -> Vec<Seen> {
    let collect = async {
        let mut seen = Vec::new();
        while let Some(next) = stream.recv().await {
            seen.push(next);
        }
        seen
    };
    tokio::time::timeout(PATIENCE, collect)
        .await
        .unwrap_or_else(|_| panic!("the stream did not end within {PATIENCE:?}"))
}

fn sigterm(serving: &common::Serving) {
    let pid = serving.child.id().to_string();
    let sent = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(sent.success(), "kill -TERM {pid}");
}

/// The lines the process writes to its stderr, as they come; the channel closes when the
/// process does.
fn stderr_lines(serving: &mut common::Serving) -> mpsc::UnboundedReceiver<String> {
    let stderr = serving.child.stderr.take().expect("stderr piped");
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits until the process says on stderr that it is stopping.
async fn until_stopping(stderr: &mut mpsc::UnboundedReceiver<String>) {
    let wait = async {
        while let Some(line) = stderr.recv().await {
            if line.starts_with("tnstore: stopping") {
                return;
            }
        }
        panic!("stderr closed before `tnstore: stopping`");
    };
    tokio::time::timeout(PATIENCE, wait)
        .await
        .unwrap_or_else(|_| panic!("no `tnstore: stopping` within {PATIENCE:?}"));
}

/// Waits for the process to end (its stderr closing): its exit status and the rest of what it
/// printed there.
async fn exit_of(
    serving: &mut common::Serving,
    mut stderr: mpsc::UnboundedReceiver<String>,
) -> (ExitStatus, String) {
    let rest = async {
        let mut text = String::new();
        while let Some(line) = stderr.recv().await {
            text.push_str(&line);
            text.push('\n');
        }
        text
    };
    let text = tokio::time::timeout(PATIENCE, rest)
        .await
        .unwrap_or_else(|_| panic!("no exit within {PATIENCE:?}"));
    (serving.child.wait().unwrap(), text)
}

/// Task `id` as a fresh `tnstore` process reads it from the file store in `dir`.
fn stored(dir: &Path, id: &str) -> Value {
    let store = format!("file:{}", dir.display());
    let out = common::run(&["--store", &store, "get", id], "", |_| {});
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_lets_a_run_within_the_grace_finish_completed_then_exits_0() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    let mut server = start(&dir, 1_500, "60s");
    let mut stderr = stderr_lines(&mut server);
    let client = reqwest::Client::new();
    let id = send(&client, &server.url, "finish me").await;
    let mut stream = follow(&client, &server.url, &id);
    until_state(&mut stream, "TASK_STATE_WORKING").await;
    let signaled = Instant::now();
    sigterm(&server);
    until_stopping(&mut stderr).await;
    let rest = rest(&mut stream).await;
    assert!(
        matches!(rest.as_slice(), [.., Seen::State(state, _), Seen::End(true)]
            if state == "TASK_STATE_COMPLETED"),
        "{rest:?}"
    );
    let (status, stderr) = exit_of(&mut server, stderr).await;
    assert_eq!(status.code(), Some(0), "{stderr}");
    // It did not wait out the grace: it stopped once the run was over.
    assert!(signaled.elapsed() < Duration::from_secs(30));
    let task = stored(&dir, &id);
    assert_eq!(task["status"]["state"], "completed", "{task}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_a_run_longer_than_the_grace_failed_then_exits_0() {
    stop_a_run_longer_than_the_grace("native-echo").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_a_component_agent_longer_than_the_grace_failed_then_exits_0() {
    stop_a_run_longer_than_the_grace("echo").await;
}

async fn stop_a_run_longer_than_the_grace(agent: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    // The agent would take ten minutes; the grace is half a second.
    let mut server = start_with(&dir, agent, 600_000, "500ms");
    let stderr = stderr_lines(&mut server);
    let client = reqwest::Client::new();
    let mut runs = Vec::new();
    for text in ["first", "second"] {
        let id = send(&client, &server.url, text).await;
        let mut stream = follow(&client, &server.url, &id);
        until_state(&mut stream, "TASK_STATE_WORKING").await;
        runs.push((id, stream));
    }
    let signaled = Instant::now();
    sigterm(&server);
    for (id, stream) in &mut runs {
        let rest = rest(stream).await;
        assert!(
            matches!(rest.as_slice(), [.., Seen::State(state, message), Seen::End(true)]
                if state == "TASK_STATE_FAILED" && message.starts_with(STOPPED)),
            "{id}: {rest:?}"
        );
    }
    let (status, stderr) = exit_of(&mut server, stderr).await;
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(signaled.elapsed() < Duration::from_secs(30));
    for (id, _) in &runs {
        let task = stored(&dir, id);
        assert_eq!(task["status"]["state"], "failed", "{task}");
        let message = task["status"]["message"]["parts"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(message.starts_with(STOPPED), "{task}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_sigterm_exits_at_once_with_130() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    let mut server = start(&dir, 600_000, "10m");
    let mut stderr = stderr_lines(&mut server);
    let client = reqwest::Client::new();
    let id = send(&client, &server.url, "never done").await;
    let mut stream = follow(&client, &server.url, &id);
    until_state(&mut stream, "TASK_STATE_WORKING").await;
    sigterm(&server);
    until_stopping(&mut stderr).await;
    sigterm(&server);
    let (status, stderr) = exit_of(&mut server, stderr).await;
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("tnstore: stopped at once"), "{stderr}");
    // Nothing was saved on the way out: the Task is left to the next start's recovery.
    let task = stored(&dir, &id);
    assert_eq!(task["status"]["state"], "working", "{task}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_ends_a_stream_on_a_task_waiting_for_input_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    let mut server = start(&dir, 0, "60s");
    let stderr = stderr_lines(&mut server);
    let client = reqwest::Client::new();
    let id = send(&client, &server.url, "ask: anything").await;
    // A stream ends when the Task comes to wait for input; one opened on a Task that waits
    // already stays open, with no run here to end it.
    let mut first = follow(&client, &server.url, &id);
    until_state(&mut first, "TASK_STATE_INPUT_REQUIRED").await;
    assert_eq!(rest(&mut first).await, [Seen::End(true)]);
    let mut stream = follow(&client, &server.url, &id);
    until_state(&mut stream, "TASK_STATE_INPUT_REQUIRED").await;
    let signaled = Instant::now();
    sigterm(&server);
    let rest = rest(&mut stream).await;
    assert_eq!(rest, [Seen::End(true)]);
    let (status, stderr) = exit_of(&mut server, stderr).await;
    assert_eq!(status.code(), Some(0), "{stderr}");
    // Not held by the open stream until the grace or the idle timeout.
    assert!(signaled.elapsed() < Duration::from_secs(30));
    let task = stored(&dir, &id);
    assert_eq!(task["status"]["state"], "input-required", "{task}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stopped_runs_push_deliveries_wait_in_the_outbox_and_go_out_after_the_restart() {
    let tmp = tempfile::tempdir().unwrap();
    // The second delivery (the Task working) is held open: every later one, the stop's
    // `failed` included, waits behind it when the process exits.
    let mut receiver = Receiver::start(vec![Answer::Status(200), Answer::Hold]).await;
    let store = format!("file:{}", tmp.path().join("tasks").display());
    let (allow, outbox) = (
        format!("127.0.0.1:{}", receiver.port),
        tmp.path().join("outbox").display().to_string(),
    );
    let args = [
        "--agent",
        "tck",
        "--push-allow",
        &allow,
        "--push-outbox",
        &outbox,
        "--shutdown-grace",
        "200ms",
    ];
    let mut server = common::serve(&["--store", &store], &args, |c| {
        c.stderr(Stdio::piped());
    });
    let stderr = stderr_lines(&mut server);
    let client = reqwest::Client::new();
    // A hundred seconds of events, one save a tenth of a second.
    let sent = call(
        &client,
        &server.url,
        "SendMessage",
        json!({"configuration": {"blocking": false, "pushNotificationConfig":
            {"url": receiver.url("127.0.0.1", "/hook")}},
            "message": {"role": "user", "messageId": "m-push",
            "parts": [{"kind": "text", "text": "events:1000:100"}]}}),
    )
    .await;
    let id = sent["result"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("acknowledged: {sent}"))
        .to_owned();
    let before = receiver.take(2).await;
    assert_eq!(progress(&before[1].body).state, "working");
    sigterm(&server);
    let (status, stderr) = exit_of(&mut server, stderr).await;
    assert_eq!(status.code(), Some(0), "{stderr}");
    let task = stored(&tmp.path().join("tasks"), &id);
    assert_eq!(task["status"]["state"], "failed", "{task}");

    let _restarted = common::serve(&["--store", &store], &args, |_| {});
    let after = receiver.until_state("failed").await;
    assert_eq!(
        progress(&after[0].body).state,
        "working",
        "the held delivery comes again first"
    );
    let last = &after.last().unwrap().body;
    assert!(last.to_string().contains(STOPPED), "{last}");
}

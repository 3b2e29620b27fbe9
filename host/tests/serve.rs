//! `tnstore serve` as a real process over the file-store component: killed with SIGKILL at
//! several points of a Task's life, restarted on the same directory, and every acknowledged Task
//! is still there in (at least) the last state a client saw.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const TNSTORE: &str = env!("CARGO_BIN_EXE_tnstore");

struct Running {
    child: Child,
    url: String,
}

fn start(dir: &Path, cache: &Path) -> Running {
    let mut child = Command::new(TNSTORE)
        .args(["--store", &format!("wasm:builtin?dir={}", dir.display())])
        .args(["serve", "--addr", "127.0.0.1:0", "--echo-delay-ms", "300"])
        .env("TOOLNEXUS_CACHE_DIR", cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("tnstore serve starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .strip_prefix("listening on ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();
    Running { child, url }
}

async fn call(client: &reqwest::Client, url: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    client
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn rank(state: &str) -> u8 {
    match state {
        "submitted" => 0,
        "working" => 1,
        "completed" => 2,
        other => panic!("unexpected state {other}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn acknowledged_tasks_survive_sigkill_and_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cache) = (tmp.path().join("tasks"), tmp.path().join("cache"));
    let client = reqwest::Client::new();
    // (task id, last state a client saw)
    let mut acknowledged: Vec<(String, String)> = Vec::new();

    // Kill right after the submitted answer, once the agent is working, and after completion.
    for kill_after in ["submitted", "working", "completed"] {
        let mut server = start(&dir, &cache);
        for i in 0..3 {
            let sent = call(&client, &server.url, "SendMessage",
                json!({"message": {"role": "user", "parts": [{"kind": "text", "text": format!("{kill_after} {i}")}]}})).await;
            let id = sent["result"]["id"]
                .as_str()
                .expect("acknowledged")
                .to_owned();
            acknowledged.push((id, "submitted".into()));
        }
        if kill_after != "submitted" {
            let (id, seen) = acknowledged.last_mut().unwrap();
            for _ in 0..300 {
                let got = call(&client, &server.url, "GetTask", json!({"id": id})).await;
                let state = got["result"]["status"]["state"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                if rank(&state) >= rank(kill_after) {
                    *seen = state;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            assert_eq!(
                seen, kill_after,
                "the task reached {kill_after} before the kill"
            );
        }
        server.child.kill().unwrap(); // SIGKILL
        server.child.wait().unwrap();

        let mut restarted = start(&dir, &cache);
        for (id, seen) in &acknowledged {
            let got = call(&client, &restarted.url, "GetTask", json!({"id": id})).await;
            let task = &got["result"];
            assert_eq!(
                task["id"], *id,
                "acknowledged task {id} is found after a restart: {got}"
            );
            let state = task["status"]["state"].as_str().unwrap();
            assert!(
                rank(state) >= rank(seen),
                "{id}: {state} is older than {seen}, which a client saw"
            );
            if state == "completed" {
                assert!(task["artifacts"][0]["parts"][0]["text"].is_string());
            }
        }
        restarted.child.kill().unwrap();
        restarted.child.wait().unwrap();
    }
    assert_eq!(acknowledged.len(), 9);
}

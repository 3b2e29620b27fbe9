//! `tnstore serve` as a real process over the file-store component: killed with SIGKILL at
//! several points of a Task's life, restarted on the same directory, and every acknowledged Task
//! is still there in (at least) the last state a client saw.

use serde_json::json;
use std::path::Path;
use std::process::Child;
use std::time::Duration;

mod common;
use common::call;

struct Running {
    child: Child,
    url: String,
}

fn start(dir: &Path, cache: &Path) -> Running {
    let store = format!("wasm:builtin?dir={}", dir.display());
    let serving = common::serve(&["--store", &store], &["--echo-delay-ms", "300"], |c| {
        c.env("TOOLNEXUS_CACHE_DIR", cache);
    });
    Running {
        child: serving.child,
        url: serving.url,
    }
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

//! `tnstore serve` as a real process over the file-store component: killed with SIGKILL at
//! several points of a Task's life, restarted on the same directory, and every acknowledged Task
//! is still there in (at least) the last state a client saw.

use serde_json::json;
use std::path::Path;
use std::time::Duration;

use crate::common;
use crate::common::call;

/// `tnstore serve` over the component in `dir`, its agent answering after `echo_delay_ms`.
fn start(dir: &Path, cache: &Path, echo_delay_ms: u64) -> common::Serving {
    let store = format!("wasm:builtin?dir={}", dir.display());
    // Durability across a kill, not recovery (which `recovery.rs` tests): interrupted Tasks
    // are left as they were.
    common::serve(
        &["--store", &store],
        &[
            "--echo-delay-ms",
            &echo_delay_ms.to_string(),
            "--recovery",
            "off",
        ],
        |c| {
            c.env("TOOLNEXUS_CACHE_DIR", cache);
        },
    )
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
        // To be killed while working, the agent thinks for a minute: the Task cannot complete
        // between the wait and the kill however slow they are.
        let delay = if kill_after == "working" { 60_000 } else { 300 };
        let server = start(&dir, &cache, delay);
        for i in 0..3 {
            let sent = call(&client, &server.url, "SendMessage",
                json!({"configuration": {"blocking": false}, "message": {"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": format!("{kill_after} {i}")}]}})).await;
            let id = sent["result"]["id"]
                .as_str()
                .expect("acknowledged")
                .to_owned();
            acknowledged.push((id, "submitted".into()));
        }
        if kill_after != "submitted" {
            let (id, seen) = acknowledged.last_mut().unwrap();
            let got = common::wait_for_state(&client, &server.url, id, kill_after).await;
            *seen = got["status"]["state"].as_str().unwrap().to_owned();
        }
        server.kill();

        let restarted = start(&dir, &cache, 300);
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
        restarted.kill();
    }
    assert_eq!(acknowledged.len(), 9);
}

/// The limits of `tnstore serve` are its flags: a short header timeout closes a slowloris
/// connection, a background queue of two refuses a third send while the first two Tasks work,
/// and a small list cap cuts a page.
#[tokio::test(flavor = "multi_thread")]
async fn serve_flags_set_the_server_limits() {
    use std::io::{Read, Write};
    let server = common::serve(
        &["--store", "memory"],
        &[
            "--echo-delay-ms",
            "600000",
            "--header-timeout-ms",
            "300",
            "--max-background-tasks",
            "2",
            "--max-list-bytes",
            "1500",
        ],
        |_| {},
    );
    let url = server.url.clone();
    let client = reqwest::Client::new();

    // Half a header line, then nothing: the server hangs up (after 300 ms; the guard is well
    // under the default of 10 s, so only the flag can make this pass).
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let mut slow = std::net::TcpStream::connect(&addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    slow.write_all(b"POST / HTTP/1.1\r\nHost: loc").unwrap();
    let mut buf = [0u8; 256];
    match slow.read(&mut buf) {
        Ok(0) => {}
        Ok(n) => panic!("an answer to half a header: {:?}", &buf[..n]),
        Err(e) => assert!(
            !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "the connection is still open: {e}"
        ),
    }

    // Two agents at a time: the Tasks work for minutes, so a third send is refused.
    let long = "x".repeat(1000);
    let message = |text: &str| {
        json!({"configuration": {"blocking": false},
        "message": {"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": text}]}})
    };
    for _ in 0..2 {
        let sent = call(&client, &url, "SendMessage", message(&long)).await;
        assert!(sent["result"]["id"].is_string(), "{sent}");
    }
    let busy = call(&client, &url, "SendMessage", message(&long)).await;
    assert_eq!(busy["error"]["code"], -32000, "{busy}");

    // The two Tasks of over 1000 bytes each do not fit in 1500: one a page.
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let page = call(&client, &url, "ListTasks", json!({"pageToken": token})).await;
        assert_eq!(
            page["result"]["tasks"].as_array().unwrap().len(),
            1,
            "{page}"
        );
        pages += 1;
        token = page["result"]["nextPageToken"].as_str().unwrap().to_owned();
        if token.is_empty() || pages > 2 {
            break;
        }
    }
    assert_eq!(pages, 2, "two pages of one Task, and no third Task saved");
}

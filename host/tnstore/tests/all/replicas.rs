//! Two `tnstore serve` processes — two replicas of a runtime — on different ports over the same
//! PostgreSQL table: a Task created through one is read, cancelled and listed through the other.
//! And over one file directory (native and component): a cancel that lands between one
//! replica's read and its write is never overwritten.
//!
//! The server is `TOOLNEXUS_TEST_POSTGRES_URL` or a throwaway cluster (`tests/src/pg.rs`);
//! without either the test skips, unless `TOOLNEXUS_REQUIRE_POSTGRES=1`.

use serde_json::{Value, json};
use std::time::Duration;
use toolnexus_conformance::pg::{self, TableGuard};

use crate::common;

/// One replica: `tnstore serve` on a port of its own; killed when dropped.
struct Replica {
    serving: common::Serving,
}

impl Replica {
    fn start(selector: &str, echo_delay_ms: u64) -> Replica {
        Replica::start_with(selector, echo_delay_ms, &[])
    }

    fn start_with(selector: &str, echo_delay_ms: u64, extra: &[&str]) -> Replica {
        let delay = echo_delay_ms.to_string();
        let mut args = vec!["--echo-delay-ms", &delay];
        args.extend_from_slice(extra);
        let serving = common::serve(&["--store", selector], &args, |_| {});
        assert!(
            !serving.banner.contains(pg::PASSWORD),
            "the password is printed: {}",
            serving.banner
        );
        Replica { serving }
    }

    async fn call(&self, method: &str, params: Value) -> Value {
        common::call(&reqwest::Client::new(), &self.serving.url, method, params).await
    }

    /// Waits until the Task is in `state` (the other replica's agent works in the background)
    /// and returns it as this replica reads it; panics if it never gets there.
    async fn wait_for(&self, id: &str, state: &str) -> Value {
        common::wait_for_state(&reqwest::Client::new(), &self.serving.url, id, state).await
    }
}

fn send(text: &str, context: &str) -> Value {
    json!({"configuration": {"blocking": false}, "message": {"role": "user", "messageId": "m", "contextId": context,
        "parts": [{"kind": "text", "text": text}]}})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_created_on_one_replica_is_read_cancelled_and_listed_on_the_other() {
    let Some(server) = pg::server() else { return };
    let table = pg::unique_table("replicas");
    let _guard = TableGuard::new(&server, &table);
    let selector = server.selector(&format!("table={table}"));
    // A's agent thinks for a minute, so its Tasks stay `working` until cancelled; B's answers
    // at once.
    let a = Replica::start(&selector, 60_000);
    let b = Replica::start(&selector, 0);
    assert_ne!(a.serving.url, b.serving.url);

    // Created through A, read through B (once A's agent has it working).
    let sent = a.call("SendMessage", send("slow", "ctx-replicas")).await;
    let id = sent["result"]["id"]
        .as_str()
        .expect("acknowledged")
        .to_owned();
    assert_eq!(sent["result"]["status"]["state"], "submitted");
    let seen = b.wait_for(&id, "working").await;
    assert_eq!(seen["history"][0]["parts"][0]["text"], "slow");

    // Cancelled through B; A sees it cancelled.
    let cancelled = b.call("CancelTask", json!({"id": id})).await;
    assert_eq!(
        cancelled["result"]["status"]["state"], "canceled",
        "{cancelled}"
    );
    let on_a = a.call("GetTask", json!({"id": id})).await;
    assert_eq!(on_a["result"]["status"]["state"], "canceled", "{on_a}");
    let again = a.call("CancelTask", json!({"id": id})).await;
    assert_eq!(again["error"]["code"], -32002, "already cancelled: {again}");

    // The other way round: created and completed through B, read through A.
    let sent = b.call("SendMessage", send("fast", "ctx-replicas")).await;
    let fast = sent["result"]["id"]
        .as_str()
        .expect("acknowledged")
        .to_owned();
    let done = a.wait_for(&fast, "completed").await;
    assert_eq!(done["artifacts"][0]["parts"][0]["text"], "fast");

    // Listed through either, with filters, newest status first: `fast` completed after `id`
    // was cancelled.
    let want = vec![fast.clone(), id.clone()];
    for replica in [&a, &b] {
        let listed = replica
            .call(
                "ListTasks",
                json!({"contextId": "ctx-replicas", "pageSize": 10}),
            )
            .await;
        let ids: Vec<&str> = listed["result"]["tasks"]
            .as_array()
            .expect("a page")
            .iter()
            .map(|t| t["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, want, "{listed}");
        let cancelled = replica
            .call("ListTasks", json!({"status": "TASK_STATE_CANCELED"}))
            .await;
        assert_eq!(
            cancelled["result"]["tasks"][0]["id"],
            id.as_str(),
            "{cancelled}"
        );
        assert_eq!(cancelled["result"]["tasks"].as_array().unwrap().len(), 1);
    }

    // Deleted through A, gone for B.
    let deleted = a.call("DeleteTask", json!({"id": fast})).await;
    assert_eq!(deleted["result"]["deleted"], true, "{deleted}");
    let gone = b.call("GetTask", json!({"id": fast})).await;
    assert_eq!(gone["error"]["code"], -32001, "{gone}");
}

/// Both file stores, each over a directory of its own under `root`: `(kind, selector)`.
fn file_selectors(root: &std::path::Path) -> [(&'static str, String); 2] {
    [
        ("native", format!("file:{}", root.join("native").display())),
        (
            "component",
            format!("wasm:builtin?dir={}", root.join("component").display()),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_between_the_agents_read_and_write_is_never_overwritten_over_files() {
    let tmp = tempfile::tempdir().unwrap();
    for (kind, selector) in file_selectors(tmp.path()) {
        // A's agent answers at once, but waits 1.5 s between reading the Task for its final
        // save and saving it: B's cancel lands in between.
        let a = Replica::start_with(&selector, 0, &["--stage-finish-delay-ms", "1500"]);
        let b = Replica::start(&selector, 0);
        let sent = a.call("SendMessage", send("race", "ctx-race")).await;
        let id = sent["result"]["id"]
            .as_str()
            .expect("acknowledged")
            .to_owned();
        b.wait_for(&id, "working").await;
        let cancelled = b.call("CancelTask", json!({"id": id})).await;
        assert_eq!(
            cancelled["result"]["status"]["state"], "canceled",
            "{kind}: {cancelled}"
        );
        // A's staged save comes after the cancel: it must lose (a conflict on the version it
        // read), read again, and leave the Task cancelled.
        tokio::time::sleep(Duration::from_millis(2500)).await;
        for replica in [&a, &b] {
            let got = replica.call("GetTask", json!({"id": id})).await;
            assert_eq!(
                got["result"]["status"]["state"], "canceled",
                "{kind}: the cancel was overwritten: {got}"
            );
            // The reply artifact is its own update before the staged completion: present
            // (whole) when it was saved before the cancel, absent when the cancel came first.
            if let Some(artifacts) = got["result"].get("artifacts") {
                assert_eq!(artifacts[0]["parts"][0]["text"], "race", "{kind}: {got}");
            }
        }
    }
}

/// A subscriber on replica B follows a Task whose agent runs on replica A: B reads every change
/// from the shared store (its own saves wake it; A's reach it by polling), so the stream carries
/// A's partial artifacts and ends at A's completion. Over one file directory, native and
/// component.
#[tokio::test(flavor = "multi_thread")]
async fn a_subscriber_on_one_replica_follows_a_task_running_on_the_other() {
    let tmp = tempfile::tempdir().unwrap();
    for (kind, selector) in file_selectors(tmp.path()) {
        let a = Replica::start_with(&selector, 2000, &["--recovery", "off"]);
        let b = Replica::start_with(&selector, 0, &["--recovery", "off"]);
        let client = reqwest::Client::new();
        let sent: Value = client
            .post(format!("{}message:send", a.serving.url))
            .header("A2A-Version", "1.0")
            .json(
                &json!({"message": {"role": "ROLE_USER", "messageId": format!("m-{kind}"),
                "parts": [{"text": "across two replicas"}]},
                "configuration": {"returnImmediately": true}}),
            )
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = sent["task"]["id"]
            .as_str()
            .expect("acknowledged")
            .to_owned();
        let stream = client
            .get(format!("{}tasks/{id}:subscribe", b.serving.url))
            .header("A2A-Version", "1.0")
            .send()
            .await
            .unwrap();
        assert_eq!(stream.headers()["content-type"], "text/event-stream");
        let text = tokio::time::timeout(Duration::from_secs(30), stream.text())
            .await
            .expect("the stream ends with the Task")
            .unwrap();
        let events: Vec<Value> = text
            .split("\n\n")
            .filter_map(|frame| frame.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).unwrap())
            .collect();
        assert_eq!(events[0]["task"]["id"], id.as_str(), "{kind}: {events:?}");
        let replies: String = events
            .iter()
            .filter_map(|e| e.get("artifactUpdate"))
            .flat_map(|u| u["artifact"]["parts"].as_array().unwrap().iter())
            .map(|p| p["text"].as_str().unwrap())
            .collect();
        let snapshot: String = events[0]["task"]["artifacts"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|a| a["parts"].as_array().unwrap().iter())
            .map(|p| p["text"].as_str().unwrap())
            .collect();
        assert_eq!(
            format!("{snapshot}{replies}"),
            "across two replicas",
            "{kind}: {events:?}"
        );
        assert_eq!(
            events.last().unwrap()["statusUpdate"]["status"]["state"],
            "TASK_STATE_COMPLETED",
            "{kind}: {events:?}"
        );
    }
}

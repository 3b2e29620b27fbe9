//! Streams: the task then its updates until completion, and subscribing to a running task
//! (a terminal one is refused).

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn streams_give_the_task_then_its_updates_and_end_at_completion() {
    let server = start(slow(400)).await;
    for (path, version) in [("/", "1.0"), ("/message:stream", "1.0"), ("/", "")] {
        let message = if version.is_empty() {
            json!({"role": "user", "messageId": uuid(), "parts": [{"kind": "text", "text": "one two three four"}]})
        } else {
            message_v1("one two three four")
        };
        let body = if path == "/" {
            let method = if version.is_empty() {
                "message/stream"
            } else {
                "SendStreamingMessage"
            };
            json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": {"message": message}})
        } else {
            json!({"message": message})
        };
        let events = server.events(path, version, body).await;
        let events: Vec<Value> = events
            .into_iter()
            .map(|e| if path == "/" { e["result"].clone() } else { e })
            .collect();
        let text: String = if version == "1.0" {
            assert_eq!(
                events[0]["task"]["status"]["state"], "TASK_STATE_SUBMITTED",
                "{events:?}"
            );
            let last = events.last().unwrap();
            assert_eq!(
                last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
                "{events:?}"
            );
            let chunks: Vec<&Value> = events
                .iter()
                .filter_map(|e| e.get("artifactUpdate"))
                .collect();
            assert!(chunks.len() >= 2, "partial artifacts streamed: {events:?}");
            assert_eq!(chunks[0]["append"], false);
            assert!(chunks[1..].iter().all(|c| c["append"] == true));
            chunks
                .iter()
                .flat_map(|c| c["artifact"]["parts"].as_array().unwrap().iter())
                .map(|p| p["text"].as_str().unwrap())
                .collect()
        } else {
            assert_eq!(events[0]["kind"], "task", "{events:?}");
            let last = events.last().unwrap();
            assert_eq!(last["kind"], "status-update");
            assert_eq!(last["status"]["state"], "completed");
            assert_eq!(last["final"], true);
            events
                .iter()
                .filter(|e| e["kind"] == "artifact-update")
                .flat_map(|c| c["artifact"]["parts"].as_array().unwrap().iter())
                .map(|p| p["text"].as_str().unwrap())
                .collect()
        };
        assert_eq!(text, "one two three four", "{path} {version}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn subscribing_follows_a_running_task_and_refuses_a_terminal_one() {
    // Long enough that the subscribe lands while the Task runs, on a loaded machine too.
    let server = start(slow(2000)).await;
    let sent = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": message_v1("a b"), "configuration": {"returnImmediately": true}}),
        )
        .await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    let events = server
        .events(&format!("/tasks/{id}:subscribe"), "1.0", json!({}))
        .await;
    assert_eq!(events[0]["task"]["id"], id.as_str(), "{events:?}");
    assert_eq!(
        events.last().unwrap()["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let refused = server
        .rpc("1.0", "SubscribeToTask", json!({"id": id}))
        .await;
    assert_eq!(refused["error"]["code"], -32004, "{refused}");
    let missing = server
        .rpc("", "tasks/resubscribe", json!({"id": "nope"}))
        .await;
    assert_eq!(missing["error"]["code"], -32001, "{missing}");
}

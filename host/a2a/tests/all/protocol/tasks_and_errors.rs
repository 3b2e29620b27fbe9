//! Tasks over REST and JSON-RPC: send, list (artifacts only when asked), cancel, a task
//! continued after input was required, and the error codes of A2A 1.0.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn rest_sends_lists_cancels_and_answers_errors_with_http_statuses() {
    let server = start(slow(3000)).await;
    let (status, sent) = server
        .rest(
            "POST",
            "/message:send",
            Some(json!({"message": message_v1("wait for me"), "configuration": {"returnImmediately": true}})),
        )
        .await;
    assert_eq!(status, 200, "{sent}");
    assert_eq!(sent["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    let (_, page) = server.rest("GET", "/tasks?pageSize=10", None).await;
    assert_eq!(page["tasks"][0]["id"], id.as_str(), "{page}");
    assert_eq!(page["pageSize"], 10);
    assert_eq!(page["totalSize"], 1);
    let (status, canceled) = server
        .rest("POST", &format!("/tasks/{id}:cancel"), None)
        .await;
    assert_eq!(status, 200, "{canceled}");
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let (status, again) = server
        .rest("POST", &format!("/tasks/{id}:cancel"), None)
        .await;
    assert_eq!(status, 400, "{again}");
    assert_eq!(again["error"]["status"], "FAILED_PRECONDITION");
    assert_eq!(
        again["error"]["details"][0]["reason"],
        "TASK_NOT_CANCELABLE"
    );
    let (status, missing) = server.rest("GET", "/tasks/no-such-task", None).await;
    assert_eq!(status, 404, "{missing}");
    assert_eq!(missing["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
    for bad in [
        "/tasks?pageSize=0",
        "/tasks?pageSize=101",
        "/tasks?status=NOPE",
        "/tasks?historyLength=-1",
    ] {
        let (status, refused) = server.rest("GET", bad, None).await;
        assert_eq!(status, 400, "{bad}: {refused}");
        assert_eq!(
            refused["error"]["details"][0]["reason"], "INVALID_PARAMS",
            "{bad}"
        );
    }
    // The canceled agent stopped: nothing is saved after the cancel.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let stored = server.stores.get("").get(&id).await.unwrap().unwrap();
    assert_eq!(task_state(&stored), "canceled");
    assert!(stored.get("artifacts").is_none(), "{stored}");
}

#[tokio::test(flavor = "multi_thread")]
async fn list_shows_artifacts_only_when_asked() {
    let server = start(ServerConfig::default()).await;
    server
        .rpc("1.0", "SendMessage", json!({"message": message_v1("x")}))
        .await;
    let plain = server.rpc("1.0", "ListTasks", json!({})).await;
    assert!(
        plain["result"]["tasks"][0].get("artifacts").is_none(),
        "{plain}"
    );
    assert_eq!(plain["result"]["pageSize"], 50);
    let full = server
        .rpc(
            "1.0",
            "ListTasks",
            json!({"includeArtifacts": true, "historyLength": 0}),
        )
        .await;
    let task = &full["result"]["tasks"][0];
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "x", "{full}");
    assert!(task.get("history").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn input_required_then_continued_by_task_id() {
    let server = start(ServerConfig::default()).await;
    let asked = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": message_v1("ask: please")}),
        )
        .await;
    let task = &asked["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{asked}"
    );
    assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT");
    let id = task["id"].as_str().unwrap();
    let context = task["contextId"].as_str().unwrap();
    let mut next = message_v1("the answer");
    next["taskId"] = json!(id);
    let done = server
        .rpc("1.0", "SendMessage", json!({"message": next}))
        .await;
    let task = &done["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(task["id"], id);
    assert_eq!(task["contextId"], context);
    // The question the agent asked moved from the status to the history, between the two
    // user messages, as the official SDKs keep a conversation.
    let history = task["history"].as_array().unwrap();
    assert_eq!(history.len(), 3, "{done}");
    assert_eq!(history[1]["role"], "ROLE_AGENT");
    assert_eq!(history[1]["parts"][0]["text"], "what should I echo?");
    assert_eq!(history[2]["parts"][0]["text"], "the answer");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "the answer");
    // A terminal Task takes no more messages; an unknown one is not found; a foreign context
    // is refused.
    let mut late = message_v1("late");
    late["taskId"] = json!(id);
    let refused = server
        .rpc("1.0", "SendMessage", json!({"message": late}))
        .await;
    assert_eq!(refused["error"]["code"], -32004, "{refused}");
    let mut unknown = message_v1("?");
    unknown["taskId"] = json!("no-such-task");
    let missing = server
        .rpc("1.0", "SendMessage", json!({"message": unknown}))
        .await;
    assert_eq!(missing["error"]["code"], -32001, "{missing}");
    let asked = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": message_v1("ask: again")}),
        )
        .await;
    let mut foreign = message_v1("x");
    foreign["taskId"] = asked["result"]["task"]["id"].clone();
    foreign["contextId"] = json!("another-context");
    let refused = server
        .rpc("1.0", "SendMessage", json!({"message": foreign}))
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_other_error_codes_of_a2a_1_0() {
    let server = start(ServerConfig::default()).await;
    let push = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": message_v1("x"),
            "configuration": {"taskPushNotificationConfig": {"url": "https://example.com/hook"}}}),
        )
        .await;
    assert_eq!(push["error"]["code"], -32003, "{push}");
    let push = server
        .rpc(
            "1.0",
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "t"}),
        )
        .await;
    assert_eq!(push["error"]["code"], -32003, "{push}");
    let modes = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": message_v1("x"),
            "configuration": {"acceptedOutputModes": ["image/png"]}}),
        )
        .await;
    assert_eq!(modes["error"]["code"], -32005, "{modes}");
    let fine = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": message_v1("x"),
            "configuration": {"acceptedOutputModes": ["image/png", "text/*"]}}),
        )
        .await;
    assert!(fine["result"]["task"].is_object(), "{fine}");
    let card = server.rpc("1.0", "GetExtendedAgentCard", json!({})).await;
    // No extended card is declared: 1.0 says UnsupportedOperation.
    assert_eq!(card["error"]["code"], -32004, "{card}");
    let unknown = server.rpc("1.0", "NoSuchMethod", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let no_id = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}),
        )
        .await;
    assert_eq!(no_id["error"]["code"], -32602, "{no_id}");
    assert!(
        no_id["error"]["message"]
            .as_str()
            .unwrap()
            .contains("messageId")
    );
}

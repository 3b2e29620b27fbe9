//! What A2A 1.0.1 settled that the server follows over real HTTP: the HTTP statuses of its error
//! table (§5.4), `application/a2a+json` answers of the HTTP+JSON binding (§11.1) beside
//! JSON-RPC's `application/json` (§9.1), requests taken in either, and a
//! `google.rpc.BadRequest` naming the field of every refused argument, in both bindings.

use reqwest::header::CONTENT_TYPE;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use toolnexus_a2a::{EchoAgent, ServerConfig, ServiceConfig, serve};
use toolnexus_core::InMemoryTaskStore;

/// A server over a memory store whose echo agent answers at once; its base URL (no trailing
/// slash).
async fn start() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let config = ServerConfig {
        service: ServiceConfig {
            agent: Arc::new(EchoAgent {
                delay: Duration::ZERO,
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    tokio::spawn(serve(listener, Arc::new(InMemoryTaskStore::new()), config));
    base
}

/// An HTTP answer: status, `Content-Type`, body as JSON.
struct Answer {
    status: u16,
    content_type: String,
    body: Value,
}

async fn answer(request: reqwest::RequestBuilder) -> Answer {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    Answer {
        status,
        content_type,
        body,
    }
}

fn message(text: &str) -> Value {
    json!({"role": "ROLE_USER", "messageId": format!("m-{text}"), "parts": [{"text": text}]})
}

/// An A2A 1.0 HTTP+JSON request, its body sent as `media_type`.
fn rest(
    base: &str,
    method: &str,
    path: &str,
    body: Option<(&str, Value)>,
) -> reqwest::RequestBuilder {
    let client = reqwest::Client::new();
    let url = format!("{base}{path}");
    let request = match method {
        "GET" => client.get(url),
        _ => client.post(url),
    }
    .header("A2A-Version", "1.0");
    match body {
        Some((media_type, body)) => request
            .header(CONTENT_TYPE, media_type)
            .body(body.to_string()),
        None => request,
    }
}

/// An A2A 1.0 JSON-RPC call, its body sent as `media_type`.
fn rpc(base: &str, media_type: &str, method: &str, params: Value) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(format!("{base}/"))
        .header("A2A-Version", "1.0")
        .header(CONTENT_TYPE, media_type)
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string())
}

/// A completed Task's id, sent over HTTP+JSON.
async fn completed_task(base: &str) -> String {
    let sent = answer(rest(
        base,
        "POST",
        "/message:send",
        Some(("application/a2a+json", json!({"message": message("done")}))),
    ))
    .await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    assert_eq!(sent.body["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    sent.body["task"]["id"].as_str().unwrap().to_owned()
}

fn assert_rest_error(got: &Answer, status: u16, status_name: &str, reason: &str) {
    assert_eq!(got.status, status, "{reason}: {}", got.body);
    assert_eq!(got.body["error"]["code"], status, "{}", got.body);
    assert_eq!(got.body["error"]["status"], status_name, "{}", got.body);
    let info = &got.body["error"]["details"][0];
    assert_eq!(info["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
    assert_eq!(info["reason"], reason, "{}", got.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn a2a_errors_are_http_400_failed_precondition_told_apart_by_their_reason() {
    let base = start().await;
    let id = completed_task(&base).await;
    let cancel = answer(rest(&base, "POST", &format!("/tasks/{id}:cancel"), None)).await;
    assert_rest_error(&cancel, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE");
    let mut more = message("more");
    more["taskId"] = json!(id);
    let follow_up = json!({"message": more});
    let follow_up = answer(rest(
        &base,
        "POST",
        "/message:send",
        Some(("application/json", follow_up)),
    ))
    .await;
    assert_rest_error(
        &follow_up,
        400,
        "FAILED_PRECONDITION",
        "UNSUPPORTED_OPERATION",
    );
    let push = answer(rest(
        &base,
        "GET",
        &format!("/tasks/{id}/pushNotificationConfigs"),
        None,
    ))
    .await;
    assert_rest_error(
        &push,
        400,
        "FAILED_PRECONDITION",
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
    );
    let version = answer(
        reqwest::Client::new()
            .get(format!("{base}/tasks"))
            .header("A2A-Version", "9.9"),
    )
    .await;
    assert_rest_error(
        &version,
        400,
        "FAILED_PRECONDITION",
        "VERSION_NOT_SUPPORTED",
    );
    let missing = answer(rest(&base, "GET", "/tasks/no-such-task", None)).await;
    assert_rest_error(&missing, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    // JSON-RPC keeps its codes, in an HTTP 200 answer.
    let rpc_cancel = answer(rpc(
        &base,
        "application/json",
        "CancelTask",
        json!({"id": id}),
    ))
    .await;
    assert_eq!(rpc_cancel.status, 200);
    assert_eq!(
        rpc_cancel.body["error"]["code"], -32002,
        "{}",
        rpc_cancel.body
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn http_json_answers_are_a2a_json_and_requests_are_taken_in_either_media_type() {
    let base = start().await;
    let id = completed_task(&base).await;
    let sent_as_json = answer(rest(
        &base,
        "POST",
        "/message:send",
        Some((
            "application/json",
            json!({"message": message("plain json")}),
        )),
    ))
    .await;
    assert_eq!(sent_as_json.status, 200, "{}", sent_as_json.body);
    assert_eq!(sent_as_json.content_type, "application/a2a+json");
    let got = answer(rest(&base, "GET", &format!("/tasks/{id}"), None)).await;
    assert_eq!(
        (got.status, got.content_type.as_str()),
        (200, "application/a2a+json")
    );
    let error = answer(rest(&base, "GET", "/tasks/no-such-task", None)).await;
    assert_eq!(
        (error.status, error.content_type.as_str()),
        (404, "application/a2a+json")
    );
    // A2A 0.3's HTTP+JSON binding (under `/v1`) names `application/json`.
    let v03 = answer(reqwest::Client::new().get(format!("{base}/v1/tasks/{id}"))).await;
    assert_eq!(v03.status, 200, "{}", v03.body);
    assert_eq!(v03.content_type, "application/json");
    // JSON-RPC answers `application/json` (§9.1), results and errors, whatever it was sent as.
    for media_type in ["application/json", "application/a2a+json"] {
        let rpc_got = answer(rpc(&base, media_type, "GetTask", json!({"id": id}))).await;
        assert_eq!(
            rpc_got.body["result"]["id"],
            id.as_str(),
            "{}",
            rpc_got.body
        );
        assert_eq!(rpc_got.content_type, "application/json");
        let rpc_error = answer(rpc(&base, media_type, "GetTask", json!({"id": "none"}))).await;
        assert_eq!(
            rpc_error.body["error"]["code"], -32001,
            "{}",
            rpc_error.body
        );
        assert_eq!(rpc_error.content_type, "application/json");
    }
}

/// The `google.rpc.BadRequest` among `details`, after the `ErrorInfo`: its one violated field.
fn violated_field(details: &Value) -> &str {
    assert_eq!(details[0]["reason"], "INVALID_PARAMS", "{details}");
    let bad_request = &details[1];
    assert_eq!(
        bad_request["@type"], "type.googleapis.com/google.rpc.BadRequest",
        "{details}"
    );
    let violations = bad_request["fieldViolations"].as_array().unwrap();
    assert_eq!(violations.len(), 1, "{details}");
    assert!(
        violations[0]["description"]
            .as_str()
            .is_some_and(|d| !d.is_empty()),
        "{details}"
    );
    violations[0]["field"].as_str().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn refused_arguments_name_their_field_in_a_bad_request_in_both_bindings() {
    let base = start().await;
    let rest_page = answer(rest(&base, "GET", "/tasks?pageSize=0", None)).await;
    assert_rest_error(&rest_page, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    assert_eq!(
        violated_field(&rest_page.body["error"]["details"]),
        "pageSize"
    );
    let rpc_page = answer(rpc(
        &base,
        "application/json",
        "ListTasks",
        json!({"pageSize": 0}),
    ))
    .await;
    assert_eq!(rpc_page.body["error"]["code"], -32602, "{}", rpc_page.body);
    assert_eq!(violated_field(&rpc_page.body["error"]["data"]), "pageSize");
    let no_parts = json!({"role": "ROLE_USER", "messageId": "m-empty", "parts": []});
    let rpc_send = answer(rpc(
        &base,
        "application/json",
        "SendMessage",
        json!({"message": no_parts}),
    ))
    .await;
    assert_eq!(
        violated_field(&rpc_send.body["error"]["data"]),
        "message.parts"
    );
    let bad_part = json!({"role": "ROLE_USER", "messageId": "m-bad", "parts": [{"nothing": 1}]});
    let rest_send = answer(rest(
        &base,
        "POST",
        "/message:send",
        Some(("application/a2a+json", json!({"message": bad_part}))),
    ))
    .await;
    assert_rest_error(&rest_send, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    assert_eq!(
        violated_field(&rest_send.body["error"]["details"]),
        "message.parts[0]"
    );
    // Other errors carry the ErrorInfo alone.
    let missing = answer(rpc(
        &base,
        "application/json",
        "GetTask",
        json!({"id": "none"}),
    ))
    .await;
    assert_eq!(missing.body["error"]["data"].as_array().unwrap().len(), 1);
}

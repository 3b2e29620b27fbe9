//! What every echo agent must do, checked through a real A2A server: the native `EchoAgent`,
//! the Rust echo component (`guest/agent-echo`) and the echo agent in JavaScript
//! (`js/agent/`) all pass the same checks.
//!
//! Each function serves the agent it is given with `toolnexus_a2a::serve` over an in-memory
//! store, on a loopback port, and talks to it as an A2A 1.0 client does (JSON-RPC over HTTP,
//! server-sent events for streams):
//!
//! - [`echo_agent_suite`], for an agent configured with [`ECHO_SUITE_DELAY`]: the reply in
//!   pieces spread over the delay, streamed in order (the first creates the artifact, the
//!   others are appended, the last is the last chunk); `ask:` then the continuation; a cancel
//!   in the middle of the delay ends the Task `canceled` before the reply is whole.
//! - [`echo_agent_suite_without_delay`], for an agent without a delay: the reply in one
//!   update (not appended, the last chunk), then `completed` with no status message.

use crate::a2a_client::STATE_DEADLINE;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use toolnexus::InMemoryTaskStore;
use toolnexus_a2a::{Agent, ServerConfig, ServiceConfig, serve};
use toolnexus_a2a_protocol::agent::{ECHO_QUESTION, echo_artifact_id, pieces};

/// The delay an agent given to [`echo_agent_suite`] must be configured with
/// (`EchoAgent { delay }`, `delay-ms=1000` for the components): long enough that a cancel sent
/// when the first piece arrives lands before the last one, on a loaded machine too.
pub const ECHO_SUITE_DELAY: Duration = Duration::from_millis(1000);

/// Runs every check of an echo agent configured with [`ECHO_SUITE_DELAY`].
///
/// # Panics
///
/// On the first check the agent fails, saying what it did instead.
pub async fn echo_agent_suite(agent: Arc<dyn Agent>) {
    let server = EchoServer::start(agent).await;
    streams_the_reply_in_pieces_over_the_delay(&server).await;
    asks_then_echoes_the_continuation(&server).await;
    a_cancel_mid_delay_ends_the_task_canceled(&server).await;
}

/// Runs every check of an echo agent configured without a delay.
///
/// # Panics
///
/// On the first check the agent fails, saying what it did instead.
pub async fn echo_agent_suite_without_delay(agent: Arc<dyn Agent>) {
    let server = EchoServer::start(agent).await;
    replies_in_one_last_chunk(&server).await;
    asks_then_echoes_the_continuation(&server).await;
}

/// A text of two text parts and a data part (left out of the reply), and the reply.
fn two_text_parts() -> (Vec<Value>, &'static str) {
    (
        vec![
            json!({"text": "one two three"}),
            json!({"data": {"not": "echoed"}, "mediaType": "application/json"}),
            json!({"text": "four five six seven eight"}),
        ],
        "one two three\nfour five six seven eight",
    )
}

async fn replies_in_one_last_chunk(server: &EchoServer) {
    let (parts, reply) = two_text_parts();
    let events = server.stream(user_message(parts)).await.rest().await;
    let id = events[0]["task"]["id"]
        .as_str()
        .expect("a Task first")
        .to_owned();
    let chunks = artifact_updates(&events);
    assert_eq!(chunks.len(), 1, "one artifact update: {events:#?}");
    assert_chunk(&chunks[0], &id, reply, false, true);
    let last = final_status(&events);
    assert_eq!(last["state"], "TASK_STATE_COMPLETED", "{events:#?}");
    assert!(
        last.get("message").is_none(),
        "completed with no message: {last}"
    );
    let task = server.get(&id).await;
    assert_eq!(stored_reply(&task, &id), reply, "{task}");
}

async fn streams_the_reply_in_pieces_over_the_delay(server: &EchoServer) {
    let (parts, reply) = two_text_parts();
    let sent = Instant::now();
    let events = server.stream(user_message(parts)).await.rest().await;
    let elapsed = sent.elapsed();
    let id = events[0]["task"]["id"]
        .as_str()
        .expect("a Task first")
        .to_owned();
    let chunks = artifact_updates(&events);
    let expected = pieces(reply, 4);
    assert_eq!(expected.len(), 4, "the suite's text cuts into four pieces");
    assert_eq!(
        chunks.len(),
        expected.len(),
        "one update per piece: {events:#?}"
    );
    for (i, (chunk, piece)) in chunks.iter().zip(&expected).enumerate() {
        assert_chunk(chunk, &id, piece, i > 0, i + 1 == expected.len());
    }
    // Every piece waits its share of the delay first, so the last comes after all of it.
    assert!(
        elapsed >= ECHO_SUITE_DELAY,
        "the reply was spread over {elapsed:?}, not over the delay"
    );
    let last = final_status(&events);
    assert_eq!(last["state"], "TASK_STATE_COMPLETED", "{events:#?}");
    let updates_after_completion = events
        .iter()
        .skip_while(|e| e["statusUpdate"]["status"]["state"] != "TASK_STATE_COMPLETED")
        .filter(|e| e.get("artifactUpdate").is_some())
        .count();
    assert_eq!(updates_after_completion, 0, "{events:#?}");
    let task = server.get(&id).await;
    assert_eq!(stored_reply(&task, &id), reply, "{task}");
}

async fn asks_then_echoes_the_continuation(server: &EchoServer) {
    let asked = server
        .rpc(
            "SendMessage",
            json!({"message": user_message(vec![json!({"text": "ask: anything"})])}),
        )
        .await;
    let task = &asked["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{asked}"
    );
    assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT", "{asked}");
    assert_eq!(
        task["status"]["message"]["parts"][0]["text"], ECHO_QUESTION,
        "{asked}"
    );
    assert!(
        task.get("artifacts").is_none(),
        "nothing echoed yet: {asked}"
    );
    let id = task["id"].as_str().unwrap().to_owned();
    let context = task["contextId"].clone();

    let mut next = user_message(vec![json!({"text": "the answer"})]);
    next["taskId"] = json!(id);
    let done = server.rpc("SendMessage", json!({"message": next})).await;
    let task = &done["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(task["id"], id.as_str());
    assert_eq!(task["contextId"], context);
    let history = task["history"].as_array().expect("a history");
    assert_eq!(history.len(), 3, "{done}");
    assert_eq!(history[1]["role"], "ROLE_AGENT");
    assert_eq!(history[1]["parts"][0]["text"], ECHO_QUESTION);
    assert_eq!(stored_reply(task, &id), "the answer", "{done}");
}

async fn a_cancel_mid_delay_ends_the_task_canceled(server: &EchoServer) {
    let text = "a b c d e f g h";
    let mut stream = server
        .stream(user_message(vec![json!({"text": text})]))
        .await;
    let first = stream.next().await.expect("the Task first");
    let id = first["task"]["id"]
        .as_str()
        .expect("a Task first")
        .to_owned();
    let mut seen = vec![first];
    // Cancel as soon as the first piece is out, with three quarters of the delay to go.
    loop {
        let event = stream.next().await.expect("a piece before the stream ends");
        let is_piece = event.get("artifactUpdate").is_some();
        seen.push(event);
        if is_piece {
            break;
        }
    }
    let canceled = server.rpc("CancelTask", json!({"id": id})).await;
    assert_eq!(
        canceled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    seen.extend(stream.rest().await);
    let last = final_status(&seen);
    assert_eq!(last["state"], "TASK_STATE_CANCELED", "{seen:#?}");
    let chunks = artifact_updates(&seen);
    assert!(
        chunks.iter().all(|c| c["lastChunk"] != true),
        "the reply stopped before its last piece: {seen:#?}"
    );
    let task = server.get(&id).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_CANCELED", "{task}");
    let partial = stored_reply(&task, &id);
    assert!(
        partial.len() < text.len() && text.starts_with(&partial),
        "a strict prefix of the reply was kept, not {partial:?}"
    );
}

/// The A2A 1.0 server under test.
struct EchoServer {
    url: String,
    client: reqwest::Client,
}

impl EchoServer {
    async fn start(agent: Arc<dyn Agent>) -> EchoServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let config = ServerConfig {
            service: ServiceConfig {
                agent,
                ..Default::default()
            },
            ..Default::default()
        };
        tokio::spawn(serve(listener, Arc::new(InMemoryTaskStore::new()), config));
        EchoServer {
            url,
            client: reqwest::Client::new(),
        }
    }

    /// One A2A 1.0 JSON-RPC call; the whole response.
    async fn rpc(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let call = async {
            self.client
                .post(&self.url)
                .header("A2A-Version", "1.0")
                .json(&body)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap()
        };
        tokio::time::timeout(STATE_DEADLINE, call)
            .await
            .unwrap_or_else(|_| panic!("{method} took over {STATE_DEADLINE:?}"))
    }

    /// The Task `id` as `GetTask` answers it.
    async fn get(&self, id: &str) -> Value {
        let got = self.rpc("GetTask", json!({"id": id})).await;
        assert!(got["result"].is_object(), "GetTask {id}: {got}");
        got["result"].clone()
    }

    /// `SendStreamingMessage` with `message`: its event stream.
    async fn stream(&self, message: Value) -> Events {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
            "params": {"message": message}});
        let response = self
            .client
            .post(&self.url)
            .header("A2A-Version", "1.0")
            .json(&body)
            .send()
            .await
            .unwrap();
        let kind = response.headers().get("content-type").cloned();
        assert!(
            kind.as_ref()
                .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream")),
            "SendStreamingMessage answered {kind:?}: {}",
            response.text().await.unwrap_or_default()
        );
        Events {
            response,
            pending: Vec::new(),
        }
    }
}

/// A server-sent event stream of JSON-RPC results, read one event at a time.
struct Events {
    response: reqwest::Response,
    pending: Vec<u8>,
}

impl Events {
    /// The next event's `result`, or `None` at the end of the stream. Panics after
    /// [`STATE_DEADLINE`] without one.
    async fn next(&mut self) -> Option<Value> {
        let read = async {
            loop {
                if let Some(end) = self.pending.windows(2).position(|w| w == b"\n\n") {
                    let frame: Vec<u8> = self.pending.drain(..end + 2).collect();
                    let Some(data) = frame.strip_prefix(b"data: ") else {
                        continue; // a keep-alive comment
                    };
                    let event: Value = serde_json::from_slice(data.trim_ascii_end())
                        .unwrap_or_else(|e| panic!("an event that is not JSON ({e}): {data:?}"));
                    assert!(event.get("error").is_none(), "the stream failed: {event}");
                    return Some(event["result"].clone());
                }
                match self.response.chunk().await.unwrap() {
                    Some(chunk) => self.pending.extend_from_slice(&chunk),
                    None => return None,
                }
            }
        };
        tokio::time::timeout(STATE_DEADLINE, read)
            .await
            .unwrap_or_else(|_| panic!("no event within {STATE_DEADLINE:?}"))
    }

    /// Every event left, to the end of the stream.
    async fn rest(mut self) -> Vec<Value> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        events
    }
}

/// An A2A 1.0 user message of these parts, with an id of its own.
fn user_message(parts: Vec<Value>) -> Value {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    json!({"role": "ROLE_USER", "messageId": format!("suite-{}-{n}", std::process::id()),
        "parts": parts})
}

/// The `artifactUpdate` members of `events`, in order.
fn artifact_updates(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter_map(|e| e.get("artifactUpdate").cloned())
        .collect()
}

/// The status of the stream's last event, which must be a status update.
fn final_status(events: &[Value]) -> &Value {
    let last = events.last().expect("a stream with events");
    assert!(
        last.get("statusUpdate").is_some(),
        "the stream ends with a status update: {events:#?}"
    );
    &last["statusUpdate"]["status"]
}

/// Checks one artifact update of the echo agent's reply in Task `id`.
fn assert_chunk(chunk: &Value, id: &str, text: &str, append: bool, last_chunk: bool) {
    let artifact = &chunk["artifact"];
    assert_eq!(
        artifact["artifactId"],
        echo_artifact_id(id).as_str(),
        "{chunk}"
    );
    assert_eq!(artifact["name"], "reply", "{chunk}");
    assert_eq!(artifact["parts"], json!([{"text": text}]), "{chunk}");
    assert_eq!(
        chunk["append"].as_bool().unwrap_or(false),
        append,
        "append: {chunk}"
    );
    assert_eq!(
        chunk["lastChunk"].as_bool().unwrap_or(false),
        last_chunk,
        "lastChunk: {chunk}"
    );
}

/// The text of the reply artifact of Task `id` (A2A 1.0 JSON) as stored: its parts joined.
fn stored_reply(task: &Value, id: &str) -> String {
    let artifacts = task["artifacts"].as_array().expect("an artifact");
    assert_eq!(artifacts.len(), 1, "one artifact: {task}");
    assert_eq!(artifacts[0]["artifactId"], echo_artifact_id(id).as_str());
    artifacts[0]["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .map(|p| p["text"].as_str().expect("text parts"))
        .collect()
}

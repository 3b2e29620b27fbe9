//! Talking to an A2A server under test as a client does: JSON-RPC calls, and waiting for a
//! Task to reach a state by following its subscription stream, so a test wakes on the change
//! itself rather than polling for it.

use serde_json::{Value, json};
use std::time::Duration;

/// How long a Task may take to reach the state a test waits for, on a loaded machine too.
pub const STATE_DEADLINE: Duration = Duration::from_secs(30);

/// One JSON-RPC 2.0 call to `url`; the whole response.
pub async fn call(client: &reqwest::Client, url: &str, method: &str, params: Value) -> Value {
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

/// The A2A 1.0 name of a state given by its v0.3 name (`input-required` →
/// `TASK_STATE_INPUT_REQUIRED`).
pub fn v1_state(state: &str) -> String {
    format!("TASK_STATE_{}", state.to_uppercase().replace('-', "_"))
}

/// The A2A 1.0 subscription to Task `id` of the server at `base` (its URL, ending in `/`), for
/// [`follow_until`]; add anything else the server needs (credentials) to it.
pub fn subscription(client: &reqwest::Client, base: &str, id: &str) -> reqwest::RequestBuilder {
    client
        .get(format!("{base}tasks/{id}:subscribe"))
        .header("A2A-Version", "1.0")
}

/// Follows a Task's subscription stream (`request`, see [`subscription`]) until the Task is in
/// `state` (its A2A 1.0 name, such as `TASK_STATE_WORKING`): the stream's first event is the
/// Task as stored, then one event per change. True once the Task was seen in `state`; false
/// when the stream was refused (a Task already in a final state, or none) or ended without it,
/// so the caller reads the Task to see where it is. Panics after [`STATE_DEADLINE`].
pub async fn follow_until(request: reqwest::RequestBuilder, state: &str) -> bool {
    let follow = async {
        let mut response = request.send().await.unwrap();
        let is_stream = response
            .headers()
            .get("content-type")
            .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
        if !response.status().is_success() || !is_stream {
            return false;
        }
        let mut pending = Vec::new();
        while let Some(chunk) = response.chunk().await.unwrap() {
            pending.extend_from_slice(&chunk);
            while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
                let frame: Vec<u8> = pending.drain(..end + 2).collect();
                let Some(data) = frame.strip_prefix(b"data: ") else {
                    continue;
                };
                let event: Value = serde_json::from_slice(data.trim_ascii_end())
                    .unwrap_or_else(|e| panic!("an event that is not JSON ({e}): {data:?}"));
                let seen = event["task"]["status"]["state"]
                    .as_str()
                    .or(event["statusUpdate"]["status"]["state"].as_str());
                if seen == Some(state) {
                    return true;
                }
            }
        }
        false
    };
    tokio::time::timeout(STATE_DEADLINE, follow)
        .await
        .unwrap_or_else(|_| panic!("the Task never reached {state}"))
}

/// Waits until Task `id` of the server at `base` (its URL, ending in `/`) is in `state` (its
/// v0.3 name, such as `completed`), then reads it with `GetTask` over JSON-RPC: the Task (the
/// call's `result`). Panics if it ends in another state or takes longer than
/// [`STATE_DEADLINE`].
pub async fn wait_for_state(client: &reqwest::Client, base: &str, id: &str, state: &str) -> Value {
    follow_until(subscription(client, base, id), &v1_state(state)).await;
    let got = call(client, base, "GetTask", json!({"id": id})).await;
    assert_eq!(
        got["result"]["status"]["state"], state,
        "{id} never reached {state}: {got}"
    );
    got["result"].clone()
}

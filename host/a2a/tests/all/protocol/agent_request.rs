//! What the agent is told of a request that came over HTTP: the request's metadata and the
//! extensions the client asked for in the `A2A-Extensions` header.

use super::{message_v1, start};
use serde_json::json;
use std::sync::{Arc, Mutex};
use toolnexus_a2a::{Agent, Outcome, Request, ServerConfig, ServiceConfig, Work};

#[derive(Default)]
struct Recorder(Mutex<Vec<Request>>);

#[async_trait::async_trait]
impl Agent for Recorder {
    async fn run(&self, work: &mut Work) -> Result<Outcome, String> {
        self.0.lock().unwrap().push(work.request().clone());
        Ok(Outcome::Completed(None))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agent_sees_the_metadata_and_the_extensions_asked_for() {
    let recorder = Arc::new(Recorder::default());
    let server = start(ServerConfig {
        service: ServiceConfig {
            agent: Arc::clone(&recorder) as Arc<dyn Agent>,
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": message_v1("hi"), "metadata": {"trace": "t-7"}}});
    let answer: serde_json::Value = server
        .client
        .post(&server.base)
        .header("A2A-Version", "1.0")
        .header(
            "A2A-Extensions",
            "https://ext.example/a, https://ext.example/b",
        )
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{answer}"
    );
    let seen = recorder.0.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].extensions,
        ["https://ext.example/a", "https://ext.example/b"]
    );
    assert_eq!(seen[0].metadata.as_ref().unwrap()["trace"], "t-7");
    // Metadata that is not an object is refused, naming the field.
    let bad = json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage",
        "params": {"message": message_v1("hi"), "metadata": [1]}});
    let refused: serde_json::Value = server
        .client
        .post(&server.base)
        .header("A2A-Version", "1.0")
        .json(&bad)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with("metadata must be an object"),
        "{refused}"
    );
}

//! The A2A protocol through real HTTP: both versions, both bindings, streaming, the 1.0 error
//! codes, tenants and owners.
//!
//! Shared here: memory namespaces, the server under test and its JSON-RPC and REST clients; the
//! tests are in the submodules, one subject each.

mod agent_request;
mod streams;
mod tasks_and_errors;
mod tenants_and_owners;
mod versions_and_bindings;

use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use toolnexus_a2a::{EchoAgent, ServerConfig, ServiceConfig, Stores, Tokens, serve_stores};
use toolnexus_core::{InMemoryTaskStore, StoreError, TaskStore, task_state};

/// A memory store per namespace, the root included.
#[derive(Default)]
struct MemoryNamespaces(Mutex<HashMap<String, Arc<InMemoryTaskStore>>>);

#[async_trait::async_trait]
impl Stores for MemoryNamespaces {
    async fn store(&self, namespace: Option<&str>) -> Result<Arc<dyn TaskStore>, StoreError> {
        let mut map = self.0.lock().unwrap();
        let store = map.entry(namespace.unwrap_or("").to_owned()).or_default();
        Ok(Arc::clone(store) as Arc<dyn TaskStore>)
    }
}

impl MemoryNamespaces {
    fn get(&self, ns: &str) -> Arc<InMemoryTaskStore> {
        Arc::clone(self.0.lock().unwrap().entry(ns.to_owned()).or_default())
    }
}

struct Server {
    base: String,
    client: reqwest::Client,
    stores: Arc<MemoryNamespaces>,
}

async fn start(config: ServerConfig) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let stores = Arc::new(MemoryNamespaces::default());
    let served = Arc::clone(&stores) as Arc<dyn Stores>;
    tokio::spawn(serve_stores(listener, served, config));
    Server {
        base: format!("http://{addr}"),
        client: reqwest::Client::new(),
        stores,
    }
}

fn slow(ms: u64) -> ServerConfig {
    ServerConfig {
        service: ServiceConfig {
            agent: Arc::new(EchoAgent {
                delay: Duration::from_millis(ms),
            }),
            poll_interval: Duration::from_millis(50),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn message_v1(text: &str) -> Value {
    json!({"role": "ROLE_USER", "messageId": uuid(), "parts": [{"text": text}]})
}

fn uuid() -> String {
    format!("m-{}", std::process::id()) + &format!("{:?}", std::time::Instant::now())
}

impl Server {
    /// A JSON-RPC call in `version` ("" for no header), with an optional bearer token.
    async fn rpc_as(
        &self,
        version: &str,
        token: Option<&str>,
        method: &str,
        params: Value,
    ) -> (u16, Value) {
        let mut request = self
            .client
            .post(format!("{}/", self.base))
            .json(&json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}));
        if !version.is_empty() {
            request = request.header("A2A-Version", version);
        }
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        // A 401 is given before the body (and its id) is read: its id is null.
        let id = if status == 401 { json!(null) } else { json!(7) };
        assert_eq!(body["id"], id, "{body}");
        (status, body)
    }

    async fn rpc(&self, version: &str, method: &str, params: Value) -> Value {
        self.rpc_as(version, None, method, params).await.1
    }

    async fn rest(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        let mut request = match method {
            "GET" => self.client.get(url),
            _ => self.client.post(url),
        }
        .header("A2A-Version", "1.0");
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// The `data:` events of an SSE answer, read to its end.
    async fn events(&self, path: &str, version: &str, body: Value) -> Vec<Value> {
        let mut request = self.client.post(format!("{}{path}", self.base)).json(&body);
        if !version.is_empty() {
            request = request.header("A2A-Version", version);
        }
        let response = tokio::time::timeout(Duration::from_secs(20), request.send())
            .await
            .expect("answered")
            .unwrap();
        assert_eq!(
            response.headers()["content-type"],
            "text/event-stream",
            "{path}"
        );
        let text = tokio::time::timeout(Duration::from_secs(20), response.text())
            .await
            .expect("the stream ends")
            .unwrap();
        text.split("\n\n")
            .filter_map(|frame| frame.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).unwrap())
            .collect()
    }
}

//! A `Service` over an in-memory store, run on Tokio, and helpers to send and collect.

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use toolnexus_a2a_protocol::call::SendParams;
use toolnexus_a2a_protocol::{
    Agent, AgentLimits, Answer, Call, OwnerLimits, Scope, Service, ServiceConfig, SingleStore,
    Spawn, Subscription, Version,
};
use toolnexus_core::{InMemoryTaskStore, TaskStore};

pub struct TokioSpawn;

impl Spawn for TokioSpawn {
    fn spawn(&self, future: BoxFuture<'static, ()>) {
        tokio::spawn(future);
    }
}

pub fn service(agent: Arc<dyn Agent>) -> Service {
    service_with(agent, AgentLimits::default())
}

pub fn service_with(agent: Arc<dyn Agent>, agent_limits: AgentLimits) -> Service {
    service_bounded(agent, agent_limits, OwnerLimits::default())
}

pub fn service_bounded(
    agent: Arc<dyn Agent>,
    agent_limits: AgentLimits,
    owner_limits: OwnerLimits,
) -> Service {
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryTaskStore::new());
    Service::new(
        Arc::new(SingleStore(store)),
        config(agent, agent_limits, owner_limits),
        Arc::new(TokioSpawn),
    )
}

/// The settings the tests run with.
pub fn config(
    agent: Arc<dyn Agent>,
    agent_limits: AgentLimits,
    owner_limits: OwnerLimits,
) -> ServiceConfig {
    ServiceConfig {
        agent,
        max_background_tasks: 64,
        max_list_bytes: 1 << 20,
        tenants: HashSet::new(),
        // Long: a stream that had to poll the store would stall the test visibly.
        poll_interval: Duration::from_secs(30),
        output_modes: vec!["text/plain".into()],
        agent_limits,
        finish_read_to_write_delay: Duration::ZERO,
        push: None,
        owner_limits,
    }
}

pub fn send_params(text: &str, streaming: bool) -> SendParams {
    SendParams {
        message: json!({"role": "user", "messageId": format!("m-{text}"),
            "parts": [{"kind": "text", "text": text}]}),
        streaming,
        return_immediately: false,
        history_length: None,
        accepted_output_modes: Vec::new(),
        push_config: None,
        metadata: None,
        extensions: Vec::new(),
    }
}

pub async fn send(service: &Service, params: SendParams) -> Answer {
    service
        .call(&Scope::default(), Call::Send(params), Version::V1_0)
        .await
        .expect("the send is taken")
}

pub async fn send_value(service: &Service, text: &str) -> Value {
    match send(service, send_params(text, false)).await {
        Answer::Value(value) => value,
        Answer::Stream(_) => panic!("a value"),
    }
}

pub async fn stream(service: &Service, text: &str) -> Subscription {
    match send(service, send_params(text, true)).await {
        Answer::Stream(stream) => stream,
        Answer::Value(v) => panic!("a stream, not {v}"),
    }
}

pub async fn subscribe(service: &Service, id: &str) -> Subscription {
    match service
        .call(
            &Scope::default(),
            Call::Subscribe { id: id.into() },
            Version::V1_0,
        )
        .await
        .expect("subscribed")
    {
        Answer::Stream(stream) => stream,
        Answer::Value(v) => panic!("a stream, not {v}"),
    }
}

/// Every event of `stream`, each shortened to what it says (`task:STATE`, `status:STATE:text`,
/// `artifact:ID:+text` for an append, `message:text`).
pub async fn collect(mut stream: Subscription) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("an event or the end within 20 s")
    {
        out.push(describe(&event.expect("no store error")));
    }
    out
}

pub fn describe(event: &Value) -> String {
    let texts = |parts: &Value| -> String {
        parts
            .as_array()
            .map(|p| {
                p.iter()
                    .map(|p| {
                        p["text"]
                            .as_str()
                            .map_or_else(|| p.to_string(), str::to_owned)
                    })
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .unwrap_or_default()
    };
    if let Some(task) = event.get("task") {
        return format!("task:{}", task["status"]["state"].as_str().unwrap_or("?"));
    }
    if let Some(update) = event.get("statusUpdate") {
        let status = &update["status"];
        let text = texts(&status["message"]["parts"]);
        return format!("status:{}:{text}", status["state"].as_str().unwrap_or("?"));
    }
    if let Some(update) = event.get("artifactUpdate") {
        let artifact = &update["artifact"];
        let plus = if update["append"] == true { "+" } else { "" };
        let last = if update["lastChunk"] == true { "!" } else { "" };
        return format!(
            "artifact:{}:{plus}{}{last}",
            artifact["artifactId"].as_str().unwrap_or("?"),
            texts(&artifact["parts"])
        );
    }
    if let Some(message) = event.get("message") {
        return format!("message:{}", texts(&message["parts"]));
    }
    format!("other:{event}")
}

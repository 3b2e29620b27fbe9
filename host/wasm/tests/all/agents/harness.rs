//! A `Service` over an in-memory store with an agent component, and helpers to send and read.

use serde_json::{Value, json};
use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use toolnexus_a2a_protocol::{
    Agent, AgentLimits, Answer, Call, MemoryStores, Scope, SendParams, Service, ServiceConfig,
    Spawn, Subscription, Version,
};
use toolnexus_wasm::ComponentSource;
use toolnexus_wasm::agent::{WasmAgent, WasmAgentBuilder};

/// The fixture agent component (`guest/agent-fixture/`), built by this crate's build script.
pub static AGENT_FIXTURE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/agent_fixture.wasm"));

struct TokioSpawn;

impl Spawn for TokioSpawn {
    fn spawn(&self, future: Pin<Box<dyn Future<Output = ()> + Send + 'static>>) {
        tokio::spawn(future);
    }
}

/// A builder of the fixture agent, named `fixture`.
pub fn fixture() -> WasmAgentBuilder {
    WasmAgent::builder(ComponentSource::Bytes {
        name: "fixture".into(),
        bytes: Arc::from(AGENT_FIXTURE),
    })
}

pub fn service(agent: WasmAgent) -> Service {
    service_with(agent, AgentLimits::default())
}

pub fn service_with(agent: WasmAgent, agent_limits: AgentLimits) -> Service {
    service_for(agent, agent_limits, HashSet::new())
}

/// [`service`] that also takes requests naming one of `tenants`.
pub fn service_with_tenants(agent: WasmAgent, tenants: &[&str]) -> Service {
    let tenants = tenants.iter().map(|t| (*t).to_owned()).collect();
    service_for(agent, AgentLimits::default(), tenants)
}

fn service_for(agent: WasmAgent, agent_limits: AgentLimits, tenants: HashSet<String>) -> Service {
    let agent: Arc<dyn Agent> = Arc::new(agent);
    Service::new(
        Arc::new(MemoryStores::default()),
        ServiceConfig {
            agent,
            max_background_tasks: 64,
            max_list_bytes: 1 << 20,
            tenants,
            // Long: a wait that had to poll the store would stall the test visibly.
            poll_interval: Duration::from_secs(30),
            output_modes: vec!["text/plain".into()],
            agent_limits,
            finish_read_to_write_delay: Duration::ZERO,
            push: None,
            owner_limits: Default::default(),
        },
        Arc::new(TokioSpawn),
    )
}

pub fn send_params(text: &str, streaming: bool) -> SendParams {
    SendParams {
        message: json!({"role": "user", "messageId": format!("m-{text}-{}", uuid()),
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

/// A message id unique in this process.
fn uuid() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

pub async fn send(service: &Service, params: SendParams) -> Answer {
    service
        .call(&Scope::default(), Call::Send(params), Version::V1_0)
        .await
        .expect("the send is taken")
}

/// The answer of a blocking send of `text`: `{"task": …}` or `{"message": …}`.
pub async fn send_value(service: &Service, text: &str) -> Value {
    match send(service, send_params(text, false)).await {
        Answer::Value(value) => value,
        Answer::Stream(_) => panic!("a value"),
    }
}

/// The Task a blocking send of `text` ends with.
pub async fn run(service: &Service, text: &str) -> Value {
    let answer = send_value(service, text).await;
    answer["task"].clone()
}

/// The id of the Task a send of `text` that returns at once creates.
pub async fn start(service: &Service, text: &str) -> String {
    let mut params = send_params(text, false);
    params.return_immediately = true;
    match send(service, params).await {
        Answer::Value(value) => value["task"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("a task: {value}"))
            .to_owned(),
        Answer::Stream(_) => panic!("a value"),
    }
}

pub async fn stream(service: &Service, text: &str) -> Subscription {
    match send(service, send_params(text, true)).await {
        Answer::Stream(stream) => stream,
        Answer::Value(v) => panic!("a stream, not {v}"),
    }
}

pub async fn get(service: &Service, id: &str) -> Value {
    let call = Call::Get {
        id: id.into(),
        history_length: None,
    };
    match service.call(&Scope::default(), call, Version::V1_0).await {
        Ok(Answer::Value(task)) => task,
        other => panic!("get {id}: {:?}", other.map(|_| ())),
    }
}

pub async fn subscribe(service: &Service, id: &str) -> Subscription {
    let call = Call::Subscribe { id: id.into() };
    match service.call(&Scope::default(), call, Version::V1_0).await {
        Ok(Answer::Stream(stream)) => stream,
        Ok(Answer::Value(v)) => panic!("a stream, not {v}"),
        Err(e) => panic!("subscribe {id}: {e:?}"),
    }
}

/// Every event of `stream` until it ends, each shortened to what it says (`task:STATE`,
/// `status:STATE:text`, `artifact:ID:+text!` for an append and a last chunk), waiting at most
/// `within` for each.
pub async fn collect(mut stream: Subscription, within: Duration) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(event) = tokio::time::timeout(within, stream.next())
        .await
        .expect("an event or the end in time")
    {
        out.push(describe(&event.expect("no store error")));
    }
    out
}

fn texts(parts: &Value) -> String {
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
}

pub fn describe(event: &Value) -> String {
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
    format!("other:{event}")
}

/// A Task's state and the text of its status message.
pub fn status(task: &Value) -> (String, String) {
    (
        task["status"]["state"].as_str().unwrap_or("?").to_owned(),
        texts(&task["status"]["message"]["parts"]),
    )
}

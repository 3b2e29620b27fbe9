//! What one client may make the server hold: the size of a Task it continues, the streams it
//! opens, the events a slow reader leaves queued.

use crate::harness::{self, send, send_params, send_value, service_bounded, service_with};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use toolnexus_a2a_protocol::{
    A2aError, Agent, AgentLimits, Answer, Artifact, Call, ErrorKind, Message, Outcome, OwnerLimits,
    Part, Scope, Service, Stores, Version, Work,
};
use toolnexus_core::{InMemoryTaskStore, StoreError, StoreUsage, Task, TaskStore};

/// What a memory store holds now.
fn usage_now(store: &InMemoryTaskStore) -> StoreUsage {
    futures_util::FutureExt::now_or_never(store.usage())
        .expect("a memory store answers at once")
        .unwrap()
        .expect("a memory store knows its usage")
}

/// Asks for more input, whatever it is told.
struct AsksForMore;

#[async_trait::async_trait]
impl Agent for AsksForMore {
    async fn run(&self, _work: &mut Work) -> Result<Outcome, String> {
        Ok(Outcome::InputRequired(Some(Message::agent_text("more?"))))
    }
}

async fn get(service: &toolnexus_a2a_protocol::Service, id: &str) -> Value {
    match service
        .call(
            &Scope::default(),
            Call::Get {
                id: id.into(),
                history_length: None,
            },
            Version::V1_0,
        )
        .await
        .expect("the task is there")
    {
        Answer::Value(task) => task,
        Answer::Stream(_) => panic!("a value"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_that_would_take_a_task_over_its_byte_limit_is_refused_and_changes_nothing() {
    let limits = AgentLimits {
        max_task_bytes: 4096,
        ..AgentLimits::default()
    };
    let service = service_with(Arc::new(AsksForMore), limits);
    let first = send_value(&service, "start").await;
    let id = first["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        first["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    let before = get(&service, &id).await;

    let mut params = send_params(&"x".repeat(5000), false);
    params.message["taskId"] = json!(id);
    let refused = service
        .call(&Scope::default(), Call::Send(params), Version::V1_0)
        .await
        .err()
        .expect("a message over the Task's byte limit is refused");
    assert_eq!(refused.kind, ErrorKind::InvalidParams, "{refused:?}");
    assert!(
        refused.message.contains("over the limit of 4096"),
        "{refused:?}"
    );
    assert_eq!(get(&service, &id).await, before, "the Task is as it was");

    // A message within the limit still continues it.
    let mut params = send_params("fits", false);
    params.message["taskId"] = json!(id);
    let answer = match service
        .call(&Scope::default(), Call::Send(params), Version::V1_0)
        .await
        .expect("a message within the limit is taken")
    {
        Answer::Value(answer) => answer,
        Answer::Stream(_) => panic!("a value"),
    };
    let count = |task: &Value| task["history"].as_array().map_or(0, Vec::len);
    assert!(count(&answer["task"]) > count(&before), "{answer}");
}

/// A `SubscribeToTask` of `id`: the stream, or why it was refused.
async fn try_subscribe(
    service: &toolnexus_a2a_protocol::Service,
    id: &str,
) -> Result<toolnexus_a2a_protocol::Subscription, toolnexus_a2a_protocol::A2aError> {
    match service
        .call(
            &Scope::default(),
            Call::Subscribe { id: id.into() },
            Version::V1_0,
        )
        .await?
    {
        Answer::Stream(stream) => Ok(stream),
        Answer::Value(v) => panic!("a stream, not {v}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn streams_over_the_per_task_and_per_owner_bounds_are_refused_until_one_closes() {
    let limits = OwnerLimits {
        max_streams_per_owner: 3,
        max_streams_per_task: 2,
        ..OwnerLimits::default()
    };
    let service = service_bounded(Arc::new(AsksForMore), AgentLimits::default(), limits);
    let mut ids = Vec::new();
    for text in ["a", "b"] {
        let answer = send_value(&service, text).await;
        ids.push(answer["task"]["id"].as_str().unwrap().to_owned());
    }
    let first = try_subscribe(&service, &ids[0]).await.unwrap();
    let _second = try_subscribe(&service, &ids[0]).await.unwrap();
    let refused = try_subscribe(&service, &ids[0]).await.err().unwrap();
    assert_eq!(refused.kind, ErrorKind::LimitReached, "{refused:?}");
    assert!(refused.message.contains("on this task"), "{refused:?}");
    let _third = try_subscribe(&service, &ids[1]).await.unwrap();
    let refused = try_subscribe(&service, &ids[1]).await.err().unwrap();
    assert!(refused.message.contains("for this caller"), "{refused:?}");
    // A streaming send counts too, and is refused before it saves anything.
    let refused = match service
        .call(
            &Scope::default(),
            Call::Send(send_params("c", true)),
            Version::V1_0,
        )
        .await
    {
        Err(e) => e,
        Ok(_) => panic!("a fourth stream is refused"),
    };
    assert_eq!(refused.kind, ErrorKind::LimitReached);
    let listed = match service
        .call(
            &Scope::default(),
            Call::List(Default::default()),
            Version::V1_0,
        )
        .await
        .unwrap()
    {
        Answer::Value(v) => v,
        Answer::Stream(_) => panic!("a value"),
    };
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 2, "{listed}");
    // Closing a stream makes room.
    drop(first);
    try_subscribe(&service, &ids[1]).await.unwrap();
}

/// Emits `count` artifacts of 1 KiB each, says so, then waits for the test before it
/// completes.
struct Floods {
    count: usize,
    emitted: Arc<Notify>,
    finish: Arc<Notify>,
}

#[async_trait::async_trait]
impl Agent for Floods {
    async fn run(&self, work: &mut Work) -> Result<Outcome, String> {
        for i in 0..self.count {
            let artifact = Artifact::new(format!("a{i}"), vec![Part::text("x".repeat(1024))]);
            work.update_artifact(artifact, false, true)
                .await
                .map_err(|e| e.to_string())?;
        }
        self.emitted.notify_one();
        self.finish.notified().await;
        Ok(Outcome::Completed(None))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reader_that_falls_behind_is_cut_with_an_error_and_can_subscribe_again() {
    let emitted = Arc::new(Notify::new());
    let finish = Arc::new(Notify::new());
    let agent = Floods {
        count: 40,
        emitted: Arc::clone(&emitted),
        finish: Arc::clone(&finish),
    };
    let limits = OwnerLimits {
        max_stream_backlog_bytes: 16 << 10,
        ..OwnerLimits::default()
    };
    let service = service_bounded(Arc::new(agent), AgentLimits::default(), limits);
    // A stream whose reader reads nothing until the agent has emitted everything.
    let mut slow = match send(&service, send_params("go", true)).await {
        Answer::Stream(stream) => stream,
        Answer::Value(v) => panic!("a stream, not {v}"),
    };
    emitted.notified().await;
    let mut artifacts = 0;
    let error = loop {
        let next = tokio::time::timeout(Duration::from_secs(20), slow.next())
            .await
            .expect("the slow reader is cut, not sent every event");
        match next.expect("the stream ends with an error, not quietly") {
            Ok(event) if event.get("artifactUpdate").is_some() => artifacts += 1,
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    assert_eq!(error.kind, ErrorKind::LimitReached, "{error:?}");
    assert!(
        error.message.contains("subscribe to the task again"),
        "{error:?}"
    );
    // Its unread events were dropped when it was cut, not kept for it.
    assert_eq!(artifacts, 0, "artifact events read before the cut");
    assert!(
        slow.next().await.is_none(),
        "the stream ends after its error"
    );
    // Subscribing again starts from the Task as it is: every artifact is in it.
    let id = slow.task_id().to_owned();
    let mut again = try_subscribe(&service, &id).await.unwrap();
    let first = again.next().await.unwrap().unwrap();
    assert_eq!(first["task"]["artifacts"].as_array().unwrap().len(), 40);
    finish.notify_one();
    let mut last = Value::Null;
    while let Some(event) = again.next().await {
        last = event.unwrap();
    }
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{last}"
    );
}

/// A memory store per namespace, the root included.
#[derive(Default)]
struct MemoryNamespaces(
    std::sync::Mutex<std::collections::HashMap<String, Arc<InMemoryTaskStore>>>,
);

#[async_trait::async_trait]
impl Stores for MemoryNamespaces {
    async fn store(&self, namespace: Option<&str>) -> Result<Arc<dyn TaskStore>, StoreError> {
        let mut map = self.0.lock().unwrap();
        let store = map.entry(namespace.unwrap_or("").to_owned()).or_default();
        Ok(Arc::clone(store) as Arc<dyn TaskStore>)
    }
}

fn owner(name: &str) -> Scope {
    Scope {
        tenant: None,
        owner: Some(name.into()),
    }
}

async fn send_as(service: &Service, scope: &Scope, text: &str) -> Result<Value, A2aError> {
    match service
        .call(scope, Call::Send(send_params(text, false)), Version::V1_0)
        .await?
    {
        Answer::Value(answer) => Ok(answer),
        Answer::Stream(_) => panic!("a value"),
    }
}

fn namespaced(limits: OwnerLimits) -> (Service, Arc<MemoryNamespaces>) {
    let stores = Arc::new(MemoryNamespaces::default());
    let config = harness::config(Arc::new(AsksForMore), AgentLimits::default(), limits);
    let service = Service::new(
        Arc::clone(&stores) as Arc<dyn Stores>,
        config,
        Arc::new(harness::TokioSpawn),
    );
    (service, stores)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_owner_at_its_task_bound_is_refused_and_the_others_are_not() {
    let limits = OwnerLimits {
        max_tasks_per_owner: 3,
        ..OwnerLimits::default()
    };
    let (service, stores) = namespaced(limits);
    let (alice, bob) = (owner("alice"), owner("bob"));
    for n in 0..3 {
        send_as(&service, &alice, &format!("a{n}")).await.unwrap();
    }
    let refused = send_as(&service, &alice, "one too many")
        .await
        .err()
        .unwrap();
    assert_eq!(refused.kind, ErrorKind::LimitReached, "{refused:?}");
    assert!(refused.message.contains("holds 3 tasks"), "{refused:?}");
    assert_eq!(
        stores.0.lock().unwrap()["o.alice"].len(),
        3,
        "nothing saved"
    );
    // Bob has his own bound.
    send_as(&service, &bob, "b0").await.unwrap();
    assert_eq!(stores.0.lock().unwrap()["o.bob"].len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn tasks_that_were_there_before_the_server_count_against_the_bound() {
    let limits = OwnerLimits {
        max_tasks_per_owner: 2,
        ..OwnerLimits::default()
    };
    let (service, stores) = namespaced(limits);
    let store = stores.store(Some("o.alice")).await.unwrap();
    for id in ["old-1", "old-2"] {
        store
            .save(&Task::from_json(&format!(r#"{{"id":"{id}"}}"#)).unwrap())
            .await
            .unwrap();
    }
    let refused = send_as(&service, &owner("alice"), "new")
        .await
        .err()
        .unwrap();
    assert_eq!(refused.kind, ErrorKind::LimitReached, "{refused:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn messages_and_new_tasks_over_an_owners_byte_bound_are_refused() {
    let limits = OwnerLimits {
        max_bytes_per_owner: 12_000,
        ..OwnerLimits::default()
    };
    let (service, stores) = namespaced(limits);
    let alice = owner("alice");
    let first = send_as(&service, &alice, "start").await.unwrap();
    let id = first["task"]["id"].as_str().unwrap().to_owned();
    // A message of 8 KB (its text and its id, each 4,000 characters) fits; a second does not.
    let mut params = send_params(&"x".repeat(4000), false);
    params.message["taskId"] = json!(id);
    service
        .call(&alice, Call::Send(params), Version::V1_0)
        .await
        .expect("within the bound");
    let before = usage_now(&stores.0.lock().unwrap()["o.alice"]);
    let mut params = send_params(&"y".repeat(4000), false);
    params.message["taskId"] = json!(id);
    let refused = service
        .call(&alice, Call::Send(params), Version::V1_0)
        .await
        .err()
        .expect("over the bound");
    assert_eq!(refused.kind, ErrorKind::LimitReached, "{refused:?}");
    assert!(refused.message.contains("12000 allowed"), "{refused:?}");
    let refused = send_as(&service, &alice, &"z".repeat(4000))
        .await
        .err()
        .unwrap();
    assert_eq!(refused.kind, ErrorKind::LimitReached, "{refused:?}");
    assert_eq!(
        usage_now(&stores.0.lock().unwrap()["o.alice"]),
        before,
        "nothing saved"
    );
}

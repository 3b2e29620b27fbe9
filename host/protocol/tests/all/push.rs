//! Push-notification configs through the service: every method in both versions, the errors,
//! a config in `SendMessage`, the notices of saves in order, and push not offered.

use crate::harness::TokioSpawn;
use serde_json::{Map, Value, json};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use toolnexus_a2a_protocol::call::from_jsonrpc;
use toolnexus_a2a_protocol::push::MAX_CONFIGS_PER_TASK;
use toolnexus_a2a_protocol::{
    A2aError, Answer, EchoAgent, PushNotifier, Scope, Service, ServiceConfig, SingleStore, Version,
};
use toolnexus_core::{InMemoryTaskStore, StoreError, Task, TaskStore};

/// What the recorder marks a sealed secret with.
const SEALED: &str = "sealed:";

/// A notifier that refuses URLs not starting with `https://` or naming `internal`, seals
/// secrets by marking them (`sealed:` + the value; with the place when it is not the root
/// store's, so a test sees which place the service sealed and opened for), and records every
/// save it is told of.
#[derive(Default)]
pub struct Recorder {
    /// `(namespace, task id, state)` per notice, in the order told.
    pub saves: Mutex<Vec<(Option<String>, String, String)>>,
    told: Notify,
}

impl Recorder {
    /// The states told for Task `id`, in order.
    pub fn states(&self, id: &str) -> Vec<String> {
        let saves = self.saves.lock().unwrap();
        saves
            .iter()
            .filter(|(_, task, _)| task == id)
            .map(|(_, _, state)| state.clone())
            .collect()
    }

    /// Waits (20 s at most) until a notice of Task `id` in `state` came.
    pub async fn wait_for(&self, id: &str, state: &str) -> Vec<String> {
        let wait = async {
            loop {
                let told = self.told.notified();
                let states = self.states(id);
                if states.iter().any(|s| s == state) {
                    return states;
                }
                told.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(20), wait)
            .await
            .unwrap_or_else(|_| panic!("no notice of {id} in {state}: {:?}", self.states(id)))
    }
}

/// The recorder's seal mark for a place: `sealed:` in the root store (what most tests see),
/// `sealed[<namespace>/<task>]:` elsewhere.
fn mark(namespace: Option<&str>, task_id: &str) -> String {
    match namespace {
        None => SEALED.to_owned(),
        Some(ns) => format!("sealed[{ns}/{task_id}]:"),
    }
}

fn map_secrets(
    mut config: Map<String, Value>,
    change: impl Fn(&str) -> Result<String, String>,
) -> Result<Map<String, Value>, String> {
    if let Some(Value::String(token)) = config.get("token") {
        let token = change(token)?;
        config.insert("token".into(), json!(token));
    }
    if let Some(Value::Object(auth)) = config.get_mut("authentication")
        && let Some(Value::String(credentials)) = auth.get("credentials")
    {
        let credentials = change(credentials)?;
        auth.insert("credentials".into(), json!(credentials));
    }
    Ok(config)
}

#[async_trait::async_trait]
impl PushNotifier for Recorder {
    fn check_url(&self, url: &str) -> Result<(), String> {
        if !url.starts_with("https://") {
            return Err("only https URLs are accepted".into());
        }
        if url.contains("internal") {
            return Err("it names a private address".into());
        }
        Ok(())
    }

    fn seal(
        &self,
        namespace: Option<&str>,
        task_id: &str,
        config: Map<String, Value>,
    ) -> Result<Map<String, Value>, String> {
        let mark = mark(namespace, task_id);
        map_secrets(config, |s| Ok(format!("{mark}{s}")))
    }

    fn open(
        &self,
        namespace: Option<&str>,
        task_id: &str,
        config: Map<String, Value>,
    ) -> Result<Map<String, Value>, String> {
        let mark = mark(namespace, task_id);
        map_secrets(config, |s| {
            s.strip_prefix(&mark)
                .map(str::to_owned)
                .ok_or_else(|| "not sealed by this key for this place".to_owned())
        })
    }

    async fn task_saved(&self, namespace: Option<&str>, task: &Task) {
        let state = task
            .get("status")
            .and_then(|s| s.get("state"))
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned();
        self.saves.lock().unwrap().push((
            namespace.map(str::to_owned),
            task.id().to_owned(),
            state,
        ));
        self.told.notify_waiters();
    }
}

/// A store that keeps no push configs.
struct NoPushStore(InMemoryTaskStore);

#[async_trait::async_trait]
impl TaskStore for NoPushStore {
    async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
        self.0.get(id).await
    }
    async fn save(&self, task: &Task) -> Result<(), StoreError> {
        self.0.save(task).await
    }
    fn describe(&self) -> String {
        "no push configs".into()
    }
}

pub(crate) struct Setup {
    pub(crate) service: Service,
    pub(crate) store: Arc<InMemoryTaskStore>,
    pub(crate) recorder: Arc<Recorder>,
}

pub(crate) fn config(
    store: Arc<dyn TaskStore>,
    push: Option<Arc<dyn PushNotifier>>,
    delay: u64,
) -> Service {
    Service::new(
        Arc::new(SingleStore(store)),
        ServiceConfig {
            agent: Arc::new(EchoAgent {
                delay: Duration::from_millis(delay),
            }),
            max_background_tasks: 64,
            max_list_bytes: 1 << 20,
            tenants: HashSet::new(),
            poll_interval: Duration::from_secs(30),
            output_modes: vec!["text/plain".into()],
            agent_limits: Default::default(),
            finish_read_to_write_delay: Duration::ZERO,
            push,
            owner_limits: Default::default(),
        },
        Arc::new(TokioSpawn),
    )
}

fn setup_with_delay(delay: u64) -> Setup {
    let store = Arc::new(InMemoryTaskStore::new());
    let recorder = Arc::new(Recorder::default());
    let service = config(
        Arc::clone(&store) as _,
        Some(Arc::clone(&recorder) as _),
        delay,
    );
    Setup {
        service,
        store,
        recorder,
    }
}

pub(crate) fn setup() -> Setup {
    setup_with_delay(0)
}

/// One JSON-RPC method through the parser and the service: its value, or its error.
pub(crate) async fn rpc(
    service: &Service,
    method: &str,
    params: Value,
    version: Version,
) -> Result<Value, A2aError> {
    let parsed = from_jsonrpc(method, &params)?;
    match service
        .call(&Scope::default(), parsed.call, version)
        .await?
    {
        Answer::Value(value) => Ok(value),
        Answer::Stream(_) => panic!("{method} answered a stream"),
    }
}

/// A Task saved straight into the store (`completed`), so config methods have one to work on.
pub(crate) async fn task(store: &InMemoryTaskStore, id: &str) {
    let task = Task::try_from(json!({"id": id, "contextId": "c", "kind": "task",
        "status": {"state": "completed"}}))
    .unwrap();
    store.save(&task).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_1_0_methods_set_get_list_and_delete() {
    let Setup { service, store, .. } = setup();
    task(&store, "t1").await;
    let v = Version::V1_0;
    let created = rpc(
        &service,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": "t1", "id": "b", "url": "https://hooks.example/b", "token": "tok",
            "authentication": {"scheme": "Bearer", "credentials": "secret"}}),
        v,
    )
    .await
    .unwrap();
    let b = json!({"id": "b", "taskId": "t1", "url": "https://hooks.example/b", "token": "tok",
        "authentication": {"scheme": "Bearer", "credentials": "secret"}});
    assert_eq!(created, b);
    // Without an id, the service names it.
    let a = rpc(
        &service,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": "t1", "url": "https://hooks.example/a"}),
        v,
    )
    .await
    .unwrap();
    let a_id = a["id"].as_str().unwrap().to_owned();
    assert_eq!(uuid::Uuid::parse_str(&a_id).unwrap().get_version_num(), 4);
    // Stored version-neutral and sealed.
    let stored = store.get_push_config("t1", "b").await.unwrap().unwrap();
    assert_eq!(
        Value::Object(stored.to_map()),
        json!({"id": "b", "taskId": "t1", "url": "https://hooks.example/b",
            "token": "sealed:tok",
            "authentication": {"scheme": "Bearer", "credentials": "sealed:secret"},
            "protocolVersion": "1.0"})
    );
    let got = rpc(
        &service,
        "GetTaskPushNotificationConfig",
        json!({"taskId": "t1", "id": "b"}),
        v,
    )
    .await
    .unwrap();
    assert_eq!(got, b);
    let listed = rpc(
        &service,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": "t1"}),
        v,
    )
    .await
    .unwrap();
    let mut expected = vec![a.clone(), b.clone()];
    expected.sort_by(|x, y| x["id"].as_str().cmp(&y["id"].as_str()));
    assert_eq!(listed, json!({"configs": expected}));
    let deleted = rpc(
        &service,
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": "t1", "id": "b"}),
        v,
    )
    .await
    .unwrap();
    assert_eq!(deleted, json!({}));
    assert!(store.get_push_config("t1", "b").await.unwrap().is_none());
    // Again: nothing to delete is success.
    rpc(
        &service,
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": "t1", "id": "b"}),
        v,
    )
    .await
    .unwrap();
    let err = rpc(
        &service,
        "GetTaskPushNotificationConfig",
        json!({"taskId": "t1", "id": "b"}),
        v,
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), -32001);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_0_3_methods_set_get_list_and_delete() {
    let Setup { service, store, .. } = setup();
    task(&store, "t1").await;
    let v = Version::V0_3;
    let set = rpc(
        &service,
        "tasks/pushNotificationConfig/set",
        json!({"taskId": "t1", "pushNotificationConfig": {"id": "t1", "url": "https://h/x",
            "token": "k", "authentication": {"schemes": ["Basic"], "credentials": "u:p"}}}),
        v,
    )
    .await
    .unwrap();
    let t1 = json!({"taskId": "t1", "pushNotificationConfig": {"id": "t1", "url": "https://h/x",
        "token": "k", "authentication": {"schemes": ["Basic"], "credentials": "u:p"}}});
    assert_eq!(set, t1);
    let stored = store.get_push_config("t1", "t1").await.unwrap().unwrap();
    assert_eq!(stored.to_map()["protocolVersion"], "0.3");
    assert_eq!(stored.to_map()["authentication"]["scheme"], "Basic");
    rpc(
        &service,
        "tasks/pushNotificationConfig/set",
        json!({"taskId": "t1", "pushNotificationConfig": {"id": "a", "url": "https://h/a"}}),
        v,
    )
    .await
    .unwrap();
    // Without a config id: the one named after the Task, though "a" comes first.
    let got = rpc(
        &service,
        "tasks/pushNotificationConfig/get",
        json!({"id": "t1"}),
        v,
    )
    .await
    .unwrap();
    assert_eq!(got, t1);
    let got = rpc(
        &service,
        "tasks/pushNotificationConfig/get",
        json!({"id": "t1", "pushNotificationConfigId": "a"}),
        v,
    )
    .await
    .unwrap();
    assert_eq!(got["pushNotificationConfig"]["url"], "https://h/a");
    let listed = rpc(
        &service,
        "tasks/pushNotificationConfig/list",
        json!({"id": "t1"}),
        v,
    )
    .await
    .unwrap();
    assert_eq!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["pushNotificationConfig"]["id"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["a", "t1"]
    );
    let deleted = rpc(
        &service,
        "tasks/pushNotificationConfig/delete",
        json!({"id": "t1", "pushNotificationConfigId": "t1"}),
        v,
    )
    .await
    .unwrap();
    assert_eq!(deleted, Value::Null);
    // Without the Task's own config: the first.
    let got = rpc(
        &service,
        "tasks/pushNotificationConfig/get",
        json!({"id": "t1"}),
        v,
    )
    .await
    .unwrap();
    assert_eq!(got["pushNotificationConfig"]["id"], "a");
}

#[tokio::test(flavor = "multi_thread")]
async fn list_pages_by_config_id() {
    let Setup { service, store, .. } = setup();
    task(&store, "t").await;
    for id in ["e", "a", "d", "b", "c"] {
        rpc(
            &service,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "t", "id": id, "url": "https://h/x"}),
            Version::V1_0,
        )
        .await
        .unwrap();
    }
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut params = json!({"taskId": "t", "pageSize": 2});
        if let Some(token) = &token {
            params["pageToken"] = json!(token);
        }
        let page = rpc(
            &service,
            "ListTaskPushNotificationConfigs",
            params,
            Version::V1_0,
        )
        .await
        .unwrap();
        pages += 1;
        for config in page["configs"].as_array().unwrap() {
            seen.push(config["id"].as_str().unwrap().to_owned());
        }
        match page["nextPageToken"].as_str() {
            Some(next) => token = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, ["a", "b", "c", "d", "e"]);
    assert_eq!(pages, 3);
    let err = rpc(
        &service,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": "t", "pageToken": "!!"}),
        Version::V1_0,
    )
    .await
    .unwrap_err();
    assert_eq!(
        (err.code(), err.field.as_deref()),
        (-32602, Some("pageToken"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn refusals_name_what_was_wrong() {
    let Setup { service, store, .. } = setup();
    task(&store, "t").await;
    let v = Version::V1_0;
    let create = |params: Value| rpc(&service, "CreateTaskPushNotificationConfig", params, v);
    // No such Task, for every method.
    for (method, params) in [
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "nope", "url": "https://h/x"}),
        ),
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": "nope", "id": "c"}),
        ),
        ("ListTaskPushNotificationConfigs", json!({"taskId": "nope"})),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": "nope", "id": "c"}),
        ),
    ] {
        let err = rpc(&service, method, params, v).await.unwrap_err();
        assert_eq!(err.code(), -32001, "{method}");
    }
    // The URL: missing, then refused by the notifier (its reason passed on).
    let err = create(json!({"taskId": "t"})).await.unwrap_err();
    assert_eq!((err.code(), err.field.as_deref()), (-32602, Some("url")));
    let err = create(json!({"taskId": "t", "url": "https://internal.example/x"}))
        .await
        .unwrap_err();
    assert_eq!((err.code(), err.field.as_deref()), (-32602, Some("url")));
    assert!(err.message.contains("private address"), "{err}");
    let err = rpc(
        &service,
        "tasks/pushNotificationConfig/set",
        json!({"taskId": "t", "pushNotificationConfig": {"url": "http://h/x"}}),
        Version::V0_3,
    )
    .await
    .unwrap_err();
    assert_eq!(err.field.as_deref(), Some("pushNotificationConfig.url"));
    // Too large.
    let long_url = format!("https://h/{}", "x".repeat(70_000));
    let err = create(json!({"taskId": "t", "url": long_url}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), -32602);
    assert!(err.message.contains("over the limit"), "{err}");
    assert!(store.list_push_configs("t").await.unwrap().is_empty());
    // At most so many per Task; replacing one is fine at the limit.
    for i in 0..MAX_CONFIGS_PER_TASK {
        create(json!({"taskId": "t", "id": format!("c{i:03}"), "url": "https://h/x"}))
            .await
            .unwrap();
    }
    let err = create(json!({"taskId": "t", "id": "one-more", "url": "https://h/x"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), -32602);
    assert!(
        err.message.contains(&MAX_CONFIGS_PER_TASK.to_string()),
        "{err}"
    );
    create(json!({"taskId": "t", "id": "c000", "url": "https://h/replaced"}))
        .await
        .unwrap();
    let configs = store.list_push_configs("t").await.unwrap();
    assert_eq!(configs.len(), MAX_CONFIGS_PER_TASK);
    assert_eq!(configs[0].to_map()["url"], "https://h/replaced");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_config_that_cannot_be_opened_is_an_internal_error_on_get_and_left_out_of_lists() {
    let Setup { service, store, .. } = setup();
    task(&store, "t").await;
    let foreign = toolnexus_core::PushConfig::from_value(
        json!({"id": "x", "taskId": "t", "url": "https://h/x", "token": "other-key"}),
    )
    .unwrap();
    store.save_push_config("t", &foreign).await.unwrap();
    let err = rpc(
        &service,
        "GetTaskPushNotificationConfig",
        json!({"taskId": "t", "id": "x"}),
        Version::V1_0,
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), -32603);
    let listed = rpc(
        &service,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": "t"}),
        Version::V1_0,
    )
    .await
    .unwrap();
    assert_eq!(listed, json!({"configs": []}));
}

pub(crate) fn send(text: &str, configuration: Value) -> Value {
    json!({"message": {"role": "ROLE_USER", "messageId": format!("m-{text}"),
        "parts": [{"text": text}]}, "configuration": configuration})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_config_in_send_message_is_stored_before_the_first_save_and_every_save_is_told_in_order()
{
    let Setup {
        service,
        store,
        recorder,
    } = setup();
    let answer = rpc(
        &service,
        "SendMessage",
        send(
            "hello",
            json!({"taskPushNotificationConfig": {"id": "hook", "url": "https://h/x", "token": "k"}}),
        ),
        Version::V1_0,
    )
    .await
    .unwrap();
    let id = answer["task"]["id"].as_str().unwrap().to_owned();
    let states = recorder.wait_for(&id, "completed").await;
    assert_eq!(states, ["submitted", "working", "working", "completed"]);
    let saves = recorder.saves.lock().unwrap().clone();
    assert!(saves.iter().all(|(ns, _, _)| ns.is_none()));
    let config = store.get_push_config(&id, "hook").await.unwrap().unwrap();
    assert_eq!(config.to_map()["token"], "sealed:k");
    assert_eq!(config.to_map()["protocolVersion"], "1.0");

    // 0.3's spelling, on a Task asking for input, then continued with another config.
    let answer = rpc(
        &service,
        "message/send",
        send(
            "ask:x",
            json!({"pushNotificationConfig": {"url": "https://h/y"}}),
        ),
        Version::V0_3,
    )
    .await
    .unwrap();
    let id = answer["id"].as_str().unwrap().to_owned();
    recorder.wait_for(&id, "input-required").await;
    let configs = store.list_push_configs(&id).await.unwrap();
    assert_eq!(configs.len(), 1);
    assert_eq!(configs[0].to_map()["protocolVersion"], "0.3");
    let mut next = send(
        "again",
        json!({"pushNotificationConfig": {"id": "second", "url": "https://h/z"}}),
    );
    next["message"]["taskId"] = json!(id);
    rpc(&service, "message/send", next, Version::V0_3)
        .await
        .unwrap();
    assert_eq!(
        recorder.wait_for(&id, "completed").await,
        [
            "submitted",
            "working",
            "input-required",
            "submitted",
            "working",
            "working",
            "completed"
        ]
    );
    assert_eq!(store.list_push_configs(&id).await.unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_config_in_send_message_saves_nothing() {
    let Setup {
        service,
        store,
        recorder,
    } = setup();
    let err = rpc(
        &service,
        "SendMessage",
        send(
            "hello",
            json!({"taskPushNotificationConfig": {"url": "https://internal/x"}}),
        ),
        Version::V1_0,
    )
    .await
    .unwrap_err();
    assert_eq!(
        (err.code(), err.field.as_deref()),
        (-32602, Some("configuration.taskPushNotificationConfig.url"))
    );
    let listed = store.list(&Default::default()).await.unwrap();
    assert!(listed.tasks.is_empty());
    assert!(recorder.saves.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_is_told_after_the_saves_before_it() {
    let Setup {
        service, recorder, ..
    } = setup_with_delay(60_000);
    let answer = rpc(
        &service,
        "SendMessage",
        send("slow one two three", json!({"returnImmediately": true})),
        Version::V1_0,
    )
    .await
    .unwrap();
    let id = answer["task"]["id"].as_str().unwrap().to_owned();
    recorder.wait_for(&id, "working").await;
    rpc(&service, "CancelTask", json!({"id": id}), Version::V1_0)
        .await
        .unwrap();
    let states = recorder.wait_for(&id, "canceled").await;
    assert_eq!(states, ["submitted", "working", "canceled"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_notifier_or_a_store_that_keeps_configs_push_is_not_offered() {
    let plain = Arc::new(InMemoryTaskStore::new());
    task(&plain, "t").await;
    let no_notifier = config(plain, None, 0);
    let no_push_store = Arc::new(NoPushStore(InMemoryTaskStore::new()));
    task(&no_push_store.0, "t").await;
    let recorder = Arc::new(Recorder::default());
    let no_store_support = config(no_push_store, Some(Arc::clone(&recorder) as _), 0);
    for service in [&no_notifier, &no_store_support] {
        assert!(!service.push_offered().await);
        for (method, params, v) in [
            (
                "CreateTaskPushNotificationConfig",
                json!({"taskId": "t", "url": "https://h/x"}),
                Version::V1_0,
            ),
            (
                "GetTaskPushNotificationConfig",
                json!({"taskId": "t", "id": "c"}),
                Version::V1_0,
            ),
            (
                "ListTaskPushNotificationConfigs",
                json!({"taskId": "t"}),
                Version::V1_0,
            ),
            (
                "DeleteTaskPushNotificationConfig",
                json!({"taskId": "t", "id": "c"}),
                Version::V1_0,
            ),
            (
                "tasks/pushNotificationConfig/list",
                json!({"id": "t"}),
                Version::V0_3,
            ),
            // Arguments that would be refused: not offered is said first.
            (
                "CreateTaskPushNotificationConfig",
                json!({"taskId": "t"}),
                Version::V1_0,
            ),
            (
                "SendMessage",
                send(
                    "x",
                    json!({"taskPushNotificationConfig": {"token": "no url"}}),
                ),
                Version::V1_0,
            ),
            (
                "SendMessage",
                send(
                    "x",
                    json!({"taskPushNotificationConfig": {"url": "https://h/x"}}),
                ),
                Version::V1_0,
            ),
        ] {
            let err = rpc(service, method, params, v).await.unwrap_err();
            assert_eq!(err.code(), -32003, "{method}");
        }
        // A send without a config works, and nothing is told.
        rpc(service, "SendMessage", send("x", json!({})), Version::V1_0)
            .await
            .unwrap();
    }
    assert!(recorder.saves.lock().unwrap().is_empty());
    assert!(setup().service.push_offered().await);
}

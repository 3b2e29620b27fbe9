//! Push-notification configs through real HTTP: every method in both bindings and both
//! versions, tenants, a config in `SendMessage` and the sender told of every save in order
//! (startup recovery's included), the card's flag, and push not offered.

use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use toolnexus_a2a::{PushNotifier, ServerConfig, ServiceConfig, Stores, serve_stores};
use toolnexus_core::{InMemoryTaskStore, StoreError, Task, TaskStore};

/// A sender that refuses `http://` URLs, seals tokens by marking them with where they are kept
/// (`sealed:` in the root store, `sealed[<namespace>/<task>]:` elsewhere), and records every
/// save it is told of.
#[derive(Default)]
struct Recorder {
    saves: Mutex<Vec<(Option<String>, String, String)>>,
    told: Notify,
}

impl Recorder {
    fn states(&self, id: &str) -> Vec<String> {
        let saves = self.saves.lock().unwrap();
        saves
            .iter()
            .filter(|(_, task, _)| task == id)
            .map(|(_, _, state)| state.clone())
            .collect()
    }

    /// Waits (20 s at most) for a notice of Task `id` in `state`; the Task's states so far.
    async fn wait_for(&self, id: &str, state: &str) -> Vec<String> {
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

#[async_trait::async_trait]
impl PushNotifier for Recorder {
    fn check_url(&self, url: &str) -> Result<(), String> {
        if url.starts_with("https://") {
            Ok(())
        } else {
            Err("only https URLs are accepted".into())
        }
    }

    fn seal(
        &self,
        namespace: Option<&str>,
        task_id: &str,
        mut config: Map<String, Value>,
    ) -> Result<Map<String, Value>, String> {
        if let Some(Value::String(token)) = config.get("token") {
            let sealed = format!("{}{token}", seal_mark(namespace, task_id));
            config.insert("token".into(), json!(sealed));
        }
        Ok(config)
    }

    fn open(
        &self,
        namespace: Option<&str>,
        task_id: &str,
        mut config: Map<String, Value>,
    ) -> Result<Map<String, Value>, String> {
        if let Some(Value::String(token)) = config.get("token") {
            let mark = seal_mark(namespace, task_id);
            let opened = token.strip_prefix(&mark).ok_or("not sealed here")?;
            config.insert("token".into(), json!(opened));
        }
        Ok(config)
    }

    async fn task_saved(&self, namespace: Option<&str>, task: &Task) {
        let state = task.get("status").and_then(|s| s.get("state"));
        let state = state.and_then(Value::as_str).unwrap_or("?").to_owned();
        let entry = (namespace.map(str::to_owned), task.id().to_owned(), state);
        self.saves.lock().unwrap().push(entry);
        self.told.notify_waiters();
    }
}

/// The recorder's seal mark for a place.
fn seal_mark(namespace: Option<&str>, task_id: &str) -> String {
    match namespace {
        None => "sealed:".to_owned(),
        Some(ns) => format!("sealed[{ns}/{task_id}]:"),
    }
}

/// A memory store per namespace; with `keeps_configs` false, stores without push configs.
struct Namespaces {
    stores: Mutex<HashMap<String, Arc<InMemoryTaskStore>>>,
    keeps_configs: bool,
}

/// A store that keeps no push configs.
struct NoPushStore(Arc<InMemoryTaskStore>);

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

impl Namespaces {
    fn get(&self, ns: &str) -> Arc<InMemoryTaskStore> {
        Arc::clone(
            self.stores
                .lock()
                .unwrap()
                .entry(ns.to_owned())
                .or_default(),
        )
    }
}

#[async_trait::async_trait]
impl Stores for Namespaces {
    async fn store(&self, namespace: Option<&str>) -> Result<Arc<dyn TaskStore>, StoreError> {
        let store = self.get(namespace.unwrap_or(""));
        Ok(if self.keeps_configs {
            store as Arc<dyn TaskStore>
        } else {
            Arc::new(NoPushStore(store))
        })
    }
}

struct Server {
    base: String,
    client: reqwest::Client,
    stores: Arc<Namespaces>,
    recorder: Arc<Recorder>,
}

/// A server with the recorder as its sender (unless `with_notifier` is false), over `stores`.
async fn start_over(stores: Arc<Namespaces>, with_notifier: bool, delay_ms: u64) -> Server {
    let recorder = Arc::new(Recorder::default());
    let config = ServerConfig {
        service: ServiceConfig {
            agent: Arc::new(toolnexus_a2a::EchoAgent {
                delay: Duration::from_millis(delay_ms),
            }),
            tenants: ["acme".to_owned()].into(),
            push: with_notifier.then(|| Arc::clone(&recorder) as Arc<dyn PushNotifier>),
            ..Default::default()
        },
        ..Default::default()
    };
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(serve_stores(listener, Arc::clone(&stores) as _, config));
    Server {
        base,
        client: reqwest::Client::new(),
        stores,
        recorder,
    }
}

fn namespaces(keeps_configs: bool) -> Arc<Namespaces> {
    Arc::new(Namespaces {
        stores: Mutex::default(),
        keeps_configs,
    })
}

async fn start() -> Server {
    start_over(namespaces(true), true, 0).await
}

impl Server {
    /// A JSON-RPC call; `version` "" sends no version header (0.3).
    async fn rpc(&self, version: &str, method: &str, params: Value) -> Value {
        let mut request = self
            .client
            .post(format!("{}/", self.base))
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
        if !version.is_empty() {
            request = request.header("A2A-Version", version);
        }
        request.send().await.unwrap().json().await.unwrap()
    }

    /// An HTTP+JSON request; `version` "" sends no version header (the `/v1` routes are 0.3).
    async fn rest(
        &self,
        version: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if !version.is_empty() {
            request = request.header("A2A-Version", version);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, body)
    }

    /// A Task saved straight into namespace `ns`'s store.
    async fn task(&self, ns: &str, id: &str, state: &str, timestamp: &str) {
        let task = json!({"id": id, "contextId": "c", "kind": "task",
            "status": {"state": state, "timestamp": timestamp}});
        let task = Task::try_from(task).unwrap();
        self.stores.get(ns).save(&task).await.unwrap();
    }

    async fn card(&self, version: &str) -> Value {
        self.rest(version, "GET", "/.well-known/agent-card.json", None)
            .await
            .1
    }
}

const NOW: &str = "2030-01-01T00:00:00.000Z";

#[tokio::test(flavor = "multi_thread")]
async fn json_rpc_1_0_and_0_3() {
    let server = start().await;
    server.task("", "t", "completed", NOW).await;
    let created = server
        .rpc(
            "1.0",
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "t", "id": "c1", "url": "https://h/1", "token": "k"}),
        )
        .await;
    let c1 = json!({"id": "c1", "taskId": "t", "url": "https://h/1", "token": "k"});
    assert_eq!(created["result"], c1, "{created}");
    let stored = server.stores.get("").get_push_config("t", "c1").await;
    assert_eq!(stored.unwrap().unwrap().to_map()["token"], "sealed:k");
    let got = server
        .rpc(
            "1.0",
            "GetTaskPushNotificationConfig",
            json!({"taskId": "t", "id": "c1"}),
        )
        .await;
    assert_eq!(got["result"], c1, "{got}");
    // 0.3 sees the same config in its shape, and adds one.
    let set = server
        .rpc(
            "",
            "tasks/pushNotificationConfig/set",
            json!({"taskId": "t", "pushNotificationConfig": {"id": "c2", "url": "https://h/2",
                "authentication": {"schemes": ["Bearer"], "credentials": "x"}}}),
        )
        .await;
    let c2_03 = json!({"taskId": "t", "pushNotificationConfig": {"id": "c2", "url": "https://h/2",
        "authentication": {"schemes": ["Bearer"], "credentials": "x"}}});
    assert_eq!(set["result"], c2_03, "{set}");
    let got = server
        .rpc(
            "",
            "tasks/pushNotificationConfig/get",
            json!({"id": "t", "pushNotificationConfigId": "c1"}),
        )
        .await;
    assert_eq!(
        got["result"],
        json!({"taskId": "t", "pushNotificationConfig": {"id": "c1", "url": "https://h/1", "token": "k"}})
    );
    let listed = server
        .rpc("", "tasks/pushNotificationConfig/list", json!({"id": "t"}))
        .await;
    assert_eq!(listed["result"].as_array().unwrap().len(), 2, "{listed}");
    assert_eq!(listed["result"][1], c2_03);
    let listed = server
        .rpc(
            "1.0",
            "ListTaskPushNotificationConfigs",
            json!({"taskId": "t"}),
        )
        .await;
    assert_eq!(listed["result"]["configs"][0], c1, "{listed}");
    assert_eq!(
        listed["result"]["configs"][1]["authentication"],
        json!({"scheme": "Bearer", "credentials": "x"})
    );
    let deleted = server
        .rpc(
            "",
            "tasks/pushNotificationConfig/delete",
            json!({"id": "t", "pushNotificationConfigId": "c2"}),
        )
        .await;
    assert_eq!(deleted["result"], Value::Null, "{deleted}");
    assert!(deleted.get("error").is_none(), "{deleted}");
    let deleted = server
        .rpc(
            "1.0",
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": "t", "id": "c1"}),
        )
        .await;
    assert_eq!(deleted["result"], json!({}), "{deleted}");
    let listed = server
        .rpc(
            "1.0",
            "ListTaskPushNotificationConfigs",
            json!({"taskId": "t"}),
        )
        .await;
    assert_eq!(listed["result"], json!({"configs": []}));
    // The errors.
    let missing = server
        .rpc(
            "1.0",
            "GetTaskPushNotificationConfig",
            json!({"taskId": "t", "id": "c1"}),
        )
        .await;
    assert_eq!(missing["error"]["code"], -32001, "{missing}");
    let no_task = server
        .rpc(
            "",
            "tasks/pushNotificationConfig/list",
            json!({"id": "nope"}),
        )
        .await;
    assert_eq!(no_task["error"]["code"], -32001, "{no_task}");
    let refused = server
        .rpc(
            "1.0",
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "t", "url": "http://h/1"}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused.to_string().contains("only https"), "{refused}");
}

#[tokio::test(flavor = "multi_thread")]
async fn http_json_1_0_with_and_without_a_tenant() {
    let server = start().await;
    for (ns, prefix) in [("", ""), ("t.acme", "/acme")] {
        server.task(ns, "t", "completed", NOW).await;
        let configs = format!("{prefix}/tasks/t/pushNotificationConfigs");
        let (status, created) = server
            .rest(
                "1.0",
                "POST",
                &configs,
                Some(json!({"taskId": "t", "url": "https://h/x", "token": "k"})),
            )
            .await;
        assert_eq!(status, 200, "{created}");
        let id = created["id"].as_str().unwrap().to_owned();
        assert_eq!(
            created,
            json!({"id": id, "taskId": "t", "url": "https://h/x", "token": "k"})
        );
        let (status, got) = server
            .rest("1.0", "GET", &format!("{configs}/{id}"), None)
            .await;
        assert_eq!((status, &got), (200, &created));
        let (status, listed) = server.rest("1.0", "GET", &configs, None).await;
        assert_eq!((status, &listed), (200, &json!({"configs": [created]})));
        let (status, deleted) = server
            .rest("1.0", "DELETE", &format!("{configs}/{id}"), None)
            .await;
        assert_eq!((status, &deleted), (200, &json!({})));
        let (status, missing) = server
            .rest("1.0", "GET", &format!("{configs}/{id}"), None)
            .await;
        assert_eq!(status, 404, "{missing}");
    }
    // The tenant's Task is not the root's, nor the other way round.
    server.task("t.acme", "only-acme", "completed", NOW).await;
    let (status, _) = server
        .rest(
            "1.0",
            "GET",
            "/tasks/only-acme/pushNotificationConfigs",
            None,
        )
        .await;
    assert_eq!(status, 404);
    let (status, refused) = server
        .rest(
            "1.0",
            "POST",
            "/tasks/t/pushNotificationConfigs",
            Some(json!({"url": "ftp://h/x"})),
        )
        .await;
    assert_eq!(status, 400, "{refused}");
    let (status, _) = server
        .rest("1.0", "PUT", "/tasks/t/pushNotificationConfigs", None)
        .await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_config_is_sealed_for_its_namespace_and_does_not_open_in_another() {
    let server = start().await;
    server.task("t.acme", "t", "completed", NOW).await;
    server.task("", "t", "completed", NOW).await;
    let (status, created) = server
        .rest(
            "1.0",
            "POST",
            "/acme/tasks/t/pushNotificationConfigs",
            Some(json!({"id": "c", "url": "https://h/x", "token": "k"})),
        )
        .await;
    assert_eq!(status, 200, "{created}");
    let stored = server.stores.get("t.acme").get_push_config("t", "c").await;
    let stored = stored.unwrap().unwrap();
    assert_eq!(stored.to_map()["token"], "sealed[t.acme/t]:k");
    // Copied into the root store behind the server's back: it does not open there.
    server
        .stores
        .get("")
        .save_push_config("t", &stored)
        .await
        .unwrap();
    let got = server
        .rpc(
            "1.0",
            "GetTaskPushNotificationConfig",
            json!({"taskId": "t", "id": "c"}),
        )
        .await;
    assert_eq!(got["error"]["code"], -32603, "{got}");
    assert!(!got.to_string().contains("\"k\""), "{got}");
    let listed = server
        .rpc(
            "1.0",
            "ListTaskPushNotificationConfigs",
            json!({"taskId": "t"}),
        )
        .await;
    assert_eq!(listed["result"], json!({"configs": []}), "{listed}");
    // Where it was made, it still opens.
    let (status, got) = server
        .rest(
            "1.0",
            "GET",
            "/acme/tasks/t/pushNotificationConfigs/c",
            None,
        )
        .await;
    assert_eq!((status, &got["token"]), (200, &json!("k")), "{got}");
}

#[tokio::test(flavor = "multi_thread")]
async fn secrets_that_cannot_be_header_values_are_refused_over_http_in_both_versions() {
    let server = start().await;
    server.task("", "t", "completed", NOW).await;
    let bad = "k\r\nX-Injected: yes";
    for (version, path, body, field) in [
        (
            "1.0",
            "/tasks/t/pushNotificationConfigs",
            json!({"url": "https://h/x", "token": bad}),
            "token",
        ),
        (
            "1.0",
            "/tasks/t/pushNotificationConfigs",
            json!({"url": "https://h/x", "authentication": {"scheme": "Bearer", "credentials": bad}}),
            "authentication.credentials",
        ),
        (
            "",
            "/v1/tasks/t/pushNotificationConfigs",
            json!({"parent": "tasks/t", "config_id": "c1", "config": {
                "push_notification_config": {"id": "c1", "url": "https://h/1", "token": bad}}}),
            "token",
        ),
        (
            "",
            "/v1/tasks/t/pushNotificationConfigs",
            json!({"parent": "tasks/t", "config_id": "c1", "config": {
                "push_notification_config": {"id": "c1", "url": "https://h/1",
                    "authentication": {"schemes": ["Bearer"], "credentials": bad}}}}),
            "credentials",
        ),
    ] {
        let (status, refused) = server.rest(version, "POST", path, Some(body)).await;
        assert_eq!(status, 400, "{version} {path}: {refused}");
        let text = refused.to_string();
        assert!(text.contains(field), "{version} {path}: {text}");
        assert!(
            !text.contains("X-Injected"),
            "the secret is repeated: {text}"
        );
    }
    let stored = server.stores.get("").list_push_configs("t").await.unwrap();
    assert!(stored.is_empty(), "{stored:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn http_json_0_3_speaks_protobuf_json() {
    let server = start().await;
    server.task("", "t", "completed", NOW).await;
    // As the official 0.3 client sends it (proto field names).
    let body = json!({"parent": "tasks/t", "config_id": "c1", "config": {
        "push_notification_config": {"id": "c1", "url": "https://h/1", "token": "k",
            "authentication": {"schemes": ["Bearer"], "credentials": "s"}}}});
    let (status, created) = server
        .rest(
            "",
            "POST",
            "/v1/tasks/t/pushNotificationConfigs",
            Some(body),
        )
        .await;
    let c1 = json!({"name": "tasks/t/pushNotificationConfigs/c1", "pushNotificationConfig": {
        "id": "c1", "url": "https://h/1", "token": "k",
        "authentication": {"schemes": ["Bearer"], "credentials": "s"}}});
    assert_eq!((status, &created), (200, &c1));
    let stored = server.stores.get("").get_push_config("t", "c1").await;
    let stored = stored.unwrap().unwrap().to_map();
    assert_eq!(stored["protocolVersion"], "0.3");
    let (status, got) = server
        .rest("", "GET", "/v1/tasks/t/pushNotificationConfigs/c1", None)
        .await;
    assert_eq!((status, &got), (200, &c1));
    let (status, listed) = server
        .rest("", "GET", "/v1/tasks/t/pushNotificationConfigs", None)
        .await;
    assert_eq!((status, &listed), (200, &json!({"configs": [c1]})));
    let (status, deleted) = server
        .rest("", "DELETE", "/v1/tasks/t/pushNotificationConfigs/c1", None)
        .await;
    assert_eq!((status, &deleted), (200, &json!({})));
    let (status, missing) = server
        .rest("", "GET", "/v1/tasks/t/pushNotificationConfigs/c1", None)
        .await;
    assert_eq!(status, 404, "{missing}");
    assert_eq!(missing["type"], "TaskNotFoundError", "{missing}");
}

#[tokio::test(flavor = "multi_thread")]
async fn send_message_stores_its_config_and_every_save_is_told_in_order() {
    let server = start().await;
    // 1.0 HTTP+JSON, in a tenant.
    let (status, sent) = server
        .rest(
            "1.0",
            "POST",
            "/acme/message:send",
            Some(json!({"message": {"role": "ROLE_USER", "messageId": "m1",
                "parts": [{"text": "hi"}]},
                "configuration": {"taskPushNotificationConfig": {"id": "hook", "url": "https://h/x"}}})),
        )
        .await;
    assert_eq!(status, 200, "{sent}");
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    let states = server.recorder.wait_for(&id, "completed").await;
    assert_eq!(states, ["submitted", "working", "working", "completed"]);
    let saves = server.recorder.saves.lock().unwrap().clone();
    assert!(
        saves
            .iter()
            .all(|(ns, _, _)| ns.as_deref() == Some("t.acme"))
    );
    let stored = server
        .stores
        .get("t.acme")
        .get_push_config(&id, "hook")
        .await;
    assert!(stored.unwrap().is_some());
    // 0.3 HTTP+JSON spells it `pushNotification`.
    let (status, sent) = server
        .rest(
            "",
            "POST",
            "/v1/message:send",
            Some(json!({"request": {"message_id": "m2", "role": "ROLE_USER",
                "content": [{"text": "hi"}]},
                "configuration": {"blocking": true, "push_notification": {"url": "https://h/y"}}})),
        )
        .await;
    assert_eq!(status, 200, "{sent}");
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    server.recorder.wait_for(&id, "completed").await;
    let configs = server.stores.get("").list_push_configs(&id).await.unwrap();
    assert_eq!(configs.len(), 1);
    assert_eq!(configs[0].to_map()["protocolVersion"], "0.3");
    // A refused one saves nothing.
    let refused = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "messageId": "m3", "parts": [{"text": "hi"}]},
                "configuration": {"taskPushNotificationConfig": {"url": "http://h/x"}}}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let page = server
        .stores
        .get("")
        .list(&Default::default())
        .await
        .unwrap();
    assert_eq!(page.tasks.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn startup_recovery_tells_the_sender() {
    let stores = namespaces(true);
    let old = "2001-01-01T00:00:00.000Z";
    let task = |id: &str| {
        Task::try_from(json!({"id": id, "contextId": "c", "kind": "task",
            "status": {"state": "working", "timestamp": old}}))
        .unwrap()
    };
    stores.get("").save(&task("root-task")).await.unwrap();
    stores.get("t.acme").save(&task("acme-task")).await.unwrap();
    let server = start_over(stores, true, 0).await;
    assert_eq!(
        server.recorder.wait_for("root-task", "failed").await,
        ["failed"]
    );
    assert_eq!(
        server.recorder.wait_for("acme-task", "failed").await,
        ["failed"]
    );
    let saves = server.recorder.saves.lock().unwrap().clone();
    let namespace_of = |id: &str| saves.iter().find(|(_, t, _)| t == id).unwrap().0.clone();
    assert_eq!(namespace_of("root-task"), None);
    assert_eq!(namespace_of("acme-task").as_deref(), Some("t.acme"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_card_says_whether_push_is_offered() {
    let on = start().await;
    let off = start_over(namespaces(true), false, 0).await;
    let no_store = start_over(namespaces(false), true, 0).await;
    for (server, offered) in [(&on, true), (&off, false), (&no_store, false)] {
        for version in ["1.0", ""] {
            let card = server.card(version).await;
            assert_eq!(
                card["capabilities"]["pushNotifications"], offered,
                "{version}: {card}"
            );
        }
    }
    for server in [&off, &no_store] {
        server.task("", "t", "completed", NOW).await;
        let refused = server
            .rpc(
                "1.0",
                "ListTaskPushNotificationConfigs",
                json!({"taskId": "t"}),
            )
            .await;
        assert_eq!(refused["error"]["code"], -32003, "{refused}");
        let refused = server
            .rpc("", "tasks/pushNotificationConfig/get", json!({"id": "t"}))
            .await;
        assert_eq!(refused["error"]["code"], -32003, "{refused}");
        let (status, refused) = server
            .rest(
                "1.0",
                "POST",
                "/tasks/t/pushNotificationConfigs",
                Some(json!({"url": "https://h/x"})),
            )
            .await;
        assert_eq!(status, 400, "{refused}");
        assert!(
            refused
                .to_string()
                .contains("PUSH_NOTIFICATION_NOT_SUPPORTED"),
            "{refused}"
        );
        let (status, _) = server
            .rest("", "GET", "/v1/tasks/t/pushNotificationConfigs", None)
            .await;
        assert_eq!(status, 400);
        let refused = server
            .rpc(
                "",
                "message/send",
                json!({"message": {"role": "user", "messageId": "m", "kind": "message",
                    "parts": [{"kind": "text", "text": "hi"}]},
                    "configuration": {"pushNotificationConfig": {"url": "https://h/x"}}}),
            )
            .await;
        assert_eq!(refused["error"]["code"], -32003, "{refused}");
    }
    assert!(no_store.recorder.saves.lock().unwrap().is_empty());
}

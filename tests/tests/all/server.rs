//! The A2A server over real HTTP (in-process server, real client), for every store.

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolnexus::{InMemoryTaskStore, ListQuery, StoreError, Task, TaskPage, TaskStore};
use toolnexus_a2a::{EchoAgent, ServerConfig, ServiceConfig, codes, serve};
use toolnexus_conformance::a2a_client::wait_for_state;
use toolnexus_conformance::listing_stores;

struct Server {
    url: String,
    client: reqwest::Client,
}

async fn start(store: Arc<dyn TaskStore>, delay: Duration) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let config = ServerConfig {
        service: ServiceConfig {
            agent: Arc::new(EchoAgent { delay }),
            ..Default::default()
        },
        ..Default::default()
    };
    tokio::spawn(serve(listener, store, config));
    Server {
        url,
        client: reqwest::Client::new(),
    }
}

impl Server {
    async fn raw(&self, body: impl Into<reqwest::Body>) -> (u16, Value) {
        let resp = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    async fn call(&self, method: &str, params: Value) -> Value {
        let (status, body) = self
            .raw(
                json!({"jsonrpc": "2.0", "id": "1", "method": method, "params": params})
                    .to_string(),
            )
            .await;
        assert_eq!(status, 200);
        assert_eq!(body["jsonrpc"], "2.0");
        body
    }

    async fn send(&self, text: &str) -> Value {
        let body = self
            .call(
                "SendMessage",
                json!({"configuration": {"blocking": false}, "message": {"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": text}]}}),
            )
            .await;
        body["result"].clone()
    }

    /// Waits until Task `id` is in `state` (following its subscription stream); the Task.
    async fn wait_for(&self, id: &str, state: &str) -> Value {
        wait_for_state(&self.client, &self.url, id, state).await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn send_then_poll_until_completed_with_the_echo() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, store) in listing_stores(tmp.path()) {
        let server = start(Arc::clone(&store), Duration::ZERO).await;
        let task = server.send("hello there").await;
        assert_eq!(task["status"]["state"], "submitted", "{name}");
        assert_eq!(task["kind"], "task");
        let id = task["id"].as_str().unwrap();
        let done = server.wait_for(id, "completed").await;
        assert_eq!(
            done["artifacts"][0]["parts"][0]["text"], "hello there",
            "{name}"
        );
        assert_eq!(done["history"][0]["parts"][0]["text"], "hello there");
        assert_eq!(done["contextId"], task["contextId"]);
        // The store itself holds the final state.
        let stored = store.get(id).await.unwrap().unwrap();
        assert_eq!(toolnexus::task_state(&stored), "completed", "{name}");
        // The older method name works too.
        let old = server.call("tasks/get", json!({"id": id})).await;
        assert_eq!(old["result"]["id"], id);
    }
}

/// Reference example 3: every transition goes through the host-supplied store.
struct SpyStore {
    inner: InMemoryTaskStore,
    saved: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl TaskStore for SpyStore {
    async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
        self.inner.get(id).await
    }
    async fn save(&self, task: &Task) -> Result<(), StoreError> {
        self.saved
            .lock()
            .unwrap()
            .push(toolnexus::task_state(task).to_owned());
        self.inner.save(task).await
    }
    async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
        self.inner.list(query).await
    }
    fn describe(&self) -> String {
        "spy".into()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_state_transition_goes_through_the_supplied_store() {
    let spy = Arc::new(SpyStore {
        inner: InMemoryTaskStore::new(),
        saved: Mutex::new(Vec::new()),
    });
    let store = toolnexus::resolve_store(Arc::clone(&spy) as Arc<dyn TaskStore>).unwrap();
    let server = start(store, Duration::ZERO).await;
    let task = server.send("go").await;
    server
        .wait_for(task["id"].as_str().unwrap(), "completed")
        .await;
    // The echo agent's reply is an artifact update of its own, saved while the Task works.
    assert_eq!(
        *spy.saved.lock().unwrap(),
        ["submitted", "working", "working", "completed"]
    );
}

/// A store shared with another writer (think: a second replica) that cancels the Task right
/// after this server reads it as `working`, before the agent's result is saved: the worst
/// moment for a read-modify-write. It tells the test each step as it happens.
struct CanceledBehindOurBack {
    inner: InMemoryTaskStore,
    armed: std::sync::atomic::AtomicBool,
    /// A save of the Task as `working` landed: the agent is at work.
    working_saved: tokio::sync::Notify,
    /// The other writer's cancel landed, right after a read of the Task as `working`.
    canceled: tokio::sync::Notify,
    cancel_landed: std::sync::atomic::AtomicBool,
    /// A save after the cancel (the agent's result) was answered, whatever the answer.
    result_tried: tokio::sync::Notify,
}

impl CanceledBehindOurBack {
    /// Tells the test what a save of `task` that was just answered means.
    fn saved(&self, task: &Task, landed: bool) {
        if self.cancel_landed.load(std::sync::atomic::Ordering::SeqCst) {
            self.result_tried.notify_one();
        } else if landed && toolnexus::task_state(task) == "working" {
            self.working_saved.notify_one();
        }
    }
}

#[async_trait::async_trait]
impl TaskStore for CanceledBehindOurBack {
    async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
        let current = self.inner.get(id).await?;
        if let Some(task) = &current
            && toolnexus::task_state(task) == "working"
            && self.armed.swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            let mut canceled = task.clone().into_value();
            canceled["status"] = json!({"state": "canceled"});
            self.inner.save(&Task::try_from(canceled)?).await?;
            self.cancel_landed
                .store(true, std::sync::atomic::Ordering::SeqCst);
            self.canceled.notify_one();
        }
        Ok(current)
    }
    async fn save(&self, task: &Task) -> Result<(), StoreError> {
        let saved = self.inner.save(task).await;
        self.saved(task, saved.is_ok());
        saved
    }
    async fn save_if(&self, task: &Task, expected: Option<&Task>) -> Result<bool, StoreError> {
        let saved = self.inner.save_if(task, expected).await;
        self.saved(task, matches!(saved, Ok(true)));
        saved
    }
    fn describe(&self) -> String {
        "memory shared with another writer".into()
    }
}

/// Waits for `event`, at most 30 s (a loaded machine too); panics with `what` if it never comes.
async fn happens(event: &tokio::sync::Notify, what: &str) {
    tokio::time::timeout(Duration::from_secs(30), event.notified())
        .await
        .unwrap_or_else(|_| panic!("{what}"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_by_another_writer_is_never_overwritten_by_the_agent() {
    let store = Arc::new(CanceledBehindOurBack {
        inner: InMemoryTaskStore::new(),
        armed: std::sync::atomic::AtomicBool::new(false),
        working_saved: tokio::sync::Notify::new(),
        canceled: tokio::sync::Notify::new(),
        cancel_landed: std::sync::atomic::AtomicBool::new(false),
        result_tried: tokio::sync::Notify::new(),
    });
    let server = start(
        Arc::clone(&store) as Arc<dyn TaskStore>,
        Duration::from_millis(300),
    )
    .await;
    let task = server.send("race me").await;
    let id = task["id"].as_str().unwrap().to_owned();
    // Once the agent is working (its save said so), arm.
    happens(&store.working_saved, "the agent never started working").await;
    store.armed.store(true, std::sync::atomic::Ordering::SeqCst);
    // The agent finishes, reads `working` (and the other writer cancels right then), and must
    // then see its compare-and-set fail, re-read, and leave the cancel alone.
    happens(&store.canceled, "the agent never read the Task as working").await;
    // A lost update would be the agent's save of its result, right after that read.
    happens(
        &store.result_tried,
        "the agent never tried to save its result",
    )
    .await;
    let fin = store.inner.get(&id).await.unwrap().unwrap();
    assert_eq!(toolnexus::task_state(&fin), "canceled", "{fin:?}");
    assert!(
        fin.get("artifacts").is_none(),
        "the agent's result was not saved"
    );
    let via_server = server.call("GetTask", json!({"id": id})).await;
    assert_eq!(via_server["result"]["status"]["state"], "canceled");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_works_before_completion_and_is_refused_after() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, store) in listing_stores(tmp.path()) {
        // The cancel must land while the agent works: 2 s, on a loaded machine too.
        let server = start(store, Duration::from_millis(2000)).await;
        let task = server.send("slow").await;
        let id = task["id"].as_str().unwrap();
        let canceled = server.call("CancelTask", json!({"id": id})).await;
        assert_eq!(
            canceled["result"]["status"]["state"], "canceled",
            "{name}: {canceled}"
        );
        // The agent finishing later must not resurrect it.
        tokio::time::sleep(Duration::from_millis(2200)).await;
        let after = server.call("GetTask", json!({"id": id})).await;
        assert_eq!(after["result"]["status"]["state"], "canceled", "{name}");
        let again = server.call("tasks/cancel", json!({"id": id})).await;
        assert_eq!(
            again["error"]["code"],
            codes::TASK_NOT_CANCELABLE,
            "{name}: {again}"
        );
        let missing = server.call("CancelTask", json!({"id": "nope"})).await;
        assert_eq!(missing["error"]["code"], codes::TASK_NOT_FOUND);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn list_filters_and_pages_and_delete_removes() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, store) in listing_stores(tmp.path()) {
        let server = start(store, Duration::ZERO).await;
        let mut ids = Vec::new();
        for i in 0..5 {
            let t = server.send(&format!("m{i}")).await;
            ids.push(t["id"].as_str().unwrap().to_owned());
        }
        for id in &ids {
            server.wait_for(id, "completed").await;
        }
        let page = server.call("ListTasks", json!({"pageSize": 3})).await["result"].clone();
        assert_eq!(page["tasks"].as_array().unwrap().len(), 3, "{name}: {page}");
        let token = page["nextPageToken"].as_str().unwrap().to_owned();
        let rest = server
            .call("tasks/list", json!({"pageSize": 3, "pageToken": token}))
            .await["result"]
            .clone();
        assert_eq!(rest["tasks"].as_array().unwrap().len(), 2, "{name}");
        assert_eq!(rest["nextPageToken"], "");
        assert_eq!(rest["totalSize"], 5, "{name}: {rest}");
        // Newest status first: the pages together, in order of their status timestamps.
        let walked: Vec<Value> = page["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .chain(rest["tasks"].as_array().unwrap())
            .cloned()
            .collect();
        let stamps: Vec<&str> = walked
            .iter()
            .map(|t| t["status"]["timestamp"].as_str().unwrap())
            .collect();
        let mut newest_first = stamps.clone();
        newest_first.sort_by(|a, b| b.cmp(a));
        assert_eq!(stamps, newest_first, "{name}");
        // Only what changed at or after the third-newest status.
        let after = server
            .call("ListTasks", json!({"statusTimestampAfter": stamps[2]}))
            .await["result"]
            .clone();
        // The server writes `…T12:00:00.123Z`, so text order is time order here.
        let at_or_after = stamps.iter().filter(|s| **s >= stamps[2]).count();
        assert_eq!(after["totalSize"], at_or_after, "{name}: {after}");
        assert_eq!(
            after["tasks"].as_array().unwrap().len(),
            at_or_after,
            "{name}: {after}"
        );
        for bad in [
            json!({"statusTimestampAfter": "last tuesday"}),
            json!({"pageToken": "not-a-token"}),
        ] {
            let reply = server.call("ListTasks", bad.clone()).await;
            assert_eq!(
                reply["error"]["code"],
                codes::INVALID_PARAMS,
                "{name} {bad}: {reply}"
            );
        }
        let ctx =
            server.call("GetTask", json!({"id": ids[0]})).await["result"]["contextId"].clone();
        let by_ctx = server
            .call(
                "ListTasks",
                json!({"contextId": ctx, "status": "completed"}),
            )
            .await["result"]
            .clone();
        assert_eq!(by_ctx["tasks"].as_array().unwrap().len(), 1, "{name}");
        let deleted = server.call("DeleteTask", json!({"id": ids[0]})).await;
        assert_eq!(deleted["result"]["deleted"], true, "{name}");
        let gone = server.call("GetTask", json!({"id": ids[0]})).await;
        assert_eq!(gone["error"]["code"], codes::TASK_NOT_FOUND);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn listing_a_store_without_a_catalog_is_unsupported() {
    struct GetSaveOnly(InMemoryTaskStore);
    #[async_trait::async_trait]
    impl TaskStore for GetSaveOnly {
        async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
            self.0.get(id).await
        }
        async fn save(&self, task: &Task) -> Result<(), StoreError> {
            self.0.save(task).await
        }
        fn describe(&self) -> String {
            "get-save-only".into()
        }
    }
    let server = start(
        Arc::new(GetSaveOnly(InMemoryTaskStore::new())),
        Duration::ZERO,
    )
    .await;
    let reply = server.call("ListTasks", json!({})).await;
    assert_eq!(
        reply["error"]["code"],
        codes::UNSUPPORTED_OPERATION,
        "{reply}"
    );
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not support list")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_requests_get_the_right_json_rpc_errors_and_change_nothing() {
    let store = Arc::new(InMemoryTaskStore::new());
    let server = start(Arc::clone(&store) as Arc<dyn TaskStore>, Duration::ZERO).await;
    let cases: Vec<(String, i64)> = vec![
        ("{not json".into(), codes::PARSE_ERROR),
        ("".into(), codes::PARSE_ERROR),
        ("[1, 2]".into(), codes::INVALID_REQUEST),
        (json!({"jsonrpc": "1.0", "id": 1, "method": "GetTask"}).to_string(), codes::INVALID_REQUEST),
        (json!({"jsonrpc": "2.0", "id": 1}).to_string(), codes::INVALID_REQUEST),
        (json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "GetTask"}).to_string(), codes::INVALID_REQUEST),
        (json!({"jsonrpc": "2.0", "id": 1, "method": "Frobnicate"}).to_string(), codes::METHOD_NOT_FOUND),
        (json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {}}).to_string(), codes::INVALID_PARAMS),
        (json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": 5}}).to_string(), codes::INVALID_PARAMS),
        (json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "missing"}}).to_string(), codes::TASK_NOT_FOUND),
        (json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}).to_string(), codes::INVALID_PARAMS),
        (json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"role": "user", "messageId": "m", "parts": []}}}).to_string(), codes::INVALID_PARAMS),
        (json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"role": "user", "messageId": "m", "parts": [1]}}}).to_string(), codes::INVALID_PARAMS),
        (json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageSize": -1}}).to_string(), codes::INVALID_PARAMS),
    ];
    for (body, code) in cases {
        let (status, reply) = server.raw(body.clone()).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(reply["error"]["code"], code, "{body}: {reply}");
    }
    assert!(store.is_empty(), "no bad request created a Task");
    // An oversized body is refused before it is read: HTTP 413, or — when the server answers
    // and closes while the client is still sending — a connection the server cut short.
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "x".repeat(2 << 20)}]}}});
    let sent = server
        .client
        .post(&server.url)
        .body(big.to_string())
        .send()
        .await;
    match sent {
        Ok(resp) => assert_eq!(resp.status().as_u16(), 413),
        Err(e) => assert!(
            e.is_request() || e.is_body(),
            "unexpected client error: {e}"
        ),
    }
    assert!(store.is_empty(), "the oversized message created no Task");
    // And the server still works, on a new connection: it may close the one whose body it
    // refused, and a pooled client could otherwise race that close.
    let server = Server {
        url: server.url,
        client: reqwest::Client::new(),
    };
    let task = server.send("still here").await;
    assert_eq!(task["status"]["state"], "submitted");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agent_card_describes_the_endpoint() {
    let server = start(Arc::new(InMemoryTaskStore::new()), Duration::ZERO).await;
    let card: Value = server
        .client
        .get(format!("{}.well-known/agent-card.json", server.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["url"], server.url);
    assert_eq!(card["preferredTransport"], "JSONRPC");
    assert!(card["skills"].as_array().is_some_and(|s| !s.is_empty()));
}

/// A bounded load: concurrent clients send messages; zero errors, every Task retrievable and
/// completed afterwards. Figures go to stderr (`-- --nocapture`); they are not asserted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_clients_under_load_lose_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    const CLIENTS: usize = 16;
    const PER_CLIENT: usize = 25;
    for (name, store) in listing_stores(tmp.path()) {
        let server = Arc::new(start(store, Duration::ZERO).await);
        let started = Instant::now();
        let mut handles = Vec::new();
        for c in 0..CLIENTS {
            let server = Arc::clone(&server);
            handles.push(tokio::spawn(async move {
                let mut out = Vec::new();
                for i in 0..PER_CLIENT {
                    let t0 = Instant::now();
                    let task = server.send(&format!("client {c} message {i}")).await;
                    out.push((
                        task["id"].as_str().expect("every send succeeds").to_owned(),
                        t0.elapsed(),
                    ));
                }
                out
            }));
        }
        let mut results = Vec::new();
        for h in handles {
            results.extend(h.await.unwrap());
        }
        let wall = started.elapsed();
        let mut latencies: Vec<Duration> = results.iter().map(|(_, d)| *d).collect();
        latencies.sort();
        eprintln!(
            "load[{name}]: {} SendMessage in {:.2?} = {:.0} req/s, p50 {:.2?}, p99 {:.2?}",
            results.len(),
            wall,
            results.len() as f64 / wall.as_secs_f64(),
            latencies[latencies.len() / 2],
            latencies[latencies.len() * 99 / 100]
        );
        assert_eq!(results.len(), CLIENTS * PER_CLIENT);
        for (id, _) in &results {
            server.wait_for(id, "completed").await;
        }
    }
}

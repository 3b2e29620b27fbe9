//! The A2A protocol through real HTTP: both versions, both bindings, streaming, the 1.0 error
//! codes, tenants and owners.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use toolnexus_a2a::{EchoAgent, ServerConfig, Stores, Tokens, serve_stores};
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
        agent: Arc::new(EchoAgent {
            delay: Duration::from_millis(ms),
        }),
        poll_interval: Duration::from_millis(50),
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
        assert_eq!(body["id"], 7, "{body}");
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

#[tokio::test(flavor = "multi_thread")]
async fn one_task_in_both_versions_and_both_bindings() {
    let server = start(ServerConfig::default()).await;
    // 1.0 JSON-RPC: blocking by default, wrapped, 1.0 spellings, no kinds.
    let sent = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": message_v1("hello")}),
        )
        .await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(task["history"][0]["role"], "ROLE_USER");
    assert_eq!(task["history"][0]["parts"][0], json!({"text": "hello"}));
    assert_eq!(task["artifacts"][0]["parts"][0], json!({"text": "hello"}));
    assert!(task.get("kind").is_none() && task["history"][0].get("kind").is_none());
    let id = task["id"].as_str().unwrap();
    // The same Task through 0.3: kinds and 0.3 spellings.
    let old = server.rpc("", "tasks/get", json!({"id": id})).await;
    assert_eq!(old["result"]["kind"], "task", "{old}");
    assert_eq!(old["result"]["status"]["state"], "completed");
    assert_eq!(old["result"]["history"][0]["role"], "user");
    assert_eq!(
        old["result"]["artifacts"][0]["parts"][0],
        json!({"kind": "text", "text": "hello"})
    );
    // Stored once, in the 0.3 form.
    let stored = server.stores.get("").get(id).await.unwrap().unwrap();
    assert_eq!(stored.get("kind"), Some(&json!("task")));
    // HTTP+JSON: the same Task; historyLength 0 drops the history.
    let (status, rest) = server
        .rest("GET", &format!("/tasks/{id}?historyLength=0"), None)
        .await;
    assert_eq!(status, 200, "{rest}");
    assert_eq!(rest["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(rest.get("history").is_none(), "{rest}");
    // And on the 0.3 HTTP+JSON prefix too.
    let (status, _) = server.rest("GET", &format!("/v1/tasks/{id}"), None).await;
    assert_eq!(status, 200);
    // A 0.3 send waits for the outcome unless `blocking: false`, as the official SDKs do.
    let old_send = server
        .rpc(
            "",
            "message/send",
            json!({"message": {"role": "user", "messageId": "m03",
            "parts": [{"kind": "text", "text": "0.3"}]}}),
        )
        .await;
    assert_eq!(
        old_send["result"]["status"]["state"], "completed",
        "{old_send}"
    );
    // The version may come as a query parameter too.
    let (_, by_query) = server
        .rest("GET", &format!("/v1/tasks/{id}?A2A-Version=1.0"), None)
        .await;
    assert_eq!(
        by_query["status"]["state"], "TASK_STATE_COMPLETED",
        "{by_query}"
    );
    // Unknown fields of a message are not stored; protobuf field names are understood.
    let sent = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "message_id": "m-snake",
            "tckUnknownField": "x", "parts": [{"text": "y"}]}}),
        )
        .await;
    let history = &sent["result"]["task"]["history"][0];
    assert_eq!(history["messageId"], "m-snake", "{sent}");
    assert!(history.get("tckUnknownField").is_none(), "{sent}");
    // An unknown version is refused with -32009.
    let refused = server.rpc("2.0", "GetTask", json!({"id": id})).await;
    assert_eq!(refused["error"]["code"], -32009, "{refused}");
    assert_eq!(
        refused["error"]["data"][0]["reason"],
        "VERSION_NOT_SUPPORTED"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rest_sends_lists_cancels_and_answers_errors_with_http_statuses() {
    let server = start(slow(3000)).await;
    let (status, sent) = server
        .rest(
            "POST",
            "/message:send",
            Some(json!({"message": message_v1("wait for me"), "configuration": {"returnImmediately": true}})),
        )
        .await;
    assert_eq!(status, 200, "{sent}");
    assert_eq!(sent["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    let (_, page) = server.rest("GET", "/tasks?pageSize=10", None).await;
    assert_eq!(page["tasks"][0]["id"], id.as_str(), "{page}");
    assert_eq!(page["pageSize"], 10);
    assert_eq!(page["totalSize"], 1);
    let (status, canceled) = server
        .rest("POST", &format!("/tasks/{id}:cancel"), None)
        .await;
    assert_eq!(status, 200, "{canceled}");
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let (status, again) = server
        .rest("POST", &format!("/tasks/{id}:cancel"), None)
        .await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(again["error"]["status"], "FAILED_PRECONDITION");
    assert_eq!(
        again["error"]["details"][0]["reason"],
        "TASK_NOT_CANCELABLE"
    );
    let (status, missing) = server.rest("GET", "/tasks/no-such-task", None).await;
    assert_eq!(status, 404, "{missing}");
    assert_eq!(missing["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
    for bad in [
        "/tasks?pageSize=0",
        "/tasks?pageSize=101",
        "/tasks?status=NOPE",
        "/tasks?historyLength=-1",
    ] {
        let (status, refused) = server.rest("GET", bad, None).await;
        assert_eq!(status, 400, "{bad}: {refused}");
        assert_eq!(
            refused["error"]["details"][0]["reason"], "INVALID_PARAMS",
            "{bad}"
        );
    }
    // The canceled agent stopped: nothing is saved after the cancel.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let stored = server.stores.get("").get(&id).await.unwrap().unwrap();
    assert_eq!(task_state(&stored), "canceled");
    assert!(stored.get("artifacts").is_none(), "{stored}");
}

#[tokio::test(flavor = "multi_thread")]
async fn list_shows_artifacts_only_when_asked() {
    let server = start(ServerConfig::default()).await;
    server
        .rpc("1.0", "SendMessage", json!({"message": message_v1("x")}))
        .await;
    let plain = server.rpc("1.0", "ListTasks", json!({})).await;
    assert!(
        plain["result"]["tasks"][0].get("artifacts").is_none(),
        "{plain}"
    );
    assert_eq!(plain["result"]["pageSize"], 50);
    let full = server
        .rpc(
            "1.0",
            "ListTasks",
            json!({"includeArtifacts": true, "historyLength": 0}),
        )
        .await;
    let task = &full["result"]["tasks"][0];
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "x", "{full}");
    assert!(task.get("history").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn streams_give_the_task_then_its_updates_and_end_at_completion() {
    let server = start(slow(400)).await;
    for (path, version) in [("/", "1.0"), ("/message:stream", "1.0"), ("/", "")] {
        let message = if version.is_empty() {
            json!({"role": "user", "messageId": uuid(), "parts": [{"kind": "text", "text": "one two three four"}]})
        } else {
            message_v1("one two three four")
        };
        let body = if path == "/" {
            let method = if version.is_empty() {
                "message/stream"
            } else {
                "SendStreamingMessage"
            };
            json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": {"message": message}})
        } else {
            json!({"message": message})
        };
        let events = server.events(path, version, body).await;
        let events: Vec<Value> = events
            .into_iter()
            .map(|e| if path == "/" { e["result"].clone() } else { e })
            .collect();
        let text: String = if version == "1.0" {
            assert_eq!(
                events[0]["task"]["status"]["state"], "TASK_STATE_SUBMITTED",
                "{events:?}"
            );
            let last = events.last().unwrap();
            assert_eq!(
                last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
                "{events:?}"
            );
            let chunks: Vec<&Value> = events
                .iter()
                .filter_map(|e| e.get("artifactUpdate"))
                .collect();
            assert!(chunks.len() >= 2, "partial artifacts streamed: {events:?}");
            assert_eq!(chunks[0]["append"], false);
            assert!(chunks[1..].iter().all(|c| c["append"] == true));
            chunks
                .iter()
                .flat_map(|c| c["artifact"]["parts"].as_array().unwrap().iter())
                .map(|p| p["text"].as_str().unwrap())
                .collect()
        } else {
            assert_eq!(events[0]["kind"], "task", "{events:?}");
            let last = events.last().unwrap();
            assert_eq!(last["kind"], "status-update");
            assert_eq!(last["status"]["state"], "completed");
            assert_eq!(last["final"], true);
            events
                .iter()
                .filter(|e| e["kind"] == "artifact-update")
                .flat_map(|c| c["artifact"]["parts"].as_array().unwrap().iter())
                .map(|p| p["text"].as_str().unwrap())
                .collect()
        };
        assert_eq!(text, "one two three four", "{path} {version}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn subscribing_follows_a_running_task_and_refuses_a_terminal_one() {
    // Long enough that the subscribe lands while the Task runs, on a loaded machine too.
    let server = start(slow(2000)).await;
    let sent = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": message_v1("a b"), "configuration": {"returnImmediately": true}}),
        )
        .await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    let events = server
        .events(&format!("/tasks/{id}:subscribe"), "1.0", json!({}))
        .await;
    assert_eq!(events[0]["task"]["id"], id.as_str(), "{events:?}");
    assert_eq!(
        events.last().unwrap()["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let refused = server
        .rpc("1.0", "SubscribeToTask", json!({"id": id}))
        .await;
    assert_eq!(refused["error"]["code"], -32004, "{refused}");
    let missing = server
        .rpc("", "tasks/resubscribe", json!({"id": "nope"}))
        .await;
    assert_eq!(missing["error"]["code"], -32001, "{missing}");
}

#[tokio::test(flavor = "multi_thread")]
async fn input_required_then_continued_by_task_id() {
    let server = start(ServerConfig::default()).await;
    let asked = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": message_v1("ask: please")}),
        )
        .await;
    let task = &asked["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{asked}"
    );
    assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT");
    let id = task["id"].as_str().unwrap();
    let context = task["contextId"].as_str().unwrap();
    let mut next = message_v1("the answer");
    next["taskId"] = json!(id);
    let done = server
        .rpc("1.0", "SendMessage", json!({"message": next}))
        .await;
    let task = &done["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(task["id"], id);
    assert_eq!(task["contextId"], context);
    assert_eq!(task["history"].as_array().unwrap().len(), 2);
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "the answer");
    // A terminal Task takes no more messages; an unknown one is not found; a foreign context
    // is refused.
    let mut late = message_v1("late");
    late["taskId"] = json!(id);
    let refused = server
        .rpc("1.0", "SendMessage", json!({"message": late}))
        .await;
    assert_eq!(refused["error"]["code"], -32004, "{refused}");
    let mut unknown = message_v1("?");
    unknown["taskId"] = json!("no-such-task");
    let missing = server
        .rpc("1.0", "SendMessage", json!({"message": unknown}))
        .await;
    assert_eq!(missing["error"]["code"], -32001, "{missing}");
    let asked = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": message_v1("ask: again")}),
        )
        .await;
    let mut foreign = message_v1("x");
    foreign["taskId"] = asked["result"]["task"]["id"].clone();
    foreign["contextId"] = json!("another-context");
    let refused = server
        .rpc("1.0", "SendMessage", json!({"message": foreign}))
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_other_error_codes_of_a2a_1_0() {
    let server = start(ServerConfig::default()).await;
    let push = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": message_v1("x"),
            "configuration": {"taskPushNotificationConfig": {"url": "https://example.com/hook"}}}),
        )
        .await;
    assert_eq!(push["error"]["code"], -32003, "{push}");
    let push = server
        .rpc(
            "1.0",
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "t"}),
        )
        .await;
    assert_eq!(push["error"]["code"], -32003, "{push}");
    let modes = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": message_v1("x"),
            "configuration": {"acceptedOutputModes": ["image/png"]}}),
        )
        .await;
    assert_eq!(modes["error"]["code"], -32005, "{modes}");
    let fine = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": message_v1("x"),
            "configuration": {"acceptedOutputModes": ["image/png", "text/*"]}}),
        )
        .await;
    assert!(fine["result"]["task"].is_object(), "{fine}");
    let card = server.rpc("1.0", "GetExtendedAgentCard", json!({})).await;
    // No extended card is declared: 1.0 says UnsupportedOperation.
    assert_eq!(card["error"]["code"], -32004, "{card}");
    let unknown = server.rpc("1.0", "NoSuchMethod", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let no_id = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}),
        )
        .await;
    assert_eq!(no_id["error"]["code"], -32602, "{no_id}");
    assert!(
        no_id["error"]["message"]
            .as_str()
            .unwrap()
            .contains("messageId")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agent_card_speaks_both_versions() {
    let server = start(ServerConfig::default()).await;
    let card: Value = server
        .client
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    let offered: Vec<(String, String)> = interfaces
        .iter()
        .map(|i| {
            (
                i["protocolBinding"].as_str().unwrap().into(),
                i["protocolVersion"].as_str().unwrap().into(),
            )
        })
        .collect();
    for want in [("JSONRPC", "1.0"), ("HTTP+JSON", "1.0"), ("JSONRPC", "0.3")] {
        assert!(offered.contains(&(want.0.into(), want.1.into())), "{card}");
    }
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(
        card["url"],
        format!("{}/", server.base),
        "the 0.3 field stays"
    );
    assert!(card.get("securitySchemes").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agent_card_is_cacheable_by_tag_and_by_date() {
    let server = start(ServerConfig::default()).await;
    let url = format!("{}/.well-known/agent-card.json", server.base);
    let fetch = |headers: Vec<(&'static str, String)>| {
        let mut request = server.client.get(&url);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        async move { request.send().await.unwrap() }
    };
    let header = |response: &reqwest::Response, name: &str| {
        response
            .headers()
            .get(name)
            .unwrap_or_else(|| panic!("no {name}"))
            .to_str()
            .unwrap()
            .to_owned()
    };

    let first = fetch(vec![]).await;
    assert_eq!(first.status(), 200);
    let tag = header(&first, "etag");
    let modified = header(&first, "last-modified");
    assert!(header(&first, "cache-control").contains("max-age="));
    assert_eq!(header(&first, "vary"), "a2a-version");
    let made = httpdate::parse_http_date(&modified).expect("an HTTP date");

    // The pure 1.0 card is another entity, with its own tag.
    let v1 = fetch(vec![("A2A-Version", "1.0".into())]).await;
    assert_ne!(header(&v1, "etag"), tag);
    let v1_card: Value = v1.json().await.unwrap();
    assert!(v1_card.get("url").is_none(), "{v1_card}");

    // By tag: the current one is 304 with no body, another is the card.
    let same = fetch(vec![("If-None-Match", tag.clone())]).await;
    assert_eq!(same.status(), 304);
    assert_eq!(header(&same, "etag"), tag);
    assert!(same.bytes().await.unwrap().is_empty());
    let other = fetch(vec![("If-None-Match", "\"0000\"".into())]).await;
    assert_eq!(other.status(), 200);

    // By date: not modified since it was made; modified since a day before; a date that does
    // not parse is ignored; a tag that does not match wins over a date that would.
    let since = |t: std::time::SystemTime| httpdate::fmt_http_date(t);
    let day = Duration::from_secs(86_400);
    for (headers, status) in [
        (vec![("If-Modified-Since", modified.clone())], 304),
        (vec![("If-Modified-Since", since(made + day))], 304),
        (vec![("If-Modified-Since", since(made - day))], 200),
        (vec![("If-Modified-Since", "yesterday".into())], 200),
        (
            vec![
                ("If-None-Match", "\"0000\"".into()),
                ("If-Modified-Since", modified.clone()),
            ],
            200,
        ),
    ] {
        let response = fetch(headers.clone()).await;
        assert_eq!(response.status(), status, "{headers:?}");
        assert_eq!(header(&response, "last-modified"), modified);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tenants_are_separate_and_undeclared_ones_refused() {
    let server = start(ServerConfig {
        tenants: vec!["acme".into(), "beta".into()],
        ..Default::default()
    })
    .await;
    let (status, sent) = server
        .rest(
            "POST",
            "/acme/message:send",
            Some(json!({"message": message_v1("for acme")})),
        )
        .await;
    assert_eq!(status, 200, "{sent}");
    let id = sent["task"]["id"].as_str().unwrap();
    assert_eq!(
        server
            .rest("GET", &format!("/acme/tasks/{id}"), None)
            .await
            .0,
        200
    );
    assert_eq!(
        server
            .rest("GET", &format!("/beta/tasks/{id}"), None)
            .await
            .0,
        404
    );
    assert_eq!(
        server.rest("GET", &format!("/tasks/{id}"), None).await.0,
        404
    );
    let (_, beta) = server.rest("GET", "/beta/tasks", None).await;
    assert_eq!(beta["tasks"], json!([]), "{beta}");
    // JSON-RPC names the tenant in its params.
    let got = server
        .rpc("1.0", "GetTask", json!({"id": id, "tenant": "acme"}))
        .await;
    assert_eq!(got["result"]["id"], id, "{got}");
    let got = server
        .rpc("1.0", "GetTask", json!({"id": id, "tenant": "beta"}))
        .await;
    assert_eq!(got["error"]["code"], -32001, "{got}");
    // Stored in the tenant's namespace only.
    assert!(server.stores.get("t.acme").get(id).await.unwrap().is_some());
    assert!(server.stores.get("").get(id).await.unwrap().is_none());
    let (status, refused) = server.rest("GET", "/other/tasks", None).await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown tenant")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn owners_see_only_their_own_tasks() {
    let tokens =
        Tokens::parse("alice alice-token-0123456789\nbob bob-token-0123456789ab\n").unwrap();
    let server = start(ServerConfig {
        tokens: Some(Arc::new(tokens)),
        ..Default::default()
    })
    .await;
    let alice = Some("alice-token-0123456789");
    let bob = Some("bob-token-0123456789ab");
    let (status, anonymous) = server
        .rpc_as(
            "1.0",
            None,
            "SendMessage",
            json!({"message": message_v1("x")}),
        )
        .await;
    assert_eq!(status, 401, "{anonymous}");
    assert!(
        anonymous["error"]["message"]
            .as_str()
            .unwrap()
            .contains("bearer token")
    );
    let (status, _) = server
        .rpc_as(
            "1.0",
            Some("wrong-token-0123456789"),
            "ListTasks",
            json!({}),
        )
        .await;
    assert_eq!(status, 401);
    let (_, sent) = server
        .rpc_as(
            "1.0",
            alice,
            "SendMessage",
            json!({"message": message_v1("mine")}),
        )
        .await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    let (_, got) = server
        .rpc_as("1.0", alice, "GetTask", json!({"id": id}))
        .await;
    assert_eq!(got["result"]["id"], id.as_str());
    let (_, stolen) = server
        .rpc_as("1.0", bob, "GetTask", json!({"id": id}))
        .await;
    assert_eq!(stolen["error"]["code"], -32001, "{stolen}");
    let (_, cancel) = server
        .rpc_as("1.0", bob, "CancelTask", json!({"id": id}))
        .await;
    assert_eq!(cancel["error"]["code"], -32001, "{cancel}");
    let (_, listed) = server.rpc_as("1.0", bob, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    let (_, listed) = server.rpc_as("1.0", alice, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["tasks"].as_array().unwrap().len(), 1);
    // The card is public and declares the scheme.
    let card: Value = server
        .client
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert!(
        server
            .stores
            .get("o.alice")
            .get(&id)
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_0_3_http_json_binding_speaks_0_3_protobuf_json() {
    let server = start(slow(2000)).await;
    // As the official 0.3 client sends it: snake_case proto field names, `request`, `content`.
    let response = server
        .client
        .post(format!("{}/v1/message:send", server.base))
        .json(
            &json!({"request": {"message_id": "m-03", "role": "ROLE_USER",
            "content": [{"text": "old rest"}]}}),
        )
        .send()
        .await
        .unwrap();
    let sent: Value = response.json().await.unwrap();
    let task = &sent["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_SUBMITTED",
        "0.3 does not block: {sent}"
    );
    assert_eq!(
        task["history"][0]["content"][0]["text"], "old rest",
        "{sent}"
    );
    assert!(task["history"][0].get("parts").is_none());
    let id = task["id"].as_str().unwrap();
    let canceled: Value = server
        .client
        .post(format!("{}/v1/tasks/{id}:cancel", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        canceled["status"]["state"], "TASK_STATE_CANCELLED",
        "{canceled}"
    );
    let missing = server
        .client
        .get(format!("{}/v1/tasks/nope", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status().as_u16(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["type"], "TaskNotFoundError", "{body}");
}

//! The server's own limits over real TCP: header, body and idle timeouts, the connection cap,
//! the background queue, the byte cap on list answers, and internal errors that reach clients
//! as a request id only.

use serde_json::{Value, json};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use toolnexus_a2a::{
    Agent, HttpConfig, Message, Outcome, ServerConfig, ServiceConfig, Tokens, Work, codes, serve,
};
use toolnexus_core::{InMemoryTaskStore, ListQuery, StoreError, Task, TaskStore};

/// Long enough never to be what ends a test that passes; what a failing test waits at most.
const GUARD: Duration = Duration::from_secs(10);
/// The short timeout a test sets for the limit under test.
const SHORT: Duration = Duration::from_millis(300);
/// A timeout that never fires during a test.
const LONG: Duration = Duration::from_secs(600);

async fn start(store: Arc<dyn TaskStore>, config: ServerConfig) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, store, config));
    addr
}

fn memory() -> Arc<InMemoryTaskStore> {
    Arc::new(InMemoryTaskStore::new())
}

/// Every timeout long, so that a test shortens only the one it is about.
fn patient() -> ServerConfig {
    ServerConfig {
        http: patient_http(),
        ..Default::default()
    }
}

/// [`patient`]'s HTTP settings.
fn patient_http() -> HttpConfig {
    HttpConfig {
        header_read_timeout: LONG,
        body_read_timeout: LONG,
        idle_timeout: LONG,
        ..Default::default()
    }
}

const CARD_REQUEST: &[u8] =
    b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n";

/// Reads one HTTP response (head and `Content-Length` body) from a raw connection.
async fn read_response(stream: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if got.len() >= end + 4 + length {
                return text;
            }
        }
        let n = tokio::time::timeout(GUARD, stream.read(&mut buf))
            .await
            .expect("a response within the guard time")
            .expect("a response, not a read error");
        assert!(n > 0, "connection closed before a whole response: {text:?}");
        got.extend_from_slice(&buf[..n]);
    }
}

/// Asserts the server closes the connection: a read ends (0 bytes or an error) after any bytes
/// it still sends, within the guard time.
async fn assert_closed(stream: &mut TcpStream, what: &str) {
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(GUARD, stream.read(&mut buf)).await {
            Err(_) => panic!("{what}: the connection is still open after {GUARD:?}"),
            Ok(Ok(0)) | Ok(Err(_)) => return,
            Ok(Ok(_)) => continue,
        }
    }
}

/// One JSON-RPC call over HTTP: the `x-request-id` header and the whole answer.
async fn call(addr: SocketAddr, method: &str, params: Value) -> (String, Value) {
    let resp = reqwest::Client::new()
        .post(format!("http://{addr}/"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let request_id = resp
        .headers()
        .get("x-request-id")
        .expect("every answer has an x-request-id header")
        .to_str()
        .unwrap()
        .to_owned();
    (request_id, resp.json().await.unwrap())
}

/// A 0.3 `message/send` that answers at once (0.3 JSON-RPC sends wait by default).
fn message(text: &str) -> Value {
    json!({"configuration": {"blocking": false},
        "message": {"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": text}]}})
}

#[tokio::test]
async fn slowloris_half_a_header_line_is_disconnected_after_the_header_timeout() {
    let addr = start(
        memory(),
        ServerConfig {
            http: HttpConfig {
                header_read_timeout: SHORT,
                ..patient_http()
            },
            ..patient()
        },
    )
    .await;
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"POST / HTTP/1.1\r\nHost: loc")
        .await
        .unwrap();
    assert_closed(&mut slow, "half a header line, then nothing").await;
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_closed_after_the_header_timeout() {
    let addr = start(
        memory(),
        ServerConfig {
            http: HttpConfig {
                header_read_timeout: SHORT,
                ..patient_http()
            },
            ..patient()
        },
    )
    .await;
    let mut silent = TcpStream::connect(addr).await.unwrap();
    assert_closed(&mut silent, "connected, sent nothing").await;
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let addr = start(
        memory(),
        ServerConfig {
            http: HttpConfig {
                idle_timeout: SHORT,
                ..patient_http()
            },
            ..patient()
        },
    )
    .await;
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(CARD_REQUEST).await.unwrap();
    let first = read_response(&mut conn).await;
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    // Kept alive: a second request on it is served.
    conn.write_all(CARD_REQUEST).await.unwrap();
    let second = read_response(&mut conn).await;
    assert!(second.starts_with("HTTP/1.1 200"), "{second}");
    assert_closed(&mut conn, "kept alive, then idle").await;
}

/// The connection deadlines never cut a request short while the server is working on it.
#[tokio::test]
async fn a_slow_store_call_outlasts_the_header_and_idle_timeouts() {
    struct Slow(InMemoryTaskStore);
    #[async_trait::async_trait]
    impl TaskStore for Slow {
        async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
            tokio::time::sleep(SHORT * 3).await;
            self.0.get(id).await
        }
        async fn save(&self, task: &Task) -> Result<(), StoreError> {
            self.0.save(task).await
        }
        fn describe(&self) -> String {
            "slow".into()
        }
    }
    let addr = start(
        Arc::new(Slow(InMemoryTaskStore::new())),
        ServerConfig {
            http: HttpConfig {
                header_read_timeout: SHORT,
                idle_timeout: SHORT,
                ..patient_http()
            },
            ..patient()
        },
    )
    .await;
    let (_, answer) = call(addr, "GetTask", json!({"id": "nope"})).await;
    assert_eq!(answer["error"]["code"], codes::TASK_NOT_FOUND, "{answer}");
}

#[tokio::test]
async fn a_body_that_stops_arriving_gets_408_after_the_body_timeout() {
    let addr = start(
        memory(),
        ServerConfig {
            http: HttpConfig {
                body_read_timeout: SHORT,
                ..patient_http()
            },
            ..patient()
        },
    )
    .await;
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(
        b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
    )
    .await
    .unwrap();
    let answer = read_response(&mut conn).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("x-request-id:"),
        "{answer}"
    );
    assert_closed(&mut conn, "after a 408").await;
}

#[tokio::test]
async fn an_anonymous_request_gets_401_before_its_body_is_read() {
    let tokens = Tokens::parse("alice alice-token-0123456789\n").unwrap();
    // The body timeout never fires: a server that waited for the body would answer nothing.
    let addr = start(
        memory(),
        ServerConfig {
            tokens: Some(Arc::new(tokens)),
            ..patient()
        },
    )
    .await;
    for (path, credentials) in [
        ("/", ""),
        ("/message:send", ""),
        ("/v1/message:send", ""),
        ("/tenant-x/tasks/t1:cancel", ""),
        ("/no/such/route", ""),
        ("/", "Authorization: Bearer wrong-token-0123456789\r\n"),
    ] {
        let mut conn = TcpStream::connect(addr).await.unwrap();
        // The head of a 1 MiB body, and none of the body.
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             {credentials}Content-Length: 1048576\r\n\r\n"
        );
        conn.write_all(head.as_bytes()).await.unwrap();
        let answer = read_response(&mut conn).await;
        assert!(answer.starts_with("HTTP/1.1 401"), "{path}: {answer}");
        assert!(
            answer
                .to_ascii_lowercase()
                .contains("www-authenticate: bearer"),
            "{path}: {answer}"
        );
        assert_closed(&mut conn, "after a 401 given before the body").await;
    }
}

#[tokio::test]
async fn connections_over_the_cap_wait_until_one_closes() {
    let addr = start(
        memory(),
        ServerConfig {
            http: HttpConfig {
                max_connections: 2,
                ..patient_http()
            },
            ..patient()
        },
    )
    .await;
    let mut first = TcpStream::connect(addr).await.unwrap();
    let mut second = TcpStream::connect(addr).await.unwrap();
    for conn in [&mut first, &mut second] {
        conn.write_all(CARD_REQUEST).await.unwrap();
        let answer = read_response(conn).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    // Both stay open (kept alive). A third client's connect completes in the listen backlog,
    // but its request is not read while the two are open.
    let mut third = TcpStream::connect(addr).await.unwrap();
    third.write_all(CARD_REQUEST).await.unwrap();
    let mut buf = [0u8; 64];
    let early = tokio::time::timeout(Duration::from_millis(500), third.read(&mut buf)).await;
    assert!(
        early.is_err(),
        "the connection over the cap was answered: {early:?}"
    );
    // The second one still works.
    second.write_all(CARD_REQUEST).await.unwrap();
    assert!(read_response(&mut second).await.starts_with("HTTP/1.1 200"));
    drop(first);
    let answer = read_response(&mut third).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// An agent that works until the test lets it finish.
struct Gate(Arc<Notify>);

#[async_trait::async_trait]
impl Agent for Gate {
    async fn run(&self, _work: &mut Work) -> Result<Outcome, String> {
        self.0.notified().await;
        Ok(Outcome::Completed(Some(Message::agent_text("done"))))
    }
}

#[tokio::test]
async fn a_full_background_queue_answers_busy_and_saves_nothing() {
    let store = memory();
    let gate = Arc::new(Notify::new());
    let addr = start(
        Arc::clone(&store) as Arc<dyn TaskStore>,
        ServerConfig {
            service: ServiceConfig {
                max_background_tasks: 1,
                agent: Arc::new(Gate(Arc::clone(&gate))),
                ..Default::default()
            },
            ..patient()
        },
    )
    .await;
    let (_, first) = call(addr, "SendMessage", message("first")).await;
    let first_id = first["result"]["id"].as_str().expect("accepted").to_owned();

    let (_, busy) = call(addr, "SendMessage", message("second")).await;
    assert_eq!(busy["error"]["code"], codes::SERVER_BUSY, "{busy}");
    assert_eq!(busy["error"]["code"], -32000, "{busy}");
    let text = busy["error"]["message"].as_str().unwrap();
    assert!(text.contains("server busy"), "{text}");
    let (_, busy) = call(addr, "message/send", message("third")).await;
    assert_eq!(busy["error"]["code"], codes::SERVER_BUSY, "{busy}");
    let all = store.list(&ListQuery::default()).await.unwrap();
    assert_eq!(all.tasks.len(), 1, "only the accepted Task was saved");
    assert_eq!(all.tasks[0].id(), first_id);

    // Once the first Task is done, there is room again.
    gate.notify_one();
    let mut accepted = None;
    for _ in 0..1000 {
        let (_, again) = call(addr, "SendMessage", message("later")).await;
        if let Some(id) = again["result"]["id"].as_str() {
            accepted = Some(id.to_owned());
            break;
        }
        assert_eq!(again["error"]["code"], codes::SERVER_BUSY, "{again}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        accepted.is_some(),
        "a send is accepted once the queue drains"
    );
    let (_, done) = call(addr, "GetTask", json!({"id": first_id})).await;
    assert_eq!(done["result"]["status"]["state"], "completed", "{done}");
    assert_eq!(store.len(), 2);
    gate.notify_one();
}

async fn padded_tasks(store: &InMemoryTaskStore, count: usize, pad: usize) {
    for i in 0..count {
        let task = Task::try_from(
            json!({"id": format!("t{i:02}"), "contextId": "c", "pad": "x".repeat(pad)}),
        )
        .unwrap();
        store.save(&task).await.unwrap();
    }
}

/// Walks every page of `ListTasks`; each page's Tasks and the size of its HTTP body.
async fn walk(addr: SocketAddr, page_size: usize) -> Vec<(Vec<String>, usize, usize)> {
    let client = reqwest::Client::new();
    let mut token = String::new();
    let mut pages = Vec::new();
    loop {
        // Page size 0: the default (an explicit 0 is refused, as A2A 1.0 says).
        let mut params = json!({"pageToken": token, "includeArtifacts": true});
        if page_size > 0 {
            params["pageSize"] = json!(page_size);
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": params});
        let text = client
            .post(format!("http://{addr}/"))
            .json(&body)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let answer: Value = serde_json::from_str(&text).unwrap();
        let tasks = answer["result"]["tasks"]
            .as_array()
            .unwrap_or_else(|| panic!("{answer}"));
        let ids = tasks
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned())
            .collect();
        let task_bytes = tasks.iter().map(|t| t.to_string().len()).sum::<usize>();
        pages.push((ids, task_bytes, text.len()));
        token = answer["result"]["nextPageToken"]
            .as_str()
            .unwrap()
            .to_owned();
        if token.is_empty() {
            return pages;
        }
        assert!(pages.len() < 100, "paging ends");
    }
}

fn expected_ids(count: usize) -> Vec<String> {
    (0..count).map(|i| format!("t{i:02}")).collect()
}

#[tokio::test]
async fn a_list_answer_over_the_byte_cap_is_cut_and_continues_on_the_next_page() {
    let store = memory();
    padded_tasks(&store, 10, 1000).await;
    let cap = 3500;
    let addr = start(
        Arc::clone(&store) as Arc<dyn TaskStore>,
        ServerConfig {
            service: ServiceConfig {
                max_list_bytes: cap,
                ..Default::default()
            },
            ..patient()
        },
    )
    .await;
    let pages = walk(addr, 100).await;
    assert!(pages.len() > 1, "the 10 Tasks did not come on one page");
    for (ids, task_bytes, body_bytes) in &pages {
        assert!(!ids.is_empty());
        assert!(*task_bytes <= cap, "{task_bytes} bytes of Tasks on a page");
        assert!(*body_bytes <= cap + 200, "an answer of {body_bytes} bytes");
    }
    assert_eq!(pages[0].0.len(), 3, "as many Tasks as fit");
    let all: Vec<String> = pages.into_iter().flat_map(|(ids, _, _)| ids).collect();
    assert_eq!(all, expected_ids(10), "every Task once, in order");

    // Under the cap, a page is whole.
    let (_, whole) = call(addr, "ListTasks", json!({"pageSize": 3})).await;
    assert_eq!(whole["result"]["tasks"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn a_task_larger_than_the_list_cap_comes_on_a_page_of_its_own() {
    let store = memory();
    padded_tasks(&store, 4, 1000).await;
    let addr = start(
        Arc::clone(&store) as Arc<dyn TaskStore>,
        ServerConfig {
            service: ServiceConfig {
                max_list_bytes: 500,
                ..Default::default()
            },
            ..patient()
        },
    )
    .await;
    let pages = walk(addr, 0).await;
    assert_eq!(pages.len(), 4, "one Task a page");
    let all: Vec<String> = pages.into_iter().flat_map(|(ids, _, _)| ids).collect();
    assert_eq!(all, expected_ids(4));
}

/// A store that fails with errors naming its paths and database.
struct Leaky;

const SECRET: &str = "/secret/path";

#[async_trait::async_trait]
impl TaskStore for Leaky {
    async fn get(&self, _id: &str) -> Result<Option<Task>, StoreError> {
        Err(StoreError::io(
            format!("cannot read {SECRET}/tasks/abc.json"),
            std::io::Error::other("permission denied"),
        ))
    }
    async fn save(&self, _task: &Task) -> Result<(), StoreError> {
        Err(StoreError::Backend {
            store: "postgres://app@db.internal:5432/agents".into(),
            reason: format!("could not open {SECRET}/pg_wal"),
        })
    }
    async fn delete(&self, _id: &str) -> Result<bool, StoreError> {
        Err(StoreError::Component {
            component: format!("{SECRET}/store.wasm"),
            reason: "trapped: wasm backtrace:\n 0: 0x1234 - store!save".into(),
        })
    }
    fn describe(&self) -> String {
        format!("file:{SECRET}/tasks")
    }
}

/// Collects every log event as text.
struct Capture(Arc<Mutex<Vec<String>>>);

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

// One thread, so that the server's tasks log to this test's subscriber.
#[tokio::test(flavor = "current_thread")]
async fn store_errors_reach_clients_as_a_request_id_and_the_log_gets_the_details() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let _guard = tracing::subscriber::set_default(Capture(Arc::clone(&log)));
    let addr = start(Arc::new(Leaky), patient()).await;

    let calls = [
        ("GetTask", json!({"id": "abc"}), codes::INTERNAL_ERROR),
        ("SendMessage", message("hello"), codes::INTERNAL_ERROR),
        ("DeleteTask", json!({"id": "abc"}), codes::INTERNAL_ERROR),
        ("ListTasks", json!({}), codes::UNSUPPORTED_OPERATION),
    ];
    let mut ids = Vec::new();
    for (method, params, code) in calls {
        let (request_id, answer) = call(addr, method, params).await;
        assert_eq!(answer["error"]["code"], code, "{method}: {answer}");
        let text = answer["error"]["message"].as_str().unwrap();
        for secret in [SECRET, "db.internal", "postgres://", "backtrace", "pg_wal"] {
            assert!(!text.contains(secret), "{method} leaks {secret:?}: {text}");
        }
        assert!(!ids.contains(&request_id), "request ids are fresh");
        if code == codes::INTERNAL_ERROR {
            assert_eq!(text, format!("internal error (request id {request_id})"));
            let log = log.lock().unwrap();
            assert!(
                log.iter()
                    .any(|line| line.contains(&request_id) && line.contains(SECRET)),
                "the log has the details under request id {request_id}: {log:?}"
            );
        } else {
            assert_eq!(text, "the store does not support list");
        }
        ids.push(request_id);
    }
}

#[tokio::test]
async fn caller_errors_keep_their_message_and_every_answer_has_a_request_id() {
    let addr = start(memory(), patient()).await;
    let (first, missing) = call(addr, "GetTask", json!({"id": "missing"})).await;
    assert_eq!(missing["error"]["code"], codes::TASK_NOT_FOUND);
    assert_eq!(missing["error"]["message"], "task not found: missing");
    let (second, bad) = call(addr, "GetTask", json!({})).await;
    assert_eq!(bad["error"]["code"], codes::INVALID_PARAMS);
    assert_eq!(
        bad["error"]["message"],
        "params.id must be a non-empty string"
    );
    let (third, sent) = call(addr, "SendMessage", message("hi")).await;
    assert!(sent["result"]["id"].is_string(), "{sent}");
    assert_ne!(first, second);
    assert_ne!(second, third);
    for id in [first, second, third] {
        assert_eq!(
            uuid_groups(&id),
            [8, 4, 4, 4, 12],
            "a UUID request id: {id}"
        );
    }
}

fn uuid_groups(id: &str) -> Vec<usize> {
    id.split('-').map(str::len).collect()
}

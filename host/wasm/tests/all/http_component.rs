//! The server of `wasi:http` components (`toolnexus_wasm::http_component`), over real HTTP,
//! with the `proxy-fixture` component (`guest/proxy-fixture/`, whose path picks a behaviour):
//! answers, echo, streams event by event, work after the response, and the sandbox's limits
//! (deadline, memory, quota, directory, instances, outgoing HTTP), each leaving the server
//! serving; the connection limits and the graceful stop.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use toolnexus_core::StoreError;
use toolnexus_wasm::http_component::{HttpComponent, HttpComponentBuilder, ServerLimits, serve};
use toolnexus_wasm::outgoing_http::OutgoingHttpPolicy;
use toolnexus_wasm::{CacheDir, ComponentSource, FILE_STORE_COMPONENT};
use toolnexus_wasm::{Sandboxed, SandboxedDir, SandboxedNetwork};

static PROXY_FIXTURE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/proxy_fixture.wasm"));

/// Longer than anything here should take; a test that waits this long has failed.
const PATIENCE: Duration = Duration::from_secs(60);

/// The fixture served on a free loopback port, over the `data` folder of a temp dir.
struct Served {
    url: String,
    addr: std::net::SocketAddr,
    component: HttpComponent,
    root: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    server: JoinHandle<()>,
}

impl Served {
    /// The directory granted to the component (its `/`).
    fn data(&self) -> PathBuf {
        self.root.path().join("data")
    }

    async fn get(&self, path: &str) -> reqwest::Response {
        within(reqwest::get(format!("{}{path}", self.url)))
            .await
            .expect("the server answers")
    }

    async fn text(&self, path: &str) -> (u16, String) {
        let response = self.get(path).await;
        let status = response.status().as_u16();
        (status, within(response.text()).await.expect("a whole body"))
    }
}

fn fixture() -> HttpComponentBuilder {
    HttpComponentBuilder::new(ComponentSource::Bytes {
        name: "proxy_fixture.wasm".into(),
        bytes: Arc::from(PROXY_FIXTURE),
    })
    .cache(CacheDir::Off)
}

async fn start(
    options: impl FnOnce(HttpComponentBuilder) -> HttpComponentBuilder + Send + 'static,
) -> Served {
    start_with(options, ServerLimits::default()).await
}

async fn start_with(
    options: impl FnOnce(HttpComponentBuilder) -> HttpComponentBuilder + Send + 'static,
    limits: ServerLimits,
) -> Served {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let component = tokio::task::spawn_blocking(move || options(fixture().dir(data)).build())
        .await
        .unwrap()
        .expect("the fixture builds");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, component.clone(), limits, async {
        let _ = stopped.await;
    }));
    Served {
        url: format!("http://{addr}"),
        addr,
        component,
        root,
        stop: Some(stop),
        server,
    }
}

async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(PATIENCE, future)
        .await
        .expect("in time")
}

/// Waits until `path` exists (the fixture marks its progress with files).
async fn wait_for_file(path: &Path) {
    within(async {
        while !path.exists() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
}

/// Reads `response`'s body until it holds `expected` (chunks may be split or joined on the way).
async fn read_until(response: &mut reqwest::Response, seen: &mut String, expected: &str) {
    while !seen.contains(expected) {
        let chunk = within(response.chunk())
            .await
            .expect("the stream goes on")
            .unwrap_or_else(|| panic!("the stream ended before {expected:?}; got {seen:?}"));
        seen.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_is_answered_by_a_fresh_instance() {
    let served = start(|b| b).await;
    for _ in 0..3 {
        assert_eq!(served.text("/hello").await, (200, "hello".to_owned()));
    }
    assert_eq!(served.text("/nothing-here").await.0, 404);
    within(served.component.idle()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_request_body_and_headers_reach_the_component() {
    let served = start(|b| b).await;
    let body = "x".repeat(200_000);
    let response = within(
        reqwest::Client::new()
            .post(format!("{}/echo?q=1", served.url))
            .header("x-test", "a value")
            .body(body.clone())
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    assert_eq!(header("x-echo-x-test").as_deref(), Some("a value"));
    assert_eq!(header("x-echo-method").as_deref(), Some("Method::Post"));
    assert_eq!(header("x-echo-path").as_deref(), Some("/echo?q=1"));
    assert_eq!(within(response.text()).await.unwrap(), body);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_reaches_the_client_chunk_by_chunk() {
    let served = start(|b| b).await;
    let mut response = served.get("/stream?n=3&gate=next").await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut seen = String::new();
    // Each chunk arrives while the component waits for the test's go for the next one: nothing
    // is held back until the end.
    read_until(&mut response, &mut seen, "chunk 0\n").await;
    for i in 1..3 {
        assert!(!seen.contains(&format!("chunk {i}")), "{seen:?}");
        std::fs::write(served.data().join(format!("next-{i}")), b"").unwrap();
        read_until(&mut response, &mut seen, &format!("chunk {i}\n")).await;
    }
    assert_eq!(
        within(response.chunk()).await.unwrap(),
        None,
        "then it ends"
    );
    assert_eq!(seen, "chunk 0\nchunk 1\nchunk 2\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_component_keeps_running_after_its_response() {
    let served = start(|b| b).await;
    assert_eq!(
        served.text("/after?file=done&gate=go").await,
        (200, "sent".to_owned())
    );
    // The whole response is in, and the run goes on: it waits for the gate.
    assert_eq!(served.component.runs_in_progress(), 1);
    assert!(!served.data().join("done").exists());
    std::fs::write(served.data().join("go"), b"").unwrap();
    within(served.component.idle()).await;
    assert_eq!(
        std::fs::read(served.data().join("done")).unwrap(),
        b"written after the response"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spinning_handler_is_stopped_at_its_deadline_and_the_next_request_is_served() {
    let served = start(|b| {
        b.timeout(Duration::from_secs(1))
            .max_instances(1)
            .queue_timeout(Duration::from_secs(30))
    })
    .await;
    let (status, body) = served.text("/spin").await;
    assert_eq!(status, 500);
    assert!(body.contains("internal error"), "{body}");
    assert!(
        !body.contains("deadline"),
        "no detail for the client: {body}"
    );
    assert_eq!(served.text("/hello").await, (200, "hello".to_owned()));

    // A deadline in the middle of a stream cuts it: the client sees an incomplete body, not
    // a complete one.
    let mut response = served.get("/spin?after=1").await;
    assert_eq!(response.status(), 200);
    let mut seen = String::new();
    read_until(&mut response, &mut seen, "first chunk\n").await;
    let end = within(async {
        loop {
            match response.chunk().await {
                Ok(Some(_)) => continue,
                other => return other,
            }
        }
    })
    .await;
    assert!(end.is_err(), "a cut stream is an error, got {end:?}");
    assert_eq!(served.text("/hello").await, (200, "hello".to_owned()));
    within(served.component.idle()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_waiting_in_the_host_ends_at_its_deadline() {
    let served = start(|b| b.timeout(Duration::from_secs(1))).await;
    // A body announced and never sent: the component waits in the host (not in wasm code, not
    // in a clock wait), and only the run's deadline ends that.
    let mut client = TcpStream::connect(served.addr).await.unwrap();
    client
        .write_all(b"POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    within(async {
        while !answer.ends_with(b"\n") || !answer.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = client.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed without an answer: {answer:?}");
            answer.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 500"), "{answer}");
    within(served.component.idle()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trap_or_a_memory_hoard_fails_only_its_own_request() {
    // One instance, and a budget with room for exactly one: a leaked permit or reservation
    // would leave the next request waiting, then 503.
    let served = start(|b| {
        b.max_instances(1)
            .memory_limit(32 << 20)
            .memory_total_limit(32 << 20)
            .queue_timeout(Duration::from_secs(5))
    })
    .await;
    for path in ["/trap", "/hoard", "/trap", "/hoard"] {
        let (status, body) = served.text(path).await;
        assert_eq!(status, 500, "{path}: {body}");
        assert_eq!(
            served.text("/hello").await,
            (200, "hello".to_owned()),
            "after {path}"
        );
    }
    within(served.component.idle()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn writes_past_the_quota_fail_and_leave_the_directory_within_it() {
    const QUOTA: u64 = 1 << 20;
    let served = start(|b| b.disk_quota(QUOTA)).await;
    let (status, body) = served.text("/write?bytes=4000000&file=big").await;
    assert_eq!(status, 500, "{body}");
    // The guest's write failed (wasi-libc, under Rust's std, reports the stream's
    // `insufficient-space` as an I/O error), and it answered so.
    assert!(body.starts_with("error: "), "{body}");
    let held: u64 = std::fs::read_dir(served.data())
        .unwrap()
        .map(|entry| entry.unwrap().metadata().unwrap().len())
        .sum();
    assert!(held <= QUOTA, "{held} bytes");
    // Truncating frees what the file held: it can be written again within the quota.
    assert_eq!(
        served.text("/write?bytes=1000&file=big").await,
        (200, "wrote 1000".to_owned())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_component_cannot_leave_its_directory() {
    let served = start(|b| b).await;
    std::fs::write(served.root.path().join("outside.txt"), b"secret").unwrap();
    let (status, body) = served.text("/escape").await;
    assert_eq!(status, 200);
    assert!(!body.contains("ALLOWED"), "{body}");
    assert_eq!(body.lines().count(), 6, "every attempt reported: {body}");
    assert!(!served.root.path().join("created.txt").exists());
    for name in ["up-link", "hard-link"] {
        assert!(
            std::fs::symlink_metadata(served.data().join(name)).is_err(),
            "{name}"
        );
    }
    // Files it creates are private.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(served.data().join("inside.txt"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_past_the_instances_wait_then_get_503() {
    let served = Arc::new(start(|b| b.max_instances(1).queue_timeout(Duration::ZERO)).await);
    let holder = {
        let served = Arc::clone(&served);
        tokio::spawn(async move { served.text("/hold?gate=open").await })
    };
    wait_for_file(&served.data().join("open.started")).await;
    let busy = served.get("/hello").await;
    assert_eq!(busy.status(), 503);
    assert_eq!(busy.headers()["retry-after"], "1");
    std::fs::write(served.data().join("open"), b"").unwrap();
    assert_eq!(within(holder).await.unwrap(), (200, "released".to_owned()));
    within(served.component.idle()).await;
    assert_eq!(served.text("/hello").await, (200, "hello".to_owned()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_waiting_request_gets_the_instance_when_it_is_free() {
    let served = Arc::new(start(|b| b.max_instances(1).queue_timeout(PATIENCE)).await);
    let holder = {
        let served = Arc::clone(&served);
        tokio::spawn(async move { served.text("/hold?gate=open").await })
    };
    wait_for_file(&served.data().join("open.started")).await;
    let waiter = {
        let served = Arc::clone(&served);
        tokio::spawn(async move { served.text("/hello").await })
    };
    std::fs::write(served.data().join("open"), b"").unwrap();
    assert_eq!(within(holder).await.unwrap().0, 200);
    assert_eq!(within(waiter).await.unwrap(), (200, "hello".to_owned()));
}

/// A one-request HTTP server answering `upstream`, for the outgoing-HTTP tests.
async fn upstream() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).await.unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let _ = stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 8\r\nconnection: close\r\n\r\nupstream",
                )
                .await;
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread")]
async fn outgoing_http_goes_only_to_allowed_hosts() {
    let upstream = upstream().await;
    let path = format!("/fetch?url=http://{upstream}/");
    let denied = start(|b| b).await;
    let (status, body) = denied.text(&path).await;
    assert_eq!(status, 502);
    assert!(body.contains("HttpRequestDenied"), "{body}");

    let policy = OutgoingHttpPolicy::from_allow_hosts(&upstream.to_string()).unwrap();
    let allowed = start(move |b| b.outgoing_http(policy)).await;
    assert_eq!(allowed.text(&path).await, (200, "200 upstream".to_owned()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_does_not_read_is_disconnected_and_the_run_ends() {
    let limits = ServerLimits {
        stall_timeout: Duration::from_millis(500),
        ..ServerLimits::default()
    };
    let served = start_with(|b| b, limits).await;
    let mut client = TcpStream::connect(served.addr).await.unwrap();
    client
        .write_all(b"GET /stream?n=10000000 HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    // Never read: the answer backs up, the server drops the connection at the stall timeout,
    // and the component's next write fails, which ends its run (its deadline is 10 minutes).
    within(async {
        while served.component.runs_in_progress() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    within(served.component.idle()).await;
    drop(client);
    assert_eq!(served.text("/hello").await, (200, "hello".to_owned()));
}

/// A client that declares a large body and sends a few bytes of it holds the component in its
/// read of the body only until the body timeout: the read fails there, the component answers
/// (the fixture's `/echo` answers 400 when its read fails) and the instance is free again long
/// before the request's deadline. Before, the lone instance stayed held for the whole deadline
/// and every other request waited for it.
#[tokio::test(flavor = "multi_thread")]
async fn a_request_body_that_stops_ends_at_the_body_timeout_and_frees_the_instance() {
    let limits = ServerLimits {
        body_read_timeout: Duration::from_millis(500),
        ..ServerLimits::default()
    };
    let served = start_with(
        |b| {
            b.max_instances(1)
                .timeout(Duration::from_secs(600))
                .queue_timeout(PATIENCE)
        },
        limits,
    )
    .await;
    let mut slow = TcpStream::connect(served.addr).await.unwrap();
    slow.write_all(b"POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: 1000000\r\n\r\npartial")
        .await
        .unwrap();
    let mut head = [0u8; 12];
    within(slow.read_exact(&mut head)).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 400", "the component's read failed");
    assert_eq!(served.text("/hello").await, (200, "hello".to_owned()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_connection_without_a_request_head_is_closed_at_the_header_timeout() {
    let limits = ServerLimits {
        header_read_timeout: Duration::from_millis(300),
        ..ServerLimits::default()
    };
    let served = start_with(|b| b, limits).await;
    let mut client = TcpStream::connect(served.addr).await.unwrap();
    client.write_all(b"GET /hello HTTP/1.1\r\n").await.unwrap();
    let mut rest = Vec::new();
    within(client.read_to_end(&mut rest)).await.unwrap();
    assert!(
        !String::from_utf8_lossy(&rest).contains("hello\r\n"),
        "closed without an answer: {rest:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stop_finishes_the_requests_in_flight_and_then_returns() {
    let mut served = start(|b| b).await;
    let url = served.url.clone();
    let holder = tokio::spawn(async move {
        let response = reqwest::get(format!("{url}/hold?gate=open")).await.unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    });
    wait_for_file(&served.data().join("open.started")).await;
    served.stop.take().unwrap().send(()).unwrap();
    // New connections are refused once the listener is closed.
    within(async {
        while TcpStream::connect(served.addr).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(!served.server.is_finished(), "a request is still in flight");
    std::fs::write(served.data().join("open"), b"").unwrap();
    assert_eq!(within(holder).await.unwrap(), (200, "released".to_owned()));
    within(&mut served.server).await.unwrap();
    assert_eq!(served.component.runs_in_progress(), 0);
}

#[test]
fn components_that_are_not_http_handlers_are_refused_at_build_naming_why() {
    let cases: [(ComponentSource, &str); 3] = [
        (
            ComponentSource::Bytes {
                name: "file-store.wasm".into(),
                bytes: Arc::from(FILE_STORE_COMPONENT),
            },
            "does not export wasi:http/incoming-handler",
        ),
        (
            ComponentSource::File(PathBuf::from("no/such/component.wasm")),
            "cannot read the file",
        ),
        (
            ComponentSource::Bytes {
                name: "text.wasm".into(),
                bytes: Arc::from(&b"not wasm at all"[..]),
            },
            "not a WebAssembly file",
        ),
    ];
    for (source, says) in cases {
        let shown = source.clone();
        match HttpComponentBuilder::new(source)
            .cache(CacheDir::Off)
            .build()
        {
            Err(StoreError::Load { reason, .. }) => {
                assert!(reason.contains(says), "{shown:?}: {reason}")
            }
            Err(other) => panic!("{shown:?}: expected a load error, got {other}"),
            Ok(_) => panic!("{shown:?}: built"),
        }
    }
}

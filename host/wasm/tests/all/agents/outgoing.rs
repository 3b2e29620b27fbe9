//! An agent's outgoing HTTP: only to the hosts the operator allows, never to loopback,
//! link-local or metadata addresses unless listed, and the refusal is the agent's error, not
//! the server's.

use crate::agents::harness::{fixture, run, service, status};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolnexus_wasm::SandboxedNetwork;
use toolnexus_wasm::outgoing_http::OutgoingHttpPolicy;

/// A local HTTP server answering 200 "ok" to every request; counts the connections it took.
async fn local_server() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&connections);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let answer = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    (addr.to_string(), connections)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_go_only_where_the_operator_allows() {
    let (addr, connections) = local_server().await;
    // Nothing allowed (the default): loopback, metadata and any name are refused before a
    // connection is made.
    let closed = service(fixture().build().unwrap());
    for url in [
        format!("http://{addr}/"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://localhost/".to_owned(),
        "http://example.com/".to_owned(),
    ] {
        let task = run(&closed, &format!("fetch:{url}")).await;
        let (state, message) = status(&task);
        assert_eq!(state, "TASK_STATE_FAILED", "{url}: {task}");
        assert!(message.contains("HttpRequestDenied"), "{url}: {message}");
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "a refused request connected"
    );
    // The local server listed explicitly: reached. The metadata address still refused.
    let policy = OutgoingHttpPolicy::from_allow_hosts(&addr).unwrap();
    let open = service(fixture().outgoing_http(policy).build().unwrap());
    let task = run(&open, &format!("fetch:http://{addr}/v1/chat")).await;
    assert_eq!(
        status(&task),
        ("TASK_STATE_COMPLETED".into(), "status 200".into()),
        "{task}"
    );
    assert_eq!(connections.load(Ordering::SeqCst), 1);
    let task = run(&open, "fetch:http://169.254.169.254/").await;
    assert!(status(&task).1.contains("HttpRequestDenied"), "{task}");
}

#[test]
fn allow_hosts_is_an_agent_option_and_bad_entries_are_refused() {
    use toolnexus_wasm::agent::agent_builder_from_selector;
    assert!(
        agent_builder_from_selector("wasm:echo?allow-hosts=api.example.com,127.0.0.1:8080").is_ok()
    );
    let Err(err) = agent_builder_from_selector("wasm:echo?allow-hosts=http://x/") else {
        panic!("a URL is not a host entry")
    };
    let err = err.to_string();
    assert!(err.contains("allow-hosts"), "{err}");
}

/// What the host buffers for a body the agent writes and never sends is capped: two chunks of
/// `OUTGOING_BODY_CHUNK_BYTES` a body, however many bodies it keeps (before: 2 MiB a body, so
/// an agent keeping hundreds of them held gigabytes of host memory no limit counted).
#[tokio::test(flavor = "multi_thread")]
async fn bodies_never_sent_hold_at_most_two_chunks_each() {
    let service = service(fixture().build().unwrap());
    let bodies = 8;
    let task = run(&service, &format!("buffer-bodies:{bodies}")).await;
    let (state, message) = status(&task);
    assert_eq!(state, "TASK_STATE_COMPLETED", "{message}");
    let buffered: usize = message
        .strip_prefix("buffered=")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a count: {message}"));
    let cap = bodies * 2 * toolnexus_wasm::outgoing_http::OUTGOING_BODY_CHUNK_BYTES;
    assert!(buffered > 0, "the bodies took something");
    assert!(buffered <= cap, "{buffered} bytes buffered, over {cap}");
}

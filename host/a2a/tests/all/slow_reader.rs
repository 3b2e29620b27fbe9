//! A client that opens an event stream and does not read it: the server holds a bounded
//! backlog for it, then ends the stream with an error event (-32011), and the client can
//! subscribe again.

use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::Notify;
use toolnexus_a2a::{
    Agent, Artifact, HttpConfig, Outcome, OwnerLimits, Part, ServerConfig, ServiceConfig, Work,
    codes, serve,
};
use toolnexus_core::InMemoryTaskStore;

/// Artifact events emitted: 25 MiB in all, far more than the socket buffers between server and
/// client hold.
const ARTIFACTS: usize = 400;
const ARTIFACT_BYTES: usize = 64 << 10;

/// Emits one artifact of 64 KiB `ARTIFACTS` times over (each replacing the last, so the Task
/// stays small while the events add up), says so, and completes.
struct Floods(Arc<Notify>);

#[async_trait::async_trait]
impl Agent for Floods {
    async fn run(&self, work: &mut Work) -> Result<Outcome, String> {
        for i in 0..ARTIFACTS {
            let text = i.to_string().repeat(ARTIFACT_BYTES / 4);
            let artifact = Artifact::new("a", vec![Part::text(text)]);
            work.update_artifact(artifact, false, i + 1 == ARTIFACTS)
                .await
                .map_err(|e| e.to_string())?;
        }
        self.0.notify_one();
        Ok(Outcome::Completed(None))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_the_client_does_not_read_is_ended_with_an_error_once_its_backlog_is_full() {
    let emitted = Arc::new(Notify::new());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = ServerConfig {
        service: ServiceConfig {
            agent: Arc::new(Floods(Arc::clone(&emitted))),
            owner_limits: OwnerLimits {
                max_stream_backlog_bytes: 1 << 20,
                ..OwnerLimits::default()
            },
            ..Default::default()
        },
        http: HttpConfig {
            idle_timeout: Duration::from_secs(600),
            ..Default::default()
        },
        ..Default::default()
    };
    tokio::spawn(serve(listener, Arc::new(InMemoryTaskStore::new()), config));

    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
        "params": {"message": {"role": "ROLE_USER", "messageId": "m1",
            "parts": [{"text": "go"}]}}})
    .to_string();
    // A small receive buffer, so that what the server cannot send queues on its side.
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut conn = socket.connect(addr).await.unwrap();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nA2A-Version: 1.0\r\nContent-Type: \
         application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    conn.write_all(body.as_bytes()).await.unwrap();
    // Reads nothing until the agent has emitted everything.
    emitted.notified().await;

    let mut got = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let text = loop {
        let n = tokio::time::timeout(Duration::from_secs(30), conn.read(&mut buf))
            .await
            .expect("the stream goes on or ends within 30 s")
            .unwrap();
        got.extend_from_slice(&buf[..n]);
        // The end of a chunked body, or the connection's.
        if n == 0 || got.ends_with(b"\r\n0\r\n\r\n") {
            break String::from_utf8_lossy(&got).into_owned();
        }
    };
    let code = format!("\"code\":{}", codes::LIMIT_REACHED);
    assert!(
        text.contains(&code),
        "no -32011 error event in the {} bytes read; it ends: {:?}",
        text.len(),
        &text[text.len().saturating_sub(300)..]
    );
    assert!(
        !text.contains("TASK_STATE_COMPLETED"),
        "the cut stream carried the events after the cut"
    );
}

//! A reply lost after the commit: the store's connection to PostgreSQL breaks after the server
//! committed a write and before its answer arrived. The store cannot know whether the write
//! happened, so it must say so (`OutcomeUnknown`) and must not send it again: a plain upsert
//! sent twice counts two versions, and a compare-and-set sent twice answers a conflict with its
//! own first attempt (or, with a writer in between, undoes that writer).
//!
//! The fault is made deterministic by a TCP proxy between the store and the server
//! ([`LosingProxy`]): once armed, it forwards the first client bytes that carry a marker (the
//! write's Task id), then drops everything the server answers; the test waits until the row is
//! visible on a direct connection (the commit happened), then cuts the store's connection.

use super::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use toolnexus::Expect;

/// A proxy to `127.0.0.1:<upstream>` that loses the answers to one write.
struct LosingProxy {
    port: u16,
    shared: Arc<ProxyState>,
}

struct ProxyState {
    /// Look for the marker in what clients send.
    armed: AtomicBool,
    marker: Vec<u8>,
    /// Told when the marked write went to the server.
    sent: Notify,
    /// Set to cut every connection that carried the marked write.
    cut: watch::Sender<bool>,
}

impl LosingProxy {
    async fn start(upstream: u16, marker: &str) -> LosingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(ProxyState {
            armed: AtomicBool::new(false),
            marker: marker.as_bytes().to_vec(),
            sent: Notify::new(),
            cut: watch::channel(false).0,
        });
        let state = Arc::clone(&shared);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(("127.0.0.1", upstream)).await.unwrap();
                tokio::spawn(relay(client, server, Arc::clone(&state)));
            }
        });
        LosingProxy { port, shared }
    }
}

/// Relays one connection both ways. After the marked write passed, the server's answers are
/// dropped, and the connection is closed when the test cuts it.
async fn relay(client: TcpStream, server: TcpStream, state: Arc<ProxyState>) {
    let (mut client_in, mut client_out) = client.into_split();
    let (mut server_in, mut server_out) = server.into_split();
    let losing = Arc::new(AtomicBool::new(false));
    let mut cut = state.cut.subscribe();
    let to_server = {
        let (state, losing) = (Arc::clone(&state), Arc::clone(&losing));
        async move {
            let mut buf = vec![0u8; 64 << 10];
            // The end of the previous read, so a marker split across two reads is still seen.
            let mut tail: Vec<u8> = Vec::new();
            loop {
                let n = match client_in.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                let chunk = &buf[..n];
                let mut seen = std::mem::take(&mut tail);
                seen.extend_from_slice(chunk);
                let marked = state.armed.load(Ordering::SeqCst)
                    && seen
                        .windows(state.marker.len())
                        .any(|w| w == state.marker.as_slice());
                if marked {
                    state.armed.store(false, Ordering::SeqCst);
                    losing.store(true, Ordering::SeqCst);
                }
                if server_out.write_all(chunk).await.is_err() {
                    return;
                }
                if marked {
                    state.sent.notify_one();
                }
                let keep = seen.len().saturating_sub(state.marker.len());
                tail = seen.split_off(keep);
            }
        }
    };
    let to_client = async move {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = match server_in.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if losing.load(Ordering::SeqCst) {
                continue; // the answer is lost
            }
            if client_out.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    // Both directions end together: when either side closes, or when the test cuts a
    // connection that lost an answer (every half is dropped, so both sockets close).
    tokio::select! {
        () = to_server => {}
        () = to_client => {}
        _ = cut.wait_for(|cut| *cut) => {}
    }
}

/// Runs `write` through the proxy with its answer lost after the commit, and returns what the
/// store said. `visible` (on a direct connection) tells when the write has been committed.
async fn lose_the_reply<T: Send + 'static>(
    proxy: &LosingProxy,
    write: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    visible: impl AsyncFn() -> bool,
) -> Result<T, StoreError> {
    proxy.shared.armed.store(true, Ordering::SeqCst);
    let sent = proxy.shared.sent.notified();
    let write = tokio::spawn(write);
    tokio::time::timeout(Duration::from_secs(30), sent)
        .await
        .expect("the write reaches the server");
    let committed = async {
        while !visible().await {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), committed)
        .await
        .expect("the server commits the write");
    proxy.shared.cut.send_replace(true);
    let answer = tokio::time::timeout(Duration::from_secs(30), write)
        .await
        .expect("the store answers once its connection is cut")
        .unwrap();
    proxy.shared.cut.send_replace(false);
    answer
}

fn is_unknown(result: &Result<impl std::fmt::Debug, StoreError>) -> bool {
    matches!(result, Err(StoreError::OutcomeUnknown { .. }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_whose_reply_is_lost_after_the_commit_is_unknown_and_not_sent_again() {
    let Some(cluster) = pg::own_cluster() else {
        return;
    };
    let proxy = LosingProxy::start(cluster.port(), "lost-reply-").await;
    let options = "?table=lost_reply&timeout=20s&pool=1";
    let proxied_url = cluster.url().replace(
        &format!(":{}/", cluster.port()),
        &format!(":{}/", proxy.port),
    );
    let proxied = resolve_store(format!("{proxied_url}{options}").as_str()).unwrap();
    let direct = resolve_store(format!("{}{options}", cluster.url()).as_str()).unwrap();
    // The table exists and the proxied connection is in the pool before the fault.
    proxied.save(&task(json!({"id": "warm"}))).await.unwrap();

    // A plain save: sent twice, it would count two versions.
    let first = task(json!({"id": "lost-reply-plain", "n": 1}));
    let result = {
        let (store, first) = (Arc::clone(&proxied), first.clone());
        let direct = Arc::clone(&direct);
        lose_the_reply(
            &proxy,
            async move { store.save(&first).await },
            async || direct.get("lost-reply-plain").await.unwrap().is_some(),
        )
        .await
    };
    assert!(is_unknown(&result), "{result:?}");
    let (stored, version) = direct
        .get_versioned("lost-reply-plain")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((&stored, version), (&first, 1), "the save was sent once");

    // A compare-and-set creating a Task: sent twice, it would answer a conflict with itself.
    let created = task(json!({"id": "lost-reply-cas"}));
    let result = {
        let (store, created) = (Arc::clone(&proxied), created.clone());
        let direct = Arc::clone(&direct);
        lose_the_reply(
            &proxy,
            async move { store.save_versioned(&created, Expect::Absent).await },
            async || direct.get("lost-reply-cas").await.unwrap().is_some(),
        )
        .await
    };
    assert!(is_unknown(&result), "{result:?}");
    assert_eq!(
        direct.get_versioned("lost-reply-cas").await.unwrap(),
        Some((created, 1))
    );

    // A delete: the store cannot know it happened either.
    let result = {
        let store = Arc::clone(&proxied);
        let direct = Arc::clone(&direct);
        lose_the_reply(
            &proxy,
            async move { store.delete("lost-reply-plain").await },
            async || direct.get("lost-reply-plain").await.unwrap().is_none(),
        )
        .await
    };
    assert!(is_unknown(&result), "{result:?}");

    // The store goes on over a fresh connection, and a read after a lost connection is
    // simply retried.
    let after = task(json!({"id": "after"}));
    proxied.save(&after).await.unwrap();
    assert_eq!(proxied.get("after").await.unwrap(), Some(after));
}

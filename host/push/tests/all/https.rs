//! HTTPS webhooks: the certificate is checked against the roots the sender trusts (by name or
//! by IP address), and a webhook whose certificate they do not vouch for gets nothing.

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::mpsc;
use toolnexus_a2a_protocol::{PushNotifier, SingleStore};
use toolnexus_core::{InMemoryTaskStore, PushConfig, Task, TaskStore};
use toolnexus_push::{AllowList, PushOptions, PushSender};

/// A self-signed certificate for `localhost` and `127.0.0.1`: the acceptor serving it, and a
/// client configuration trusting it.
fn certificate() -> (tokio_rustls::TlsAcceptor, Arc<rustls::ClientConfig>) {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    let cert = certified.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let mut client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = vec![b"http/1.1".to_vec()];
    (
        tokio_rustls::TlsAcceptor::from(Arc::new(server)),
        Arc::new(client),
    )
}

/// An HTTPS receiver: its port, and the `authorization` header and body of each request. It
/// answers 200, or a 307 to `redirect` when given.
async fn https_receiver(
    acceptor: tokio_rustls::TlsAcceptor,
    redirect: Option<String>,
) -> (u16, mpsc::UnboundedReceiver<(Option<String>, Value)>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, tx, redirect) = (acceptor.clone(), tx.clone(), redirect.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = service_fn(move |request: Request<Incoming>| {
                    let (tx, redirect) = (tx.clone(), redirect.clone());
                    async move {
                        let auth = request
                            .headers()
                            .get("authorization")
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned);
                        let body = request.into_body().collect().await?.to_bytes();
                        let _ = tx.send((auth, serde_json::from_slice(&body).unwrap_or_default()));
                        let mut response =
                            Response::new(http_body_util::Empty::<hyper::body::Bytes>::new());
                        if let Some(to) = redirect {
                            *response.status_mut() = hyper::StatusCode::TEMPORARY_REDIRECT;
                            response
                                .headers_mut()
                                .insert("location", to.parse().unwrap());
                        }
                        Ok::<_, hyper::Error>(response)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (port, rx)
}

async fn sender_to(
    url: &str,
    allow: &str,
    tls: Option<Arc<rustls::ClientConfig>>,
    require_https: bool,
) -> PushSender {
    let store = Arc::new(InMemoryTaskStore::new());
    let task = Task::from_json(r#"{"id":"t","status":{"state":"working"}}"#).unwrap();
    store.save(&task).await.unwrap();
    let config = json!({"id": "c", "taskId": "t", "url": url,
        "authentication": {"scheme": "Bearer", "credentials": "over-tls"}});
    store
        .save_push_config("t", &PushConfig::from_value(config).unwrap())
        .await
        .unwrap();
    let options = PushOptions {
        allow: AllowList::parse(allow).unwrap(),
        tls,
        attempts: 1,
        require_https,
        ..PushOptions::default()
    };
    let stores = Arc::new(SingleStore(store as Arc<dyn TaskStore>));
    let sender = PushSender::start(stores, options).unwrap();
    sender.task_saved(None, &task).await;
    sender
}

#[tokio::test(flavor = "multi_thread")]
async fn https_webhooks_are_checked_against_the_trusted_roots() {
    let (acceptor, trusting) = certificate();
    let (port, mut received) = https_receiver(acceptor, None).await;

    for (url, allow) in [
        (
            format!("https://localhost:{port}/hook"),
            format!("internal:localhost:{port}"),
        ),
        (
            format!("https://127.0.0.1:{port}/hook"),
            format!("127.0.0.1:{port}"),
        ),
    ] {
        let sender = sender_to(&url, &allow, Some(Arc::clone(&trusting)), false).await;
        let (auth, body) = tokio::time::timeout(crate::DEADLINE, received.recv())
            .await
            .expect("delivered over TLS")
            .unwrap();
        assert_eq!(auth.as_deref(), Some("Bearer over-tls"), "{url}");
        assert_eq!(body["task"]["id"], "t", "{url}");
        tokio::time::timeout(crate::DEADLINE, sender.drained())
            .await
            .unwrap();
    }

    // The system's roots do not vouch for this certificate: the one attempt fails, nothing
    // reaches the receiver.
    let url = format!("https://127.0.0.1:{port}/hook");
    let sender = sender_to(&url, &format!("127.0.0.1:{port}"), None, false).await;
    tokio::time::timeout(crate::DEADLINE, sender.drained())
        .await
        .unwrap();
    assert!(received.try_recv().is_err());
}

/// A plain HTTP listener that counts the connections it gets (and answers none); its port.
async fn counting_listener() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            drop(socket);
        }
    });
    (port, count)
}

#[tokio::test(flavor = "multi_thread")]
async fn with_https_required_http_is_refused_at_create_at_delivery_and_as_a_redirect() {
    let (plain, connections) = counting_listener().await;
    let (acceptor, trusting) = certificate();
    let to_plain = format!("http://127.0.0.1:{plain}/hook");
    let (port, mut received) = https_receiver(acceptor, Some(to_plain.clone())).await;
    let allow = format!("127.0.0.1:{port},127.0.0.1:{plain}");

    // At create: an http URL is refused naming the flag; an https one is accepted.
    let https_url = format!("https://127.0.0.1:{port}/hook");
    let sender = sender_to(&https_url, &allow, Some(Arc::clone(&trusting)), true).await;
    let refused = sender.check_url(&to_plain).unwrap_err();
    assert!(refused.contains("--push-require-https"), "{refused}");
    assert!(sender.check_url(&https_url).is_ok());

    // A redirect from the https webhook to http is not followed.
    let (_, body) = tokio::time::timeout(crate::DEADLINE, received.recv())
        .await
        .expect("delivered over TLS")
        .unwrap();
    assert_eq!(body["task"]["id"], "t");
    tokio::time::timeout(crate::DEADLINE, sender.drained())
        .await
        .unwrap();

    // At delivery: a config stored with an http URL (before the flag was on) gets nothing.
    let sender = sender_to(&to_plain, &allow, None, true).await;
    tokio::time::timeout(crate::DEADLINE, sender.drained())
        .await
        .unwrap();
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "nothing sent over http"
    );
}

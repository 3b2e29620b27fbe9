//! The checked sender against a real HTTP server on 127.0.0.1, driven the way `wasi:http`'s
//! `outgoing-handler.handle` drives it.

use super::address::AddressClass;
use super::allow_list::AllowList;
use super::check::{Refusal, check_destination};
use super::*;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Body, Frame, Incoming};
use hyper::http::{StatusCode, header};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::time::Instant;
use wasmtime_wasi_http::io::TokioIo;

/// A body the server streams chunk by chunk (so without `content-length`), as the test sends
/// them; it ends when the sender is dropped.
struct ChannelBody(mpsc::UnboundedReceiver<Bytes>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|c| Ok(Frame::data(c))))
    }
}

type ServerBody = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// The test server: what it answers by path, how many connections it accepted, and an event
/// per request it received.
struct Server {
    address: SocketAddr,
    connections: Arc<AtomicUsize>,
    requests: mpsc::UnboundedReceiver<String>,
    /// Senders of streamed bodies, kept open until the test ends.
    _open_bodies: Arc<std::sync::Mutex<Vec<mpsc::UnboundedSender<Bytes>>>>,
}

const BIG: usize = 4096;

async fn respond(
    path: &str,
    open: &std::sync::Mutex<Vec<mpsc::UnboundedSender<Bytes>>>,
) -> Response<ServerBody> {
    let full = |status: StatusCode, body: &'static [u8]| {
        Response::builder()
            .status(status)
            .body(Full::new(Bytes::from_static(body)).boxed())
            .unwrap()
    };
    let streamed = |chunks: Vec<Bytes>, keep_open: bool| {
        let (tx, rx) = mpsc::unbounded_channel();
        for chunk in chunks {
            tx.send(chunk).unwrap();
        }
        if keep_open {
            open.lock().unwrap().push(tx);
        }
        Response::new(ChannelBody(rx).boxed())
    };
    match path {
        "/ok" => full(StatusCode::OK, b"hello"),
        "/redirect" => Response::builder()
            .status(StatusCode::FOUND)
            .header(header::LOCATION, "http://169.254.169.254/latest/meta-data/")
            .body(Full::new(Bytes::new()).boxed())
            .unwrap(),
        "/big-declared" => Response::new(Full::new(Bytes::from(vec![b'x'; BIG])).boxed()),
        "/big-streamed" => streamed(vec![Bytes::from(vec![b'x'; BIG / 4]); 4], false),
        "/hang-body" => streamed(vec![Bytes::from_static(b"first")], true),
        "/hang" => std::future::pending().await,
        _ => full(StatusCode::NOT_FOUND, b""),
    }
}

async fn start_server() -> Server {
    start_server_with(None).await
}

/// The server, over TLS when given an acceptor.
async fn start_server_with(tls: Option<tokio_rustls::TlsAcceptor>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let (events, requests) = mpsc::unbounded_channel();
    let open_bodies = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (count, open) = (Arc::clone(&connections), Arc::clone(&open_bodies));
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            count.fetch_add(1, Ordering::SeqCst);
            let (events, open, tls) = (events.clone(), Arc::clone(&open), tls.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let (events, open) = (events.clone(), Arc::clone(&open));
                    async move {
                        let path = request.uri().path().to_owned();
                        let _ = events.send(path.clone());
                        Ok::<_, Infallible>(respond(&path, &open).await)
                    }
                });
                let server = hyper::server::conn::http1::Builder::new();
                let _ = match tls {
                    None => server.serve_connection(TokioIo::new(stream), service).await,
                    Some(tls) => match tls.accept(stream).await {
                        Ok(stream) => server.serve_connection(TokioIo::new(stream), service).await,
                        Err(_) => return,
                    },
                };
            });
        }
    });
    Server {
        address,
        connections,
        requests,
        _open_bodies: open_bodies,
    }
}

fn get(uri: &str) -> Request<WasiBody> {
    let authority = uri.parse::<hyper::http::Uri>().unwrap();
    Request::builder()
        .uri(uri)
        .header(header::HOST, authority.authority().unwrap().as_str())
        .body(
            Empty::<Bytes>::new()
                .map_err(|never| match never {})
                .boxed_unsync(),
        )
        .unwrap()
}

fn http_with(allow_hosts: &str, limits: OutgoingHttpLimits) -> OutgoingHttp {
    let policy = OutgoingHttpPolicy::from_allow_hosts(allow_hosts)
        .unwrap()
        .with_limits(limits);
    OutgoingHttp::new(Arc::new(policy))
}

fn http(allow_hosts: &str) -> OutgoingHttp {
    http_with(allow_hosts, OutgoingHttpLimits::default())
}

/// Sends and reads the whole body: the status and body, or the first error.
async fn fetch(http: &mut OutgoingHttp, uri: &str) -> Result<(StatusCode, Bytes), Error> {
    let (response, _connection) = http.send(get(uri), None).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, body))
}

#[tokio::test]
async fn loopback_is_refused_by_default_and_allowed_when_listed() {
    let server = start_server().await;
    let port = server.address.port();
    let uri = format!("http://127.0.0.1:{port}/ok");

    let refused = fetch(&mut http(""), &uri).await;
    assert!(
        matches!(refused, Err(Error::HttpRequestDenied)),
        "{refused:?}"
    );
    let refused = fetch(&mut http("example.com"), &uri).await;
    assert!(
        matches!(refused, Err(Error::HttpRequestDenied)),
        "{refused:?}"
    );
    let other_port = fetch(
        &mut http(&format!("127.0.0.1:{}", port.wrapping_add(1))),
        &uri,
    )
    .await;
    assert!(
        matches!(other_port, Err(Error::HttpRequestDenied)),
        "{other_port:?}"
    );
    assert_eq!(
        server.connections.load(Ordering::SeqCst),
        0,
        "nothing connected"
    );

    let listed = format!("127.0.0.1:{port}");
    let (status, body) = fetch(&mut http(&listed), &uri).await.unwrap();
    assert_eq!((status, &body[..]), (StatusCode::OK, &b"hello"[..]));
    // Other spellings of the listed address are that address.
    for spelled in [
        format!("http://2130706433:{port}/ok"),
        format!("http://0x7f.1:{port}/ok"),
        format!("http://[::ffff:127.0.0.1]:{port}/ok"),
    ] {
        let (status, _) = fetch(&mut http(&listed), &spelled).await.unwrap();
        assert_eq!(status, StatusCode::OK, "{spelled}");
    }
    // …and the listed address opens no other internal address.
    let other = fetch(&mut http(&listed), &format!("http://[::1]:{port}/ok")).await;
    assert!(matches!(other, Err(Error::HttpRequestDenied)), "{other:?}");
}

#[tokio::test]
async fn a_name_resolving_to_loopback_is_refused_unless_listed_internal() {
    let server = start_server().await;
    let port = server.address.port();
    let uri = format!("http://localhost:{port}/ok");

    for allow in [
        String::new(),
        format!("localhost:{port}"),
        "localhost".to_owned(),
    ] {
        let refused = fetch(&mut http(&allow), &uri).await;
        assert!(
            matches!(refused, Err(Error::HttpRequestDenied)),
            "{allow}: {refused:?}"
        );
    }
    assert_eq!(
        server.connections.load(Ordering::SeqCst),
        0,
        "nothing connected"
    );
    // The reason: the name is allowed, its address is not.
    let far = Instant::now() + Duration::from_secs(10);
    let list = AllowList::parse(&format!("localhost:{port}")).unwrap();
    match check_destination(&list, &uri.parse().unwrap(), far).await {
        Err(Refusal::Address { class, .. }) => assert_eq!(class, AddressClass::Loopback),
        other => panic!("expected a refused loopback address, got {other:?}"),
    }

    let (status, _) = fetch(&mut http(&format!("internal:localhost:{port}")), &uri)
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn metadata_addresses_are_refused_in_every_spelling() {
    let uris = [
        "http://169.254.169.254/latest/meta-data/",
        "http://2852039166/latest/meta-data/",
        "http://0xA9FEA9FE/",
        "http://0251.0376.0251.0376/",
        "http://169.254.43518/",
        "http://[::ffff:169.254.169.254]/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://[fd00:ec2::254]/",
        "http://0.0.0.0/",
        "http://[::]/",
        "http://[::1]/",
    ];
    for allow in [
        "",
        "*.example.com",
        "internal:metadata.internal",
        "127.0.0.1",
    ] {
        let mut client = http(allow);
        for uri in uris {
            let refused = fetch(&mut client, uri).await;
            assert!(
                matches!(refused, Err(Error::HttpRequestDenied)),
                "{allow} {uri}: {refused:?}"
            );
        }
    }
}

#[tokio::test]
async fn other_schemes_and_bad_hosts_are_refused() {
    let mut client = http("example.com");
    let mut request = get("http://example.com/");
    *request.uri_mut() = "ftp://example.com/".parse().unwrap();
    let refused = client.send(request, None).await.map(|_| ());
    assert!(
        matches!(refused, Err(Error::HttpRequestDenied)),
        "{refused:?}"
    );
    let bad = fetch(&mut client, "http://256.1.1.1/").await;
    assert!(matches!(bad, Err(Error::HttpRequestUriInvalid)), "{bad:?}");
}

#[tokio::test]
async fn connect_tunnels_are_refused_even_to_allowed_hosts() {
    let server = start_server().await;
    let port = server.address.port();
    let mut client = http(&format!("127.0.0.1:{port}"));
    let mut request = get(&format!("http://127.0.0.1:{port}/"));
    *request.method_mut() = hyper::http::Method::CONNECT;
    let refused = client.send(request, None).await.map(|_| ());
    assert!(
        matches!(refused, Err(Error::HttpRequestDenied)),
        "{refused:?}"
    );
    assert_eq!(
        server.connections.load(Ordering::SeqCst),
        0,
        "nothing connected"
    );
}

#[tokio::test]
async fn redirects_are_returned_to_the_caller_not_followed() {
    let mut server = start_server().await;
    let port = server.address.port();
    let mut client = http(&format!("127.0.0.1:{port}"));
    let (response, _connection) = client
        .send(get(&format!("http://127.0.0.1:{port}/redirect")), None)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FOUND);
    assert_eq!(
        response.headers()[header::LOCATION],
        "http://169.254.169.254/latest/meta-data/"
    );
    assert_eq!(server.requests.recv().await.as_deref(), Some("/redirect"));
    assert!(server.requests.try_recv().is_err(), "exactly one request");
    // The guest's next request, to the Location, is checked like any other.
    let followed = fetch(&mut client, "http://169.254.169.254/latest/meta-data/").await;
    assert!(
        matches!(followed, Err(Error::HttpRequestDenied)),
        "{followed:?}"
    );
}

#[tokio::test]
async fn too_large_responses_fail_with_a_body_size_error() {
    let server = start_server().await;
    let port = server.address.port();
    let limits = OutgoingHttpLimits {
        max_response_body_bytes: BIG as u64 - 1,
        ..OutgoingHttpLimits::default()
    };
    let mut client = http_with(&format!("127.0.0.1:{port}"), limits);

    let declared = fetch(
        &mut client,
        &format!("http://127.0.0.1:{port}/big-declared"),
    )
    .await;
    assert!(
        matches!(declared, Err(Error::HttpResponseBodySize(Some(n))) if n == BIG as u64),
        "{declared:?}"
    );
    let streamed = fetch(
        &mut client,
        &format!("http://127.0.0.1:{port}/big-streamed"),
    )
    .await;
    assert!(
        matches!(streamed, Err(Error::HttpResponseBodySize(Some(n))) if n == BIG as u64 - 1),
        "{streamed:?}"
    );
    // A HEAD answer declares the length of a body it does not send.
    let mut head = get(&format!("http://127.0.0.1:{port}/big-declared"));
    *head.method_mut() = hyper::http::Method::HEAD;
    let (response, _connection) = client.send(head, None).await.unwrap();
    assert_eq!(
        response.headers()[header::CONTENT_LENGTH],
        BIG.to_string().as_str()
    );
    assert!(
        response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .is_empty()
    );
    // At the limit exactly, the body is whole.
    let limits = OutgoingHttpLimits {
        max_response_body_bytes: BIG as u64,
        ..OutgoingHttpLimits::default()
    };
    let mut client = http_with(&format!("127.0.0.1:{port}"), limits);
    for path in ["/big-declared", "/big-streamed"] {
        let (_, body) = fetch(&mut client, &format!("http://127.0.0.1:{port}{path}"))
            .await
            .unwrap();
        assert_eq!(body.len(), BIG, "{path}");
    }
}

#[tokio::test]
async fn slow_servers_hit_the_response_deadline() {
    let server = start_server().await;
    let port = server.address.port();
    let deadline = Duration::from_millis(300);
    let limits = OutgoingHttpLimits {
        response_timeout: deadline,
        ..OutgoingHttpLimits::default()
    };
    let mut client = http_with(&format!("127.0.0.1:{port}"), limits);

    // No response head at all.
    let started = Instant::now();
    let no_head = fetch(&mut client, &format!("http://127.0.0.1:{port}/hang")).await;
    assert!(
        matches!(no_head, Err(Error::HttpResponseTimeout)),
        "{no_head:?}"
    );
    assert!(started.elapsed() >= deadline);

    // A head, then a body that stops.
    let started = Instant::now();
    let (response, _connection) = client
        .send(get(&format!("http://127.0.0.1:{port}/hang-body")), None)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.map(|_| ());
    assert!(matches!(body, Err(Error::HttpResponseTimeout)), "{body:?}");
    assert!(started.elapsed() >= deadline);
}

#[tokio::test]
async fn the_guest_may_ask_for_shorter_timeouts_not_longer() {
    let server = start_server().await;
    let port = server.address.port();
    let mut client = http(&format!("127.0.0.1:{port}"));
    let options = RequestOptions {
        first_byte_timeout: Some(Duration::from_millis(100)),
        ..RequestOptions::default()
    };
    let no_head = client
        .send(get(&format!("http://127.0.0.1:{port}/hang")), Some(options))
        .await
        .map(|_| ());
    assert!(
        matches!(no_head, Err(Error::ConnectionReadTimeout)),
        "{no_head:?}"
    );

    let options = RequestOptions {
        between_bytes_timeout: Some(Duration::from_millis(100)),
        ..RequestOptions::default()
    };
    let (response, _connection) = client
        .send(
            get(&format!("http://127.0.0.1:{port}/hang-body")),
            Some(options),
        )
        .await
        .unwrap();
    let body = response.into_body().collect().await.map(|_| ());
    assert!(
        matches!(body, Err(Error::ConnectionReadTimeout)),
        "{body:?}"
    );
}

#[tokio::test]
async fn requests_in_flight_are_bounded_per_instance() {
    let server = start_server().await;
    let port = server.address.port();
    let limits = OutgoingHttpLimits {
        max_concurrent_requests: 1,
        ..OutgoingHttpLimits::default()
    };
    let mut client = http_with(&format!("127.0.0.1:{port}"), limits);

    // The first request counts until its (stalled) body is dropped.
    let (held, held_connection) = client
        .send(get(&format!("http://127.0.0.1:{port}/hang-body")), None)
        .await
        .unwrap();
    let second = fetch(&mut client, &format!("http://127.0.0.1:{port}/ok")).await;
    assert!(
        matches!(second, Err(Error::ConnectionLimitReached)),
        "{second:?}"
    );
    // A second instance has its own count.
    let mut other = http_with(&format!("127.0.0.1:{port}"), limits);
    assert!(
        fetch(&mut other, &format!("http://127.0.0.1:{port}/ok"))
            .await
            .is_ok()
    );

    drop((held, held_connection));
    let (status, _) = fetch(&mut client, &format!("http://127.0.0.1:{port}/ok"))
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn an_unreachable_port_is_a_connection_error_not_a_hang() {
    // Bind then drop: nothing listens on that port any more.
    let port = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused = fetch(
        &mut http(&format!("127.0.0.1:{port}")),
        &format!("http://127.0.0.1:{port}/"),
    )
    .await;
    assert!(
        matches!(refused, Err(Error::ConnectionRefused)),
        "{refused:?}"
    );
}

/// A self-signed certificate for `localhost` and `127.0.0.1`: the acceptor serving it, and a
/// root store trusting it.
fn localhost_certificate() -> (tokio_rustls::TlsAcceptor, rustls::RootCertStore) {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    let cert = certified.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    (tokio_rustls::TlsAcceptor::from(Arc::new(config)), roots)
}

#[tokio::test]
async fn https_goes_to_the_checked_address_and_verifies_the_name() {
    let (acceptor, roots) = localhost_certificate();
    let server = start_server_with(Some(acceptor)).await;
    let port = server.address.port();
    let trusting = |allow: &str| {
        let policy = OutgoingHttpPolicy::from_allow_hosts(allow)
            .unwrap()
            .with_tls_roots(roots.clone())
            .unwrap();
        OutgoingHttp::new(Arc::new(policy))
    };

    // By name (resolved, checked, connected to by address; the certificate checked for the
    // name) and by IP literal (the certificate checked for the address).
    let (status, body) = fetch(
        &mut trusting(&format!("internal:localhost:{port}")),
        &format!("https://localhost:{port}/ok"),
    )
    .await
    .unwrap();
    assert_eq!((status, &body[..]), (StatusCode::OK, &b"hello"[..]));
    let (status, _) = fetch(
        &mut trusting(&format!("127.0.0.1:{port}")),
        &format!("https://127.0.0.1:{port}/ok"),
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::OK);

    // A certificate the roots do not vouch for is a TLS error, not a response.
    let empty_roots = OutgoingHttpPolicy::from_allow_hosts(&format!("127.0.0.1:{port}"))
        .unwrap()
        .with_tls_roots(rustls::RootCertStore::empty())
        .unwrap();
    let untrusted = fetch(
        &mut OutgoingHttp::new(Arc::new(empty_roots)),
        &format!("https://127.0.0.1:{port}/ok"),
    )
    .await;
    assert!(matches!(untrusted, Err(Error::Tls(_))), "{untrusted:?}");
    // The policy is checked before any TLS: the name still must be allowed.
    let refused = fetch(
        &mut trusting(&format!("localhost:{port}")),
        &format!("https://localhost:{port}/ok"),
    )
    .await;
    assert!(
        matches!(refused, Err(Error::HttpRequestDenied)),
        "{refused:?}"
    );
}

/// Store data of an instance that may use `wasi:http`, as a world would hold it.
struct HttpInstance {
    wasi: wasmtime_wasi::WasiCtx,
    table: ResourceTable,
    http: OutgoingHttp,
}

impl wasmtime_wasi::WasiView for HttpInstance {
    fn ctx(&mut self) -> wasmtime_wasi::WasiCtxView<'_> {
        wasmtime_wasi::WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl HasOutgoingHttp for HttpInstance {
    fn outgoing_http(&mut self) -> WasiHttpCtxView<'_> {
        self.http.view(&mut self.table)
    }
}

#[test]
fn wasi_http_links_next_to_wasi() {
    let engine = wasmtime::Engine::default();
    let mut linker = Linker::<HttpInstance>::new(&engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).unwrap();
    add_to_linker(&mut linker).unwrap();
    // The state builds as a world would build it.
    let _store = wasmtime::Store::new(
        &engine,
        HttpInstance {
            wasi: wasmtime_wasi::WasiCtx::builder().build(),
            table: ResourceTable::new(),
            http: OutgoingHttp::new(Arc::new(OutgoingHttpPolicy::default())),
        },
    );
}

//! Outgoing HTTP as a guest sees it: the `http-caller` component (`guest/http-caller`) sends a
//! GET through `wasi:http/outgoing-handler`, linked by `outgoing_http::add_to_linker` next to
//! WASI, to a real HTTP server on 127.0.0.1. Every rule and limit of the checked sender is
//! tested next to it (`src/sandbox/policy/outgoing_http/tests.rs`); these show the guest gets
//! what that sender decides: the denial code, the 3xx, the cut body.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming};
use hyper::http::{Request, Response, StatusCode, header};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use toolnexus_wasm::outgoing_http::{
    HasOutgoingHttp, OutgoingHttp, OutgoingHttpLimits, OutgoingHttpPolicy, add_to_linker,
};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::WasiHttpCtxView;
use wasmtime_wasi_http::io::TokioIo;

static HTTP_CALLER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/http_caller.wasm"));

wasmtime::component::bindgen!({
    inline: "
        package toolnexus:http-caller;

        world http-caller {
            export run: func(url: string) -> result<u16, string>;
        }
    ",
    world: "http-caller",
    exports: { default: async },
});

/// The store data of an instance that may use `wasi:http`, as a world holds it.
struct HttpInstance {
    wasi: WasiCtx,
    table: ResourceTable,
    http: OutgoingHttp,
}

impl WasiView for HttpInstance {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
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

/// Runs the guest's `run(url)` in a fresh instance under `allow-hosts=allow` and `limits`.
async fn call(allow: &str, limits: OutgoingHttpLimits, url: &str) -> Result<u16, String> {
    let engine = Engine::default();
    let component = Component::new(&engine, HTTP_CALLER).unwrap();
    let mut linker = Linker::<HttpInstance>::new(&engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).unwrap();
    add_to_linker(&mut linker).unwrap();
    let policy = OutgoingHttpPolicy::from_allow_hosts(allow)
        .unwrap()
        .with_limits(limits);
    let mut store = Store::new(
        &engine,
        HttpInstance {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            http: OutgoingHttp::new(Arc::new(policy)),
        },
    );
    let caller = HttpCaller::instantiate_async(&mut store, &component, &linker)
        .await
        .unwrap();
    caller.call_run(&mut store, url).await.unwrap()
}

/// A body streamed chunk by chunk (no `content-length`); it ends when its sender is dropped.
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

/// A server on 127.0.0.1: its port, and the path of every request it receives, in order.
/// `/ok` answers 200, `/redirect` a 302 to the metadata address, `/big` 4 KiB in chunks,
/// `/stall` a head and one chunk, then nothing.
async fn start_server() -> (u16, mpsc::UnboundedReceiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (events, requests) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        // Streams that stall stay open until the server ends with the test.
        let mut stalled = Vec::new();
        let (stall_tx, mut stall_rx) = mpsc::unbounded_channel::<mpsc::UnboundedSender<Bytes>>();
        loop {
            let stream = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => return,
                },
                Some(sender) = stall_rx.recv() => {
                    stalled.push(sender);
                    continue;
                }
            };
            let (events, stall_tx) = (events.clone(), stall_tx.clone());
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let path = request.uri().path().to_owned();
                let _ = events.send(path.clone());
                let (tx, rx) = mpsc::unbounded_channel();
                let response = match path.as_str() {
                    "/ok" => Response::new(Full::new(Bytes::from_static(b"hello")).boxed()),
                    "/redirect" => Response::builder()
                        .status(StatusCode::FOUND)
                        .header(header::LOCATION, "http://169.254.169.254/latest/meta-data/")
                        .body(Full::new(Bytes::new()).boxed())
                        .unwrap(),
                    "/big" => {
                        for _ in 0..4 {
                            tx.send(Bytes::from(vec![b'x'; 1024])).unwrap();
                        }
                        Response::new(ChannelBody(rx).boxed())
                    }
                    "/stall" => {
                        tx.send(Bytes::from_static(b"first")).unwrap();
                        let _ = stall_tx.send(tx);
                        Response::new(ChannelBody(rx).boxed())
                    }
                    _ => Response::builder()
                        .status(StatusCode::NOT_FOUND)
                        .body(Full::new(Bytes::new()).boxed())
                        .unwrap(),
                };
                async move { Ok::<Response<ServerBody>, Infallible>(response) }
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (port, requests)
}

fn assert_denied(result: Result<u16, String>, what: &str) {
    match result {
        Err(code) => assert_eq!(code, "ErrorCode::HttpRequestDenied", "{what}"),
        Ok(status) => panic!("{what}: expected a denial, got HTTP {status}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_guest_reaches_only_what_allow_hosts_lets_it() {
    let (port, mut requests) = start_server().await;
    let limits = OutgoingHttpLimits::default();
    let ok = format!("http://127.0.0.1:{port}/ok");
    let by_name = format!("http://localhost:{port}/ok");

    assert_denied(call("", limits, &ok).await, "nothing listed");
    assert_denied(
        call(&format!("localhost:{port}"), limits, &by_name).await,
        "a listed name resolving to loopback",
    );
    assert_denied(
        call("", limits, "http://169.254.169.254/latest/meta-data/").await,
        "the metadata address",
    );
    assert_denied(
        call(
            &format!("127.0.0.1:{port}"),
            limits,
            &format!("ftp://127.0.0.1:{port}/"),
        )
        .await,
        "another scheme",
    );
    assert!(
        requests.try_recv().is_err(),
        "no request reached the server"
    );

    assert_eq!(
        call(&format!("127.0.0.1:{port}"), limits, &ok).await,
        Ok(200)
    );
    assert_eq!(
        call(&format!("internal:localhost:{port}"), limits, &by_name).await,
        Ok(200)
    );
    assert_eq!(requests.recv().await.as_deref(), Some("/ok"));
    assert_eq!(requests.recv().await.as_deref(), Some("/ok"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_guest_gets_redirects_and_follows_them_only_through_the_checks() {
    let (port, mut requests) = start_server().await;
    let limits = OutgoingHttpLimits::default();
    let redirect = format!("http://127.0.0.1:{port}/redirect");
    assert_eq!(
        call(&format!("127.0.0.1:{port}"), limits, &redirect).await,
        Ok(302)
    );
    assert_eq!(requests.recv().await.as_deref(), Some("/redirect"));
    assert!(requests.try_recv().is_err(), "the host did not follow it");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_guest_reads_bodies_cut_at_the_limits() {
    let (port, _requests) = start_server().await;
    let allow = format!("127.0.0.1:{port}");
    let small = OutgoingHttpLimits {
        max_response_body_bytes: 1000,
        ..OutgoingHttpLimits::default()
    };
    let big = call(&allow, small, &format!("http://127.0.0.1:{port}/big")).await;
    assert!(
        big.as_ref()
            .is_err_and(|e| e.contains("body size exceeds limit: 1000 bytes")),
        "{big:?}"
    );
    let whole = OutgoingHttpLimits {
        max_response_body_bytes: 4096,
        ..OutgoingHttpLimits::default()
    };
    assert_eq!(
        call(&allow, whole, &format!("http://127.0.0.1:{port}/big")).await,
        Ok(200)
    );

    let quick = OutgoingHttpLimits {
        response_timeout: Duration::from_millis(300),
        ..OutgoingHttpLimits::default()
    };
    let stalled = call(&allow, quick, &format!("http://127.0.0.1:{port}/stall")).await;
    assert!(
        stalled
            .as_ref()
            .is_err_and(|e| e.contains("HTTP response timeout")),
        "{stalled:?}"
    );
}

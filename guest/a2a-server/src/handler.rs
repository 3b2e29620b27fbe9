//! One `wasi:http` request: into an `http::Request` for the router, the router's answer out to
//! the outgoing response as it is produced, then the request's background work to its end.
//!
//! Everything runs on a Tokio current-thread runtime made for the request (timers for the
//! stream keep-alives and the store polling of subscriptions; `tokio::spawn` for the runs of
//! non-blocking sends). A preview-2 handler may go on after it has set its response, and does:
//! a send that returned at once has its run finished here, after the response is complete.

use crate::app;
use axum::body::Body;
use http_body_util::BodyExt;
use std::time::Duration;
use tower_service::Service;
use wasi::http::types::{
    Fields, IncomingBody, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};
use wasi::io::streams::{InputStream, OutputStream, StreamError};

/// The most bytes written to the outgoing stream at once (`blocking-write-and-flush` takes at
/// most 4096).
const WRITE_CHUNK: usize = 4096;

/// How often the handler looks whether the background runs are done, after the response.
const BACKGROUND_POLL: Duration = Duration::from_millis(5);

/// Headers a `wasi:http` host refuses in a response (hop-by-hop ones): left out.
const HOP_BY_HOP: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "http2-settings",
];

pub fn handle(request: IncomingRequest, out: ResponseOutparam) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return respond_plain(out, 500, &format!("no runtime: {e}")),
    };
    runtime.block_on(async move {
        let (request, authority) = match into_http(request) {
            Ok(converted) => converted,
            Err((status, reason)) => return respond_plain(out, status, &reason),
        };
        let mut router = app::router(&authority);
        let response = match router.call(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        write_response(response, out).await;
        // The runs of sends that answered at once, and anything else spawned: to their end.
        let metrics = tokio::runtime::Handle::current().metrics();
        while metrics.num_alive_tasks() > 0 {
            tokio::time::sleep(BACKGROUND_POLL).await;
        }
    });
}

/// The request for the router, and its authority (for the card's URL); a request that cannot
/// be one is answered with the status and reason.
fn into_http(request: IncomingRequest) -> Result<(http::Request<Body>, String), (u16, String)> {
    let method = match request.method() {
        Method::Get => http::Method::GET,
        Method::Head => http::Method::HEAD,
        Method::Post => http::Method::POST,
        Method::Put => http::Method::PUT,
        Method::Delete => http::Method::DELETE,
        Method::Connect => http::Method::CONNECT,
        Method::Options => http::Method::OPTIONS,
        Method::Trace => http::Method::TRACE,
        Method::Patch => http::Method::PATCH,
        Method::Other(other) => http::Method::from_bytes(other.as_bytes())
            .map_err(|_| (400, "the method is not valid".to_owned()))?,
    };
    let path = request.path_with_query().unwrap_or_else(|| "/".to_owned());
    let authority = request.authority().unwrap_or_default();
    let mut builder = http::Request::builder().method(method).uri(&path);
    for (name, value) in request.headers().entries() {
        builder = builder.header(name, value);
    }
    let body = read_body(&request)?;
    let request = builder
        .body(Body::from(body))
        .map_err(|e| (400, format!("the request is not valid HTTP: {e}")))?;
    Ok((request, authority))
}

/// The whole request body, up to one byte over the router's limit (so the router answers 413
/// for a larger one without this reading it all).
fn read_body(request: &IncomingRequest) -> Result<Vec<u8>, (u16, String)> {
    let unreadable = || (400, "the request body cannot be read".to_owned());
    let body: IncomingBody = request.consume().map_err(|()| unreadable())?;
    let limit = app::MAX_BODY_BYTES + 1;
    let mut bytes = Vec::new();
    {
        let stream: InputStream = body.stream().map_err(|()| unreadable())?;
        while bytes.len() < limit {
            let want = (limit - bytes.len()).min(64 * 1024) as u64;
            match stream.blocking_read(want) {
                Ok(chunk) => bytes.extend_from_slice(&chunk),
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(_)) => return Err(unreadable()),
            }
        }
    }
    Ok(bytes)
}

/// Sets the response's head, then writes each body frame as the router produces it (an SSE
/// event is on the wire when it is made). A client that went away ends the writing.
async fn write_response(response: http::Response<Body>, out: ResponseOutparam) {
    let (parts, mut body) = response.into_parts();
    let entries: Vec<(String, Vec<u8>)> = parts
        .headers
        .iter()
        .filter(|(name, _)| !HOP_BY_HOP.contains(&name.as_str()))
        .map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_vec()))
        .collect();
    let Ok(headers) = Fields::from_list(&entries) else {
        return respond_plain(out, 500, "the response headers were refused");
    };
    let outgoing = OutgoingResponse::new(headers);
    if outgoing.set_status_code(parts.status.as_u16()).is_err() {
        return respond_plain(out, 500, "the response status was refused");
    }
    let Ok(outgoing_body) = outgoing.body() else {
        return respond_plain(out, 500, "no response body");
    };
    ResponseOutparam::set(out, Ok(outgoing));
    let Ok(stream) = outgoing_body.write() else {
        return;
    };
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { break };
        if let Ok(data) = frame.into_data()
            && write_all(&stream, &data).is_err()
        {
            // The client went away: nothing more to send.
            drop(stream);
            return;
        }
    }
    drop(stream);
    let _ = OutgoingBody::finish(outgoing_body, None);
}

fn write_all(stream: &OutputStream, data: &[u8]) -> Result<(), StreamError> {
    for chunk in data.chunks(WRITE_CHUNK) {
        stream.blocking_write_and_flush(chunk)?;
    }
    Ok(())
}

/// A plain-text answer for a request the router never saw.
fn respond_plain(out: ResponseOutparam, status: u16, text: &str) {
    let headers = Fields::from_list(&[(
        "content-type".to_owned(),
        b"text/plain; charset=utf-8".to_vec(),
    )])
    .unwrap_or_else(|_| Fields::new());
    let response = OutgoingResponse::new(headers);
    let _ = response.set_status_code(status);
    let Ok(body) = response.body() else {
        ResponseOutparam::set(out, Ok(response));
        return;
    };
    ResponseOutparam::set(out, Ok(response));
    if let Ok(stream) = body.write() {
        let _ = write_all(&stream, text.as_bytes());
    }
    let _ = OutgoingBody::finish(body, None);
}

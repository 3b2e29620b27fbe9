//! `fetch:URL`: one GET through `wasi:http/outgoing-handler`, as an agent calling a model API
//! does; the status, or the host's error code by its debug name (`HttpRequestDenied`, …).

use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

pub fn fetch(url: &str) -> Result<u16, String> {
    let (scheme, rest) = match url.split_once("://") {
        Some(("http", rest)) => (Scheme::Http, rest),
        Some(("https", rest)) => (Scheme::Https, rest),
        Some((other, rest)) => (Scheme::Other(other.to_owned()), rest),
        None => return Err(format!("not an absolute URL: {url}")),
    };
    let (authority, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, "/"),
    };
    let request = OutgoingRequest::new(Fields::new());
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| "scheme refused")?;
    request
        .set_authority(Some(authority))
        .map_err(|()| "authority refused")?;
    request
        .set_path_with_query(Some(path))
        .map_err(|()| "path refused")?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
    pending.subscribe().block();
    let response = pending
        .get()
        .ok_or("no response after the pollable was ready")?
        .map_err(|()| "response taken twice")?
        .map_err(|e| format!("{e:?}"))?;
    let status = response.status();
    let body = response.consume().map_err(|()| "body taken twice")?;
    let stream = body.stream().map_err(|()| "body stream taken twice")?;
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(_) => {}
            Err(StreamError::Closed) => return Ok(status),
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(format!("body: {}", e.to_debug_string()));
            }
        }
    }
}

/// `wedge-body`: makes an outgoing request, takes its body and writes into it without ever
/// sending the request, so the write waits in the host for a reader that never comes.
pub fn wedge_body() -> Result<u16, String> {
    let request = OutgoingRequest::new(Fields::new());
    let body = request.body().map_err(|()| "body taken twice")?;
    let stream = body.write().map_err(|()| "body stream taken twice")?;
    let chunk = vec![b'x'; 4096]; // the most one blocking write may carry
    loop {
        stream
            .blocking_write_and_flush(&chunk)
            .map_err(|e| format!("the body refused a write: {e:?}"))?;
    }
}

/// `buffer-bodies:N`: makes N outgoing requests, never sent, and writes into each body as much
/// as its stream takes without waiting, keeping them all; returns the bytes the host took.
pub fn buffer_bodies(n: usize) -> Result<u64, String> {
    let mut kept = Vec::new();
    let mut buffered = 0u64;
    for _ in 0..n {
        let request = OutgoingRequest::new(Fields::new());
        let body = request.body().map_err(|()| "body taken twice")?;
        let stream = body.write().map_err(|()| "body stream taken twice")?;
        loop {
            let room = stream
                .check_write()
                .map_err(|e| format!("check-write: {e:?}"))?;
            if room == 0 {
                break;
            }
            let chunk = vec![b'x'; usize::try_from(room).unwrap_or(usize::MAX).min(16 << 20)];
            stream
                .write(&chunk)
                .map_err(|e| format!("the body refused a write: {e:?}"))?;
            buffered += chunk.len() as u64;
        }
        kept.push((request, body, stream));
    }
    // Children first: a stream before its body, a body before its request.
    for (request, body, stream) in kept {
        drop(stream);
        drop(body);
        drop(request);
    }
    Ok(buffered)
}

//! The HTTP+JSON binding: every route but the card and `/` (1.0's, and 0.3's under `/v1`),
//! each also under `/{tenant}`.

use crate::app_state::AppState;
use crate::dispatch::{answer, identify, read_body, requested_extensions};
use crate::request_context::{Binding, Ctx, closing};
use crate::request_id::RequestId;
use crate::version_header::{VERSION_HEADER, requested_version, url_pairs};
use axum::body::Bytes;
use axum::extract::{Extension, Request, State};
use axum::http::Method;
use axum::response::Response;
use serde_json::Value;
use std::sync::Arc;
use toolnexus_a2a_protocol::call;
use toolnexus_a2a_protocol::rest03;
use toolnexus_a2a_protocol::{A2aError, ErrorKind, Version};

/// The HTTP+JSON binding: every route but the card and `/`.
pub(crate) async fn rest(
    State(state): State<Arc<AppState>>,
    Extension(request_id): Extension<RequestId>,
    request: Request,
) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or("").to_owned();
    let (version, owner) = identify(&state, &request);
    let explicit_version = requested_version(&request).is_some()
        && !request
            .headers()
            .get(VERSION_HEADER)
            .is_some_and(|v| v.as_bytes().trim_ascii().is_empty());
    let mut ctx = Ctx {
        rest03: false,
        request_id: request_id.clone(),
        version: Version::V0_3,
        owner: None,
        binding: Binding::Rest,
        rpc_id: Value::Null,
        method: format!("{method} {path}"),
        extensions: requested_extensions(&request),
    };
    ctx.version = match version {
        Ok(version) => version,
        Err(e) => return ctx.error(e),
    };
    // Split off the tenant and the 0.3 `/v1` prefix; decode each segment.
    let mut segments: Vec<String> = Vec::new();
    for raw in path.trim_start_matches('/').split('/') {
        match percent_encoding::percent_decode_str(raw).decode_utf8() {
            Ok(segment) => segments.push(segment.into_owned()),
            Err(_) => {
                return ctx.error(A2aError::invalid("the path is not UTF-8 once decoded"));
            }
        }
    }
    let is_root = |s: &str| {
        s == "tasks" || s == "v1" || s.starts_with("message:") || s == "extendedAgentCard"
    };
    let mut tenant = None;
    if segments.len() > 1 && !is_root(&segments[0]) {
        tenant = Some(segments.remove(0));
    }
    let v1 = segments.first().map(String::as_str) == Some("v1");
    if v1 {
        segments.remove(0);
    }
    // 0.3's HTTP+JSON routes are the `/v1/…` ones; the others are 1.0's. A request without a
    // version header is taken at its route's version; with one, at the header's.
    ctx.rest03 = if explicit_version {
        ctx.version == Version::V0_3
    } else {
        v1
    };
    if !ctx.rest03 {
        ctx.version = Version::V1_0;
    }
    // Who asks is known from the headers alone: an unauthenticated request is answered before
    // its body is read or its route looked up, so it costs the server no body and learns
    // nothing of the routes.
    ctx.owner = match owner {
        Ok(owner) => owner,
        Err(e) => return closing(ctx.error(e)),
    };
    let route = format!("/{}", segments.join("/"));
    let body = if method == Method::POST {
        match read_body(&state, request, &request_id).await {
            Ok(body) => body,
            Err(response) => return response,
        }
    } else {
        Bytes::new()
    };
    let body: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => {
                return ctx.error(A2aError::new(ErrorKind::Parse, format!("parse error: {e}")));
            }
        }
    };
    let pairs: Vec<(String, String)> = url_pairs(&query);
    let body = if ctx.rest03 {
        rest03::request_in(&body)
    } else {
        body
    };
    // Parsed with the defaults of the client's version; answered in 1.0 shapes, which the
    // 0.3 binding's are converted from.
    let call = match call::from_rest(method.as_str(), &route, &pairs, &body, ctx.version) {
        Ok(call) => call,
        Err(e) => return ctx.error(e),
    };
    if ctx.rest03 {
        ctx.version = Version::V1_0;
    }
    answer(&state, ctx, tenant, call).await
}

//! The JSON-RPC 2.0 binding: `POST /`.

use crate::app_state::AppState;
use crate::dispatch::{answer, identify, read_body, requested_extensions};
use crate::request_context::{Binding, Ctx, closing};
use crate::request_id::RequestId;
use axum::extract::{Extension, Request, State};
use axum::response::Response;
use serde_json::Value;
use std::sync::Arc;
use toolnexus_a2a_protocol::call;
use toolnexus_a2a_protocol::{A2aError, ErrorKind, Version};

pub(crate) async fn json_rpc(
    State(state): State<Arc<AppState>>,
    Extension(request_id): Extension<RequestId>,
    request: Request,
) -> Response {
    let (version, owner) = identify(&state, &request);
    let mut ctx = Ctx {
        rest03: false,
        request_id: request_id.clone(),
        version: Version::V0_3,
        owner: None,
        binding: Binding::JsonRpc,
        rpc_id: Value::Null,
        method: String::new(),
        extensions: requested_extensions(&request),
    };
    // Who asks is known from the headers alone: an unauthenticated request is answered before
    // its body is read, so it costs the server no body and learns nothing of the methods. Its
    // JSON-RPC id is unknown then, and is null, as JSON-RPC has it for an unreadable request.
    ctx.owner = match owner {
        Ok(owner) => owner,
        Err(e) => return closing(ctx.error(e)),
    };
    let body = match read_body(&state, request, &request_id).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return ctx.error(A2aError::new(ErrorKind::Parse, format!("parse error: {e}")));
        }
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let valid_id = matches!(id, Value::Null | Value::String(_) | Value::Number(_));
    if valid_id {
        ctx.rpc_id = id;
    }
    let method = request.get("method").and_then(Value::as_str);
    let (Some(method), true, Some("2.0")) = (
        method,
        valid_id,
        request.get("jsonrpc").and_then(Value::as_str),
    ) else {
        return ctx.error(A2aError::new(
            ErrorKind::InvalidRequest,
            "not a JSON-RPC 2.0 request",
        ));
    };
    ctx.method = method.to_owned();
    ctx.version = match version {
        Ok(version) => version,
        Err(e) => return ctx.error(e),
    };
    let params = request.get("params").unwrap_or(&Value::Null);
    let parsed = match call::from_jsonrpc(method, params) {
        Ok(parsed) => parsed,
        Err(e) => return ctx.error(e),
    };
    answer(&state, ctx, parsed.tenant, parsed.call).await
}

//! Server-sent events: a subscription framed for the request's binding, with keep-alives.

use crate::app_state::AppState;
use crate::request_context::{Binding, Ctx};
use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use toolnexus_a2a_protocol::Subscription;

/// Server-sent events: each event one `data:` line (in JSON-RPC, a whole JSON-RPC response
/// with the event as its `result`), keep-alive comments in between.
pub(crate) fn event_stream(state: &AppState, ctx: Ctx, subscription: Subscription) -> Response {
    let keep_alive = (state.config.http.idle_timeout / 3)
        .clamp(Duration::from_millis(100), Duration::from_secs(15));
    let ctx = Arc::new(ctx);
    let stream = futures_util::stream::unfold(
        (subscription, ctx, false),
        move |(mut sub, ctx, ended)| async move {
            if ended {
                return None;
            }
            let next = tokio::select! {
                next = sub.next() => next,
                () = tokio::time::sleep(keep_alive) => {
                    return Some((Ok::<_, std::convert::Infallible>(Bytes::from_static(b": keep-alive\n\n")), (sub, ctx, false)));
                }
            };
            let (data, ended) = match next {
                None => return None,
                // As the binding carries it (0.3's HTTP+JSON: its protobuf JSON).
                Some(Ok(event)) => (ctx.result(event), false),
                Some(Err(e)) => {
                    ctx.log(&e);
                    let data = match ctx.binding {
                        Binding::JsonRpc => json!({"jsonrpc": "2.0", "id": ctx.rpc_id,
                            "error": e.jsonrpc_error(&ctx.request_id.0)}),
                        Binding::Rest => ctx.rest_error_body(&e),
                    };
                    (data, true)
                }
            };
            let frame = Bytes::from(format!("data: {data}\n\n"));
            Some((Ok(frame), (sub, ctx, ended)))
        },
    );
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

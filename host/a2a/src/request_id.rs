//! The id of every request: fresh for each, in its answer's header, in the log.

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;

/// The response header that carries the id of every request, also named in internal-error
/// messages and in the log.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The id of one HTTP request: in its answer's `x-request-id` header, in the message of an
/// internal error, and in the log.
#[derive(Debug, Clone)]
pub(crate) struct RequestId(pub(crate) Arc<str>);

/// Gives every request a fresh id (a version-4 UUID, never one the client sent).
pub(crate) async fn with_request_id(mut request: Request, next: Next) -> Response {
    let id = RequestId(toolnexus_a2a_protocol::service::new_id().into());
    request.extensions_mut().insert(id.clone());
    let mut response = next.run(request).await;
    if let Ok(value) = HeaderValue::from_str(&id.0) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    response
}

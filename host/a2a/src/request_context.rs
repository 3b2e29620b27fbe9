//! What a request carries besides its call (binding, version, owner, ids), and how its answers
//! and errors are shaped for its binding.

use crate::request_id::RequestId;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use toolnexus_a2a_protocol::rest03;
use toolnexus_a2a_protocol::{A2aError, ErrorKind, Version};

/// The binding of a request, for the shape of its answers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Binding {
    JsonRpc,
    Rest,
}

/// Everything a request carries besides its call: version, owner, id.
pub(crate) struct Ctx {
    /// A2A 0.3's HTTP+JSON binding: bodies are the 0.3 protobuf JSON ([`rest03`]); the call
    /// itself runs as 1.0 and its answers are converted.
    pub(crate) rest03: bool,
    pub(crate) request_id: RequestId,
    pub(crate) version: Version,
    pub(crate) owner: Option<String>,
    pub(crate) binding: Binding,
    /// The JSON-RPC request id.
    pub(crate) rpc_id: Value,
    pub(crate) method: String,
    /// The extensions the client asked for (`A2A-Extensions`), passed to the agent.
    pub(crate) extensions: Vec<String>,
}

impl Ctx {
    pub(crate) fn log(&self, e: &A2aError) {
        if e.detail.is_some() {
            tracing::error!(target: "toolnexus::server", request_id = %self.request_id.0,
                method = %self.method, error = %e.detail(), "request failed");
        }
    }

    pub(crate) fn error(&self, e: A2aError) -> Response {
        self.log(&e);
        match self.binding {
            Binding::JsonRpc => {
                let body = json!({"jsonrpc": "2.0", "id": self.rpc_id,
                    "error": e.jsonrpc_error(&self.request_id.0)});
                // An authentication failure is HTTP 401 in both bindings.
                let status = if e.kind == ErrorKind::Unauthenticated {
                    StatusCode::UNAUTHORIZED
                } else {
                    StatusCode::OK
                };
                with_auth_challenge(self.body_response(status, body.to_string()), &e)
            }
            Binding::Rest => {
                let status =
                    StatusCode::from_u16(e.kind.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
                with_auth_challenge(
                    self.body_response(status, self.rest_error_body(&e).to_string()),
                    &e,
                )
            }
        }
    }

    pub(crate) fn value(&self, value: Value) -> Response {
        self.body_response(StatusCode::OK, self.result(value).to_string())
    }

    /// The media type of the binding's answers (and error answers): `application/a2a+json` for
    /// A2A 1.0's HTTP+JSON binding (§11.1, §14.1); `application/json` for JSON-RPC (§9.1) and
    /// for 0.3's HTTP+JSON binding, whose spec names it. Requests are read whichever they carry.
    fn content_type(&self) -> &'static str {
        match self.binding {
            Binding::Rest if !self.rest03 => A2A_JSON,
            _ => JSON,
        }
    }

    fn body_response(&self, status: StatusCode, body: String) -> Response {
        (status, [(header::CONTENT_TYPE, self.content_type())], body).into_response()
    }

    /// An answer or event as the binding carries it.
    pub(crate) fn result(&self, value: Value) -> Value {
        match self.binding {
            Binding::JsonRpc => json!({"jsonrpc": "2.0", "id": self.rpc_id, "result": value}),
            Binding::Rest if self.rest03 => rest03::answer_out(&value),
            Binding::Rest => value,
        }
    }

    /// The HTTP+JSON error body; for a 0.3 client also the error's class name and message at
    /// the top, which is where the official 0.3 client looks for them.
    pub(crate) fn rest_error_body(&self, e: &A2aError) -> Value {
        let mut body = e.rest_body(&self.request_id.0);
        if self.rest03 {
            body["type"] = json!(e.kind.sdk_name());
            body["message"] = json!(e.public_message(&self.request_id.0));
        }
        body
    }
}

pub(crate) fn with_auth_challenge(mut response: Response, e: &A2aError) -> Response {
    if e.kind == ErrorKind::Unauthenticated {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}

/// `response` with `Connection: close`: for an answer given before the request's body was read,
/// so the connection is not kept waiting for (or draining) a body the server will not read.
pub(crate) fn closing(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// JSON's media type: JSON-RPC's and the agent card's.
const JSON: &str = "application/json";
/// A2A's own media type (spec §14.1.1), for the HTTP+JSON binding of 1.0.
const A2A_JSON: &str = "application/a2a+json";

pub(crate) fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, JSON)], body).into_response()
}

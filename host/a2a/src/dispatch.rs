//! What both bindings share once a request is parsed: who asks and in which version, the body
//! read within its timeout, and the call handed to the service and answered.

use crate::app_state::AppState;
use crate::auth;
use crate::event_stream::event_stream;
use crate::request_context::Ctx;
use crate::request_id::RequestId;
use crate::version_header::requested_version;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use toolnexus_a2a_protocol::call::Call;
use toolnexus_a2a_protocol::{A2aError, Answer, ErrorKind, Scope, Version};

/// The version and owner of a request, from its headers (and query).
pub(crate) fn identify(
    state: &AppState,
    request: &Request,
) -> (Result<Version, A2aError>, Result<Option<String>, A2aError>) {
    let version = requested_version(request).unwrap_or(Ok(Version::V0_3));
    let headers = request.headers();
    let owner = match &state.config.tokens {
        None => Ok(None),
        Some(tokens) => {
            let presented = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok());
            match presented.and_then(|a| tokens.owner(a)) {
                Some(owner) => Ok(Some(owner.to_owned())),
                None => Err(A2aError::new(
                    ErrorKind::Unauthenticated,
                    if presented.is_some() {
                        "the bearer token is not valid"
                    } else {
                        "this server needs a bearer token (Authorization: Bearer <token>)"
                    },
                )),
            }
        }
    };
    (version, owner)
}

/// The extensions a request asks for: the `A2A-Extensions` header (0.3: `X-A2A-Extensions`),
/// comma-separated URIs, each header line counted.
pub(crate) fn requested_extensions(request: &Request) -> Vec<String> {
    let headers = request.headers();
    headers
        .get_all("a2a-extensions")
        .iter()
        .chain(headers.get_all("x-a2a-extensions").iter())
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|uri| !uri.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Reads the whole body within the body timeout; `Err` is the answer to give instead.
pub(crate) async fn read_body(
    state: &AppState,
    request: Request,
    request_id: &RequestId,
) -> Result<Bytes, Response> {
    let read = tokio::time::timeout(
        state.config.http.body_read_timeout,
        Bytes::from_request(request, &()),
    );
    match read.await {
        Ok(Ok(body)) => Ok(body),
        // Too large (413) or broken off (400), as axum answers them.
        Ok(Err(rejection)) => Err(rejection.into_response()),
        Err(_elapsed) => {
            tracing::debug!(target: "toolnexus::server", request_id = %request_id.0,
                "request body not received within the body timeout");
            Err((
                StatusCode::REQUEST_TIMEOUT,
                [(header::CONNECTION, "close")],
                "request body not received in time",
            )
                .into_response())
        }
    }
}

pub(crate) async fn answer(
    state: &AppState,
    ctx: Ctx,
    tenant: Option<String>,
    mut call: Call,
) -> Response {
    if let Call::Send(params) = &mut call {
        params.extensions = ctx.extensions.clone();
    }
    let scope = Scope {
        tenant,
        owner: ctx.owner.clone(),
    };
    if let Some(t) = &scope.tenant
        && !auth::valid_name(t)
    {
        return ctx.error(A2aError::invalid(
            "a tenant is 1 to 64 of A-Z a-z 0-9 . _ -",
        ));
    }
    match state.service.call(&scope, call, ctx.version).await {
        Ok(Answer::Value(value)) => ctx.value(value),
        Ok(Answer::Stream(subscription)) => event_stream(state, ctx, subscription),
        Err(e) => ctx.error(e),
    }
}

//! The errors A2A defines, with their JSON-RPC codes, HTTP statuses and `google.rpc` reasons
//! (one table for both bindings), and the answer each binding gives for them.

use serde_json::{Value, json};
use std::fmt;
use toolnexus_core::StoreError;

/// Which error: each maps to one JSON-RPC code, one HTTP status and one reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// -32700: the body is not JSON.
    Parse,
    /// -32600: JSON, but not a request of the binding.
    InvalidRequest,
    /// -32601 (HTTP 404): no such method or route.
    MethodNotFound,
    /// -32602: arguments the method refuses.
    InvalidParams,
    /// -32603: the server's own failure; the message the client sees names only the request id.
    Internal,
    /// -32001 (HTTP 404).
    TaskNotFound,
    /// -32002: the Task is terminal already.
    TaskNotCancelable,
    /// -32003: push notifications are not offered.
    PushNotificationNotSupported,
    /// -32004: the operation is not offered, or not for a Task in this state.
    UnsupportedOperation,
    /// -32005: none of the accepted output modes is one the agent produces.
    ContentTypeNotSupported,
    /// -32007: no extended agent card.
    ExtendedCardNotConfigured,
    /// -32009: an `A2A-Version` this server does not speak.
    VersionNotSupported,
    /// -32000 (HTTP 503): as many agents in progress as the server allows; nothing was saved.
    ServerBusy,
    /// HTTP 401: a bearer token is needed, or the one given is not known.
    Unauthenticated,
    /// -32011 (HTTP 429): a bound on what one caller may hold was reached (streams open, a
    /// stream's unread events); the message names which. Nothing was changed.
    LimitReached,
}

impl ErrorKind {
    /// The JSON-RPC error code.
    pub fn code(self) -> i64 {
        match self {
            ErrorKind::Parse => codes::PARSE_ERROR,
            ErrorKind::InvalidRequest => codes::INVALID_REQUEST,
            ErrorKind::MethodNotFound => codes::METHOD_NOT_FOUND,
            ErrorKind::InvalidParams => codes::INVALID_PARAMS,
            ErrorKind::Internal => codes::INTERNAL_ERROR,
            ErrorKind::TaskNotFound => codes::TASK_NOT_FOUND,
            ErrorKind::TaskNotCancelable => codes::TASK_NOT_CANCELABLE,
            ErrorKind::PushNotificationNotSupported => codes::PUSH_NOTIFICATION_NOT_SUPPORTED,
            ErrorKind::UnsupportedOperation => codes::UNSUPPORTED_OPERATION,
            ErrorKind::ContentTypeNotSupported => codes::CONTENT_TYPE_NOT_SUPPORTED,
            ErrorKind::ExtendedCardNotConfigured => codes::EXTENDED_CARD_NOT_CONFIGURED,
            ErrorKind::VersionNotSupported => codes::VERSION_NOT_SUPPORTED,
            ErrorKind::ServerBusy => codes::SERVER_BUSY,
            ErrorKind::Unauthenticated => codes::UNAUTHENTICATED,
            ErrorKind::LimitReached => codes::LIMIT_REACHED,
        }
    }

    /// The HTTP status of the HTTP+JSON binding (A2A 1.0.1 §5.4: every A2A error but
    /// TaskNotFound is 400, told apart by its `ErrorInfo` reason).
    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::TaskNotFound | ErrorKind::MethodNotFound => 404,
            ErrorKind::Internal => 500,
            ErrorKind::ServerBusy => 503,
            ErrorKind::Unauthenticated => 401,
            ErrorKind::LimitReached => 429,
            _ => 400,
        }
    }

    /// The `google.rpc.Code` name of the HTTP+JSON binding's error body (A2A 1.0.1 §5.4's gRPC
    /// status column).
    pub fn status_name(self) -> &'static str {
        match self {
            ErrorKind::TaskNotFound | ErrorKind::MethodNotFound => "NOT_FOUND",
            ErrorKind::Internal => "INTERNAL",
            ErrorKind::ServerBusy => "UNAVAILABLE",
            ErrorKind::Unauthenticated => "UNAUTHENTICATED",
            ErrorKind::LimitReached => "RESOURCE_EXHAUSTED",
            ErrorKind::Parse
            | ErrorKind::InvalidRequest
            | ErrorKind::InvalidParams
            | ErrorKind::ContentTypeNotSupported => "INVALID_ARGUMENT",
            ErrorKind::TaskNotCancelable
            | ErrorKind::PushNotificationNotSupported
            | ErrorKind::UnsupportedOperation
            | ErrorKind::ExtendedCardNotConfigured
            | ErrorKind::VersionNotSupported => "FAILED_PRECONDITION",
        }
    }

    /// The error's class name in the official SDKs (`TaskNotFoundError`), which the 0.3
    /// HTTP+JSON client reads from an error body's `type`.
    pub fn sdk_name(self) -> &'static str {
        match self {
            ErrorKind::Parse => "JSONParseError",
            ErrorKind::InvalidRequest => "InvalidRequestError",
            ErrorKind::MethodNotFound => "MethodNotFoundError",
            ErrorKind::InvalidParams => "InvalidParamsError",
            ErrorKind::Internal | ErrorKind::ServerBusy | ErrorKind::LimitReached => {
                "InternalError"
            }
            ErrorKind::TaskNotFound => "TaskNotFoundError",
            ErrorKind::TaskNotCancelable => "TaskNotCancelableError",
            ErrorKind::PushNotificationNotSupported => "PushNotificationNotSupportedError",
            ErrorKind::UnsupportedOperation => "UnsupportedOperationError",
            ErrorKind::ContentTypeNotSupported => "ContentTypeNotSupportedError",
            ErrorKind::ExtendedCardNotConfigured => "ExtendedAgentCardNotConfiguredError",
            ErrorKind::VersionNotSupported => "VersionNotSupportedError",
            ErrorKind::Unauthenticated => "A2AClientError",
        }
    }

    /// The A2A reason (`google.rpc.ErrorInfo.reason`, domain `a2a-protocol.org`).
    pub fn reason(self) -> &'static str {
        match self {
            ErrorKind::Parse => "PARSE_ERROR",
            ErrorKind::InvalidRequest => "INVALID_REQUEST",
            ErrorKind::MethodNotFound => "METHOD_NOT_FOUND",
            ErrorKind::InvalidParams => "INVALID_PARAMS",
            ErrorKind::Internal => "INTERNAL_ERROR",
            ErrorKind::TaskNotFound => "TASK_NOT_FOUND",
            ErrorKind::TaskNotCancelable => "TASK_NOT_CANCELABLE",
            ErrorKind::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            ErrorKind::UnsupportedOperation => "UNSUPPORTED_OPERATION",
            ErrorKind::ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            ErrorKind::ExtendedCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            ErrorKind::VersionNotSupported => "VERSION_NOT_SUPPORTED",
            ErrorKind::ServerBusy => "SERVER_BUSY",
            ErrorKind::Unauthenticated => "UNAUTHENTICATED",
            ErrorKind::LimitReached => "LIMIT_REACHED",
        }
    }
}

/// JSON-RPC and A2A error codes.
pub mod codes {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    pub const TASK_NOT_FOUND: i64 = -32001;
    pub const TASK_NOT_CANCELABLE: i64 = -32002;
    pub const PUSH_NOTIFICATION_NOT_SUPPORTED: i64 = -32003;
    pub const UNSUPPORTED_OPERATION: i64 = -32004;
    pub const CONTENT_TYPE_NOT_SUPPORTED: i64 = -32005;
    pub const EXTENDED_CARD_NOT_CONFIGURED: i64 = -32007;
    pub const VERSION_NOT_SUPPORTED: i64 = -32009;
    /// The server has as many agents running or waiting in the background as it allows;
    /// nothing was saved, retry later.
    pub const SERVER_BUSY: i64 = -32000;
    /// A request without a known bearer token, where the server wants one (HTTP 401 in both
    /// bindings; this code is in the JSON-RPC body).
    pub const UNAUTHENTICATED: i64 = -32010;
    /// A bound on what one caller may hold was reached (streams open, a stream's unread
    /// events); the message names which (HTTP 429 in the HTTP+JSON binding).
    pub const LIMIT_REACHED: i64 = -32011;
}

/// An A2A error. `message` goes to the client; `detail`, when there is one, only to the log:
/// the error is then internal and the client sees `internal error (request id …)`.
#[derive(Debug, Clone)]
pub struct A2aError {
    pub kind: ErrorKind,
    pub message: String,
    pub detail: Option<String>,
    /// For [`ErrorKind::InvalidParams`]: the path of the refused field in the request
    /// (`message.parts`, `pageSize`), or `""` when the request as a whole is refused. It is
    /// the `google.rpc.BadRequest` field violation both bindings carry.
    pub field: Option<String>,
}

impl A2aError {
    /// An error that is the caller's, whose message is safe to show. An
    /// [`ErrorKind::InvalidParams`] one names its field as [`A2aError::invalid`] does.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        let message = message.into();
        let field = (kind == ErrorKind::InvalidParams).then(|| field_of(&message));
        A2aError {
            kind,
            message,
            detail: None,
            field,
        }
    }

    /// Arguments refused: -32602. The message starts with the path of the refused field
    /// (`message.parts must be a non-empty array`, `params.pageSize must be …`,
    /// `message.parts[0]: …`), which becomes the error's [`field`](A2aError::field); a
    /// message that does not (`the request body must be a JSON object`) refuses the whole
    /// request. [`A2aError::invalid_field`] names the field outright.
    pub fn invalid(message: impl Into<String>) -> Self {
        A2aError::new(ErrorKind::InvalidParams, message)
    }

    /// Arguments refused (-32602) because of `field` (a path in the request: `pageToken`,
    /// `message.parts[0]`): the message is the field followed by `description`.
    pub fn invalid_field(field: &str, description: &str) -> Self {
        A2aError {
            kind: ErrorKind::InvalidParams,
            message: format!("{field} {description}"),
            detail: None,
            field: Some(request_path(field).to_owned()),
        }
    }

    /// No such Task (or none this caller may see).
    pub fn not_found(id: &str) -> Self {
        A2aError::new(ErrorKind::TaskNotFound, format!("task not found: {id}"))
    }

    /// An internal error: `detail` (paths, store and component details) goes to the log only.
    pub fn internal(detail: impl Into<String>) -> Self {
        A2aError {
            kind: ErrorKind::Internal,
            message: "internal error".into(),
            detail: Some(detail.into()),
            field: None,
        }
    }

    /// The JSON-RPC code.
    pub fn code(&self) -> i64 {
        self.kind.code()
    }

    /// The whole error, for the log.
    pub fn detail(&self) -> &str {
        self.detail.as_deref().unwrap_or(&self.message)
    }

    /// The message the client sees: for an internal error, only that it was one and the
    /// request id to quote.
    pub fn public_message(&self, request_id: &str) -> String {
        if self.detail.is_some() {
            format!("{} (request id {request_id})", self.message)
        } else {
            self.message.clone()
        }
    }

    /// The typed details both bindings carry (A2A 1.0.1 §9.5, §11.6): a `google.rpc.ErrorInfo`
    /// always, first (clients take the first `ErrorInfo` for the error's reason); for refused
    /// arguments also a `google.rpc.BadRequest` naming the field.
    pub fn details(&self) -> Value {
        let mut details = vec![json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.kind.reason(),
            "domain": "a2a-protocol.org",
            "metadata": {},
        })];
        if let Some(field) = &self.field {
            details.push(json!({
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [{"field": field, "description": self.message}],
            }));
        }
        Value::Array(details)
    }

    /// The `error` member of a JSON-RPC answer.
    pub fn jsonrpc_error(&self, request_id: &str) -> Value {
        json!({"code": self.code(), "message": self.public_message(request_id), "data": self.details()})
    }

    /// The body of an HTTP+JSON error answer (its status is [`ErrorKind::http_status`]).
    pub fn rest_body(&self, request_id: &str) -> Value {
        json!({"error": {
            "code": self.kind.http_status(),
            "status": self.kind.status_name(),
            "message": self.public_message(request_id),
            "details": self.details(),
        }})
    }
}

/// The field an invalid-params message names, the way the request parsers word their refusals:
/// its first word when that is a field path no English word looks like (`message.parts[0]`,
/// `params.pageSize`, `historyLength`), or a plain name followed by ` must`, ` is` or `:`
/// (`id is empty`); `""` (the whole request) otherwise.
fn field_of(message: &str) -> String {
    let end = message.find([' ', ':']).unwrap_or(message.len());
    let (path, rest) = message.split_at(end);
    let unmistakable = path.contains(['.', '[']) || path.contains(|c: char| c.is_ascii_uppercase());
    let worded_as_field =
        rest.starts_with(" must ") || rest.starts_with(" is ") || rest.starts_with(':');
    if (unmistakable || worded_as_field) && is_field_path(path) {
        request_path(path).to_owned()
    } else {
        String::new()
    }
}

/// `message.parts[0].text`, `pageSize`: dot-separated camelCase names, each optionally indexed.
fn is_field_path(path: &str) -> bool {
    !path.is_empty()
        && path.split('.').all(|segment| {
            let name = segment.split('[').next().unwrap_or("");
            let indexes = &segment[name.len()..];
            name.starts_with(|c: char| c.is_ascii_lowercase())
                && name.chars().all(|c| c.is_ascii_alphanumeric())
                && indexes.split_terminator(']').all(|index| {
                    index
                        .strip_prefix('[')
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                })
                && (indexes.is_empty() || indexes.ends_with(']'))
        })
}

/// A field path relative to the request message: JSON-RPC's `params.` is the request itself.
fn request_path(path: &str) -> &str {
    match path {
        "params" => "",
        _ => path.strip_prefix("params.").unwrap_or(path),
    }
}

impl fmt::Display for A2aError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.detail())
    }
}

impl std::error::Error for A2aError {}

/// Store errors that are the caller's keep a message that names nothing of the store (no
/// selector, path, component or database); every other one is internal.
impl From<StoreError> for A2aError {
    fn from(err: StoreError) -> Self {
        match &err {
            StoreError::Unsupported { operation, .. } => A2aError::new(
                ErrorKind::UnsupportedOperation,
                format!("the store does not support {operation}"),
            ),
            // About the id or Task the caller sent (the Task's own id and sizes only).
            StoreError::InvalidId { .. }
            | StoreError::InvalidTask(_)
            | StoreError::TaskTooLarge { .. }
            | StoreError::InvalidPushConfig { .. } => A2aError::invalid(err.to_string()),
            // A store's policy refusing the request: its reason is meant for the caller; which
            // store (a selector, a component file) is not.
            StoreError::Rejected { reason, .. } => {
                A2aError::invalid(format!("the store refused the request: {reason}"))
            }
            // A page token the store did not make (or a query it refuses): the caller's.
            StoreError::InvalidQuery { reason } => A2aError {
                field: Some(if reason.contains("page token") {
                    "pageToken".into()
                } else {
                    String::new()
                }),
                ..A2aError::invalid(reason.clone())
            },
            _ => A2aError::internal(err.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A2A 1.0.1 §5.4, row by row: code, HTTP status, gRPC status.
    #[test]
    fn the_error_table_is_the_one_of_a2a_1_0_1() {
        let rows = [
            (ErrorKind::TaskNotFound, -32001, 404, "NOT_FOUND"),
            (
                ErrorKind::TaskNotCancelable,
                -32002,
                400,
                "FAILED_PRECONDITION",
            ),
            (
                ErrorKind::PushNotificationNotSupported,
                -32003,
                400,
                "FAILED_PRECONDITION",
            ),
            (
                ErrorKind::UnsupportedOperation,
                -32004,
                400,
                "FAILED_PRECONDITION",
            ),
            (
                ErrorKind::ContentTypeNotSupported,
                -32005,
                400,
                "INVALID_ARGUMENT",
            ),
            (
                ErrorKind::ExtendedCardNotConfigured,
                -32007,
                400,
                "FAILED_PRECONDITION",
            ),
            (
                ErrorKind::VersionNotSupported,
                -32009,
                400,
                "FAILED_PRECONDITION",
            ),
            (ErrorKind::InvalidParams, -32602, 400, "INVALID_ARGUMENT"),
        ];
        for (kind, code, http, status) in rows {
            assert_eq!(
                (kind.code(), kind.http_status(), kind.status_name()),
                (code, http, status),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn refused_arguments_name_their_field_after_the_error_info() {
        let cases = [
            ("params.pageSize must be between 1 and 100", "pageSize"),
            ("message.parts must be a non-empty array", "message.parts"),
            (
                "message.parts[0]: a text part needs a string \"text\"",
                "message.parts[0]",
            ),
            (
                "configuration.historyLength must not be negative",
                "configuration.historyLength",
            ),
            ("id is empty", "id"),
            (
                "message.contextId \"c\" is not the context of task t",
                "message.contextId",
            ),
            (
                "statusTimestampAfter 2026 is invalid",
                "statusTimestampAfter",
            ),
            ("invalid task id \"\": empty", ""),
            ("params must be an object", ""),
            ("the request body must be a JSON object", ""),
            ("the task id in the path is empty", ""),
            ("a tenant is 1 to 64 of A-Z a-z 0-9 . _ -", ""),
            ("message.parts[x] must be an object", ""),
            ("Message must be an object", ""),
        ];
        for (message, field) in cases {
            let details = A2aError::invalid(message).details();
            assert_eq!(details[0]["reason"], "INVALID_PARAMS", "{message}");
            assert_eq!(
                details[1]["@type"],
                "type.googleapis.com/google.rpc.BadRequest"
            );
            assert_eq!(
                details[1]["fieldViolations"][0]["field"], field,
                "{message}"
            );
            assert_eq!(details[1]["fieldViolations"][0]["description"], message);
        }
        let named = A2aError::invalid_field("params.pageToken", "is not one this server made");
        assert_eq!(named.field.as_deref(), Some("pageToken"));
        assert_eq!(
            named.message,
            "params.pageToken is not one this server made"
        );
        let token = A2aError::from(StoreError::InvalidQuery {
            reason: "invalid page token: too long".into(),
        });
        assert_eq!(
            token.details()[1]["fieldViolations"][0]["field"],
            "pageToken"
        );
    }

    #[test]
    fn other_errors_carry_only_the_error_info() {
        for e in [
            A2aError::not_found("t"),
            A2aError::internal("disk full"),
            A2aError::new(ErrorKind::TaskNotCancelable, "task t is completed"),
        ] {
            assert_eq!(e.details().as_array().unwrap().len(), 1, "{e}");
        }
    }
}

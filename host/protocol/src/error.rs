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
        }
    }

    /// The HTTP status of the HTTP+JSON binding (A2A 1.0 §5.4).
    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::TaskNotFound | ErrorKind::MethodNotFound => 404,
            ErrorKind::TaskNotCancelable => 409,
            ErrorKind::Internal => 500,
            ErrorKind::ServerBusy => 503,
            ErrorKind::Unauthenticated => 401,
            _ => 400,
        }
    }

    /// The `google.rpc.Code` name of the HTTP+JSON binding's error body.
    pub fn status_name(self) -> &'static str {
        match self {
            ErrorKind::TaskNotFound | ErrorKind::MethodNotFound => "NOT_FOUND",
            ErrorKind::Internal => "INTERNAL",
            ErrorKind::ServerBusy => "UNAVAILABLE",
            ErrorKind::Unauthenticated => "UNAUTHENTICATED",
            ErrorKind::UnsupportedOperation
            | ErrorKind::PushNotificationNotSupported
            | ErrorKind::VersionNotSupported => "UNIMPLEMENTED",
            ErrorKind::Parse
            | ErrorKind::InvalidRequest
            | ErrorKind::InvalidParams
            | ErrorKind::ContentTypeNotSupported => "INVALID_ARGUMENT",
            _ => "FAILED_PRECONDITION",
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
            ErrorKind::Internal | ErrorKind::ServerBusy => "InternalError",
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
}

/// An A2A error. `message` goes to the client; `detail`, when there is one, only to the log:
/// the error is then internal and the client sees `internal error (request id …)`.
#[derive(Debug, Clone)]
pub struct A2aError {
    pub kind: ErrorKind,
    pub message: String,
    pub detail: Option<String>,
}

impl A2aError {
    /// An error that is the caller's, whose message is safe to show.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        A2aError {
            kind,
            message: message.into(),
            detail: None,
        }
    }

    /// Arguments refused: -32602.
    pub fn invalid(message: impl Into<String>) -> Self {
        A2aError::new(ErrorKind::InvalidParams, message)
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

    /// The typed details both bindings carry: one `google.rpc.ErrorInfo`.
    pub fn details(&self) -> Value {
        json!([{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.kind.reason(),
            "domain": "a2a-protocol.org",
            "metadata": {},
        }])
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
            | StoreError::TaskTooLarge { .. } => A2aError::invalid(err.to_string()),
            // A store's policy refusing the request: its reason is meant for the caller; which
            // store (a selector, a component file) is not.
            StoreError::Rejected { reason, .. } => {
                A2aError::invalid(format!("the store refused the request: {reason}"))
            }
            // A page token the store did not make: the caller's.
            StoreError::InvalidQuery { reason } => A2aError::invalid(reason.clone()),
            _ => A2aError::internal(err.to_string()),
        }
    }
}

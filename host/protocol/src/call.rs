//! Requests of both bindings (JSON-RPC methods, HTTP+JSON routes) and both versions, parsed
//! into one [`Call`]: from here on there is one code path.

use crate::error::{A2aError, ErrorKind};
use crate::params::Params;
use crate::push_call::{self, PushCall, PushConfigInput};
use crate::wire::{Version, camel, camel_keys, truncate};
use serde_json::{Map, Value};
use toolnexus_core::Timestamp;
use toolnexus_core::state::TaskState;

/// The default `ListTasks` page size (1.0).
pub const DEFAULT_PAGE_SIZE: usize = 50;
/// The largest `ListTasks` page size (1.0).
pub const MAX_PAGE_SIZE: usize = 100;

/// One A2A operation, with its arguments checked.
#[derive(Debug, Clone)]
pub enum Call {
    /// `SendMessage` / `message/send`, or the streaming forms.
    Send(SendParams),
    /// `GetTask` / `tasks/get`.
    Get {
        id: String,
        history_length: Option<usize>,
    },
    /// `ListTasks` / `tasks/list`.
    List(ListParams),
    /// `CancelTask` / `tasks/cancel`.
    Cancel { id: String },
    /// `SubscribeToTask` / `tasks/resubscribe`.
    Subscribe { id: String },
    /// `DeleteTask` / `tasks/delete` (toolnexus's own; JSON-RPC only).
    Delete { id: String },
    /// A push-notification config method (-32003 where push notifications are not offered).
    PushConfig(PushCall),
    /// `GetExtendedAgentCard`: none is declared (-32004).
    ExtendedCard,
}

impl Call {
    /// Whether the answer is an event stream.
    pub fn streams(&self) -> bool {
        matches!(
            self,
            Call::Send(SendParams {
                streaming: true,
                ..
            }) | Call::Subscribe { .. }
        )
    }
}

/// `SendMessage`'s arguments.
#[derive(Debug, Clone)]
pub struct SendParams {
    /// The message as the client sent it (checked and converted when handled).
    pub message: Value,
    /// The answer is a stream of events.
    pub streaming: bool,
    /// Answer once the Task is created instead of when it is terminal or interrupted (1.0
    /// `returnImmediately`; 0.3's `blocking: false`).
    pub return_immediately: bool,
    pub history_length: Option<usize>,
    /// `acceptedOutputModes`, when given.
    pub accepted_output_modes: Vec<String>,
    /// The push-notification config given with the message (1.0
    /// `configuration.taskPushNotificationConfig`, 0.3 `configuration.pushNotificationConfig`):
    /// stored for the Task before its agent runs, or refused (-32003) where push notifications
    /// are not offered. `Err`: the config was malformed (-32602 where they are offered).
    pub push_config: Option<Result<PushConfigInput, A2aError>>,
    /// The request's `metadata` (a JSON object), passed to the agent.
    pub metadata: Option<Value>,
    /// URIs of the extensions the client asked for (the `A2A-Extensions` header; the
    /// transport fills it in), passed to the agent.
    pub extensions: Vec<String>,
}

/// `ListTasks`' arguments.
#[derive(Debug, Clone, Default)]
pub struct ListParams {
    pub context_id: Option<String>,
    pub state: Option<TaskState>,
    pub page_size: usize,
    pub page_token: Option<String>,
    pub history_length: Option<usize>,
    pub status_timestamp_after: Option<Timestamp>,
    pub include_artifacts: bool,
}

/// A parsed request: the call and the tenant its parameters named (`tenant`, 1.0).
#[derive(Debug, Clone)]
pub struct Parsed {
    pub call: Call,
    pub tenant: Option<String>,
}

/// A JSON-RPC method with its `params` (the version only changes the answer's shapes).
pub fn from_jsonrpc(method: &str, params: &Value) -> Result<Parsed, A2aError> {
    let empty = Map::new();
    let params = &camel_keys(params);
    let params = match params {
        Value::Object(p) => p,
        Value::Null => &empty,
        _ => return Err(A2aError::invalid("params must be an object")),
    };
    let p = Params {
        map: params,
        prefix: "params.",
    };
    let call = match method {
        "SendMessage" | "message/send" => Call::Send(send_params(&p, false, false)?),
        "SendStreamingMessage" | "message/stream" => Call::Send(send_params(&p, true, false)?),
        "GetTask" | "tasks/get" => Call::Get {
            id: p.id("id")?,
            history_length: p.history_length("historyLength")?,
        },
        "ListTasks" | "tasks/list" => Call::List(list_params(&p)?),
        "CancelTask" | "tasks/cancel" => Call::Cancel { id: p.id("id")? },
        "SubscribeToTask" | "tasks/resubscribe" => Call::Subscribe { id: p.id("id")? },
        "DeleteTask" | "tasks/delete" => Call::Delete { id: p.id("id")? },
        "GetExtendedAgentCard" | "agent/getAuthenticatedExtendedCard" => Call::ExtendedCard,
        other => match push_call::from_jsonrpc(other, &p) {
            Ok(Some(push)) => Call::PushConfig(push),
            Err(refused) => Call::PushConfig(PushCall::Refused(refused)),
            Ok(None) => {
                return Err(A2aError::new(
                    ErrorKind::MethodNotFound,
                    format!("method not found: {}", truncate(other, 64)),
                ));
            }
        },
    };
    Ok(Parsed {
        call,
        tenant: p.opt_str("tenant")?.filter(|t| !t.is_empty()),
    })
}

/// An HTTP+JSON request: `method`, the path after any tenant segment (already split off by the
/// caller, and percent-decoded per segment), the query pairs (decoded), and the body.
pub fn from_rest(
    method: &str,
    path: &str,
    query: &[(String, String)],
    body: &Value,
    version: Version,
) -> Result<Call, A2aError> {
    let empty = Map::new();
    let body = &camel_keys(body);
    let body_map = match body {
        Value::Object(b) => b,
        Value::Null => &empty,
        _ => return Err(A2aError::invalid("the request body must be a JSON object")),
    };
    // Query values are strings; typed the way the JSON bodies are, so one parser checks both.
    let mut query_map = Map::new();
    for (key, value) in query {
        let key = &camel(key);
        let typed = match key.as_str() {
            "pageSize" | "historyLength" => value
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or_else(|_| Value::String(value.clone())),
            "includeArtifacts" => match value.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => Value::String(value.clone()),
            },
            _ => Value::String(value.clone()),
        };
        query_map.insert(key.clone(), typed);
    }
    let body = Params {
        map: body_map,
        prefix: "",
    };
    let query = Params {
        map: &query_map,
        prefix: "",
    };
    let not_found = || {
        A2aError::new(
            ErrorKind::MethodNotFound,
            format!("no such route: {method} {}", truncate(path, 128)),
        )
    };
    // 0.3's HTTP+JSON `blocking` is a protobuf bool: absent means false, answer at once.
    let immediately = version == Version::V0_3;
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let call = match (method, segments.as_slice()) {
        ("POST", ["message:send"]) => Call::Send(send_params(&body, false, immediately)?),
        ("POST", ["message:stream"]) => Call::Send(send_params(&body, true, immediately)?),
        ("GET", ["tasks"]) => Call::List(list_params(&query)?),
        ("GET" | "POST", ["tasks", rest]) if rest.ends_with(":subscribe") => Call::Subscribe {
            id: rest_id(rest.trim_end_matches(":subscribe"))?,
        },
        ("POST", ["tasks", rest]) if rest.ends_with(":cancel") => Call::Cancel {
            id: rest_id(rest.trim_end_matches(":cancel"))?,
        },
        ("GET", ["tasks", id]) => Call::Get {
            id: rest_id(id)?,
            history_length: query.history_length("historyLength")?,
        },
        (_, ["tasks", id, "pushNotificationConfigs", rest @ ..]) => {
            match push_call::from_rest(method, rest_id(id)?, rest, &body, &query, version) {
                Ok(push) => Call::PushConfig(push),
                Err(e) if e.kind == ErrorKind::InvalidParams => {
                    Call::PushConfig(PushCall::Refused(e))
                }
                Err(e) => return Err(e),
            }
        }
        ("GET", ["extendedAgentCard"]) => Call::ExtendedCard,
        _ => return Err(not_found()),
    };
    Ok(call)
}

fn rest_id(id: &str) -> Result<String, A2aError> {
    if id.is_empty() {
        return Err(A2aError::invalid("the task id in the path is empty"));
    }
    Ok(id.to_owned())
}

/// `immediately`: whether the send answers at once unless told to wait (0.3 HTTP+JSON); else
/// it waits unless told not to (1.0; 0.3 JSON-RPC, whose `blocking` the official SDKs default
/// to true).
fn send_params(p: &Params<'_>, streaming: bool, immediately: bool) -> Result<SendParams, A2aError> {
    let message = p
        .get("message")
        .cloned()
        .ok_or_else(|| p.bad("message", "must be an object"))?;
    let mut params = SendParams {
        message,
        streaming,
        return_immediately: immediately,
        history_length: None,
        accepted_output_modes: Vec::new(),
        push_config: None,
        metadata: None,
        extensions: Vec::new(),
    };
    match p.get("metadata") {
        None | Some(Value::Null) => {}
        Some(metadata @ Value::Object(_)) => params.metadata = Some(metadata.clone()),
        Some(_) => return Err(p.bad("metadata", "must be an object")),
    }
    if let Some(config) = p.nested("configuration")? {
        let config = Params {
            map: config.map,
            prefix: "configuration.",
        };
        if let Some(immediately) = config.opt_bool("returnImmediately")? {
            params.return_immediately = immediately;
        }
        if let Some(blocking) = config.opt_bool("blocking")? {
            params.return_immediately = !blocking;
        }
        params.history_length = config.history_length("historyLength")?;
        match config.get("acceptedOutputModes") {
            None => {}
            Some(Value::Array(modes)) => {
                for mode in modes {
                    let mode = mode
                        .as_str()
                        .ok_or_else(|| config.bad("acceptedOutputModes", "must be strings"))?;
                    params.accepted_output_modes.push(mode.to_owned());
                }
            }
            Some(_) => return Err(config.bad("acceptedOutputModes", "must be an array")),
        }
        params.push_config = push_call::from_send_configuration(&config).transpose();
    }
    Ok(params)
}

fn list_params(p: &Params<'_>) -> Result<ListParams, A2aError> {
    let page_size = match p.opt_int("pageSize")? {
        None => DEFAULT_PAGE_SIZE,
        Some(n) if (1..=MAX_PAGE_SIZE as i64).contains(&n) => n as usize,
        Some(n) => {
            return Err(p.bad(
                "pageSize",
                &format!("must be between 1 and {MAX_PAGE_SIZE}, not {n}"),
            ));
        }
    };
    let state = match p.opt_str("status")?.or(p.opt_str("state")?) {
        None => None,
        Some(s) if s.is_empty() || s == "TASK_STATE_UNSPECIFIED" => None,
        Some(s) => Some(TaskState::parse(&s).ok_or_else(|| {
            p.bad(
                "status",
                &format!("is not a task state: {:?}", truncate(&s, 40)),
            )
        })?),
    };
    let status_timestamp_after = p
        .opt_str("statusTimestampAfter")?
        .map(|t| {
            Timestamp::parse(&t)
                .map_err(|e| p.bad("statusTimestampAfter", &format!("is invalid: {e}")))
        })
        .transpose()?;
    Ok(ListParams {
        context_id: p.opt_str("contextId")?.filter(|c| !c.is_empty()),
        state,
        page_size,
        page_token: p.opt_str("pageToken")?.filter(|t| !t.is_empty()),
        history_length: p.history_length("historyLength")?,
        status_timestamp_after,
        include_artifacts: p.opt_bool("includeArtifacts")?.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn list_arguments_are_checked() {
        let ok = from_jsonrpc("ListTasks", &json!({})).unwrap();
        let Call::List(list) = ok.call else { panic!() };
        assert_eq!(list.page_size, 50);
        assert!(!list.include_artifacts);
        // Protobuf field names are accepted beside the JSON names.
        let snake = from_jsonrpc(
            "ListTasks",
            &json!({"page_size": 2, "context_id": "c", "include_artifacts": true}),
        )
        .unwrap();
        let Call::List(list) = snake.call else {
            panic!()
        };
        assert_eq!(
            (
                list.page_size,
                list.context_id.as_deref(),
                list.include_artifacts
            ),
            (2, Some("c"), true)
        );
        for bad in [
            json!({"pageSize": 0}),
            json!({"pageSize": 101}),
            json!({"pageSize": -1}),
            json!({"pageSize": "x"}),
            json!({"status": "TASK_STATE_NOPE"}),
            json!({"historyLength": -1}),
            json!({"statusTimestampAfter": "yesterday"}),
            json!({"includeArtifacts": "yes"}),
        ] {
            let err = from_jsonrpc("ListTasks", &bad).unwrap_err();
            assert_eq!(err.code(), -32602, "{bad}");
        }
    }

    #[test]
    fn rest_routes_map_to_calls() {
        let q = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let v = Version::V1_0;
        assert!(matches!(
            from_rest("GET", "/tasks/abc", &q(&[("historyLength", "2")]), &Value::Null, v).unwrap(),
            Call::Get { id, history_length: Some(2) } if id == "abc"
        ));
        assert!(matches!(
            from_rest("POST", "/tasks/abc:cancel", &[], &Value::Null, v).unwrap(),
            Call::Cancel { id } if id == "abc"
        ));
        assert!(matches!(
            from_rest("GET", "/tasks/abc:subscribe", &[], &Value::Null, v).unwrap(),
            Call::Subscribe { id } if id == "abc"
        ));
        assert!(matches!(
            from_rest(
                "GET",
                "/tasks",
                &q(&[("pageSize", "7"), ("includeArtifacts", "true")]),
                &Value::Null,
                v
            )
            .unwrap(),
            Call::List(ListParams {
                page_size: 7,
                include_artifacts: true,
                ..
            })
        ));
        let err =
            from_rest("GET", "/tasks", &q(&[("pageSize", "500")]), &Value::Null, v).unwrap_err();
        assert_eq!(err.code(), -32602);
        let err = from_rest("DELETE", "/tasks/abc", &[], &Value::Null, v).unwrap_err();
        assert_eq!(err.kind.http_status(), 404);
        assert!(matches!(
            from_rest("DELETE", "/tasks/abc/pushNotificationConfigs/c", &[], &Value::Null, v).unwrap(),
            Call::PushConfig(PushCall::Delete { task_id, config_id }) if task_id == "abc" && config_id == "c"
        ));
        // Refused arguments are answered once push notifications are found offered.
        assert!(matches!(
            from_rest("POST", "/tasks/abc/pushNotificationConfigs", &[], &Value::Null, v).unwrap(),
            Call::PushConfig(PushCall::Refused(e)) if e.field.as_deref() == Some("url")
        ));
        let err = from_rest(
            "PUT",
            "/tasks/abc/pushNotificationConfigs",
            &[],
            &Value::Null,
            v,
        )
        .unwrap_err();
        assert_eq!(err.kind.http_status(), 404);
    }
}

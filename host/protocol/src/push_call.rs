//! The push-notification config methods of both bindings and both versions, parsed into one
//! [`PushCall`], and the push config a `SendMessage` may carry ([`PushConfigInput`]).
//!
//! The shapes differ by version, not by binding: A2A 1.0's `TaskPushNotificationConfig` is flat
//! (`taskId`, `id`, `url`, `token`, `authentication{scheme, credentials}`); 0.3 nests a
//! `PushNotificationConfig` (`id`, `url`, `token`, `authentication{schemes[], credentials}`)
//! under `pushNotificationConfig`, and its HTTP+JSON binding under `config` of a
//! `CreateTaskPushNotificationConfigRequest` (`parent`, `configId`, `config`).

use crate::error::{A2aError, ErrorKind};
use crate::params::Params;
use crate::wire::Version;
use serde_json::Value;

/// One push-notification config method, with its arguments checked.
#[derive(Debug, Clone)]
pub enum PushCall {
    /// `CreateTaskPushNotificationConfig` / `tasks/pushNotificationConfig/set`: store `config`
    /// for Task `task_id` (replacing the Task's config of the same id).
    Set {
        task_id: String,
        config: PushConfigInput,
    },
    /// `GetTaskPushNotificationConfig` / `tasks/pushNotificationConfig/get`. Without a config id
    /// (0.3 only): the Task's config whose id is the Task's id, else its first.
    Get {
        task_id: String,
        config_id: Option<String>,
    },
    /// `ListTaskPushNotificationConfigs` / `tasks/pushNotificationConfig/list`, by config id.
    List {
        task_id: String,
        /// The most configs in the answer (1.0); `None`: all.
        page_size: Option<usize>,
        /// Where the previous page ended (1.0's `nextPageToken`).
        page_token: Option<String>,
    },
    /// `DeleteTaskPushNotificationConfig` / `tasks/pushNotificationConfig/delete`.
    Delete { task_id: String, config_id: String },
    /// A push-config method whose arguments were refused (-32602): answered with that error
    /// only where push notifications are offered, since a server without them says so first
    /// (-32003), as the official SDKs' servers do.
    Refused(A2aError),
}

/// A push config as a client gave it: its shape checked, its URL and size not yet (the service
/// does that, with the notifier's rules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushConfigInput {
    /// The config id; `None`: the service assigns one.
    pub id: Option<String>,
    pub url: String,
    /// Sent back to the webhook as `X-A2A-Notification-Token`.
    pub token: Option<String>,
    pub authentication: Option<PushAuthentication>,
    /// The protocol version whose shape the config came in: the shape of its deliveries.
    pub version: Version,
    /// Where `url` is in the request, to name it when it is refused.
    pub url_field: String,
}

/// How the sender authenticates to the webhook (0.3's `schemes` list: its first scheme).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushAuthentication {
    pub scheme: String,
    pub credentials: Option<String>,
}

/// A JSON-RPC push-config method's call; `Ok(None)` when `method` is not one.
pub(crate) fn from_jsonrpc(method: &str, p: &Params<'_>) -> Result<Option<PushCall>, A2aError> {
    let call = match method {
        "CreateTaskPushNotificationConfig" => PushCall::Set {
            task_id: p.id("taskId")?,
            config: config_v1(p)?,
        },
        "GetTaskPushNotificationConfig" => PushCall::Get {
            task_id: p.id("taskId")?,
            config_id: Some(p.id("id")?),
        },
        "ListTaskPushNotificationConfigs" | "ListTaskPushNotificationConfig" => PushCall::List {
            task_id: p.id("taskId")?,
            page_size: page_size(p)?,
            page_token: opt_nonempty(p, "pageToken")?,
        },
        "DeleteTaskPushNotificationConfig" => PushCall::Delete {
            task_id: p.id("taskId")?,
            config_id: p.id("id")?,
        },
        "tasks/pushNotificationConfig/set" => {
            let task_id = p.id("taskId")?;
            let nested = p
                .nested("pushNotificationConfig")?
                .ok_or_else(|| p.bad("pushNotificationConfig", "must be an object"))?;
            let prefix = format!("{}pushNotificationConfig.", p.prefix);
            let nested = Params {
                map: nested.map,
                prefix: &prefix,
            };
            PushCall::Set {
                task_id,
                config: config_v03(&nested)?,
            }
        }
        "tasks/pushNotificationConfig/get" => PushCall::Get {
            task_id: p.id("id")?,
            config_id: opt_nonempty(p, "pushNotificationConfigId")?,
        },
        "tasks/pushNotificationConfig/list" => PushCall::List {
            task_id: p.id("id")?,
            page_size: None,
            page_token: None,
        },
        "tasks/pushNotificationConfig/delete" => PushCall::Delete {
            task_id: p.id("id")?,
            config_id: p.id("pushNotificationConfigId")?,
        },
        _ => return Ok(None),
    };
    Ok(Some(call))
}

/// An HTTP+JSON push-config route: `method` on `tasks/{task_id}/pushNotificationConfigs[/…]`
/// (`rest`: the segments after `pushNotificationConfigs`), in `version`'s shapes.
pub(crate) fn from_rest(
    method: &str,
    task_id: String,
    rest: &[&str],
    body: &Params<'_>,
    query: &Params<'_>,
    version: Version,
) -> Result<PushCall, A2aError> {
    let config_id = |id: &str| {
        if id.is_empty() {
            Err(A2aError::invalid("the config id in the path is empty"))
        } else {
            Ok(id.to_owned())
        }
    };
    match (method, rest) {
        ("POST", []) => Ok(PushCall::Set {
            task_id,
            config: match version {
                Version::V1_0 => config_v1(body)?,
                Version::V0_3 => config_v03_rest(body)?,
            },
        }),
        ("GET", []) => Ok(PushCall::List {
            task_id,
            page_size: page_size(query)?,
            page_token: query.opt_str("pageToken")?.filter(|t| !t.is_empty()),
        }),
        ("GET", [id]) => Ok(PushCall::Get {
            task_id,
            config_id: Some(config_id(id)?),
        }),
        ("DELETE", [id]) => Ok(PushCall::Delete {
            task_id,
            config_id: config_id(id)?,
        }),
        _ => Err(A2aError::new(
            ErrorKind::MethodNotFound,
            format!("no such route: {method} on a task's pushNotificationConfigs"),
        )),
    }
}

/// The push config of a `SendMessage`'s `configuration` (`p`): 1.0's
/// `taskPushNotificationConfig` or 0.3's `pushNotificationConfig`, if either is there.
pub(crate) fn from_send_configuration(p: &Params<'_>) -> Result<Option<PushConfigInput>, A2aError> {
    if let Some(config) = p.nested("taskPushNotificationConfig")? {
        let prefix = format!("{}taskPushNotificationConfig.", p.prefix);
        return config_v1(&Params {
            map: config.map,
            prefix: &prefix,
        })
        .map(Some);
    }
    if let Some(config) = p.nested("pushNotificationConfig")? {
        let prefix = format!("{}pushNotificationConfig.", p.prefix);
        return config_v03(&Params {
            map: config.map,
            prefix: &prefix,
        })
        .map(Some);
    }
    Ok(None)
}

/// 1.0's `pageSize`: absent or 0 means every config.
fn page_size(p: &Params<'_>) -> Result<Option<usize>, A2aError> {
    match p.opt_int("pageSize")? {
        None | Some(0) => Ok(None),
        Some(n) => usize::try_from(n)
            .map(Some)
            .map_err(|_| p.bad("pageSize", "must not be negative")),
    }
}

fn opt_nonempty(p: &Params<'_>, key: &str) -> Result<Option<String>, A2aError> {
    Ok(p.opt_str(key)?.filter(|s| !s.is_empty()))
}

fn url(p: &Params<'_>) -> Result<String, A2aError> {
    match p.get("url") {
        Some(Value::String(url)) if !url.is_empty() => Ok(url.clone()),
        _ => Err(p.bad("url", "must be a non-empty string (the webhook's URL)")),
    }
}

/// A 1.0 `TaskPushNotificationConfig` (its `taskId` and `tenant` are the caller's to check).
fn config_v1(p: &Params<'_>) -> Result<PushConfigInput, A2aError> {
    config_in(p, Version::V1_0)
}

/// A 0.3 `PushNotificationConfig`.
fn config_v03(p: &Params<'_>) -> Result<PushConfigInput, A2aError> {
    config_in(p, Version::V0_3)
}

/// A config of `version`: the versions differ only in how `authentication` names its scheme
/// (1.0 `scheme`, 0.3 a `schemes` list whose first entry is taken).
fn config_in(p: &Params<'_>, version: Version) -> Result<PushConfigInput, A2aError> {
    let authentication = match p.nested("authentication")? {
        None => None,
        Some(auth) => {
            let prefix = format!("{}authentication.", p.prefix);
            let auth = Params {
                map: auth.map,
                prefix: &prefix,
            };
            let scheme = match version {
                Version::V1_0 => auth.id("scheme")?,
                Version::V0_3 => match auth.get("schemes") {
                    Some(Value::Array(schemes)) => match schemes.first() {
                        Some(Value::String(s)) if !s.is_empty() => s.clone(),
                        _ => return Err(auth.bad("schemes", "must start with a non-empty string")),
                    },
                    _ => return Err(auth.bad("schemes", "must be an array of strings")),
                },
            };
            let scheme_key = match version {
                Version::V1_0 => "scheme",
                Version::V0_3 => "schemes",
            };
            if let Err(why) = check_scheme(&scheme) {
                return Err(auth.bad(scheme_key, &why));
            }
            Some(PushAuthentication {
                scheme,
                credentials: header_value(&auth, "credentials")?,
            })
        }
    };
    Ok(PushConfigInput {
        id: opt_nonempty(p, "id")?,
        url: url(p)?,
        token: header_value(p, "token")?,
        authentication,
        version,
        url_field: format!("{}url", p.prefix),
    })
}

/// The longest `token` or `credentials`, in bytes. Each is sent in one header line
/// (`X-A2A-Notification-Token`, `Authorization`), and common servers refuse a line over 8 KiB
/// (nginx's `large_client_header_buffers`, Apache's `LimitRequestFieldSize`): 4 KiB leaves
/// room for the name and the scheme, and still takes a large JWT.
pub const MAX_HEADER_SECRET_BYTES: usize = 4096;

/// The longest authentication scheme, in bytes (`Bearer`, `Basic`, `Digest`: a few letters).
const MAX_SCHEME_BYTES: usize = 64;

/// An optional member sent in an HTTP header at every delivery: checked here, when the config
/// is created, since a value that cannot be a header would make every delivery fail.
fn header_value(p: &Params<'_>, key: &str) -> Result<Option<String>, A2aError> {
    let value = opt_nonempty(p, key)?;
    if let Some(value) = &value
        && let Err(why) = check_header_value(value)
    {
        return Err(p.bad(key, &why));
    }
    Ok(value)
}

/// Whether `value` can be sent as an HTTP header value as it is: no control characters (CR,
/// LF, NUL, tab, DEL, …: a CR or LF would end the header), no space at either end (a receiver
/// would strip it, and then not recognize the value), at most [`MAX_HEADER_SECRET_BYTES`]. The
/// value itself is never quoted in the reason: it is a secret.
fn check_header_value(value: &str) -> Result<(), String> {
    if value.len() > MAX_HEADER_SECRET_BYTES {
        return Err(format!(
            "is {} bytes, over the limit of {MAX_HEADER_SECRET_BYTES} for a value sent in an \
             HTTP header",
            value.len()
        ));
    }
    if let Some(at) = value.chars().position(char::is_control) {
        return Err(format!(
            "cannot be sent in an HTTP header: it holds a control character (CR, LF, NUL, tab \
             or another) at character {at}"
        ));
    }
    if value.starts_with(' ') || value.ends_with(' ') {
        return Err(
            "cannot be sent in an HTTP header as it is: it starts or ends with a space".into(),
        );
    }
    Ok(())
}

/// Whether `scheme` is an HTTP authentication scheme (RFC 9110's `token`: letters, digits and
/// ``!#$%&'*+-.^_`|~``), since it is sent in the `Authorization` header before the credentials.
fn check_scheme(scheme: &str) -> Result<(), String> {
    let tchar = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if scheme.len() > MAX_SCHEME_BYTES {
        return Err(format!(
            "is over the limit of {MAX_SCHEME_BYTES} bytes for an authentication scheme"
        ));
    }
    if !scheme.chars().all(tchar) {
        return Err(
            "is not an HTTP authentication scheme (letters, digits and !#$%&'*+-.^_`|~ only, \
             like Bearer or Basic)"
                .into(),
        );
    }
    Ok(())
}

/// 0.3's HTTP+JSON create body: `{parent, configId, config: {name, pushNotificationConfig}}`;
/// the config's own `id`, else `configId`, is its id (the official 0.3 client sends both).
fn config_v03_rest(body: &Params<'_>) -> Result<PushConfigInput, A2aError> {
    let config = body
        .nested("config")?
        .ok_or_else(|| body.bad("config", "must be an object"))?;
    let config = Params {
        map: config.map,
        prefix: "config.",
    };
    let push = config
        .nested("pushNotificationConfig")?
        .ok_or_else(|| config.bad("pushNotificationConfig", "must be an object"))?;
    let push = Params {
        map: push.map,
        prefix: "config.pushNotificationConfig.",
    };
    let mut input = config_v03(&push)?;
    if input.id.is_none() {
        input.id = opt_nonempty(body, "configId")?;
    }
    Ok(input)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, json};

    fn params(value: &Value) -> Params<'_> {
        Params {
            map: value.as_object().unwrap(),
            prefix: "params.",
        }
    }

    fn rpc(method: &str, value: Value) -> Result<PushCall, A2aError> {
        from_jsonrpc(method, &params(&value)).map(|call| call.expect("a push method"))
    }

    #[test]
    fn the_1_0_methods_parse() {
        let set = rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "t", "id": "c", "url": "https://h/x", "token": "tok",
                "authentication": {"scheme": "Bearer", "credentials": "s"}}),
        )
        .unwrap();
        let PushCall::Set { task_id, config } = set else {
            panic!("{set:?}")
        };
        assert_eq!(task_id, "t");
        assert_eq!(
            config,
            PushConfigInput {
                id: Some("c".into()),
                url: "https://h/x".into(),
                token: Some("tok".into()),
                authentication: Some(PushAuthentication {
                    scheme: "Bearer".into(),
                    credentials: Some("s".into())
                }),
                version: Version::V1_0,
                url_field: "params.url".into(),
            }
        );
        assert!(matches!(
            rpc("GetTaskPushNotificationConfig", json!({"taskId": "t", "id": "c"})).unwrap(),
            PushCall::Get { task_id, config_id: Some(c) } if task_id == "t" && c == "c"
        ));
        assert!(matches!(
            rpc("ListTaskPushNotificationConfigs", json!({"taskId": "t", "pageSize": 2, "pageToken": "x"})).unwrap(),
            PushCall::List { page_size: Some(2), page_token: Some(p), .. } if p == "x"
        ));
        assert!(matches!(
            rpc("DeleteTaskPushNotificationConfig", json!({"taskId": "t", "id": "c"})).unwrap(),
            PushCall::Delete { config_id, .. } if config_id == "c"
        ));
        assert!(
            from_jsonrpc("GetTask", &params(&json!({})))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn the_0_3_methods_parse() {
        let set = rpc(
            "tasks/pushNotificationConfig/set",
            json!({"taskId": "t", "pushNotificationConfig": {"url": "https://h/x",
                "authentication": {"schemes": ["Basic", "Bearer"], "credentials": "u:p"}}}),
        )
        .unwrap();
        let PushCall::Set { config, .. } = set else {
            panic!()
        };
        assert_eq!((config.id, config.version), (None, Version::V0_3));
        assert_eq!(config.authentication.unwrap().scheme, "Basic");
        assert_eq!(config.url_field, "params.pushNotificationConfig.url");
        assert!(matches!(
            rpc("tasks/pushNotificationConfig/get", json!({"id": "t"})).unwrap(),
            PushCall::Get {
                config_id: None,
                ..
            }
        ));
        assert!(matches!(
            rpc("tasks/pushNotificationConfig/list", json!({"id": "t"})).unwrap(),
            PushCall::List {
                page_size: None,
                ..
            }
        ));
        assert!(matches!(
            rpc("tasks/pushNotificationConfig/delete", json!({"id": "t", "pushNotificationConfigId": "c"})).unwrap(),
            PushCall::Delete { config_id, .. } if config_id == "c"
        ));
    }

    #[test]
    fn bad_arguments_name_their_field() {
        let cases = [
            (
                "CreateTaskPushNotificationConfig",
                json!({"taskId": "t"}),
                "url",
            ),
            (
                "CreateTaskPushNotificationConfig",
                json!({"taskId": "t", "url": 3}),
                "url",
            ),
            (
                "CreateTaskPushNotificationConfig",
                json!({"url": "https://h"}),
                "taskId",
            ),
            (
                "CreateTaskPushNotificationConfig",
                json!({"taskId": "t", "url": "https://h", "authentication": {"credentials": "x"}}),
                "authentication.scheme",
            ),
            (
                "tasks/pushNotificationConfig/set",
                json!({"taskId": "t", "pushNotificationConfig": {"url": "https://h", "authentication": {"schemes": []}}}),
                "pushNotificationConfig.authentication.schemes",
            ),
            (
                "tasks/pushNotificationConfig/set",
                json!({"taskId": "t"}),
                "pushNotificationConfig",
            ),
            (
                "tasks/pushNotificationConfig/delete",
                json!({"id": "t"}),
                "pushNotificationConfigId",
            ),
            (
                "ListTaskPushNotificationConfigs",
                json!({"taskId": "t", "pageSize": -1}),
                "pageSize",
            ),
        ];
        for (method, value, field) in cases {
            let err = rpc(method, value.clone()).unwrap_err();
            assert_eq!(err.code(), -32602, "{method} {value}");
            assert_eq!(err.field.as_deref(), Some(field), "{method} {value}: {err}");
        }
    }

    #[test]
    fn rest_routes_parse_per_version() {
        let empty = Map::new();
        let none = Params {
            map: &empty,
            prefix: "",
        };
        let body = json!({"parent": "tasks/t", "configId": "c",
            "config": {"name": "", "pushNotificationConfig": {"url": "https://h/x"}}});
        let body = Params {
            map: body.as_object().unwrap(),
            prefix: "",
        };
        let set = from_rest("POST", "t".into(), &[], &body, &none, Version::V0_3).unwrap();
        let PushCall::Set { config, .. } = set else {
            panic!()
        };
        assert_eq!(
            (config.id.as_deref(), config.url_field.as_str()),
            (Some("c"), "config.pushNotificationConfig.url")
        );
        let flat = json!({"url": "https://h/y"});
        let flat = Params {
            map: flat.as_object().unwrap(),
            prefix: "",
        };
        let set = from_rest("POST", "t".into(), &[], &flat, &none, Version::V1_0).unwrap();
        assert!(matches!(set, PushCall::Set { config, .. } if config.url == "https://h/y"));
        assert!(matches!(
            from_rest("DELETE", "t".into(), &["c"], &none, &none, Version::V1_0).unwrap(),
            PushCall::Delete { .. }
        ));
        let err = from_rest("PUT", "t".into(), &[], &none, &none, Version::V1_0).unwrap_err();
        assert_eq!(err.kind.http_status(), 404);
        let err = from_rest("GET", "t".into(), &[""], &none, &none, Version::V1_0).unwrap_err();
        assert_eq!(err.code(), -32602);
    }
}

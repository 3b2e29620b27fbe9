//! Push configs between their shapes: a client's [`PushConfigInput`] as the version-neutral
//! object the store keeps (documented in [`crate::push`]), and that object as each version
//! answers it.

use crate::push_call::PushConfigInput;
use crate::wire::Version;
use serde_json::{Map, Value, json};

/// The stored (version-neutral, unsealed) form of `input`, with its id decided.
pub(crate) fn stored(input: &PushConfigInput, id: &str, task_id: &str) -> Map<String, Value> {
    let mut config = Map::new();
    config.insert("id".into(), json!(id));
    config.insert("taskId".into(), json!(task_id));
    config.insert("url".into(), json!(input.url));
    if let Some(token) = &input.token {
        config.insert("token".into(), json!(token));
    }
    if let Some(auth) = &input.authentication {
        let mut authentication = Map::new();
        authentication.insert("scheme".into(), json!(auth.scheme));
        if let Some(credentials) = &auth.credentials {
            authentication.insert("credentials".into(), json!(credentials));
        }
        config.insert("authentication".into(), Value::Object(authentication));
    }
    let version = match input.version {
        Version::V1_0 => "1.0",
        Version::V0_3 => "0.3",
    };
    config.insert("protocolVersion".into(), json!(version));
    config
}

/// A stored config (opened) as `version` answers it: 1.0's flat `TaskPushNotificationConfig`,
/// or 0.3's `{taskId, pushNotificationConfig}`. Members other than those of the shape
/// (`protocolVersion`, anything a notifier added) stay out.
pub(crate) fn config_out(stored: &Map<String, Value>, version: Version) -> Value {
    let text = |key: &str| stored.get(key).and_then(Value::as_str);
    let mut config = Map::new();
    if let Some(id) = text("id") {
        config.insert("id".into(), json!(id));
    }
    if version == Version::V1_0
        && let Some(task_id) = text("taskId")
    {
        config.insert("taskId".into(), json!(task_id));
    }
    config.insert("url".into(), json!(text("url").unwrap_or_default()));
    if let Some(token) = text("token") {
        config.insert("token".into(), json!(token));
    }
    if let Some(auth) = stored.get("authentication").and_then(Value::as_object) {
        let scheme = auth
            .get("scheme")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut authentication = match version {
            Version::V1_0 => json!({"scheme": scheme}),
            Version::V0_3 => json!({"schemes": [scheme]}),
        };
        if let Some(credentials) = auth.get("credentials").and_then(Value::as_str) {
            authentication["credentials"] = json!(credentials);
        }
        config.insert("authentication".into(), authentication);
    }
    match version {
        Version::V1_0 => Value::Object(config),
        Version::V0_3 => json!({
            "taskId": text("taskId").unwrap_or_default(),
            "pushNotificationConfig": config,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::push_call::PushAuthentication;

    #[test]
    fn a_config_is_stored_neutral_and_answered_per_version() {
        let input = PushConfigInput {
            id: None,
            url: "https://h/x".into(),
            token: Some("tok".into()),
            authentication: Some(PushAuthentication {
                scheme: "Bearer".into(),
                credentials: Some("secret".into()),
            }),
            version: Version::V0_3,
            url_field: "url".into(),
        };
        let stored = stored(&input, "c1", "t1");
        assert_eq!(
            Value::Object(stored.clone()),
            json!({"id": "c1", "taskId": "t1", "url": "https://h/x", "token": "tok",
                "authentication": {"scheme": "Bearer", "credentials": "secret"},
                "protocolVersion": "0.3"})
        );
        assert_eq!(
            config_out(&stored, Version::V1_0),
            json!({"id": "c1", "taskId": "t1", "url": "https://h/x", "token": "tok",
                "authentication": {"scheme": "Bearer", "credentials": "secret"}})
        );
        assert_eq!(
            config_out(&stored, Version::V0_3),
            json!({"taskId": "t1", "pushNotificationConfig": {"id": "c1", "url": "https://h/x",
                "token": "tok", "authentication": {"schemes": ["Bearer"], "credentials": "secret"}}})
        );
    }
}

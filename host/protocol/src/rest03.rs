//! A2A 0.3's HTTP+JSON binding (`/v1/…`), whose bodies are the protobuf JSON of the 0.3
//! `.proto`, not 0.3's JSON-RPC shapes: a message's parts are `content`, a file part is
//! `{"file":{"fileWithUri"|"fileWithBytes",…}}`, a data part `{"data":{"data":{…}}}`, states
//! are enum names (`TASK_STATE_CANCELLED`, with two Ls), and field names may come in
//! `snake_case` (the official 0.3 client sends `preserving_proto_field_name`).
//!
//! It is served by converting at the edge: [`request_in`] turns a 0.3 body into the 1.0 body
//! the one code path parses, and [`answer_out`] turns the 1.0 answer (or stream event) into
//! 0.3 protobuf JSON.

use crate::wire::camel_keys;
use serde_json::{Map, Value, json};

/// A 0.3 protobuf-JSON request body as the 1.0 body of the same request.
pub fn request_in(body: &Value) -> Value {
    let body = camel_keys(body);
    let Some(object) = body.as_object() else {
        return body;
    };
    let mut out = object.clone();
    // `request` is the proto field name of `message`.
    if let Some(message) = out.remove("request") {
        out.entry("message").or_insert(message);
    }
    if let Some(message) = out.get_mut("message") {
        *message = message_in(message);
    }
    if let Some(Value::Object(config)) = out.get_mut("configuration")
        && let Some(push) = config.remove("pushNotification")
    {
        config.insert("pushNotificationConfig".into(), push);
    }
    Value::Object(out)
}

fn message_in(message: &Value) -> Value {
    let Some(object) = message.as_object() else {
        return message.clone();
    };
    let mut out = object.clone();
    if let Some(content) = out.remove("content") {
        out.entry("parts").or_insert(content);
    }
    if let Some(Value::Array(parts)) = out.get_mut("parts") {
        for part in parts.iter_mut() {
            *part = part_in(part);
        }
    }
    Value::Object(out)
}

fn part_in(part: &Value) -> Value {
    let Some(object) = part.as_object() else {
        return part.clone();
    };
    let mut out = Map::new();
    if let Some(file) = object.get("file").and_then(Value::as_object) {
        if let Some(uri) = file.get("fileWithUri") {
            out.insert("url".into(), uri.clone());
        }
        if let Some(bytes) = file.get("fileWithBytes") {
            out.insert("raw".into(), bytes.clone());
        }
        if let Some(mime) = file.get("mimeType") {
            out.insert("mediaType".into(), mime.clone());
        }
        if let Some(name) = file.get("name") {
            out.insert("filename".into(), name.clone());
        }
    } else if let Some(data) = object.get("data") {
        // DataPart { data: Struct }.
        out.insert(
            "data".into(),
            data.get("data").cloned().unwrap_or_else(|| data.clone()),
        );
    } else {
        return part.clone();
    }
    if let Some(metadata) = object.get("metadata") {
        out.insert("metadata".into(), metadata.clone());
    }
    Value::Object(out)
}

/// A 1.0 answer or stream event (`{"task"}`, `{"statusUpdate"}`, `{"artifactUpdate"}`, a bare
/// Task) as 0.3 protobuf JSON.
pub fn answer_out(answer: &Value) -> Value {
    let Some(object) = answer.as_object() else {
        return answer.clone();
    };
    if let Some(task) = object.get("task") {
        return json!({"task": task_out(task)});
    }
    if let Some(update) = object.get("statusUpdate") {
        let mut update = update.clone();
        let terminal_or_waiting = update["status"]["state"].as_str().is_some_and(|s| {
            matches!(
                s,
                "TASK_STATE_COMPLETED"
                    | "TASK_STATE_CANCELED"
                    | "TASK_STATE_FAILED"
                    | "TASK_STATE_REJECTED"
                    | "TASK_STATE_INPUT_REQUIRED"
                    | "TASK_STATE_AUTH_REQUIRED"
            )
        });
        update["status"] = status_out(&update["status"]);
        update["final"] = json!(terminal_or_waiting);
        return json!({"statusUpdate": update});
    }
    if let Some(update) = object.get("artifactUpdate") {
        let mut update = update.clone();
        update["artifact"] = artifact_out(&update["artifact"]);
        return json!({"artifactUpdate": update});
    }
    if object.contains_key("id") && object.contains_key("status") {
        return task_out(answer);
    }
    if let Some(Value::Array(configs)) = object.get("configs") {
        let mut list = Map::new();
        list.insert(
            "configs".into(),
            Value::Array(configs.iter().map(push_config_out).collect()),
        );
        if let Some(token) = object.get("nextPageToken") {
            list.insert("nextPageToken".into(), token.clone());
        }
        return Value::Object(list);
    }
    if object.contains_key("taskId") && object.contains_key("url") {
        return push_config_out(answer);
    }
    answer.clone()
}

/// A 1.0 `TaskPushNotificationConfig` as 0.3's: named by its resource name, the config nested,
/// its authentication scheme as a list of one.
fn push_config_out(config: &Value) -> Value {
    let text = |key: &str| config[key].as_str().unwrap_or_default();
    let mut push = Map::new();
    for key in ["id", "url", "token"] {
        if let Some(value) = config.get(key) {
            push.insert(key.into(), value.clone());
        }
    }
    if let Some(auth) = config.get("authentication") {
        let mut authentication = json!({"schemes": [auth["scheme"]]});
        if let Some(credentials) = auth.get("credentials") {
            authentication["credentials"] = credentials.clone();
        }
        push.insert("authentication".into(), authentication);
    }
    json!({
        "name": format!("tasks/{}/pushNotificationConfigs/{}", text("taskId"), text("id")),
        "pushNotificationConfig": push,
    })
}

fn task_out(task: &Value) -> Value {
    let mut task = task.clone();
    if let Some(status) = task.get("status") {
        task["status"] = status_out(status);
    }
    if let Some(Value::Array(history)) = task.get_mut("history") {
        for message in history.iter_mut() {
            *message = message_out(message);
        }
    }
    if let Some(Value::Array(artifacts)) = task.get_mut("artifacts") {
        for artifact in artifacts.iter_mut() {
            *artifact = artifact_out(artifact);
        }
    }
    task
}

fn status_out(status: &Value) -> Value {
    let mut status = status.clone();
    if status["state"] == "TASK_STATE_CANCELED" {
        status["state"] = json!("TASK_STATE_CANCELLED");
    }
    if let Some(message) = status.get("message") {
        status["message"] = message_out(message);
    }
    status
}

fn message_out(message: &Value) -> Value {
    let Some(object) = message.as_object() else {
        return message.clone();
    };
    let mut out = object.clone();
    if let Some(Value::Array(parts)) = out.remove("parts") {
        out.insert(
            "content".into(),
            Value::Array(parts.iter().map(part_out).collect()),
        );
    }
    Value::Object(out)
}

fn artifact_out(artifact: &Value) -> Value {
    let mut artifact = artifact.clone();
    if let Some(Value::Array(parts)) = artifact.get_mut("parts") {
        for part in parts.iter_mut() {
            *part = part_out(part);
        }
    }
    artifact
}

fn part_out(part: &Value) -> Value {
    let Some(object) = part.as_object() else {
        return part.clone();
    };
    let mut out = Map::new();
    if object.contains_key("url") || object.contains_key("raw") {
        let mut file = Map::new();
        if let Some(url) = object.get("url") {
            file.insert("fileWithUri".into(), url.clone());
        }
        if let Some(raw) = object.get("raw") {
            file.insert("fileWithBytes".into(), raw.clone());
        }
        if let Some(media) = object.get("mediaType") {
            file.insert("mimeType".into(), media.clone());
        }
        if let Some(name) = object.get("filename") {
            file.insert("name".into(), name.clone());
        }
        out.insert("file".into(), Value::Object(file));
    } else if let Some(data) = object.get("data") {
        let data = if data.is_object() {
            data.clone()
        } else {
            json!({"value": data})
        };
        out.insert("data".into(), json!({"data": data}));
    } else {
        return part.clone();
    }
    if let Some(metadata) = object.get("metadata") {
        out.insert("metadata".into(), metadata.clone());
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_0_3_rest_request_becomes_the_1_0_one() {
        let body = json!({"request": {"message_id": "m", "role": "ROLE_USER", "task_id": "t",
            "content": [{"text": "hi"}, {"file": {"file_with_uri": "https://x/y", "mime_type": "text/plain"}},
                {"data": {"data": {"a": 1}}}], "metadata": {"keep_me": 1}},
            "configuration": {"blocking": true, "history_length": 2}});
        assert_eq!(
            request_in(&body),
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "taskId": "t",
                "parts": [{"text": "hi"}, {"url": "https://x/y", "mediaType": "text/plain"}, {"data": {"a": 1}}],
                "metadata": {"keep_me": 1}},
                "configuration": {"blocking": true, "historyLength": 2}})
        );
    }

    #[test]
    fn push_configs_become_0_3_protobuf_json() {
        let config = json!({"id": "c", "taskId": "t", "url": "https://h/x", "token": "k",
            "authentication": {"scheme": "Bearer", "credentials": "s"}});
        let expected = json!({"name": "tasks/t/pushNotificationConfigs/c",
            "pushNotificationConfig": {"id": "c", "url": "https://h/x", "token": "k",
                "authentication": {"schemes": ["Bearer"], "credentials": "s"}}});
        assert_eq!(answer_out(&config), expected);
        assert_eq!(
            answer_out(&json!({"configs": [config], "nextPageToken": "n"})),
            json!({"configs": [expected], "nextPageToken": "n"})
        );
        assert_eq!(answer_out(&json!({})), json!({}));
    }

    #[test]
    fn a_1_0_answer_becomes_0_3_protobuf_json() {
        let task = json!({"id": "t", "status": {"state": "TASK_STATE_CANCELED",
            "message": {"role": "ROLE_AGENT", "parts": [{"text": "bye"}]}},
            "history": [{"role": "ROLE_USER", "parts": [{"raw": "aGk=", "filename": "a"}]}],
            "artifacts": [{"artifactId": "a", "parts": [{"data": 3}]}]});
        assert_eq!(
            answer_out(&json!({"task": task})),
            json!({"task": {"id": "t", "status": {"state": "TASK_STATE_CANCELLED",
                "message": {"role": "ROLE_AGENT", "content": [{"text": "bye"}]}},
                "history": [{"role": "ROLE_USER", "content": [{"file": {"fileWithBytes": "aGk=", "name": "a"}}]}],
                "artifacts": [{"artifactId": "a", "parts": [{"data": {"data": {"value": 3}}}]}]}})
        );
        let update = answer_out(
            &json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_WORKING"}}}),
        );
        assert_eq!(update["statusUpdate"]["final"], false);
        let update = answer_out(
            &json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_COMPLETED"}}}),
        );
        assert_eq!(update["statusUpdate"]["final"], true);
    }
}

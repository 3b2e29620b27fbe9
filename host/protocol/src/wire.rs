//! The two protocol versions on the wire, and the one stored form.
//!
//! **Stored form: A2A 0.3 JSON** (`"kind"` discriminators, states such as `input-required`,
//! roles `user`/`agent`, parts `{"kind":"text","text":…}`). It is what the Python and
//! JavaScript toolnexus packages write and what every store already holds, so Tasks saved
//! before this server spoke 1.0 read unchanged, and a Task is one document whichever version
//! the client spoke. Each answer is converted at the edge ([`task_out`], [`message_out`]) and
//! each incoming message is converted to the stored form ([`message_in`]). Both directions
//! accept either version's spelling of every field, so a store holding Tasks written in 1.0
//! form by another tool still answers both versions correctly.

use crate::error::{A2aError, ErrorKind};
use serde_json::{Map, Value, json};
use toolnexus_core::state::TaskState;

/// The protocol version of one request, from its `A2A-Version` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// A2A 0.3: no header, an empty one, or `0.3`.
    V0_3,
    /// A2A 1.0 (`1.0`, or `1` with any minor: the major decides, as the official SDK does).
    V1_0,
}

impl Version {
    /// The version a header value names; `None` (no header) and `""` are 0.3. Any other
    /// version is [`ErrorKind::VersionNotSupported`] (-32009), naming the ones spoken.
    pub fn from_header(value: Option<&str>) -> Result<Version, A2aError> {
        let value = value.map(str::trim).unwrap_or("");
        if value.is_empty() {
            return Ok(Version::V0_3);
        }
        let mut parts = value.split('.');
        let major = parts.next().unwrap_or("");
        let minor = parts.next().unwrap_or("0");
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let well_formed = digits(major) && digits(minor) && parts.all(digits);
        match (well_formed, major.trim_start_matches('0'), minor) {
            (true, "1", _) => Ok(Version::V1_0),
            (true, "", m) if m.trim_start_matches('0') == "3" => Ok(Version::V0_3),
            _ => Err(A2aError::new(
                ErrorKind::VersionNotSupported,
                format!(
                    "A2A version {:?} is not supported: this server speaks 1.0 and 0.3",
                    truncate(value, 32)
                ),
            )),
        }
    }

    /// As written on an agent card.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V0_3 => "0.3",
            Version::V1_0 => "1.0",
        }
    }
}

/// At most `max` characters of `s`, for echoing client input in an error.
pub fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

/// A state in the spelling of `version` (unknown states are passed through as they are).
pub fn state_out(state: &str, version: Version) -> String {
    match (TaskState::parse(state), version) {
        (Some(s), Version::V1_0) => s.v1_name().to_owned(),
        (Some(s), Version::V0_3) => s.v03_name().to_owned(),
        (None, _) => state.to_owned(),
    }
}

/// A stored Task as `version` shows it.
pub fn task_out(task: &Value, version: Version) -> Value {
    let Some(object) = task.as_object() else {
        return task.clone();
    };
    let mut out = Map::with_capacity(object.len() + 1);
    for (key, value) in object {
        let value = match key.as_str() {
            "kind" if version == Version::V1_0 => continue,
            "status" => status_out(value, version),
            "history" => map_array(value, |m| message_out(m, version)),
            "artifacts" => map_array(value, |a| artifact_out(a, version)),
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    if version == Version::V0_3 {
        out.entry("kind").or_insert_with(|| json!("task"));
    }
    Value::Object(out)
}

/// A Task status as `version` shows it.
pub fn status_out(status: &Value, version: Version) -> Value {
    let Some(object) = status.as_object() else {
        return status.clone();
    };
    let mut out = object.clone();
    if let Some(state) = object.get("state").and_then(Value::as_str) {
        out.insert("state".into(), json!(state_out(state, version)));
    }
    if let Some(message) = object.get("message") {
        out.insert("message".into(), message_out(message, version));
    }
    Value::Object(out)
}

/// A message as `version` shows it.
pub fn message_out(message: &Value, version: Version) -> Value {
    let Some(object) = message.as_object() else {
        return message.clone();
    };
    let mut out = Map::with_capacity(object.len() + 1);
    for (key, value) in object {
        let value = match key.as_str() {
            "kind" if version == Version::V1_0 => continue,
            "role" => json!(role_out(value.as_str().unwrap_or(""), version)),
            "parts" => map_array(value, |p| part_out(p, version)),
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    if version == Version::V0_3 {
        out.entry("kind").or_insert_with(|| json!("message"));
    }
    Value::Object(out)
}

/// An artifact as `version` shows it.
pub fn artifact_out(artifact: &Value, version: Version) -> Value {
    let Some(object) = artifact.as_object() else {
        return artifact.clone();
    };
    let mut out = object.clone();
    if let Some(parts) = object.get("parts") {
        out.insert("parts".into(), map_array(parts, |p| part_out(p, version)));
    }
    Value::Object(out)
}

fn role_out(role: &str, version: Version) -> String {
    let stored = role_in(role);
    match (stored, version) {
        (Some("user"), Version::V1_0) => "ROLE_USER".into(),
        (Some("agent"), Version::V1_0) => "ROLE_AGENT".into(),
        (Some(r), Version::V0_3) => r.into(),
        _ => role.into(),
    }
}

/// The stored spelling of a role in either version's spelling.
fn role_in(role: &str) -> Option<&'static str> {
    match role {
        "user" | "ROLE_USER" => Some("user"),
        "agent" | "ROLE_AGENT" => Some("agent"),
        _ => None,
    }
}

/// A part as `version` shows it: 1.0 parts have no `kind` and carry one of `text`, `raw`,
/// `url`, `data`; 0.3 parts are `{"kind":"text"|"file"|"data",…}`.
pub fn part_out(part: &Value, version: Version) -> Value {
    match version {
        Version::V0_3 => part_to_v03(part).unwrap_or_else(|| part.clone()),
        Version::V1_0 => part_to_v10(part).unwrap_or_else(|| part.clone()),
    }
}

fn part_to_v10(part: &Value) -> Option<Value> {
    let object = part.as_object()?;
    let mut out = Map::new();
    match object.get("kind").and_then(Value::as_str) {
        None => return Some(part.clone()),
        Some("text") => {
            out.insert("text".into(), object.get("text")?.clone());
        }
        Some("file") => {
            let file = object.get("file")?.as_object()?;
            if let Some(bytes) = file.get("bytes") {
                out.insert("raw".into(), bytes.clone());
            } else {
                out.insert("url".into(), file.get("uri")?.clone());
            }
            if let Some(mime) = file.get("mimeType") {
                out.insert("mediaType".into(), mime.clone());
            }
            if let Some(name) = file.get("name") {
                out.insert("filename".into(), name.clone());
            }
        }
        Some("data") => {
            let data = object.get("data")?;
            let wrapped = object
                .get("metadata")
                .and_then(|m| m.get("data_part_compat"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let value = if wrapped { data.get("value")? } else { data };
            out.insert("data".into(), value.clone());
        }
        Some(_) => return None,
    }
    if let Some(Value::Object(metadata)) = object.get("metadata") {
        let mut metadata = metadata.clone();
        metadata.remove("data_part_compat");
        if !metadata.is_empty() {
            out.insert("metadata".into(), Value::Object(metadata));
        }
    }
    Some(Value::Object(out))
}

fn part_to_v03(part: &Value) -> Option<Value> {
    let object = part.as_object()?;
    if object.contains_key("kind") {
        return Some(part.clone());
    }
    let mut out = Map::new();
    let mut metadata = object
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(text) = object.get("text") {
        out.insert("kind".into(), json!("text"));
        out.insert("text".into(), text.clone());
    } else if object.contains_key("raw") || object.contains_key("url") {
        let mut file = Map::new();
        if let Some(raw) = object.get("raw") {
            file.insert("bytes".into(), raw.clone());
        } else if let Some(url) = object.get("url") {
            file.insert("uri".into(), url.clone());
        }
        if let Some(media) = object.get("mediaType") {
            file.insert("mimeType".into(), media.clone());
        }
        if let Some(name) = object.get("filename") {
            file.insert("name".into(), name.clone());
        }
        out.insert("kind".into(), json!("file"));
        out.insert("file".into(), Value::Object(file));
    } else if let Some(data) = object.get("data") {
        out.insert("kind".into(), json!("data"));
        if data.is_object() {
            out.insert("data".into(), data.clone());
        } else {
            out.insert("data".into(), json!({"value": data}));
            metadata.insert("data_part_compat".into(), json!(true));
        }
    } else {
        return None;
    }
    if !metadata.is_empty() {
        out.insert("metadata".into(), Value::Object(metadata));
    }
    Some(Value::Object(out))
}

/// An incoming message (either version's form) in the stored form, checked: an object with
/// a known `role`, a `messageId` (required in both versions) and a non-empty array of parts,
/// each of a known kind.
pub fn message_in(message: Option<&Value>, field: &str) -> Result<Value, A2aError> {
    let object = message
        .and_then(Value::as_object)
        .ok_or_else(|| A2aError::invalid(format!("{field} must be an object")))?;
    let role = object
        .get("role")
        .and_then(Value::as_str)
        .ok_or_else(|| A2aError::invalid(format!("{field}.role must be a string")))?;
    let role = role_in(role).ok_or_else(|| {
        A2aError::invalid(format!(
            "{field}.role must be ROLE_USER or ROLE_AGENT (user or agent in 0.3), not {:?}",
            truncate(role, 32)
        ))
    })?;
    let parts = object
        .get("parts")
        .and_then(Value::as_array)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| A2aError::invalid(format!("{field}.parts must be a non-empty array")))?;
    let mut stored_parts = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        stored_parts.push(part_in(part, &format!("{field}.parts[{i}]"))?);
    }
    // Only the fields a message has (1.0's, and 0.3's `kind`): anything else a client adds is
    // dropped, not stored and echoed back in every later answer.
    let mut out: Map<String, Value> = object
        .iter()
        .filter(|(key, _)| MESSAGE_FIELDS.contains(&key.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    out.insert("role".into(), json!(role));
    out.insert("parts".into(), Value::Array(stored_parts));
    out.insert("kind".into(), json!("message"));
    match object.get("messageId") {
        Some(Value::String(id)) if !id.is_empty() => {}
        _ => {
            return Err(A2aError::invalid(format!(
                "{field}.messageId must be a non-empty string"
            )));
        }
    }
    for key in ["taskId", "contextId"] {
        match object.get(key) {
            None | Some(Value::Null) => {
                out.remove(key);
            }
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(Value::String(_)) => {
                out.remove(key);
            }
            Some(_) => return Err(A2aError::invalid(format!("{field}.{key} must be a string"))),
        }
    }
    Ok(Value::Object(out))
}

/// The fields of a message (A2A 1.0, and 0.3's `kind`).
const MESSAGE_FIELDS: [&str; 9] = [
    "messageId",
    "contextId",
    "taskId",
    "role",
    "parts",
    "metadata",
    "extensions",
    "referenceTaskIds",
    "kind",
];

/// `part` with only the members of its kind (0.3 form).
fn only(part: &Value, keys: &[&str]) -> Value {
    Value::Object(
        part.as_object()
            .into_iter()
            .flatten()
            .filter(|(key, _)| keys.contains(&key.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// Object keys in `snake_case` (protobuf field names, which ProtoJSON parsers accept beside
/// the JSON names) as `camelCase`, except inside `metadata` and `data`, which are the caller's
/// own JSON.
pub fn camel_keys(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if k == "metadata" || k == "data" {
                        v.clone()
                    } else {
                        camel_keys(v)
                    };
                    (camel(k), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(camel_keys).collect()),
        other => other.clone(),
    }
}

/// `snake_case` → `camelCase` (other names unchanged).
pub fn camel(key: &str) -> String {
    if !key.contains('_') {
        return key.to_owned();
    }
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn part_in(part: &Value, field: &str) -> Result<Value, A2aError> {
    let object = part
        .as_object()
        .ok_or_else(|| A2aError::invalid(format!("{field} must be an object")))?;
    let bad = |what: &str| A2aError::invalid(format!("{field}: {what}"));
    match object.get("kind").and_then(Value::as_str) {
        Some("text") => {
            if !object.get("text").is_some_and(Value::is_string) {
                return Err(bad("a text part needs a string \"text\""));
            }
            Ok(only(part, &["kind", "text", "metadata"]))
        }
        Some("file") => {
            let file = object.get("file").and_then(Value::as_object);
            let ok = file.is_some_and(|f| {
                f.get("bytes").is_some_and(Value::is_string)
                    || f.get("uri").is_some_and(Value::is_string)
            });
            if !ok {
                return Err(bad("a file part needs \"file\" with \"bytes\" or \"uri\""));
            }
            let mut kept = only(part, &["kind", "file", "metadata"]);
            kept["file"] = only(&kept["file"], &["bytes", "uri", "mimeType", "name"]);
            Ok(kept)
        }
        Some("data") => {
            if !object.get("data").is_some_and(Value::is_object) {
                return Err(bad("a data part needs an object \"data\""));
            }
            Ok(only(part, &["kind", "data", "metadata"]))
        }
        Some(other) => Err(bad(&format!(
            "unknown part kind {:?} (text, file or data)",
            truncate(other, 32)
        ))),
        None => {
            let present: Vec<&str> = ["text", "raw", "url", "data"]
                .into_iter()
                .filter(|k| object.get(*k).is_some_and(|v| !v.is_null()))
                .collect();
            if present.len() != 1 {
                return Err(bad(
                    "a part carries exactly one of \"text\", \"raw\", \"url\", \"data\"",
                ));
            }
            let typed = match present[0] {
                "text" | "raw" | "url" => object[present[0]].is_string(),
                _ => true,
            };
            if !typed {
                return Err(bad(&format!("\"{}\" must be a string", present[0])));
            }
            part_to_v03(part).ok_or_else(|| bad("not a part"))
        }
    }
}

fn map_array(value: &Value, f: impl Fn(&Value) -> Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(f).collect()),
        other => other.clone(),
    }
}

/// The text parts of a stored message (or a 1.0 one), joined by newlines.
pub fn message_text(message: &Value) -> String {
    message["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_the_header() {
        assert_eq!(Version::from_header(None).unwrap(), Version::V0_3);
        assert_eq!(Version::from_header(Some("")).unwrap(), Version::V0_3);
        assert_eq!(Version::from_header(Some("0.3")).unwrap(), Version::V0_3);
        assert_eq!(Version::from_header(Some("0.3.0")).unwrap(), Version::V0_3);
        assert_eq!(Version::from_header(Some("1.0")).unwrap(), Version::V1_0);
        assert_eq!(Version::from_header(Some("1")).unwrap(), Version::V1_0);
        assert_eq!(Version::from_header(Some("1.2")).unwrap(), Version::V1_0);
        for bad in ["2.0", "0.2", "abc", "1.x", "-1", "0.4"] {
            let err = Version::from_header(Some(bad)).unwrap_err();
            assert_eq!(err.code(), -32009, "{bad}");
        }
    }

    #[test]
    fn a_stored_task_in_both_versions() {
        let stored = json!({
            "id": "t", "contextId": "c", "kind": "task",
            "status": {"state": "input-required", "timestamp": "2026-01-01T00:00:00Z",
                "message": {"kind": "message", "role": "agent", "messageId": "m1",
                    "parts": [{"kind": "text", "text": "more?"}]}},
            "history": [{"kind": "message", "role": "user", "messageId": "m0", "parts": [
                {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain", "name": "a.txt"}},
                {"kind": "data", "data": {"value": 3}, "metadata": {"data_part_compat": true}},
                {"kind": "data", "data": {"a": 1}}]}],
            "artifacts": [{"artifactId": "a", "parts": [{"kind": "file", "file": {"uri": "https://x/y"}}]}],
        });
        let v1 = task_out(&stored, Version::V1_0);
        assert_eq!(
            v1,
            json!({
                "id": "t", "contextId": "c",
                "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2026-01-01T00:00:00Z",
                    "message": {"role": "ROLE_AGENT", "messageId": "m1", "parts": [{"text": "more?"}]}},
                "history": [{"role": "ROLE_USER", "messageId": "m0", "parts": [
                    {"raw": "aGk=", "mediaType": "text/plain", "filename": "a.txt"},
                    {"data": 3},
                    {"data": {"a": 1}}]}],
                "artifacts": [{"artifactId": "a", "parts": [{"url": "https://x/y"}]}],
            })
        );
        // Stored 0.3 comes back as it was; a 1.0-form Task converts to the same 0.3 form.
        assert_eq!(task_out(&stored, Version::V0_3), stored);
        assert_eq!(task_out(&v1, Version::V0_3), stored);
    }

    #[test]
    fn incoming_messages_are_stored_in_one_form() {
        let v1 = json!({"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "hi"}, {"data": [1]}]});
        let stored = message_in(Some(&v1), "message").unwrap();
        assert_eq!(
            stored,
            json!({"role": "user", "messageId": "m", "kind": "message", "parts": [
                {"kind": "text", "text": "hi"},
                {"kind": "data", "data": {"value": [1]}, "metadata": {"data_part_compat": true}}]})
        );
        // Unknown fields are dropped, not stored.
        let extra = json!({"role": "ROLE_USER", "messageId": "m", "tckUnknownField": "x",
            "parts": [{"kind": "text", "text": "hi", "junk": 1}]});
        let stored = message_in(Some(&extra), "message").unwrap();
        assert_eq!(
            stored,
            json!({"role": "user", "messageId": "m", "kind": "message",
                "parts": [{"kind": "text", "text": "hi"}]})
        );
        // Refused, each with the field named.
        for (bad, field) in [
            (
                json!({"role": "ROLE_USER", "parts": [{"text": "x"}]}),
                "messageId",
            ),
            // Required in 0.3 too.
            (
                json!({"role": "user", "parts": [{"kind": "text", "text": "x"}]}),
                "messageId",
            ),
            (
                json!({"role": "user", "messageId": "", "parts": [{"kind": "text", "text": "x"}]}),
                "messageId",
            ),
            (
                json!({"role": "boss", "messageId": "m", "parts": [{"text": "x"}]}),
                "role",
            ),
            (
                json!({"role": "user", "messageId": "m", "parts": []}),
                "parts",
            ),
            (
                json!({"role": "user", "messageId": "m", "parts": [{"text": "x", "url": "y"}]}),
                "parts[0]",
            ),
            (
                json!({"role": "user", "messageId": "m", "parts": [{"kind": "video"}]}),
                "parts[0]",
            ),
            (
                json!({"role": "user", "messageId": "m", "parts": [{"text": 3}]}),
                "parts[0]",
            ),
            (
                json!({"role": "user", "messageId": "m", "taskId": 5, "parts": [{"text": "x"}]}),
                "taskId",
            ),
        ] {
            let err = message_in(Some(&bad), "message").unwrap_err();
            assert_eq!(err.code(), -32602, "{bad}");
            assert!(err.message.contains(field), "{} lacks {field}", err.message);
        }
    }
}

//! What counts as a Task: a JSON object whose `id` member is a non-empty string.
//!
//! Everything else about a Task is opaque to a store: shapes of every A2A protocol version must
//! round-trip unchanged.

use serde_json::{Map, Value};
use std::fmt;

/// Why a document is not a Task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskError {
    /// The text is not JSON at all; carries the parser's message (with line and column).
    NotJson(String),
    /// Valid JSON, but not an object; carries the JSON type found (`array`, `string`, …).
    NotObject(&'static str),
    /// An object with no `id` member.
    MissingId,
    /// An `id` that is not a string; carries the JSON type found.
    IdNotString(&'static str),
    /// An `id` that is the empty string.
    EmptyId,
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::NotJson(e) => write!(f, "task is not valid JSON: {e}"),
            TaskError::NotObject(kind) => write!(f, "task must be a JSON object, found {kind}"),
            TaskError::MissingId => f.write_str("task has no \"id\" member"),
            TaskError::IdNotString(kind) => write!(f, "task \"id\" must be a string, found {kind}"),
            TaskError::EmptyId => f.write_str("task \"id\" is an empty string"),
        }
    }
}

impl std::error::Error for TaskError {}

/// The JSON type name of a value, for error messages.
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The id of a Task object, checked.
pub fn task_id(task: &Map<String, Value>) -> Result<&str, TaskError> {
    match task.get("id") {
        None => Err(TaskError::MissingId),
        Some(Value::String(id)) if id.is_empty() => Err(TaskError::EmptyId),
        Some(Value::String(id)) => Ok(id),
        Some(other) => Err(TaskError::IdNotString(json_kind(other))),
    }
}

/// Checks a parsed JSON value is a Task and hands back its object.
pub fn into_task(value: Value) -> Result<Map<String, Value>, TaskError> {
    match value {
        Value::Object(map) => {
            task_id(&map)?;
            Ok(map)
        }
        other => Err(TaskError::NotObject(json_kind(&other))),
    }
}

/// Parses JSON text as a Task.
pub fn parse_task(text: &str) -> Result<Map<String, Value>, TaskError> {
    let value: Value = serde_json::from_str(text).map_err(|e| TaskError::NotJson(e.to_string()))?;
    into_task(value)
}

/// Checks JSON text is a Task and returns its id, without building the document in memory.
///
/// It still reads every byte (so trailing garbage or a truncated file is caught) but skips
/// everything except `id`; used where the text is passed on rather than inspected.
pub fn check_task_text(text: &str) -> Result<String, TaskError> {
    if !text.trim_start().starts_with('{') {
        // Not an object (or not JSON): rare, so let the full parser classify it.
        return match serde_json::from_str::<Value>(text) {
            Err(e) => Err(TaskError::NotJson(e.to_string())),
            Ok(other) => Err(TaskError::NotObject(json_kind(&other))),
        };
    }
    let Header(id) = serde_json::from_str(text).map_err(|e| TaskError::NotJson(e.to_string()))?;
    match id {
        None => Err(TaskError::MissingId),
        Some(Value::String(id)) if id.is_empty() => Err(TaskError::EmptyId),
        Some(Value::String(id)) => Ok(id),
        Some(other) => Err(TaskError::IdNotString(json_kind(&other))),
    }
}

/// A JSON object seen only as far as a store needs: its `id` member, if any.
struct Header(Option<Value>);

impl<'de> serde::Deserialize<'de> for Header {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(HeaderVisitor)
    }
}

struct HeaderVisitor;

impl<'de> serde::de::Visitor<'de> for HeaderVisitor {
    type Value = Header;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Header, A::Error> {
        let mut id = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "id" {
                // The last duplicate wins, as it does for a full parse.
                id = Some(map.next_value::<Value>()?);
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(Header(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CASES: &[(&str, Result<&str, TaskError>)] = &[
        (r#"{"id":"t-1","status":{"state":"submitted"}}"#, Ok("t-1")),
        (r#"{"status":{},"id":"late"}"#, Ok("late")),
        (r#"{"id":"a","id":"b"}"#, Ok("b")),
        ("not json", Err(TaskError::NotJson(String::new()))),
        (
            r#"{"id":"t"} trailing"#,
            Err(TaskError::NotJson(String::new())),
        ),
        (r#"{"id":"t""#, Err(TaskError::NotJson(String::new()))),
        ("[1,2]", Err(TaskError::NotObject("array"))),
        ("\"s\"", Err(TaskError::NotObject("string"))),
        (
            "12345678901234567890123",
            Err(TaskError::NotObject("number")),
        ),
        ("-0.0", Err(TaskError::NotObject("number"))),
        ("null", Err(TaskError::NotObject("null"))),
        ("true", Err(TaskError::NotObject("boolean"))),
        ("{}", Err(TaskError::MissingId)),
        (r#"{"id":7}"#, Err(TaskError::IdNotString("number"))),
        (r#"{"id":null}"#, Err(TaskError::IdNotString("null"))),
        (r#"{"id":["x"]}"#, Err(TaskError::IdNotString("array"))),
        (r#"{"id":""}"#, Err(TaskError::EmptyId)),
    ];

    fn same(got: Result<String, TaskError>, want: &Result<&str, TaskError>) -> bool {
        match (got, want) {
            (Ok(a), Ok(b)) => a == *b,
            (Err(TaskError::NotJson(_)), Err(TaskError::NotJson(_))) => true,
            (Err(a), Err(b)) => a == *b,
            _ => false,
        }
    }

    #[test]
    fn full_parse_classifies_documents() {
        for (text, want) in CASES {
            let got = parse_task(text).map(|m| task_id(&m).unwrap().to_owned());
            assert!(
                same(got.clone(), want),
                "{text}: got {got:?}, want {want:?}"
            );
        }
    }

    #[test]
    fn header_check_agrees_with_full_parse() {
        for (text, want) in CASES {
            let got = check_task_text(text);
            assert!(
                same(got.clone(), want),
                "{text}: got {got:?}, want {want:?}"
            );
        }
    }

    #[test]
    fn errors_name_the_problem() {
        assert_eq!(
            TaskError::IdNotString("number").to_string(),
            "task \"id\" must be a string, found number"
        );
        let err = parse_task("{oops").unwrap_err().to_string();
        assert!(
            err.starts_with("task is not valid JSON: ") && err.contains("line 1"),
            "{err}"
        );
    }
}

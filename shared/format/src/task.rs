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
/// It reads and validates every byte exactly as [`parse_task`] would (syntax, trailing garbage,
/// string escapes including lone surrogates, the parser's nesting limit), so any text it
/// accepts parses later without fail; it only skips building the members other than `id`.
/// Used where the text comes from outside (a file, a component, another language's writer)
/// and is passed on rather than inspected.
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

/// Checks JSON text is a Task, like [`check_task_text`], and returns its id with the members a
/// listing filters and sorts on (`id`, `contextId`, `status`), without building the rest.
pub fn check_list_head(text: &str) -> Result<(String, Map<String, Value>), TaskError> {
    if !text.trim_start().starts_with('{') {
        return check_task_text(text).map(|id| (id, Map::new()));
    }
    let ListHead(head) =
        serde_json::from_str(text).map_err(|e| TaskError::NotJson(e.to_string()))?;
    let id = task_id(&head)?.to_owned();
    Ok((id, head))
}

/// The members of a Task a listing looks at; the others are checked and dropped.
struct ListHead(Map<String, Value>);

impl<'de> serde::Deserialize<'de> for ListHead {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ListHeadVisitor)
    }
}

struct ListHeadVisitor;

impl<'de> serde::de::Visitor<'de> for ListHeadVisitor {
    type Value = ListHead;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<ListHead, A::Error> {
        let mut head = Map::new();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if matches!(&*key, "id" | "contextId" | "status") {
                // The last duplicate wins, as it does for a full parse.
                head.insert(key.into_owned(), map.next_value::<Value>()?);
            } else {
                map.next_value::<Checked>()?;
            }
        }
        Ok(ListHead(head))
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
                map.next_value::<Checked>()?;
            }
        }
        Ok(Header(id))
    }
}

/// Any JSON value, read through the full parser and thrown away. Unlike `IgnoredAny`, which
/// skips a string without decoding it, this asks for every string, so a malformed escape or a
/// lone surrogate fails here as it would in a full parse; nesting counts against the parser's
/// depth limit the same way. Unescaped strings are borrowed, so nothing is allocated for them.
struct Checked;

impl<'de> serde::Deserialize<'de> for Checked {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> serde::de::Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_key::<Checked>()?.is_some() {
            map.next_value::<Checked>()?;
        }
        Ok(Checked)
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
        // What JavaScript and Python write happily, and a full parse refuses.
        (
            r#"{"id":"x","a":"\ud800"}"#,
            Err(TaskError::NotJson(String::new())),
        ),
        (
            r#"{"id":"x","a":{"b":["\udc00z"]}}"#,
            Err(TaskError::NotJson(String::new())),
        ),
        (
            r#"{"id":"x","\ud800":1}"#,
            Err(TaskError::NotJson(String::new())),
        ),
        (
            r#"{"id":"x","a":"\q"}"#,
            Err(TaskError::NotJson(String::new())),
        ),
        (r#"{"id":"x","a":"\ud83d\ude00"}"#, Ok("x")),
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
    fn nesting_past_the_parser_limit_is_refused_by_both() {
        for depth in [100, 127, 128, 129, 10_000] {
            let text = format!(
                r#"{{"id":"deep","a":{}{}}}"#,
                "[".repeat(depth),
                "]".repeat(depth)
            );
            let full = parse_task(&text).map(|m| task_id(&m).unwrap().to_owned());
            let checked = check_task_text(&text);
            assert_eq!(full.is_ok(), checked.is_ok(), "depth {depth}");
        }
        let deep = format!(
            r#"{{"id":"deep","a":{}{}}}"#,
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        assert!(matches!(check_task_text(&deep), Err(TaskError::NotJson(_))));
    }

    proptest::proptest! {
        /// Whatever the text, the check accepts exactly what the full parse accepts: a Task it
        /// lets through can always be parsed later.
        #[test]
        fn check_accepts_exactly_what_parses(
            prefix in r#"\{"id":"[a-z]{1,3}","#,
            body in r#"[\[\]{}":,a-z0-9\\u.eE+-]{0,40}"#,
        ) {
            let text = format!("{prefix}\"k\":{body}}}");
            let full = parse_task(&text).map(|m| task_id(&m).unwrap().to_owned());
            let checked = check_task_text(&text);
            proptest::prop_assert_eq!(full.is_ok(), checked.is_ok(), "{}", text);
            if let (Ok(a), Ok(b)) = (full, checked) {
                proptest::prop_assert_eq!(a, b);
            }
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

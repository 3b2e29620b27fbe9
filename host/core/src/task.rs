//! [`Task`]: a JSON object with a non-empty string `id`, checked once at the edge.

use crate::error::StoreError;
use serde_json::{Map, Value};
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};
use toolnexus_format::task as format;

/// An A2A Task document. Apart from its `id`, it is opaque: every member comes back from a
/// store exactly as it was saved.
///
/// A `Task` can only be built from a JSON object whose `id` is a non-empty string, so a store
/// never sees anything else:
///
/// ```
/// use toolnexus_core::Task;
/// let task: Task = r#"{"id": "task-1", "status": {"state": "submitted"}}"#.parse()?;
/// assert_eq!(task.id(), "task-1");
/// assert!("[1, 2]".parse::<Task>().is_err());
/// # Ok::<(), toolnexus_core::StoreError>(())
/// ```
///
/// A `Task` is immutable and cheap to clone (the document is shared). It holds its document as
/// a parsed map, as compact JSON text, or both, each made from the other on first use: a Task
/// read from a store is only parsed if its members are looked at, and a Task saved by a store
/// is serialized once.
#[derive(Clone)]
pub struct Task(Arc<Inner>);

struct Inner {
    id: Box<str>,
    map: OnceLock<Map<String, Value>>,
    text: OnceLock<String>,
}

impl Task {
    /// Parses JSON text as a Task.
    pub fn from_json(text: &str) -> Result<Self, StoreError> {
        Ok(Self::from_map(format::parse_task(text)?))
    }

    fn from_map(map: Map<String, Value>) -> Self {
        let id = format::task_id(&map).expect("checked by the caller").into();
        Task(Arc::new(Inner {
            id,
            map: OnceLock::from(map),
            text: OnceLock::new(),
        }))
    }

    /// JSON text checked in full (syntax, an object, a non-empty string `id`) without building
    /// the document: it is parsed only if its members are looked at, and a store that writes
    /// it back writes these bytes. For text that comes from storage or another process.
    ///
    /// ```
    /// use toolnexus_core::Task;
    /// let task = Task::from_json_text(r#"{"id":"t1","n":1}"#.to_owned())?;
    /// assert_eq!((task.id(), task.as_json()), ("t1", r#"{"id":"t1","n":1}"#));
    /// assert!(Task::from_json_text(r#"{"id":"t1""#.to_owned()).is_err());
    /// # Ok::<(), toolnexus_core::StoreError>(())
    /// ```
    pub fn from_json_text(text: String) -> Result<Self, StoreError> {
        let id = format::check_task_text(&text)?;
        Ok(Self::from_checked_text(id, text))
    }

    /// Text a store already checked (with [`format::check_task_text`]) to be a Task with this id.
    pub(crate) fn from_checked_text(id: String, text: String) -> Self {
        debug_assert_eq!(format::check_task_text(&text).as_deref(), Ok(id.as_str()));
        Task(Arc::new(Inner {
            id: id.into(),
            map: OnceLock::new(),
            text: OnceLock::from(text),
        }))
    }

    /// The Task's id.
    pub fn id(&self) -> &str {
        &self.0.id
    }

    /// A member of the Task, such as `status`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_map().get(key)
    }

    /// The whole document.
    pub fn as_map(&self) -> &Map<String, Value> {
        self.0.map.get_or_init(|| {
            let text = self.0.text.get().expect("a Task has its map or its text");
            // The text was checked to be a JSON object when the Task was made.
            format::parse_task(text).expect("checked Task text parses")
        })
    }

    /// The whole document, owned.
    pub fn into_value(self) -> Value {
        match Arc::try_unwrap(self.0) {
            Ok(inner) if inner.map.get().is_some() => {
                Value::Object(inner.map.into_inner().expect("just checked"))
            }
            Ok(inner) => Task(Arc::new(inner)).as_map().clone().into(),
            Err(shared) => Value::Object(Task(shared).as_map().clone()),
        }
    }

    /// The document as compact JSON text: what stores write and components receive.
    pub fn as_json(&self) -> &str {
        self.0.text.get_or_init(|| {
            let map = self.0.map.get().expect("a Task has its map or its text");
            serde_json::to_string(map).expect("a JSON map always serializes")
        })
    }

    /// [`as_json`](Self::as_json), owned.
    pub fn to_json(&self) -> String {
        self.as_json().to_owned()
    }
}

/// Equal as JSON: the same members with the same values, whatever the formatting.
impl PartialEq for Task {
    fn eq(&self, other: &Task) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.id() == other.id() && self.as_map() == other.as_map())
    }
}

impl TryFrom<Value> for Task {
    type Error = StoreError;
    fn try_from(value: Value) -> Result<Self, StoreError> {
        Ok(Task::from_map(format::into_task(value)?))
    }
}

impl TryFrom<Map<String, Value>> for Task {
    type Error = StoreError;
    fn try_from(map: Map<String, Value>) -> Result<Self, StoreError> {
        format::task_id(&map)?;
        Ok(Task::from_map(map))
    }
}

impl FromStr for Task {
    type Err = StoreError;
    fn from_str(text: &str) -> Result<Self, StoreError> {
        Task::from_json(text)
    }
}

impl From<Task> for Value {
    fn from(task: Task) -> Value {
        task.into_value()
    }
}

impl PartialEq<Value> for Task {
    fn eq(&self, other: &Value) -> bool {
        matches!(other, Value::Object(map) if map == self.as_map())
    }
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Task({})", self.as_json())
    }
}

impl fmt::Display for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_json())
    }
}

impl serde::Serialize for Task {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.as_map().serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for Task {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Task::try_from(value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_objects_with_a_string_id() {
        let task = Task::try_from(json!({"id": "t", "status": {"state": "submitted"}})).unwrap();
        assert_eq!(task.id(), "t");
        assert_eq!(task, json!({"id": "t", "status": {"state": "submitted"}}));
    }

    #[test]
    fn refuses_everything_else_with_a_named_reason() {
        let cases = [
            ("not json", "invalid task: task is not valid JSON"),
            (
                "[]",
                "invalid task: task must be a JSON object, found array",
            ),
            ("{}", "invalid task: task has no \"id\" member"),
            (
                r#"{"id": 3}"#,
                "invalid task: task \"id\" must be a string, found number",
            ),
            (
                r#"{"id": ""}"#,
                "invalid task: task \"id\" is an empty string",
            ),
        ];
        for (text, want) in cases {
            let err = text.parse::<Task>().unwrap_err();
            assert!(matches!(err, StoreError::InvalidTask(_)));
            assert!(err.to_string().starts_with(want), "{text}: {err}");
        }
    }

    #[test]
    fn text_and_map_forms_agree() {
        let text = r#"{"id": "t", "n": 123456789012345678901234567890, "s": [1]}"#;
        let from_text = Task::from_checked_text("t".into(), text.into());
        let from_map = Task::from_json(text).unwrap();
        assert_eq!(from_text, from_map);
        assert_eq!(from_text.get("s"), Some(&json!([1])));
        assert_eq!(
            from_map.as_json(),
            r#"{"id":"t","n":123456789012345678901234567890,"s":[1]}"#
        );
        assert_eq!(from_text.clone().into_value(), from_map.into_value());
    }

    #[test]
    fn deserialize_checks_too() {
        assert!(serde_json::from_str::<Task>(r#"{"id": "a"}"#).is_ok());
        assert!(serde_json::from_str::<Task>(r#"{"id": null}"#).is_err());
    }
}

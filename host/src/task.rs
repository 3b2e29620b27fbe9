//! [`Task`]: a JSON object with a non-empty string `id`, checked once at the edge.

use crate::error::StoreError;
use serde_json::{Map, Value};
use std::fmt;
use std::str::FromStr;
use toolnexus_format::task as format;

/// An A2A Task document. Apart from its `id`, it is opaque: every member comes back from a
/// store exactly as it was saved.
///
/// A `Task` can only be built from a JSON object whose `id` is a non-empty string, so a store
/// never sees anything else:
///
/// ```
/// use toolnexus::Task;
/// let task: Task = r#"{"id": "task-1", "status": {"state": "submitted"}}"#.parse()?;
/// assert_eq!(task.id(), "task-1");
/// assert!("[1, 2]".parse::<Task>().is_err());
/// # Ok::<(), toolnexus::StoreError>(())
/// ```
#[derive(Clone, PartialEq)]
pub struct Task(Map<String, Value>);

impl Task {
    /// Parses JSON text as a Task.
    pub fn from_json(text: &str) -> Result<Self, StoreError> {
        Ok(Task(format::parse_task(text)?))
    }

    /// A map [`DirStore`](toolnexus_format::DirStore) already checked.
    pub(crate) fn from_checked(map: Map<String, Value>) -> Self {
        debug_assert!(format::task_id(&map).is_ok());
        Task(map)
    }

    /// The Task's id.
    pub fn id(&self) -> &str {
        match self.0.get("id") {
            Some(Value::String(id)) => id,
            _ => unreachable!("a Task always has a string id"),
        }
    }

    /// A member of the Task, such as `status`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// The whole document.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    /// The whole document, owned.
    pub fn into_value(self) -> Value {
        Value::Object(self.0)
    }

    /// Compact JSON text, the form stores write.
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.0).expect("a JSON map always serializes")
    }
}

impl TryFrom<Value> for Task {
    type Error = StoreError;
    fn try_from(value: Value) -> Result<Self, StoreError> {
        Ok(Task(format::into_task(value)?))
    }
}

impl TryFrom<Map<String, Value>> for Task {
    type Error = StoreError;
    fn try_from(map: Map<String, Value>) -> Result<Self, StoreError> {
        format::task_id(&map)?;
        Ok(Task(map))
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
        matches!(other, Value::Object(map) if *map == self.0)
    }
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Task({})", self.to_json())
    }
}

impl fmt::Display for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

impl serde::Serialize for Task {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
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
    fn deserialize_checks_too() {
        assert!(serde_json::from_str::<Task>(r#"{"id": "a"}"#).is_ok());
        assert!(serde_json::from_str::<Task>(r#"{"id": null}"#).is_err());
    }
}

//! What counts as a push-notification config: a JSON object whose `id` member is a non-empty
//! string, at most [`MAX_PUSH_CONFIG_BYTES`] of JSON text.
//!
//! The rule lives here, once, so the native stores (through `toolnexus-core`'s `PushConfig`),
//! the file-store component and the directory format all check the same thing. Like a Task,
//! everything else in a config is opaque to a store.

use crate::task::{self, TaskError};
use serde_json::{Map, Value};
use std::fmt;

/// The longest push config, in bytes of JSON text. A config file over it is corrupt.
pub const MAX_PUSH_CONFIG_BYTES: usize = 64 * 1024;

/// The directory, in a store's root, that holds the push configs: `<root>/.push/<task stem>/`
/// (`docs/on-disk-format.md`, "Push-notification configs"). Hidden, so it is never a Task file
/// and never a namespace directory (a namespace segment never starts with `.`).
pub const PUSH_DIR: &str = ".push";

/// Why a document is not a push config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushConfigError {
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
    /// More than [`MAX_PUSH_CONFIG_BYTES`] of JSON text; carries its length.
    TooLarge(usize),
}

impl fmt::Display for PushConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushConfigError::NotJson(e) => write!(f, "push config is not valid JSON: {e}"),
            PushConfigError::NotObject(kind) => {
                write!(f, "push config must be a JSON object, found {kind}")
            }
            PushConfigError::MissingId => f.write_str("push config has no \"id\" member"),
            PushConfigError::IdNotString(kind) => {
                write!(f, "push config \"id\" must be a string, found {kind}")
            }
            PushConfigError::EmptyId => f.write_str("push config \"id\" is an empty string"),
            PushConfigError::TooLarge(len) => write!(
                f,
                "push config is {len} bytes of JSON, over the limit of {MAX_PUSH_CONFIG_BYTES}"
            ),
        }
    }
}

impl std::error::Error for PushConfigError {}

impl From<TaskError> for PushConfigError {
    /// The same shape rule as a Task's, said of a push config.
    fn from(e: TaskError) -> Self {
        match e {
            TaskError::NotJson(e) => PushConfigError::NotJson(e),
            TaskError::NotObject(kind) => PushConfigError::NotObject(kind),
            TaskError::MissingId => PushConfigError::MissingId,
            TaskError::IdNotString(kind) => PushConfigError::IdNotString(kind),
            TaskError::EmptyId => PushConfigError::EmptyId,
        }
    }
}

/// Refuses a config of `len` bytes of JSON text if it is over [`MAX_PUSH_CONFIG_BYTES`].
pub fn check_push_config_len(len: usize) -> Result<(), PushConfigError> {
    if len > MAX_PUSH_CONFIG_BYTES {
        return Err(PushConfigError::TooLarge(len));
    }
    Ok(())
}

/// Checks JSON text is a push config and returns its id, without building the document in
/// memory (every byte is still validated as a full parse would: see
/// [`task::check_task_text`]). The size is checked first, so nothing over the cap is parsed.
pub fn check_push_config_text(text: &str) -> Result<String, PushConfigError> {
    check_push_config_len(text.len())?;
    Ok(task::check_task_text(text)?)
}

/// The id of a parsed push-config object, checked (the size is the caller's to check, on the
/// text it makes of the object: [`check_push_config_len`]).
pub fn push_config_id(config: &Map<String, Value>) -> Result<&str, PushConfigError> {
    Ok(task::task_id(config)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_config_is_an_object_with_a_non_empty_string_id() {
        assert_eq!(
            check_push_config_text(r#"{"id":"c1","url":"https://example.com/hook"}"#),
            Ok("c1".to_owned())
        );
        let cases = [
            ("not json", "push config is not valid JSON"),
            ("[1]", "push config must be a JSON object, found array"),
            (r#"{"url":"u"}"#, "push config has no \"id\" member"),
            (
                r#"{"id":7}"#,
                "push config \"id\" must be a string, found number",
            ),
            (r#"{"id":""}"#, "push config \"id\" is an empty string"),
            (r#"{"id":"a"} trailing"#, "push config is not valid JSON"),
        ];
        for (text, message) in cases {
            let err = check_push_config_text(text).unwrap_err();
            assert!(err.to_string().starts_with(message), "{text}: {err}");
        }
    }

    #[test]
    fn the_size_cap_is_checked_before_parsing() {
        let pad = "x".repeat(MAX_PUSH_CONFIG_BYTES);
        let text = format!(r#"{{"id":"c","pad":"{pad}"}}"#);
        assert_eq!(
            check_push_config_text(&text),
            Err(PushConfigError::TooLarge(text.len()))
        );
        // Not JSON either, but over the cap is what is said: nothing that long is parsed.
        let junk = "{".repeat(MAX_PUSH_CONFIG_BYTES + 1);
        assert!(matches!(
            check_push_config_text(&junk),
            Err(PushConfigError::TooLarge(_))
        ));
        let at_cap = format!(
            r#"{{"id":"c","pad":"{}"}}"#,
            "x".repeat(MAX_PUSH_CONFIG_BYTES - 19)
        );
        assert_eq!(at_cap.len(), MAX_PUSH_CONFIG_BYTES);
        assert_eq!(check_push_config_text(&at_cap), Ok("c".to_owned()));
    }

    #[test]
    fn a_parsed_object_is_checked_by_the_same_rule() {
        let Value::Object(good) = json!({"id": "c1", "token": "t"}) else {
            unreachable!()
        };
        assert_eq!(push_config_id(&good), Ok("c1"));
        let Value::Object(bad) = json!({"id": null}) else {
            unreachable!()
        };
        assert_eq!(
            push_config_id(&bad),
            Err(PushConfigError::IdNotString("null"))
        );
    }
}

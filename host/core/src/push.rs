//! [`PushConfig`]: a push-notification config as a store keeps it, and the checks every store
//! shares. The store methods themselves are on [`TaskStore`](crate::TaskStore)
//! (`save_push_config`, `get_push_config`, `list_push_configs`, `delete_push_config`).
//!
//! A store treats a config the way it treats a Task: an opaque JSON object with a non-empty
//! string `id`, kept per Task id and returned exactly as saved. What the members mean (the
//! webhook URL, its authentication, sealed secrets) is the A2A layer's business; a store never
//! looks inside.

use crate::error::StoreError;
use serde_json::{Map, Value};
use toolnexus_format::push_config::{self, PushConfigError};
use toolnexus_format::task::json_kind;

/// The most push configs one Task may have in a store. A store that is asked to list more
/// answers them all (a component's answer is bounded by the host). The A2A layer refuses
/// creates well before it (`toolnexus_a2a_protocol::push::MAX_CONFIGS_PER_TASK`, 10).
pub const MAX_PUSH_CONFIGS_PER_TASK: usize = 100;

/// The longest push config, in bytes of JSON text (the format's rule, owned by
/// `toolnexus_format::push_config`).
pub const MAX_PUSH_CONFIG_BYTES: usize = push_config::MAX_PUSH_CONFIG_BYTES;

/// A push-notification config: a JSON object whose `id` member is a non-empty string, held as
/// compact JSON text (what stores write) with its id.
///
/// ```
/// use toolnexus_core::PushConfig;
/// let config = PushConfig::from_json(r#"{"id":"c1","url":"https://example.com/hook"}"#)?;
/// assert_eq!(config.id(), "c1");
/// assert!(PushConfig::from_json(r#"{"url":"https://example.com/hook"}"#).is_err());
/// # Ok::<(), toolnexus_core::StoreError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushConfig {
    id: String,
    text: String,
}

impl PushConfig {
    /// Parses and checks JSON text: an object of at most [`MAX_PUSH_CONFIG_BYTES`] whose `id`
    /// is a non-empty string. The text kept is the compact form of what was parsed.
    pub fn from_json(text: &str) -> Result<Self, StoreError> {
        // Nothing over the cap is parsed.
        push_config::check_push_config_len(text.len()).map_err(invalid)?;
        let value: Value = serde_json::from_str(text)
            .map_err(|e| invalid(PushConfigError::NotJson(e.to_string())))?;
        Self::from_value(value)
    }

    /// A config from a JSON value, checked as [`from_json`](Self::from_json) checks text.
    pub fn from_value(value: Value) -> Result<Self, StoreError> {
        match value {
            Value::Object(map) => Self::from_map(map),
            other => Err(invalid(PushConfigError::NotObject(json_kind(&other)))),
        }
    }

    /// A config from a JSON object, checked as [`from_json`](Self::from_json) checks text.
    pub fn from_map(map: Map<String, Value>) -> Result<Self, StoreError> {
        let id = push_config::push_config_id(&map)
            .map_err(invalid)?
            .to_owned();
        // Serializing a map of JSON values cannot fail (its keys are strings).
        let text = serde_json::to_string(&map).unwrap_or_default();
        push_config::check_push_config_len(text.len()).map_err(invalid)?;
        Ok(PushConfig { id, text })
    }

    /// The config's id (unique among the configs of one Task).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The config as compact JSON text: what stores write and components receive.
    pub fn as_json(&self) -> &str {
        &self.text
    }

    /// The config as a JSON object.
    pub fn to_map(&self) -> Map<String, Value> {
        match serde_json::from_str(&self.text) {
            Ok(Value::Object(map)) => map,
            // Unreachable: the text was made from a JSON object.
            _ => Map::new(),
        }
    }

    /// A config from text a store wrote and checked itself (with
    /// `toolnexus_format::check_push_config_text`, which found `id` in it): kept as it is, not
    /// made compact again.
    pub(crate) fn from_checked_text(id: String, text: String) -> Self {
        PushConfig { id, text }
    }
}

fn invalid(e: PushConfigError) -> StoreError {
    StoreError::InvalidPushConfig {
        reason: e.to_string(),
    }
}

/// For implementers: a config id must be non-empty, like a Task id.
pub fn check_config_id(id: &str) -> Result<(), StoreError> {
    if id.is_empty() {
        return Err(StoreError::InvalidPushConfig {
            reason: "push config id is empty".into(),
        });
    }
    Ok(())
}

/// For implementers: the order of [`list_push_configs`](crate::TaskStore::list_push_configs),
/// by config id, byte by byte, ascending.
pub fn sort_push_configs(configs: &mut [PushConfig]) {
    configs.sort_by(|a, b| a.id.as_bytes().cmp(b.id.as_bytes()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reason(err: StoreError) -> String {
        match err {
            StoreError::InvalidPushConfig { reason } => reason,
            other => panic!("expected an invalid push config, got {other}"),
        }
    }

    #[test]
    fn text_is_kept_compact_with_its_id() {
        let config =
            PushConfig::from_json("{ \"id\" : \"c1\",\n \"url\": \"https://h/\" }").unwrap();
        assert_eq!(config.id(), "c1");
        assert_eq!(config.as_json(), r#"{"id":"c1","url":"https://h/"}"#);
        assert_eq!(
            serde_json::Value::Object(config.to_map()),
            json!({"id": "c1", "url": "https://h/"})
        );
        assert_eq!(
            PushConfig::from_value(json!({"id": "c1", "url": "https://h/"})).unwrap(),
            config
        );
    }

    #[test]
    fn what_is_not_a_config_is_a_typed_error_saying_why() {
        for (text, want) in [
            ("nope", "push config is not valid JSON"),
            ("[]", "push config must be a JSON object, found array"),
            ("{}", "push config has no \"id\" member"),
            (
                r#"{"id":1}"#,
                "push config \"id\" must be a string, found number",
            ),
            (r#"{"id":""}"#, "push config \"id\" is an empty string"),
        ] {
            let got = reason(PushConfig::from_json(text).unwrap_err());
            assert!(got.starts_with(want), "{text}: {got}");
        }
        let got = reason(PushConfig::from_value(json!("c1")).unwrap_err());
        assert_eq!(got, "push config must be a JSON object, found string");
        assert!(reason(check_config_id("").unwrap_err()).contains("empty"));
        check_config_id("c").unwrap();
    }

    #[test]
    fn the_size_limit_holds_for_text_and_for_built_objects() {
        let pad = "x".repeat(MAX_PUSH_CONFIG_BYTES);
        let text = format!(r#"{{"id":"c","pad":"{pad}"}}"#);
        assert!(reason(PushConfig::from_json(&text).unwrap_err()).contains("over the limit"));
        let built = PushConfig::from_value(json!({"id": "c", "pad": pad})).unwrap_err();
        assert!(reason(built).contains("over the limit"));
    }

    #[test]
    fn configs_sort_by_id_bytes() {
        let mut configs: Vec<_> = ["b", "日本", "B", "a/b", "-"]
            .iter()
            .map(|id| PushConfig::from_value(json!({"id": id})).unwrap())
            .collect();
        sort_push_configs(&mut configs);
        let ids: Vec<_> = configs.iter().map(PushConfig::id).collect();
        assert_eq!(ids, ["-", "B", "a/b", "b", "日本"]);
    }
}

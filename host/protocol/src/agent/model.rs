//! The A2A data model as agents see it (A2A 1.0 names): parts, messages and artifacts, typed,
//! and their conversion to and from the stored form (A2A 0.3 JSON, see [`crate::wire`]).
//!
//! The same shapes are in the agent contract (`wit/a2a/agent.wit`), so a component's records
//! map one to one onto these.

use crate::task_json::new_id;
use crate::wire::{Version, part_out};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value, json};

/// A JSON object (`metadata` members).
pub type Metadata = Map<String, Value>;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Agent,
}

/// What a part holds: exactly one of text, bytes, a URL to the content, or a JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum PartContent {
    Text(String),
    /// File content, inline.
    Raw(Vec<u8>),
    /// File content, by reference.
    Url(String),
    /// A structured value (any JSON value).
    Data(Value),
}

/// One piece of a message or an artifact.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub content: PartContent,
    /// The content's media type (`text/plain`, `image/png`, …).
    pub media_type: Option<String>,
    /// A file name, for file content.
    pub filename: Option<String>,
    pub metadata: Option<Metadata>,
}

impl Part {
    fn of(content: PartContent) -> Self {
        Part {
            content,
            media_type: None,
            filename: None,
            metadata: None,
        }
    }

    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part::of(PartContent::Text(text.into()))
    }

    /// A structured part (any JSON value).
    pub fn data(data: Value) -> Self {
        Part::of(PartContent::Data(data))
    }

    /// A file part with its bytes inline.
    pub fn raw(bytes: Vec<u8>, media_type: impl Into<String>) -> Self {
        Part {
            media_type: Some(media_type.into()),
            ..Part::of(PartContent::Raw(bytes))
        }
    }

    /// A file part by reference.
    pub fn url(url: impl Into<String>, media_type: impl Into<String>) -> Self {
        Part {
            media_type: Some(media_type.into()),
            ..Part::of(PartContent::Url(url.into()))
        }
    }

    /// The part in the stored form (a text part without its media type and file name).
    pub fn to_stored(&self) -> Value {
        let mut v10 = Map::new();
        match &self.content {
            PartContent::Text(text) => v10.insert("text".into(), json!(text)),
            PartContent::Raw(bytes) => v10.insert("raw".into(), json!(BASE64.encode(bytes))),
            PartContent::Url(url) => v10.insert("url".into(), json!(url)),
            PartContent::Data(data) => v10.insert("data".into(), data.clone()),
        };
        if let Some(media_type) = &self.media_type {
            v10.insert("mediaType".into(), json!(media_type));
        }
        if let Some(filename) = &self.filename {
            v10.insert("filename".into(), json!(filename));
        }
        if let Some(metadata) = &self.metadata {
            v10.insert("metadata".into(), Value::Object(metadata.clone()));
        }
        // A text part's media type and file name have no 0.3 spelling: they are not kept.
        part_out(&Value::Object(v10), Version::V0_3)
    }

    /// A stored part (either version's form); `None` for one of no known kind.
    pub fn from_stored(part: &Value) -> Option<Part> {
        let v10 = part_out(part, Version::V1_0);
        let object = v10.as_object()?;
        let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_owned);
        let content = if let Some(t) = text("text") {
            PartContent::Text(t)
        } else if let Some(raw) = text("raw") {
            PartContent::Raw(BASE64.decode(raw.as_bytes()).ok()?)
        } else if let Some(url) = text("url") {
            PartContent::Url(url)
        } else {
            PartContent::Data(object.get("data")?.clone())
        };
        Some(Part {
            content,
            media_type: text("mediaType"),
            filename: text("filename"),
            metadata: object.get("metadata").and_then(Value::as_object).cloned(),
        })
    }
}

/// A message of a Task's conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The message's id; in what an agent emits, `None` lets the server make one.
    pub message_id: Option<String>,
    /// In what an agent emits, the server sets [`Role::Agent`].
    pub role: Role,
    pub parts: Vec<Part>,
    pub metadata: Option<Metadata>,
    /// URIs of the extensions this message uses.
    pub extensions: Vec<String>,
    /// Ids of other Tasks this message refers to.
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// An agent's message of these parts.
    pub fn agent(parts: Vec<Part>) -> Self {
        Message {
            message_id: None,
            role: Role::Agent,
            parts,
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    /// An agent's message of one text part.
    pub fn agent_text(text: impl Into<String>) -> Self {
        Message::agent(vec![Part::text(text)])
    }

    /// The text parts, joined by newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|p| match &p.content {
                PartContent::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }

    /// The message as stored in Task `task_id` of `context_id` (an agent's, with an id made
    /// when it has none).
    pub fn to_stored(&self, task_id: &str, context_id: &Value) -> Value {
        let mut out = json!({
            "kind": "message",
            "role": match self.role { Role::User => "user", Role::Agent => "agent" },
            "messageId": self.message_id.clone().unwrap_or_else(new_id),
            "taskId": task_id,
            "contextId": context_id,
            "parts": self.parts.iter().map(Part::to_stored).collect::<Vec<_>>(),
        });
        if let Some(metadata) = &self.metadata {
            out["metadata"] = Value::Object(metadata.clone());
        }
        if !self.extensions.is_empty() {
            out["extensions"] = json!(self.extensions);
        }
        if !self.reference_task_ids.is_empty() {
            out["referenceTaskIds"] = json!(self.reference_task_ids);
        }
        out
    }

    /// A stored message (either version's form); parts of no known kind are left out.
    pub fn from_stored(message: &Value) -> Message {
        let strings = |key: &str| -> Vec<String> {
            message[key]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let role = match message["role"].as_str() {
            Some("agent" | "ROLE_AGENT") => Role::Agent,
            _ => Role::User,
        };
        Message {
            message_id: message["messageId"].as_str().map(str::to_owned),
            role,
            parts: message["parts"]
                .as_array()
                .map(|parts| parts.iter().filter_map(Part::from_stored).collect())
                .unwrap_or_default(),
            metadata: message["metadata"].as_object().cloned(),
            extensions: strings("extensions"),
            reference_task_ids: strings("referenceTaskIds"),
        }
    }
}

/// An output of the agent: a document, an image, a structured result.
#[derive(Debug, Clone, PartialEq)]
pub struct Artifact {
    /// Unique within the Task; the agent chooses it.
    pub artifact_id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub parts: Vec<Part>,
    pub metadata: Option<Metadata>,
    /// URIs of the extensions this artifact uses.
    pub extensions: Vec<String>,
}

impl Artifact {
    /// An artifact of these parts.
    pub fn new(artifact_id: impl Into<String>, parts: Vec<Part>) -> Self {
        Artifact {
            artifact_id: artifact_id.into(),
            name: None,
            description: None,
            parts,
            metadata: None,
            extensions: Vec::new(),
        }
    }

    /// The artifact in the stored form.
    pub fn to_stored(&self) -> Value {
        let mut out = json!({
            "artifactId": self.artifact_id,
            "parts": self.parts.iter().map(Part::to_stored).collect::<Vec<_>>(),
        });
        if let Some(name) = &self.name {
            out["name"] = json!(name);
        }
        if let Some(description) = &self.description {
            out["description"] = json!(description);
        }
        if let Some(metadata) = &self.metadata {
            out["metadata"] = Value::Object(metadata.clone());
        }
        if !self.extensions.is_empty() {
            out["extensions"] = json!(self.extensions);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_round_trip_through_the_stored_form() {
        let mut with_metadata = Part::data(json!([1, "two"]));
        with_metadata.metadata = Some(json!({"k": "v"}).as_object().cloned().unwrap());
        let mut named = Part::raw(vec![0, 159, 255], "image/png");
        named.filename = Some("a.png".into());
        for part in [
            Part::text("hello"),
            Part::data(json!({"a": 1})),
            with_metadata,
            named,
            Part::url("https://example.com/x", "text/csv"),
        ] {
            let stored = part.to_stored();
            assert_eq!(Part::from_stored(&stored).as_ref(), Some(&part), "{stored}");
        }
        assert_eq!(
            Part::raw(vec![1, 2], "application/octet-stream").to_stored(),
            json!({"kind": "file", "file": {"bytes": "AQI=", "mimeType": "application/octet-stream"}})
        );
    }

    #[test]
    fn messages_keep_their_members() {
        let mut message = Message::agent(vec![Part::text("a"), Part::data(json!({"b": 2}))]);
        message.message_id = Some("m1".into());
        message.extensions = vec!["https://ext".into()];
        message.reference_task_ids = vec!["t0".into()];
        let stored = message.to_stored("t1", &json!("c1"));
        assert_eq!(stored["taskId"], "t1");
        assert_eq!(stored["role"], "agent");
        assert_eq!(Message::from_stored(&stored), message);
        assert_eq!(message.text(), "a");
    }
}

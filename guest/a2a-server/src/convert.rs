//! The protocol's agent model to and from the `toolnexus:a2a` types, with the rules of the
//! host's conversion for agent components (`host/wasm/src/agent/convert.rs`): JSON text for
//! data and metadata, metadata an object, the agent's messages in the agent's role, an
//! artifact with an id. What an agent answers is hostile: an answer that breaks a rule is an
//! error naming it, never a panic.

use crate::bindings::toolnexus::a2a::types as wit;
use serde_json::Value;
use toolnexus_a2a_protocol::{
    Artifact, Message, Metadata, Outcome, Part, PartContent, Request, Role,
};

pub fn request_to_wit(request: &Request) -> wit::Request {
    wit::Request {
        task_id: request.task_id.clone(),
        context_id: request.context_id.clone(),
        continued: request.continued,
        message: message_to_wit(&request.message),
        history: request.history.iter().map(message_to_wit).collect(),
        metadata: request.metadata.as_ref().map(metadata_to_wit),
        accepted_output_modes: request.accepted_output_modes.clone(),
        owner: request.owner.clone(),
        tenant: request.tenant.clone(),
        extensions: request.extensions.clone(),
    }
}

fn metadata_to_wit(metadata: &Metadata) -> String {
    Value::Object(metadata.clone()).to_string()
}

fn message_to_wit(message: &Message) -> wit::Message {
    wit::Message {
        message_id: message.message_id.clone(),
        role: match message.role {
            Role::User => wit::Role::User,
            Role::Agent => wit::Role::Agent,
        },
        parts: message.parts.iter().map(part_to_wit).collect(),
        metadata: message.metadata.as_ref().map(metadata_to_wit),
        extensions: message.extensions.clone(),
        reference_task_ids: message.reference_task_ids.clone(),
    }
}

fn part_to_wit(part: &Part) -> wit::Part {
    wit::Part {
        content: match &part.content {
            PartContent::Text(text) => wit::PartContent::Text(text.clone()),
            PartContent::Raw(bytes) => wit::PartContent::Raw(bytes.clone()),
            PartContent::Url(url) => wit::PartContent::Url(url.clone()),
            PartContent::Data(data) => wit::PartContent::Data(data.to_string()),
        },
        media_type: part.media_type.clone(),
        filename: part.filename.clone(),
        metadata: part.metadata.as_ref().map(metadata_to_wit),
    }
}

fn metadata_from_wit(text: Option<String>, what: &str) -> Result<Option<Metadata>, String> {
    let Some(text) = text else {
        return Ok(None);
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(object)) => Ok(Some(object)),
        Ok(_) => Err(format!("{what} metadata is JSON but not an object")),
        Err(e) => Err(format!("{what} metadata is not JSON: {e}")),
    }
}

fn parts_from_wit(parts: Vec<wit::Part>, what: &str) -> Result<Vec<Part>, String> {
    let mut out = Vec::with_capacity(parts.len());
    for (index, part) in parts.into_iter().enumerate() {
        let what = format!("{what} part {index}");
        let content = match part.content {
            wit::PartContent::Text(text) => PartContent::Text(text),
            wit::PartContent::Raw(bytes) => PartContent::Raw(bytes),
            wit::PartContent::Url(url) => PartContent::Url(url),
            wit::PartContent::Data(text) => PartContent::Data(
                serde_json::from_str(&text).map_err(|e| format!("{what} data is not JSON: {e}"))?,
            ),
        };
        out.push(Part {
            content,
            media_type: part.media_type,
            filename: part.filename,
            metadata: metadata_from_wit(part.metadata, &what)?,
        });
    }
    Ok(out)
}

pub fn message_from_wit(message: wit::Message, what: &str) -> Result<Message, String> {
    Ok(Message {
        message_id: message.message_id,
        role: Role::Agent,
        parts: parts_from_wit(message.parts, &format!("{what} message"))?,
        metadata: metadata_from_wit(message.metadata, &format!("{what} message"))?,
        extensions: message.extensions,
        reference_task_ids: message.reference_task_ids,
    })
}

pub fn artifact_from_wit(artifact: wit::Artifact) -> Result<Artifact, String> {
    if artifact.artifact_id.is_empty() {
        return Err("the artifact id is empty".into());
    }
    Ok(Artifact {
        parts: parts_from_wit(artifact.parts, "the artifact's")?,
        metadata: metadata_from_wit(artifact.metadata, "the artifact's")?,
        artifact_id: artifact.artifact_id,
        name: artifact.name,
        description: artifact.description,
        extensions: artifact.extensions,
    })
}

pub fn outcome_from_wit(outcome: wit::Outcome) -> Result<Outcome, String> {
    let message =
        |m: Option<wit::Message>| m.map(|m| message_from_wit(m, "the outcome's")).transpose();
    Ok(match outcome {
        wit::Outcome::Completed(m) => Outcome::Completed(message(m)?),
        wit::Outcome::Failed(m) => Outcome::Failed(message(m)?),
        wit::Outcome::Rejected(m) => Outcome::Rejected(message(m)?),
        wit::Outcome::Canceled(m) => Outcome::Canceled(message(m)?),
        wit::Outcome::InputRequired(m) => Outcome::InputRequired(message(m)?),
        wit::Outcome::AuthRequired(m) => Outcome::AuthRequired(message(m)?),
        wit::Outcome::Reply(m) => Outcome::Reply(message_from_wit(m, "the reply")?),
    })
}

//! The agent contract's records to and from the native agent model
//! (`toolnexus_a2a_protocol`): what the host sends is trusted and converted as it is; what a
//! component sends is checked on the way in. JSON members must parse, and `metadata` must be
//! a JSON object; anything else is refused with a message naming the member.

use crate::agent::contract::wit;
use serde_json::Value;
use toolnexus_a2a_protocol::{
    Artifact, Message, Metadata, Outcome, Part, PartContent, Request, Role,
};

/// The request of a run, as the component sees it.
pub(crate) fn request_to_wit(request: &Request) -> wit::Request {
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

/// `metadata` text as a JSON object; `what` names the member in the error.
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

fn part_from_wit(part: wit::Part, what: &str, index: usize) -> Result<Part, String> {
    let what = format!("{what} part {index}");
    let content = match part.content {
        wit::PartContent::Text(text) => PartContent::Text(text),
        wit::PartContent::Raw(bytes) => PartContent::Raw(bytes),
        wit::PartContent::Url(url) => PartContent::Url(url),
        wit::PartContent::Data(text) => PartContent::Data(
            serde_json::from_str(&text).map_err(|e| format!("{what} data is not JSON: {e}"))?,
        ),
    };
    Ok(Part {
        content,
        media_type: part.media_type,
        filename: part.filename,
        metadata: metadata_from_wit(part.metadata, &what)?,
    })
}

fn parts_from_wit(parts: Vec<wit::Part>, what: &str) -> Result<Vec<Part>, String> {
    parts
        .into_iter()
        .enumerate()
        .map(|(index, part)| part_from_wit(part, what, index))
        .collect()
}

/// A message the agent emits (its role is always the agent's, whatever it says).
pub(crate) fn message_from_wit(message: wit::Message, what: &str) -> Result<Message, String> {
    Ok(Message {
        message_id: message.message_id,
        role: Role::Agent,
        parts: parts_from_wit(message.parts, &format!("{what} message"))?,
        metadata: metadata_from_wit(message.metadata, &format!("{what} message"))?,
        extensions: message.extensions,
        reference_task_ids: message.reference_task_ids,
    })
}

/// An artifact the agent emits.
pub(crate) fn artifact_from_wit(artifact: wit::Artifact) -> Result<Artifact, String> {
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

/// How the run ended.
pub(crate) fn outcome_from_wit(outcome: wit::Outcome) -> Result<Outcome, String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wit_part(content: wit::PartContent, metadata: Option<&str>) -> wit::Part {
        wit::Part {
            content,
            media_type: None,
            filename: None,
            metadata: metadata.map(str::to_owned),
        }
    }

    #[test]
    fn request_parts_reach_the_component_as_json_text() {
        let mut message = Message::agent(vec![Part::data(json!({"a": [1, 2]}))]);
        message.role = Role::User;
        message.metadata = json!({"k": "v"}).as_object().cloned();
        let wit = message_to_wit(&message);
        assert_eq!(wit.role, wit::Role::User);
        assert_eq!(wit.metadata.as_deref(), Some(r#"{"k":"v"}"#));
        match &wit.parts[0].content {
            wit::PartContent::Data(text) => assert_eq!(text, r#"{"a":[1,2]}"#),
            _ => panic!("a data part"),
        }
    }

    #[test]
    fn emitted_json_is_checked_naming_the_member() {
        let message = |parts, metadata: Option<&str>| wit::Message {
            message_id: None,
            role: wit::Role::User,
            parts,
            metadata: metadata.map(str::to_owned),
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        };
        let ok = message_from_wit(
            message(
                vec![wit_part(wit::PartContent::Data("[1]".into()), Some("{}"))],
                None,
            ),
            "a status",
        )
        .unwrap();
        assert_eq!(ok.role, Role::Agent, "an emitted message is the agent's");
        assert_eq!(ok.parts[0].content, PartContent::Data(json!([1])));
        let err = message_from_wit(message(Vec::new(), Some("[1]")), "a status").unwrap_err();
        assert!(err.contains("not an object"), "{err}");
        let err = message_from_wit(
            message(
                vec![wit_part(wit::PartContent::Data("{".into()), None)],
                None,
            ),
            "a status",
        )
        .unwrap_err();
        assert!(err.contains("part 0 data is not JSON"), "{err}");
        let err = message_from_wit(
            message(
                vec![wit_part(wit::PartContent::Text("x".into()), Some("nope"))],
                None,
            ),
            "a status",
        )
        .unwrap_err();
        assert!(err.contains("part 0 metadata is not JSON"), "{err}");
    }
}

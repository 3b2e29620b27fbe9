//! The agent contract's records to and from the native agent model
//! (`toolnexus_a2a_protocol`): what the host sends is trusted and converted as it is; what a
//! component sends is checked on the way in. JSON members must parse, and `metadata` must be
//! a JSON object; anything else is refused with a message naming the member.

use crate::agent::contract::wit;

toolnexus_a2a_protocol::agent_wit_conversions!(wit);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolnexus_a2a_protocol::{Message, Part, PartContent, Role};

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

//! The agent card: A2A 1.0 (`supportedInterfaces`), and for a client that asks without a 1.0
//! version header the 0.3 fields beside it (`url`, `protocolVersion`, `preferredTransport`,
//! `additionalInterfaces`), as the official SDK's servers do, so clients of either version
//! find what they look for.
//!
//! A card has two owners. The operator says who the agent is and what it does (the members in
//! [`OPERATOR_MEMBERS`]: name, skills, modes, …); the server says where and how it is reached
//! (the members in [`SERVER_MEMBERS`]: interfaces, capabilities, security), because only the
//! server knows its URL, its tenants and whether it wants a token.

use serde_json::{Map, Value, json};

/// The AgentCard members the operator supplies (`tnstore serve --card`), in card order.
pub const OPERATOR_MEMBERS: [&str; 9] = [
    "name",
    "description",
    "provider",
    "version",
    "documentationUrl",
    "defaultInputModes",
    "defaultOutputModes",
    "skills",
    "iconUrl",
];

/// The members the server writes (A2A 1.0, and 0.3 for the compatible card): an operator's card
/// may not set them. `signatures` is here because a signature covers the whole card, which the
/// server completes, so one made over the operator's file could never verify.
pub const SERVER_MEMBERS: [&str; 11] = [
    "supportedInterfaces",
    "capabilities",
    "securitySchemes",
    "securityRequirements",
    "signatures",
    "url",
    "protocolVersion",
    "preferredTransport",
    "additionalInterfaces",
    "security",
    "supportsAuthenticatedExtendedCard",
];

/// The server's part of the card: where and how the agent is reached.
#[derive(Debug, Clone, Copy)]
pub struct Endpoint<'a> {
    /// The base URL clients reach: the JSON-RPC endpoint, and the root of the HTTP+JSON routes.
    pub url: &'a str,
    /// The tenants served: each gets 1.0 interfaces that declare it (`"tenant": NAME`).
    pub tenants: &'a [String],
    /// Whether requests need a bearer token.
    pub bearer_auth: bool,
    /// Whether push notifications are offered (`capabilities.pushNotifications`).
    pub push_notifications: bool,
}

/// The echo agent's part of the card, the one served when the operator supplies none.
pub fn echo_description(
    name: &str,
    description: &str,
    version: &str,
    output_modes: &[String],
) -> Map<String, Value> {
    let card = json!({
        "name": name,
        "description": description,
        "version": version,
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": output_modes,
        "skills": [{"id": "echo", "name": "Echo", "description": "Replies with the text it is sent.",
            "tags": ["echo"], "examples": ["hello"]}],
    });
    match card {
        Value::Object(members) => members,
        _ => Map::new(),
    }
}

/// The card as JSON, from the operator's members (`about`: only [`OPERATOR_MEMBERS`] are taken)
/// and the server's (`endpoint`): with `with_0_3`, the 0.3 fields beside the 1.0 ones (for
/// clients that send no version header), else the pure 1.0 card (whose schema allows no other
/// field).
///
/// Interfaces, in order of preference: the root namespace's (1.0 JSON-RPC and HTTP+JSON, then
/// 0.3), then for each tenant its 1.0 pair with the same URLs and `"tenant"` set: a 1.0 client
/// sends that tenant with every request (JSON-RPC `params.tenant`, HTTP+JSON `/{tenant}/…`).
/// A2A 0.3 interfaces have no tenant member, so tenants get none of those.
pub fn card_json(about: &Map<String, Value>, endpoint: &Endpoint<'_>, with_0_3: bool) -> Value {
    let url = endpoint.url;
    let rest_url = url.trim_end_matches('/');
    let mut interfaces = vec![
        json!({"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}),
        json!({"url": rest_url, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}),
        json!({"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}),
        // The 0.3 client appends `/v1/…` itself.
        json!({"url": rest_url, "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"}),
    ];
    for tenant in endpoint.tenants {
        interfaces.push(json!({"url": url, "protocolBinding": "JSONRPC",
            "protocolVersion": "1.0", "tenant": tenant}));
        interfaces.push(json!({"url": rest_url, "protocolBinding": "HTTP+JSON",
            "protocolVersion": "1.0", "tenant": tenant}));
    }
    let mut card = Map::new();
    let take = |card: &mut Map<String, Value>, member: &str| {
        if let Some(value) = about.get(member) {
            card.insert(member.to_owned(), value.clone());
        }
    };
    take(&mut card, "name");
    take(&mut card, "description");
    card.insert("supportedInterfaces".into(), Value::Array(interfaces));
    for member in OPERATOR_MEMBERS.iter().skip(2) {
        take(&mut card, member);
    }
    card.insert(
        "capabilities".into(),
        json!({"streaming": true, "pushNotifications": endpoint.push_notifications,
            "extendedAgentCard": false}),
    );
    let mut card = Value::Object(card);
    if with_0_3 {
        card["url"] = json!(url);
        card["protocolVersion"] = json!("0.3.0");
        card["preferredTransport"] = json!("JSONRPC");
        card["additionalInterfaces"] = json!([
            {"url": url, "transport": "JSONRPC"},
            {"url": rest_url, "transport": "HTTP+JSON"},
        ]);
    }
    if endpoint.bearer_auth {
        // One object per scheme holding both versions' members: 1.0's typed oneof and 0.3's
        // `type`/`scheme` never share a key.
        card["securitySchemes"] = json!({"bearer": {
            "httpAuthSecurityScheme": {"scheme": "Bearer", "description": "a token from the operator"},
            "type": "http", "scheme": "bearer"}});
        card["securityRequirements"] = json!([{"schemes": {"bearer": {"list": []}}}]);
        if with_0_3 {
            card["security"] = json!([{"bearer": []}]);
        } else {
            card["securitySchemes"] = json!({"bearer": {
                "httpAuthSecurityScheme": {"scheme": "Bearer", "description": "a token from the operator"}}});
        }
    }
    card
}

#[cfg(test)]
mod tests {
    use super::*;

    fn about() -> Map<String, Value> {
        let mut about = echo_description("n", "d", "1", &["text/plain".to_owned()]);
        // A member the operator does not own never reaches the card.
        about.insert("url".into(), json!("http://elsewhere/"));
        about
    }

    #[test]
    fn tenants_get_1_0_interfaces_that_declare_them() {
        let tenants = ["acme".to_owned()];
        let endpoint = Endpoint {
            url: "https://agent.example/",
            tenants: &tenants,
            bearer_auth: false,
            push_notifications: false,
        };
        let card = card_json(&about(), &endpoint, false);
        let interfaces = card["supportedInterfaces"].as_array().unwrap();
        assert_eq!(interfaces.len(), 6);
        assert!(interfaces[..4].iter().all(|i| i.get("tenant").is_none()));
        assert_eq!(
            interfaces[4],
            json!({"url": "https://agent.example/", "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0", "tenant": "acme"})
        );
        assert_eq!(
            interfaces[5],
            json!({"url": "https://agent.example", "protocolBinding": "HTTP+JSON",
                "protocolVersion": "1.0", "tenant": "acme"})
        );
        assert!(card.get("url").is_none());
    }

    #[test]
    fn operator_members_are_kept_and_others_dropped() {
        let endpoint = Endpoint {
            url: "http://127.0.0.1:1/",
            tenants: &[],
            bearer_auth: false,
            push_notifications: false,
        };
        let card = card_json(&about(), &endpoint, true);
        assert_eq!(card["name"], "n");
        assert_eq!(card["skills"][0]["id"], "echo");
        // The 0.3 `url` is the server's, not the one smuggled into `about`.
        assert_eq!(card["url"], "http://127.0.0.1:1/");
    }
}

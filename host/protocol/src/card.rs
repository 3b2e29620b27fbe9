//! The agent card: A2A 1.0 (`supportedInterfaces`), and for a client that asks without a 1.0
//! version header the 0.3 fields beside it (`url`, `protocolVersion`, `preferredTransport`,
//! `additionalInterfaces`), as the official SDK's servers do, so clients of either version
//! find what they look for.

use serde_json::{Value, json};

/// What the card says about the agent and where it is served.
#[derive(Debug, Clone)]
pub struct CardInfo {
    pub name: String,
    pub description: String,
    /// The agent's own version (the crate version for the echo agent).
    pub version: String,
    /// The base URL clients reach: the JSON-RPC endpoint, and the root of the HTTP+JSON routes.
    pub url: String,
    /// Whether requests need a bearer token.
    pub bearer_auth: bool,
    /// The output modes the agent produces.
    pub output_modes: Vec<String>,
}

/// The agent card as JSON: with `with_0_3`, the 0.3 fields beside the 1.0 ones (for clients
/// that send no version header), else the pure 1.0 card (whose schema allows no other field).
pub fn agent_card(info: &CardInfo, with_0_3: bool) -> Value {
    let url = &info.url;
    let rest_url = url.trim_end_matches('/');
    let interfaces = json!([
        {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": rest_url, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        // The 0.3 client appends `/v1/…` itself.
        {"url": rest_url, "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"},
    ]);
    let mut card = json!({
        "name": info.name,
        "description": info.description,
        "supportedInterfaces": interfaces,
        "version": info.version,
        "capabilities": {"streaming": true, "pushNotifications": false, "extendedAgentCard": false},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": info.output_modes,
        "skills": [{"id": "echo", "name": "Echo", "description": "Replies with the text it is sent.",
            "tags": ["echo"], "examples": ["hello"]}],
    });
    if with_0_3 {
        card["url"] = json!(url);
        card["protocolVersion"] = json!("0.3.0");
        card["preferredTransport"] = json!("JSONRPC");
        card["additionalInterfaces"] = json!([
            {"url": url, "transport": "JSONRPC"},
            {"url": rest_url, "transport": "HTTP+JSON"},
        ]);
    }
    if info.bearer_auth {
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

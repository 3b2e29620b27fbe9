//! The operator's part of the agent card (`tnstore serve --card FILE`): read once at start and
//! checked, so a server never serves a card that A2A clients would reject.
//!
//! The checks, in order, each naming the member it is about:
//!
//! 1. the file is a JSON object;
//! 2. it sets no member the server owns (interfaces, capabilities, security, signatures, the 0.3
//!    `url`/`protocolVersion`/…): those come from `--public-url`, `--tenant`, `--tokens` and TLS,
//!    and a card that set them would advertise something the server does not do. Refused rather
//!    than overridden, so the operator never believes a member took effect when it did not;
//! 3. every member is an A2A 1.0 AgentCard member, with the types of the official A2A JSON
//!    schema (`a2a_agent_card.schema.json`: its AgentCard part, copied unchanged);
//! 4. the members A2A 1.0 marks REQUIRED (which that schema does not enforce) are there and not
//!    empty: `name`, `description`, `version`, `defaultInputModes`, `defaultOutputModes`,
//!    `skills`, each skill's `id`, `name`, `description` and `tags`, and the provider's
//!    `organization` and `url` when there is a provider.

use serde_json::{Map, Value};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use toolnexus_a2a_protocol::card::{OPERATOR_MEMBERS, SERVER_MEMBERS};

/// The official A2A 1.0 AgentCard schema (see the file's `$comment` for its origin).
const SCHEMA: &str = include_str!("a2a_agent_card.schema.json");

/// The operator's members of the agent card, checked. Build it with [`OperatorCard::from_file`]
/// or [`OperatorCard::from_json`]; give it to [`ServerConfig::card`](crate::ServerConfig::card).
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorCard {
    members: Map<String, Value>,
}

/// Why an operator's card was refused: the file (when it came from one), the member (as a path
/// such as `skills[0].id`; none for the document as a whole) and what is wrong with it.
#[derive(Debug)]
pub struct CardError {
    pub file: Option<PathBuf>,
    pub member: Option<String>,
    pub problem: CardProblem,
}

/// What is wrong with an operator's card.
#[derive(Debug)]
pub enum CardProblem {
    Unreadable(std::io::Error),
    NotJson(serde_json::Error),
    NotAnObject,
    /// A member the server writes itself.
    ServerOwned,
    /// A member that A2A 1.0's AgentCard does not have.
    Unknown,
    /// The official schema refuses it (its message).
    Schema(String),
    /// A member A2A 1.0 requires is absent.
    Missing,
    /// A required string or list is empty.
    Empty,
}

impl fmt::Display for CardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "agent card {}", file.display())?,
            None => write!(f, "agent card")?,
        }
        if let Some(member) = &self.member {
            write!(f, ": `{member}`")?;
        }
        match &self.problem {
            CardProblem::Unreadable(e) => write!(f, ": cannot read it: {e}"),
            CardProblem::NotJson(e) => write!(f, ": not JSON: {e}"),
            CardProblem::NotAnObject => write!(f, ": must be a JSON object (an A2A AgentCard)"),
            CardProblem::ServerOwned => write!(
                f,
                " is written by the server (from --public-url, --tenant, --tokens and TLS); \
                 remove it from the file"
            ),
            CardProblem::Unknown => write!(f, " is not a member of an A2A 1.0 AgentCard"),
            CardProblem::Schema(message) => {
                write!(f, ": {message} (A2A 1.0 AgentCard schema)")
            }
            CardProblem::Missing => write!(f, " is required by A2A 1.0 and missing"),
            CardProblem::Empty => write!(f, " must not be empty"),
        }
    }
}

impl std::error::Error for CardError {}

impl OperatorCard {
    /// Reads and checks the card file at `path`; errors name the file.
    pub fn from_file(path: &Path) -> Result<OperatorCard, CardError> {
        let at_file = |member: Option<String>, problem| CardError {
            file: Some(path.to_owned()),
            member,
            problem,
        };
        let text = std::fs::read(path).map_err(|e| at_file(None, CardProblem::Unreadable(e)))?;
        let value: Value =
            serde_json::from_slice(&text).map_err(|e| at_file(None, CardProblem::NotJson(e)))?;
        OperatorCard::from_json(value).map_err(|e| CardError {
            file: Some(path.to_owned()),
            ..e
        })
    }

    /// Checks a card given as JSON.
    pub fn from_json(value: Value) -> Result<OperatorCard, CardError> {
        let fail = |member: Option<&str>, problem| CardError {
            file: None,
            member: member.map(str::to_owned),
            problem,
        };
        let Value::Object(members) = &value else {
            return Err(fail(None, CardProblem::NotAnObject));
        };
        for name in members.keys() {
            if SERVER_MEMBERS.contains(&name.as_str()) {
                return Err(fail(Some(name), CardProblem::ServerOwned));
            }
            if !OPERATOR_MEMBERS.contains(&name.as_str()) {
                return Err(fail(Some(name), CardProblem::Unknown));
            }
        }
        if let Some(error) = validator().iter_errors(&value).next() {
            let member = member_path(&error.instance_path().to_string());
            return Err(fail(
                Some(member.as_str()).filter(|m| !m.is_empty()),
                CardProblem::Schema(error.to_string()),
            ));
        }
        check_required(members).map_err(|(member, problem)| fail(Some(&member), problem))?;
        Ok(OperatorCard {
            members: members.clone(),
        })
    }

    /// The members, as the card carries them.
    pub fn members(&self) -> &Map<String, Value> {
        &self.members
    }

    /// Every media type the agent may produce: `defaultOutputModes`, then each skill's
    /// `outputModes`, without repeats. A request's `acceptedOutputModes` must admit one.
    pub fn output_modes(&self) -> Vec<String> {
        let skill_modes = self.members["skills"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|skill| strings(&skill["outputModes"]));
        let mut modes: Vec<String> = Vec::new();
        for mode in strings(&self.members["defaultOutputModes"]).chain(skill_modes) {
            // Media types compare without regard to case; the check compares lower case.
            let mode = mode.trim().to_ascii_lowercase();
            if !modes.contains(&mode) {
                modes.push(mode);
            }
        }
        modes
    }
}

fn strings(value: &Value) -> impl Iterator<Item = &str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// The schema's validator, compiled once. The schema is part of this crate and a unit test
/// compiles it, so it cannot fail at run time.
fn validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let mut schema: Value = serde_json::from_str(SCHEMA).expect("the vendored schema is JSON");
        encode_refs(&mut schema);
        jsonschema::validator_for(&schema).expect("the vendored schema compiles")
    })
}

/// The official bundle names its definitions with spaces (`#/definitions/Agent Card`), which
/// is no valid URI reference; percent-encoded, the pointer is the same one.
fn encode_refs(schema: &mut Value) {
    match schema {
        Value::Object(members) => {
            for (name, value) in members.iter_mut() {
                match value {
                    Value::String(target) if name == "$ref" => {
                        *target = target.replace(' ', "%20");
                    }
                    other => encode_refs(other),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(encode_refs),
        _ => {}
    }
}

/// `/skills/0/id` → `skills[0].id`.
fn member_path(pointer: &str) -> String {
    let mut out = String::new();
    for step in pointer.split('/').skip(1) {
        let step = step.replace("~1", "/").replace("~0", "~");
        if step.parse::<usize>().is_ok() {
            out.push_str(&format!("[{step}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&step);
        }
    }
    out
}

/// The members A2A 1.0 marks REQUIRED; the schema (already passed) has the types right.
fn check_required(card: &Map<String, Value>) -> Result<(), (String, CardProblem)> {
    let present = |object: &Map<String, Value>, at: &str, name: &str| {
        let member = if at.is_empty() {
            name.to_owned()
        } else {
            format!("{at}.{name}")
        };
        match object.get(name) {
            None => Err((member, CardProblem::Missing)),
            Some(Value::String(s)) if s.trim().is_empty() => Err((member, CardProblem::Empty)),
            Some(Value::Array(a)) if a.is_empty() => Err((member, CardProblem::Empty)),
            Some(_) => Ok(()),
        }
    };
    for name in [
        "name",
        "description",
        "version",
        "defaultInputModes",
        "defaultOutputModes",
        "skills",
    ] {
        present(card, "", name)?;
    }
    for (i, skill) in card["skills"].as_array().into_iter().flatten().enumerate() {
        if let Value::Object(skill) = skill {
            for name in ["id", "name", "description", "tags"] {
                present(skill, &format!("skills[{i}]"), name)?;
            }
        }
    }
    if let Some(Value::Object(provider)) = card.get("provider") {
        for name in ["organization", "url"] {
            present(provider, "provider", name)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn good() -> Value {
        json!({
            "name": "Route planner",
            "description": "Plans routes.",
            "version": "2.1.0",
            "provider": {"organization": "Example", "url": "https://example.com"},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["application/json"],
            "skills": [{"id": "route", "name": "Route", "description": "Plans a route.",
                "tags": ["maps"], "outputModes": ["image/png", "application/json"]}],
            "iconUrl": "https://example.com/icon.png",
            "documentationUrl": "https://example.com/docs"
        })
    }

    fn refused(card: Value) -> (Option<String>, CardProblem) {
        let e = OperatorCard::from_json(card).unwrap_err();
        (e.member, e.problem)
    }

    #[test]
    fn a_complete_card_is_taken_with_its_output_modes() {
        let card = OperatorCard::from_json(good()).unwrap();
        assert_eq!(card.output_modes(), ["application/json", "image/png"]);
        assert_eq!(card.members()["name"], "Route planner");
    }

    #[test]
    fn server_members_unknown_members_and_wrong_types_are_named() {
        let mut card = good();
        card["supportedInterfaces"] = json!([]);
        let (member, problem) = refused(card);
        assert_eq!(member.as_deref(), Some("supportedInterfaces"));
        assert!(matches!(problem, CardProblem::ServerOwned));

        let mut card = good();
        card["nmae"] = json!("typo");
        assert!(matches!(refused(card), (Some(m), CardProblem::Unknown) if m == "nmae"));

        let mut card = good();
        card["skills"][0]["tags"] = json!("maps");
        let (member, problem) = refused(card);
        assert_eq!(member.as_deref(), Some("skills[0].tags"));
        assert!(matches!(problem, CardProblem::Schema(_)), "{problem:?}");

        let mut card = good();
        card["skills"][0]["colour"] = json!("blue");
        assert!(matches!(refused(card), (Some(m), CardProblem::Schema(_)) if m == "skills[0]"));
    }

    #[test]
    fn required_members_must_be_there_and_not_empty() {
        let mut card = good();
        card.as_object_mut().unwrap().remove("version");
        assert!(matches!(refused(card), (Some(m), CardProblem::Missing) if m == "version"));

        let mut card = good();
        card["skills"][0].as_object_mut().unwrap().remove("id");
        assert!(matches!(refused(card), (Some(m), CardProblem::Missing) if m == "skills[0].id"));

        let mut card = good();
        card["defaultOutputModes"] = json!([]);
        assert!(
            matches!(refused(card), (Some(m), CardProblem::Empty) if m == "defaultOutputModes")
        );

        assert!(matches!(
            refused(json!([1])),
            (None, CardProblem::NotAnObject)
        ));
    }
}

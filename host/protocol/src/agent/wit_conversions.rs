//! The agent model to and from the `toolnexus:a2a` records of any set of bindings: one
//! [`agent_wit_conversions!`](crate::agent_wit_conversions) for the host's (wasmtime's
//! `bindgen!`, `toolnexus-wasm`) and a guest's (wit-bindgen, the A2A server component), whose
//! generated types differ but whose rules must not: what the caller sends is converted as it
//! is; what an agent sends is checked on the way in: JSON members must parse, `metadata` must
//! be a JSON object, an artifact needs an id, and anything else is refused with a message
//! naming the member.

/// Defines, in the calling module, `pub(crate)` conversions between this crate's agent model
/// and the records of `$wit`, a module of `toolnexus:a2a/types` bindings in scope there:
/// `request_to_wit`, `message_from_wit`, `artifact_from_wit`, `outcome_from_wit` (and the
/// helpers they use). The caller depends on `serde_json`.
#[macro_export]
macro_rules! agent_wit_conversions {
    ($wit:ident) => {
        /// The request of a run, as the component sees it.
        pub(crate) fn request_to_wit(request: &$crate::Request) -> $wit::Request {
            $wit::Request {
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

        fn metadata_to_wit(metadata: &$crate::Metadata) -> String {
            ::serde_json::Value::Object(metadata.clone()).to_string()
        }

        fn message_to_wit(message: &$crate::Message) -> $wit::Message {
            $wit::Message {
                message_id: message.message_id.clone(),
                role: match message.role {
                    $crate::Role::User => $wit::Role::User,
                    $crate::Role::Agent => $wit::Role::Agent,
                },
                parts: message.parts.iter().map(part_to_wit).collect(),
                metadata: message.metadata.as_ref().map(metadata_to_wit),
                extensions: message.extensions.clone(),
                reference_task_ids: message.reference_task_ids.clone(),
            }
        }

        fn part_to_wit(part: &$crate::Part) -> $wit::Part {
            $wit::Part {
                content: match &part.content {
                    $crate::PartContent::Text(text) => $wit::PartContent::Text(text.clone()),
                    $crate::PartContent::Raw(bytes) => $wit::PartContent::Raw(bytes.clone()),
                    $crate::PartContent::Url(url) => $wit::PartContent::Url(url.clone()),
                    $crate::PartContent::Data(data) => $wit::PartContent::Data(data.to_string()),
                },
                media_type: part.media_type.clone(),
                filename: part.filename.clone(),
                metadata: part.metadata.as_ref().map(metadata_to_wit),
            }
        }

        /// `metadata` text as a JSON object; `what` names the member in the error.
        fn metadata_from_wit(
            text: Option<String>,
            what: &str,
        ) -> Result<Option<$crate::Metadata>, String> {
            let Some(text) = text else {
                return Ok(None);
            };
            match ::serde_json::from_str::<::serde_json::Value>(&text) {
                Ok(::serde_json::Value::Object(object)) => Ok(Some(object)),
                Ok(_) => Err(format!("{what} metadata is JSON but not an object")),
                Err(e) => Err(format!("{what} metadata is not JSON: {e}")),
            }
        }

        fn part_from_wit(
            part: $wit::Part,
            what: &str,
            index: usize,
        ) -> Result<$crate::Part, String> {
            let what = format!("{what} part {index}");
            let content = match part.content {
                $wit::PartContent::Text(text) => $crate::PartContent::Text(text),
                $wit::PartContent::Raw(bytes) => $crate::PartContent::Raw(bytes),
                $wit::PartContent::Url(url) => $crate::PartContent::Url(url),
                $wit::PartContent::Data(text) => $crate::PartContent::Data(
                    ::serde_json::from_str(&text)
                        .map_err(|e| format!("{what} data is not JSON: {e}"))?,
                ),
            };
            Ok($crate::Part {
                content,
                media_type: part.media_type,
                filename: part.filename,
                metadata: metadata_from_wit(part.metadata, &what)?,
            })
        }

        fn parts_from_wit(parts: Vec<$wit::Part>, what: &str) -> Result<Vec<$crate::Part>, String> {
            parts
                .into_iter()
                .enumerate()
                .map(|(index, part)| part_from_wit(part, what, index))
                .collect()
        }

        /// A message the agent emits (its role is always the agent's, whatever it says).
        pub(crate) fn message_from_wit(
            message: $wit::Message,
            what: &str,
        ) -> Result<$crate::Message, String> {
            Ok($crate::Message {
                message_id: message.message_id,
                role: $crate::Role::Agent,
                parts: parts_from_wit(message.parts, &format!("{what} message"))?,
                metadata: metadata_from_wit(message.metadata, &format!("{what} message"))?,
                extensions: message.extensions,
                reference_task_ids: message.reference_task_ids,
            })
        }

        /// An artifact the agent emits.
        pub(crate) fn artifact_from_wit(
            artifact: $wit::Artifact,
        ) -> Result<$crate::Artifact, String> {
            if artifact.artifact_id.is_empty() {
                return Err("the artifact id is empty".into());
            }
            Ok($crate::Artifact {
                parts: parts_from_wit(artifact.parts, "the artifact's")?,
                metadata: metadata_from_wit(artifact.metadata, "the artifact's")?,
                artifact_id: artifact.artifact_id,
                name: artifact.name,
                description: artifact.description,
                extensions: artifact.extensions,
            })
        }

        /// How the run ended.
        pub(crate) fn outcome_from_wit(outcome: $wit::Outcome) -> Result<$crate::Outcome, String> {
            let message = |m: Option<$wit::Message>| {
                m.map(|m| message_from_wit(m, "the outcome's")).transpose()
            };
            Ok(match outcome {
                $wit::Outcome::Completed(m) => $crate::Outcome::Completed(message(m)?),
                $wit::Outcome::Failed(m) => $crate::Outcome::Failed(message(m)?),
                $wit::Outcome::Rejected(m) => $crate::Outcome::Rejected(message(m)?),
                $wit::Outcome::Canceled(m) => $crate::Outcome::Canceled(message(m)?),
                $wit::Outcome::InputRequired(m) => $crate::Outcome::InputRequired(message(m)?),
                $wit::Outcome::AuthRequired(m) => $crate::Outcome::AuthRequired(message(m)?),
                $wit::Outcome::Reply(m) => {
                    $crate::Outcome::Reply(message_from_wit(m, "the reply")?)
                }
            })
        }
    };
}

//! What each scenario does, as data: the updates it emits in order, then how its run ends.
//! `run.rs` plays a script; the component glue turns its parts into the contract's types.

use crate::scenario::Scenario;

/// What a part holds (the contract's `part-content`, with static values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    Text(&'static str),
    /// File content, inline.
    Raw(&'static [u8]),
    /// File content, by reference.
    Url(&'static str),
    /// JSON text.
    Data(&'static str),
}

/// One part of an artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartSpec {
    pub content: Content,
    pub filename: Option<&'static str>,
    pub media_type: Option<&'static str>,
}

impl PartSpec {
    const fn text(text: &'static str) -> PartSpec {
        PartSpec {
            content: Content::Text(text),
            filename: None,
            media_type: None,
        }
    }
}

/// The file both file scenarios name.
const FILE_NAME: &str = "output.txt";
const FILE_MEDIA_TYPE: &str = "text/plain";

/// A small inline file.
const RAW_FILE: PartSpec = PartSpec {
    content: Content::Raw(b"tck"),
    filename: Some(FILE_NAME),
    media_type: Some(FILE_MEDIA_TYPE),
};

/// A file by reference.
const URL_FILE: PartSpec = PartSpec {
    content: Content::Url("https://example.com/output.txt"),
    filename: Some(FILE_NAME),
    media_type: Some(FILE_MEDIA_TYPE),
};

/// A structured value (an object with a string and a number).
const DATA: PartSpec = PartSpec {
    content: Content::Data(r#"{"key": "value", "count": 42}"#),
    filename: None,
    media_type: None,
};

/// One update a scenario emits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A status update: still `working` (no status message).
    Working,
    /// An artifact update. `slot` numbers the run's artifacts: updates with the same slot
    /// build one artifact (same id).
    Artifact {
        slot: usize,
        parts: Vec<PartSpec>,
        append: bool,
        last_chunk: bool,
    },
    /// Waits this many streaming timeouts (a setting), watching for a cancel.
    Wait { timeouts: u32 },
}

impl Step {
    /// A whole artifact in one update (so its last chunk too).
    fn artifact(slot: usize, part: PartSpec) -> Step {
        Step::Artifact {
            slot,
            parts: vec![part],
            append: false,
            last_chunk: true,
        }
    }
}

/// How a scenario's run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// `completed`, with this text as the status message if any.
    Completed(Option<&'static str>),
    /// `input-required`, with no status message.
    InputRequired,
    /// `rejected`, with this text as the status message.
    Rejected(&'static str),
    /// A direct message reply of this text, instead of a Task.
    Reply(&'static str),
}

/// A scenario's updates and its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    pub steps: Vec<Step>,
    pub end: End,
}

/// The script of `scenario`.
pub fn script(scenario: Scenario) -> Script {
    use Scenario as S;
    let done = |steps: Vec<Step>| Script {
        steps,
        end: End::Completed(None),
    };
    // The streaming scenarios report `working` first, then their artifact, then complete.
    let streamed = |part: PartSpec| done(vec![Step::Working, Step::artifact(0, part)]);
    match scenario {
        S::CompleteTask => Script {
            steps: Vec::new(),
            end: End::Completed(Some("Hello from TCK")),
        },
        S::ArtifactText => done(vec![Step::artifact(
            0,
            PartSpec::text("Generated text content"),
        )]),
        S::ArtifactFile => done(vec![Step::artifact(0, RAW_FILE)]),
        S::ArtifactFileUrl => done(vec![Step::artifact(0, URL_FILE)]),
        S::ArtifactData => done(vec![Step::artifact(0, DATA)]),
        S::MessageResponse => Script {
            steps: Vec::new(),
            end: End::Reply("Direct message response"),
        },
        S::InputRequired => Script {
            steps: Vec::new(),
            end: End::InputRequired,
        },
        S::RejectTask => Script {
            steps: Vec::new(),
            end: End::Rejected("rejected"),
        },
        S::Stream001 => streamed(PartSpec::text("Stream hello from TCK")),
        S::Stream002 => done(Vec::new()),
        S::Stream003 => streamed(PartSpec::text("Stream task lifecycle")),
        S::StreamOrdering001 => streamed(PartSpec::text("Ordered output")),
        S::StreamArtifactText => streamed(PartSpec::text("Streamed text content")),
        S::StreamArtifactFile => streamed(RAW_FILE),
        // Two chunks of one artifact: the first creates it (the contract refuses an append to an
        // artifact the run never created), the second is appended and is the last.
        S::StreamArtifactChunked => done(vec![
            Step::Working,
            Step::Artifact {
                slot: 0,
                parts: vec![PartSpec::text("chunk-1 ")],
                append: false,
                last_chunk: false,
            },
            Step::Artifact {
                slot: 0,
                parts: vec![PartSpec::text("chunk-2")],
                append: true,
                last_chunk: true,
            },
        ]),
        // Long enough for a client to subscribe again before the end.
        S::LongRunning => done(vec![Step::Working, Step::Wait { timeouts: 2 }]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::PREFIXES;

    fn artifact_parts(script: &Script) -> Vec<PartSpec> {
        script
            .steps
            .iter()
            .filter_map(|step| match step {
                Step::Artifact { parts, .. } => Some(parts.clone()),
                _ => None,
            })
            .flatten()
            .collect()
    }

    #[test]
    fn every_part_kind_has_a_scenario() {
        let parts: Vec<Content> = PREFIXES
            .iter()
            .flat_map(|&(_, s)| artifact_parts(&script(s)))
            .map(|p| p.content)
            .collect();
        assert!(parts.iter().any(|c| matches!(c, Content::Text(_))));
        assert!(
            parts
                .iter()
                .any(|c| matches!(c, Content::Raw(b) if !b.is_empty()))
        );
        assert!(
            parts
                .iter()
                .any(|c| matches!(c, Content::Url(u) if u.starts_with("https://")))
        );
        assert!(parts.iter().any(|c| matches!(c, Content::Data(_))));
    }

    #[test]
    fn files_are_named_and_typed() {
        for scenario in [Scenario::ArtifactFile, Scenario::ArtifactFileUrl] {
            let parts = artifact_parts(&script(scenario));
            assert_eq!(parts.len(), 1);
            assert_eq!(parts[0].filename, Some("output.txt"));
            assert_eq!(parts[0].media_type, Some("text/plain"));
        }
        assert!(matches!(
            artifact_parts(&script(Scenario::ArtifactFileUrl))[0].content,
            Content::Url(_)
        ));
    }

    #[test]
    fn a_slot_is_created_before_it_is_appended_to_and_closed_once() {
        for (prefix, scenario) in PREFIXES {
            let mut open: Vec<usize> = Vec::new();
            for step in script(scenario).steps {
                if let Step::Artifact {
                    slot,
                    append,
                    last_chunk,
                    ..
                } = step
                {
                    assert_eq!(append, open.contains(&slot), "{prefix}: slot {slot}");
                    open.push(slot);
                    if last_chunk {
                        open.retain(|&s| s != slot);
                    }
                }
            }
            assert!(
                open.is_empty(),
                "{prefix}: an artifact without a last chunk"
            );
        }
    }

    #[test]
    fn replies_and_questions_emit_no_update() {
        for scenario in [
            Scenario::MessageResponse,
            Scenario::InputRequired,
            Scenario::RejectTask,
        ] {
            assert!(script(scenario).steps.is_empty(), "{scenario:?}");
        }
        assert_eq!(
            script(Scenario::MessageResponse).end,
            End::Reply("Direct message response")
        );
    }

    #[test]
    fn streaming_scenarios_report_working_first() {
        for scenario in [
            Scenario::Stream001,
            Scenario::Stream003,
            Scenario::StreamOrdering001,
            Scenario::StreamArtifactText,
            Scenario::StreamArtifactFile,
            Scenario::StreamArtifactChunked,
            Scenario::LongRunning,
        ] {
            let s = script(scenario);
            assert_eq!(s.steps.first(), Some(&Step::Working), "{scenario:?}");
            assert_eq!(s.end, End::Completed(None), "{scenario:?}");
        }
    }
}

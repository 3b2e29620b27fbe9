//! Which scenario a message asks for: the messageId prefixes the A2A TCK sends.
//!
//! The TCK makes its messageIds as `tck-<name>-<session>` (the session a random suffix per
//! run), and one long-running case as `test-resubscribe-message-id…`. A message is matched
//! against every prefix and the longest one that fits wins, so `tck-artifact-file-url-…` is the
//! URL scenario, not the inline-file one.

/// A behaviour the TCK drives by messageId prefix. What each one does is in `script.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    CompleteTask,
    ArtifactText,
    ArtifactFile,
    ArtifactFileUrl,
    ArtifactData,
    MessageResponse,
    InputRequired,
    RejectTask,
    Stream001,
    Stream002,
    Stream003,
    StreamOrdering001,
    StreamArtifactText,
    StreamArtifactFile,
    StreamArtifactChunked,
    LongRunning,
}

/// Every prefix, with its scenario.
pub const PREFIXES: [(&str, Scenario); 16] = [
    ("tck-complete-task", Scenario::CompleteTask),
    ("tck-artifact-text", Scenario::ArtifactText),
    ("tck-artifact-file", Scenario::ArtifactFile),
    ("tck-artifact-file-url", Scenario::ArtifactFileUrl),
    ("tck-artifact-data", Scenario::ArtifactData),
    ("tck-message-response", Scenario::MessageResponse),
    ("tck-input-required", Scenario::InputRequired),
    ("tck-reject-task", Scenario::RejectTask),
    ("tck-stream-001", Scenario::Stream001),
    ("tck-stream-002", Scenario::Stream002),
    ("tck-stream-003", Scenario::Stream003),
    ("tck-stream-ordering-001", Scenario::StreamOrdering001),
    ("tck-stream-artifact-text", Scenario::StreamArtifactText),
    ("tck-stream-artifact-file", Scenario::StreamArtifactFile),
    (
        "tck-stream-artifact-chunked",
        Scenario::StreamArtifactChunked,
    ),
    ("test-resubscribe-message-id", Scenario::LongRunning),
];

/// The scenario of the message `message_id`: the one with the longest prefix of it, or `None`
/// (the message is echoed).
pub fn for_message_id(message_id: &str) -> Option<Scenario> {
    PREFIXES
        .iter()
        .filter(|(prefix, _)| message_id.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|&(_, scenario)| scenario)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_prefix_with_a_session_suffix_is_its_own_scenario() {
        for (prefix, scenario) in PREFIXES {
            let id = format!("{prefix}-1a2b3c4d");
            assert_eq!(for_message_id(&id), Some(scenario), "{id}");
            assert_eq!(for_message_id(prefix), Some(scenario), "{prefix}");
        }
    }

    #[test]
    fn prefixes_are_distinct() {
        for (i, (a, _)) in PREFIXES.iter().enumerate() {
            for (b, _) in &PREFIXES[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn the_longest_prefix_wins() {
        assert_eq!(
            for_message_id("tck-artifact-file-url-0f0f0f0f"),
            Some(Scenario::ArtifactFileUrl)
        );
        assert_eq!(
            for_message_id("tck-artifact-file-0f0f0f0f"),
            Some(Scenario::ArtifactFile)
        );
        assert_eq!(
            for_message_id("tck-stream-artifact-file-0f0f0f0f"),
            Some(Scenario::StreamArtifactFile)
        );
        assert_eq!(
            for_message_id("test-resubscribe-message-id-42"),
            Some(Scenario::LongRunning)
        );
    }

    #[test]
    fn other_ids_have_no_scenario() {
        for id in [
            "",
            "tck-",
            "tck-sse-streaming-001-0f0f0f0f",
            "tck-terminal-0f0f0f0f",
            "tck-stream-0f0f0f0f",
            "TCK-COMPLETE-TASK-1",
            "m-1",
            "xtck-complete-task",
        ] {
            assert_eq!(for_message_id(id), None, "{id:?}");
        }
    }
}

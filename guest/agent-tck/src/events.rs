//! toolnexus's own test scenario (not the TCK's): a message whose text is `events:N:MS` gets N
//! rounds of a status update ("step i") and an artifact update (the artifact
//! `<task-id>-events`: created with "0", then "i" appended, the last round its last chunk),
//! MS milliseconds apart, then `completed` with "done". The end-to-end tests use it to check
//! that every subscriber gets exactly these events, in this order.

/// The text that starts the scenario.
pub const EVENTS_PREFIX: &str = "events:";

/// The rounds and the pause between them, from a message text `events:N:MS`; `None` for any
/// other text.
pub fn parse_events(text: &str) -> Option<(u32, u64)> {
    let (rounds, pause_ms) = text.strip_prefix(EVENTS_PREFIX)?.split_once(':')?;
    Some((rounds.trim().parse().ok()?, pause_ms.trim().parse().ok()?))
}

/// The id of the scenario's artifact in Task `task_id`.
pub fn events_artifact_id(task_id: &str) -> String {
    format!("{task_id}-events")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_full_form_starts_the_scenario() {
        assert_eq!(parse_events("events:12:50"), Some((12, 50)));
        assert_eq!(parse_events("events:0:0"), Some((0, 0)));
        for other in [
            "events:12",
            "events:x:1",
            "events:-1:5",
            "hello",
            "events:1:-3",
        ] {
            assert_eq!(parse_events(other), None, "{other}");
        }
    }
}

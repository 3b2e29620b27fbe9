//! The A2A task states and their rules, written once for every part of the workspace: the
//! stores' list filter, the lifecycle-guard middleware, the A2A server and the PostgreSQL
//! store's state column all ask this module.
//!
//! A state arrives in one of several spellings: the protocol v0.3 names (`input-required`), the
//! v1.0 enum names (`TASK_STATE_INPUT_REQUIRED`), and, for one state, both English spellings
//! (`canceled`, `cancelled`; v1.0's enum is `TASK_STATE_CANCELED`, but `TASK_STATE_CANCELLED`
//! occurs too). Every rule here treats all spellings of a state as that state. The canonical
//! spelling, the one [`normalize_state`] returns and the PostgreSQL store indexes, is the v0.3
//! name.

use std::fmt;

/// A state an A2A Task can be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskState {
    Submitted,
    Working,
    InputRequired,
    AuthRequired,
    Completed,
    Canceled,
    Failed,
    Rejected,
}

impl TaskState {
    /// Every state, in lifecycle order.
    pub const ALL: [TaskState; 8] = [
        TaskState::Submitted,
        TaskState::Working,
        TaskState::InputRequired,
        TaskState::AuthRequired,
        TaskState::Completed,
        TaskState::Canceled,
        TaskState::Failed,
        TaskState::Rejected,
    ];

    /// The state a spelling names, in any protocol version's spelling (after the `TASK_STATE_`
    /// prefix, ASCII case is ignored), or `None` for a string that names no state.
    pub fn parse(spelling: &str) -> Option<TaskState> {
        let canonical = canonical_spelling(spelling);
        TaskState::ALL
            .into_iter()
            .find(|state| state.v03_name() == canonical)
    }

    /// The protocol v0.3 name, such as `input-required`: the canonical spelling.
    pub fn v03_name(self) -> &'static str {
        match self {
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::InputRequired => "input-required",
            TaskState::AuthRequired => "auth-required",
            TaskState::Completed => "completed",
            TaskState::Canceled => "canceled",
            TaskState::Failed => "failed",
            TaskState::Rejected => "rejected",
        }
    }

    /// The protocol v1.0 enum name, such as `TASK_STATE_INPUT_REQUIRED`.
    pub fn v1_name(self) -> &'static str {
        match self {
            TaskState::Submitted => "TASK_STATE_SUBMITTED",
            TaskState::Working => "TASK_STATE_WORKING",
            TaskState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            TaskState::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
            TaskState::Completed => "TASK_STATE_COMPLETED",
            TaskState::Canceled => "TASK_STATE_CANCELED",
            TaskState::Failed => "TASK_STATE_FAILED",
            TaskState::Rejected => "TASK_STATE_REJECTED",
        }
    }

    /// Whether a Task in this state never changes again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Canceled | TaskState::Failed | TaskState::Rejected
        )
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.v03_name())
    }
}

/// The states a Task never leaves, canonically spelled.
pub const TERMINAL_STATES: [&str; 4] = ["completed", "canceled", "failed", "rejected"];

/// The canonical spelling of a state: the v0.3 name for every spelling of a known state
/// (`TASK_STATE_CANCELLED` → `canceled`); for any other string, the same folding (a
/// `TASK_STATE_` prefix dropped, ASCII lower case, `_` → `-`), so unknown states still compare
/// across versions. The JavaScript store (`js/store/src/format.js`) folds the same way.
pub fn normalize_state(spelling: &str) -> String {
    match TaskState::parse(spelling) {
        Some(state) => state.v03_name().to_owned(),
        None => canonical_spelling(spelling),
    }
}

/// Whether two spellings name the same state.
pub fn same_state(a: &str, b: &str) -> bool {
    normalize_state(a) == normalize_state(b)
}

/// Whether `spelling`, in any version's spelling, is a state a Task never leaves.
pub fn is_terminal_state(spelling: &str) -> bool {
    TaskState::parse(spelling).is_some_and(TaskState::is_terminal)
}

fn canonical_spelling(spelling: &str) -> String {
    let rest = spelling.strip_prefix("TASK_STATE_").unwrap_or(spelling);
    let folded = rest.to_ascii_lowercase().replace('_', "-");
    if folded == "cancelled" {
        "canceled".to_owned()
    } else {
        folded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_every_state_parses_to_it() {
        for state in TaskState::ALL {
            assert_eq!(TaskState::parse(state.v03_name()), Some(state));
            assert_eq!(TaskState::parse(state.v1_name()), Some(state));
            assert_eq!(normalize_state(state.v1_name()), state.v03_name());
        }
        for cancel in [
            "canceled",
            "cancelled",
            "TASK_STATE_CANCELED",
            "TASK_STATE_CANCELLED",
        ] {
            assert_eq!(
                TaskState::parse(cancel),
                Some(TaskState::Canceled),
                "{cancel}"
            );
            assert!(same_state(cancel, "canceled"), "{cancel}");
        }
        assert_eq!(TaskState::parse("paused"), None);
        assert_eq!(TaskState::parse(""), None);
    }

    #[test]
    fn terminal_means_the_same_in_every_spelling() {
        for state in TaskState::ALL {
            let terminal = TERMINAL_STATES.contains(&state.v03_name());
            assert_eq!(state.is_terminal(), terminal, "{state}");
            assert_eq!(is_terminal_state(state.v1_name()), terminal, "{state}");
        }
        assert!(is_terminal_state("cancelled"));
        assert!(!is_terminal_state("TASK_STATE_UNSPECIFIED"));
        assert!(!is_terminal_state("unknown"));
    }

    #[test]
    fn unknown_states_fold_across_versions_without_panicking() {
        assert_eq!(normalize_state("TASK_STATE_UNSPECIFIED"), "unspecified");
        assert!(same_state("TASK_STATE_SOMETHING_NEW", "something-new"));
        // Not ASCII: only ASCII letters fold.
        assert_eq!(normalize_state("TASK_STATÉ"), "task-statÉ");
        assert_eq!(normalize_state("é"), "é");
    }
}

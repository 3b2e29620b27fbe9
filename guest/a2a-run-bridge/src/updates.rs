//! The open run and the updates the agent emitted in it, within the bridge's bounds. Plain std,
//! generic over the update type, so the rules have native unit tests.

/// The most updates one run keeps (the native server's default `AgentLimits::max_updates`).
pub const MAX_UPDATES: usize = 10_000;
/// The most bytes of one update (the native default `AgentLimits::max_update_bytes`).
pub const MAX_UPDATE_BYTES: usize = 4 << 20;
/// The most bytes of all the updates of one run: what the bridge holds until the server takes
/// them.
pub const MAX_RUN_BYTES: usize = 32 << 20;

/// Why an update was not kept.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// No run is open: `task` was called outside `agent.handle`.
    NoRun,
    /// Over a bound; the text names which.
    Limit(String),
}

/// The open run, if any, and its updates in order.
pub struct Runs<U> {
    open: Option<Run<U>>,
}

struct Run<U> {
    task_id: String,
    updates: Vec<U>,
    bytes: usize,
}

impl<U> Default for Runs<U> {
    fn default() -> Self {
        Runs::new()
    }
}

impl<U> Runs<U> {
    /// No run open.
    pub const fn new() -> Self {
        Runs { open: None }
    }

    /// Opens a run on `task_id`, dropping one still open.
    pub fn begin(&mut self, task_id: String) {
        self.open = Some(Run {
            task_id,
            updates: Vec::new(),
            bytes: 0,
        });
    }

    /// The open run's Task id.
    pub fn task_id(&self) -> Option<&str> {
        self.open.as_ref().map(|run| run.task_id.as_str())
    }

    /// Keeps `update`, of `size` bytes, if the run is open and within the bounds.
    pub fn push(&mut self, update: U, size: usize) -> Result<(), Refused> {
        let run = self.open.as_mut().ok_or(Refused::NoRun)?;
        if size > MAX_UPDATE_BYTES {
            return Err(Refused::Limit(format!(
                "an update is {size} bytes, over the {MAX_UPDATE_BYTES} of one update"
            )));
        }
        if run.updates.len() >= MAX_UPDATES {
            return Err(Refused::Limit(format!(
                "a run has at most {MAX_UPDATES} updates"
            )));
        }
        if run.bytes + size > MAX_RUN_BYTES {
            return Err(Refused::Limit(format!(
                "a run's updates are at most {MAX_RUN_BYTES} bytes in all"
            )));
        }
        run.bytes += size;
        run.updates.push(update);
        Ok(())
    }

    /// Ends the open run: its updates, in order (none if no run was open).
    pub fn end(&mut self) -> Vec<U> {
        self.open.take().map(|run| run.updates).unwrap_or_default()
    }
}

/// Whether a stored Task (its JSON text) is in a terminal state: the run should stop. Text that
/// is not a Task with a state says no: the server's replay of the next update decides then.
pub fn is_terminal_text(task: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(task)
        .ok()
        .and_then(|v| {
            v["status"]["state"]
                .as_str()
                .map(toolnexus_format::state::is_terminal_state)
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_come_back_in_order_and_the_run_closes() {
        let mut runs = Runs::default();
        runs.begin("t1".into());
        assert_eq!(runs.task_id(), Some("t1"));
        runs.push("a", 1).unwrap();
        runs.push("b", 1).unwrap();
        assert_eq!(runs.end(), ["a", "b"]);
        assert_eq!(runs.task_id(), None);
        assert_eq!(runs.push("c", 1), Err(Refused::NoRun));
        assert!(runs.end().is_empty());
    }

    #[test]
    fn a_new_run_drops_the_open_one() {
        let mut runs = Runs::default();
        runs.begin("t1".into());
        runs.push(1, 1).unwrap();
        runs.begin("t2".into());
        assert_eq!(runs.task_id(), Some("t2"));
        assert!(runs.end().is_empty());
    }

    #[test]
    fn bounds_refuse_and_keep_nothing_of_the_refused_update() {
        let mut runs = Runs::default();
        runs.begin("t".into());
        assert!(
            matches!(runs.push(0, MAX_UPDATE_BYTES + 1), Err(Refused::Limit(m)) if m.contains("one update"))
        );
        for i in 0..8 {
            runs.push(i, MAX_UPDATE_BYTES).unwrap();
        }
        assert!(matches!(runs.push(9, 1), Err(Refused::Limit(m)) if m.contains("in all")));
        assert_eq!(runs.end().len(), 8);
        runs.begin("t".into());
        for i in 0..MAX_UPDATES {
            runs.push(i, 0).unwrap();
        }
        assert!(matches!(runs.push(0, 0), Err(Refused::Limit(m)) if m.contains("at most")));
    }

    #[test]
    fn terminal_states_in_any_spelling_stop_the_run() {
        assert!(is_terminal_text(
            r#"{"id":"t","status":{"state":"canceled"}}"#
        ));
        assert!(is_terminal_text(
            r#"{"id":"t","status":{"state":"TASK_STATE_FAILED"}}"#
        ));
        assert!(!is_terminal_text(
            r#"{"id":"t","status":{"state":"working"}}"#
        ));
        assert!(!is_terminal_text("not json"));
        assert!(!is_terminal_text(r#"{"id":"t"}"#));
    }
}

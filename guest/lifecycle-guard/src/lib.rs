//! `lifecycle-guard`: a middleware store component (world `task-store-middleware`, contract
//! 0.4.0).
//!
//! It sits in front of another store, reached through its imports, and passes every call through
//! unchanged, except one: a `save` that would move a Task **out of a terminal state**
//! (`completed`, `canceled`, `failed`, `rejected`, in either protocol version's spelling) is
//! refused with `invalid-input`, and nothing is written. Before each `save` it reads the stored
//! version through its imported `store.get`.
//!
//! What counts as a transition out: the stored version's state is terminal and the new version's
//! state is a different state (or missing). Saving a terminal Task again in the same state (a
//! retried write, an artifact added to a completed Task, `completed` re-spelled as
//! `TASK_STATE_COMPLETED`) passes.
//!
//! The check and the write are one atomic step: the guard saves on the condition that the
//! stored Task is still the version it checked (contract 0.2 compare-and-set). A caller's own
//! condition (`absent`, `version(n)`) is passed on as it is, since it already pins the version
//! checked; a plain save (`any`) becomes a save on the version read, and if another writer got
//! there first, the guard reads and checks again (up to 1,000 times, then `other`: a plain save
//! never answers `conflict`). Versions pass through unchanged.
//!
//! Push-notification configs (contract 0.3's `push-configs`) pass through unchanged too: the
//! guard has no rule about them, and a Task in a terminal state may still have its configs
//! read, listed and deleted (a client cleaning up after it).
//!
//! Build it with `cargo build -p toolnexus-lifecycle-guard --target wasm32-wasip2 --release`,
//! then compose it over a store with `tn-compose` (see `docs/compose-stores.md`).

use serde_json::{Map, Value};
use std::fmt;
pub use toolnexus_format::state::TERMINAL_STATES;
use toolnexus_format::state::{is_terminal_state, same_state};
use toolnexus_format::{TaskError, parse_task, task_id};

/// Why a save was refused, or could not be checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The new version is not a Task at all.
    InvalidTask(TaskError),
    /// The stored version is terminal and the new one would leave that state.
    LeavesTerminalState {
        id: String,
        from: String,
        to: Option<String>,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::InvalidTask(e) => e.fmt(f),
            Refusal::LeavesTerminalState { id, from, to } => {
                write!(
                    f,
                    "lifecycle-guard: Task {id:?} is {from:?}, a terminal state; refusing to move it to "
                )?;
                match to {
                    Some(to) => write!(f, "{to:?}"),
                    None => f.write_str("a version with no status.state"),
                }
            }
        }
    }
}

/// What the guard needs of the version about to be saved, read from it once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextVersion {
    /// Its id: what the guard looks up first.
    pub id: String,
    /// Its `status.state`, if it has one.
    pub state: Option<String>,
}

/// Reads the version about to be saved (JSON text); text that is not a Task is refused.
pub fn read_next(task: &str) -> Result<NextVersion, Refusal> {
    let map = parse_task(task).map_err(Refusal::InvalidTask)?;
    Ok(NextVersion {
        id: task_id(&map).map_err(Refusal::InvalidTask)?.to_owned(),
        state: state_in(&map),
    })
}

fn state_in(task: &Map<String, Value>) -> Option<String> {
    task.get("status")?
        .get("state")?
        .as_str()
        .map(str::to_owned)
}

/// The `status.state` of a stored version's JSON text, if it has one. `None` also for text that
/// does not parse: the store underneath is the judge of what it stored.
fn state_of(text: &str) -> Option<String> {
    state_in(&parse_task(text).ok()?)
}

/// Whether the guard lets `next` replace `previous` (the stored version's JSON text, if any).
pub fn check_transition(previous: Option<&str>, next: &NextVersion) -> Result<(), Refusal> {
    let Some(from) = previous.and_then(state_of) else {
        return Ok(());
    };
    if !is_terminal_state(&from) {
        return Ok(());
    }
    match &next.state {
        Some(to) if same_state(&from, to) => Ok(()),
        to => Err(Refusal::LeavesTerminalState {
            id: next.id.clone(),
            from,
            to: to.clone(),
        }),
    }
}

/// The component glue. Natively it is only type-checked; see `export!` below.
mod component {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "task-store-middleware",
    });

    use super::{Refusal, check_transition, read_next};
    use exports::toolnexus::task_store::catalog as ex_catalog;
    use exports::toolnexus::task_store::config as ex_config;
    use exports::toolnexus::task_store::push_configs as ex_push_configs;
    use exports::toolnexus::task_store::store as ex_store;
    use toolnexus::task_store::{catalog, config, push_configs, store};

    struct Guard;

    /// The store underneath answers in its (imported) error type; pass it on as ours.
    fn pass(err: store::StoreError) -> ex_store::StoreError {
        match err {
            store::StoreError::InvalidInput(m) => ex_store::StoreError::InvalidInput(m),
            store::StoreError::Corrupt(m) => ex_store::StoreError::Corrupt(m),
            store::StoreError::Io(m) => ex_store::StoreError::Io(m),
            store::StoreError::Conflict(c) => {
                ex_store::StoreError::Conflict(ex_store::VersionConflict {
                    current: c.current,
                    message: c.message,
                })
            }
            store::StoreError::OutcomeUnknown(m) => ex_store::StoreError::OutcomeUnknown(m),
            store::StoreError::Other(m) => ex_store::StoreError::Other(m),
        }
    }

    /// How often a plain save is re-read and re-checked after losing a race. Each lost race
    /// means another writer's save landed, so with N writers on one Task a save needs at most
    /// about N attempts; the host's call deadline bounds the time anyway.
    const ATTEMPTS: usize = 1000;

    impl ex_store::Guest for Guard {
        fn get(id: String) -> Result<Option<ex_store::StoredTask>, ex_store::StoreError> {
            let found = store::get(&id).map_err(pass)?;
            Ok(found.map(|t| ex_store::StoredTask {
                task: t.task,
                version: t.version,
            }))
        }

        fn save(task: String, condition: ex_store::Condition) -> Result<u64, ex_store::StoreError> {
            let refuse = |r: Refusal| ex_store::StoreError::InvalidInput(r.to_string());
            let next = read_next(&task).map_err(refuse)?;
            let mut last = None;
            for _ in 0..ATTEMPTS {
                let previous = store::get(&next.id).map_err(pass)?;
                check_transition(previous.as_ref().map(|p| p.task.as_str()), &next)
                    .map_err(refuse)?;
                // Save on the version checked: the caller's own condition pins it already;
                // a plain save is pinned to what was read.
                let (pinned, retry) = match condition {
                    ex_store::Condition::Any => (
                        match &previous {
                            Some(p) => store::Condition::Version(p.version),
                            None => store::Condition::Absent,
                        },
                        true,
                    ),
                    ex_store::Condition::Absent => (store::Condition::Absent, false),
                    ex_store::Condition::Version(v) => (store::Condition::Version(v), false),
                };
                match store::save(&task, pinned) {
                    Err(store::StoreError::Conflict(c)) if retry => last = Some(c),
                    other => return other.map_err(pass),
                }
            }
            // A plain save never answers `conflict` (the contract); this is contention.
            let current = last.and_then(|c| c.current);
            Err(ex_store::StoreError::Other(format!(
                "lifecycle-guard: task {:?} kept changing under this save ({ATTEMPTS} attempts; now at version {current:?})",
                next.id
            )))
        }
    }

    impl ex_config::Guest for Guard {
        fn configure(settings: Vec<(String, String)>) -> Result<(), String> {
            // The guard reads the stored version itself (`save`) and leaves judging it to the
            // store underneath, so that store must keep checking what its `get` answers:
            // `answers-checked` speaks for the host, not for the guard, and is not passed on.
            let settings: Vec<_> = settings
                .into_iter()
                .filter(|(name, _)| name != "answers-checked")
                .collect();
            config::configure(&settings)
        }
    }

    impl ex_catalog::Guest for Guard {
        fn list(
            query: ex_catalog::ListQuery,
        ) -> Result<ex_catalog::TaskPage, ex_store::StoreError> {
            let page = catalog::list(&catalog::ListQuery {
                context_id: query.context_id,
                state: query.state,
                status_timestamp_after: query.status_timestamp_after,
                page_size: query.page_size,
                page_token: query.page_token,
            })
            .map_err(pass)?;
            Ok(ex_catalog::TaskPage {
                tasks: page.tasks,
                next_page_token: page.next_page_token,
                total_size: page.total_size,
            })
        }

        fn delete(id: String) -> Result<bool, ex_store::StoreError> {
            catalog::delete(&id).map_err(pass)
        }
    }

    /// No rule about configs: each call is the store's, answers and errors as they are.
    impl ex_push_configs::Guest for Guard {
        fn set(task_id: String, config: String) -> Result<(), ex_store::StoreError> {
            push_configs::set(&task_id, &config).map_err(pass)
        }

        fn get(task_id: String, config_id: String) -> Result<Option<String>, ex_store::StoreError> {
            push_configs::get(&task_id, &config_id).map_err(pass)
        }

        fn list(task_id: String) -> Result<Vec<String>, ex_store::StoreError> {
            push_configs::list(&task_id).map_err(pass)
        }

        fn delete(task_id: String, config_id: String) -> Result<bool, ex_store::StoreError> {
            push_configs::delete(&task_id, &config_id).map_err(pass)
        }
    }

    // Only a wasm build exports the component ABI (native linkers reject the export names).
    #[cfg(target_family = "wasm")]
    export!(Guard);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next(text: &str) -> NextVersion {
        read_next(text).unwrap()
    }

    fn t(state: Option<&str>) -> String {
        match state {
            Some(s) => format!(r#"{{"id":"t1","status":{{"state":"{s}"}}}}"#),
            None => r#"{"id":"t1"}"#.to_owned(),
        }
    }

    #[test]
    fn a_new_task_passes_in_any_state() {
        for s in [Some("completed"), Some("working"), None] {
            assert_eq!(check_transition(None, &next(&t(s))), Ok(()));
        }
    }

    #[test]
    fn non_terminal_states_move_freely() {
        let pairs = [
            ("submitted", "working"),
            ("working", "input-required"),
            ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING"),
            ("working", "completed"),
            ("working", "submitted"),
        ];
        for (from, to) in pairs {
            assert_eq!(
                check_transition(Some(&t(Some(from))), &next(&t(Some(to)))),
                Ok(()),
                "{from} → {to}"
            );
        }
    }

    #[test]
    fn every_terminal_state_is_final_in_both_spellings() {
        for from in [
            "completed",
            "canceled",
            "cancelled",
            "failed",
            "rejected",
            "TASK_STATE_COMPLETED",
            "TASK_STATE_CANCELED",
            "TASK_STATE_CANCELLED",
            "TASK_STATE_FAILED",
            "TASK_STATE_REJECTED",
        ] {
            for to in [
                Some("working"),
                Some("submitted"),
                Some("TASK_STATE_WORKING"),
                None,
            ] {
                let err = check_transition(Some(&t(Some(from))), &next(&t(to))).unwrap_err();
                assert!(
                    matches!(&err, Refusal::LeavesTerminalState { id, from: f, .. } if id == "t1" && f == from),
                    "{from} → {to:?}: {err:?}"
                );
                assert!(err.to_string().contains("terminal state"), "{err}");
            }
        }
        // One terminal state to another is still leaving the first.
        assert!(check_transition(Some(&t(Some("completed"))), &next(&t(Some("failed")))).is_err());
        assert!(
            check_transition(Some(&t(Some("canceled"))), &next(&t(Some("completed")))).is_err()
        );
    }

    #[test]
    fn staying_in_a_terminal_state_passes() {
        let pairs = [
            ("completed", "completed"),
            ("completed", "TASK_STATE_COMPLETED"),
            ("TASK_STATE_CANCELED", "cancelled"),
            ("canceled", "TASK_STATE_CANCELLED"),
            ("failed", "FAILED"),
        ];
        for (from, to) in pairs {
            assert_eq!(
                check_transition(Some(&t(Some(from))), &next(&t(Some(to)))),
                Ok(()),
                "{from} → {to}"
            );
        }
    }

    #[test]
    fn the_new_version_must_be_a_task() {
        for bad in ["not json", "[1]", r#"{"id": 7}"#, r#"{"id": ""}"#, "{}"] {
            assert!(
                matches!(read_next(bad), Err(Refusal::InvalidTask(_))),
                "{bad}"
            );
        }
        assert_eq!(
            read_next(&t(Some("working"))).unwrap(),
            NextVersion {
                id: "t1".into(),
                state: Some("working".into())
            }
        );
        assert_eq!(next(&t(None)).state, None);
    }

    #[test]
    fn a_stored_version_without_a_state_does_not_lock_the_task() {
        assert_eq!(
            check_transition(Some(&t(None)), &next(&t(Some("working")))),
            Ok(())
        );
        assert_eq!(
            check_transition(Some("not json"), &next(&t(Some("working")))),
            Ok(())
        );
    }
}

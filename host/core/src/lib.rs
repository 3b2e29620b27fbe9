//! The toolnexus task-store seam: what an A2A runtime needs to keep its Tasks, and nothing that
//! runs them elsewhere.
//!
//! - [`Task`]: an A2A Task document, a JSON object with a non-empty string `id`, checked once;
//! - [`TaskStore`]: the trait every store implements (`get`, `save`, and the optional `list`,
//!   `delete` and compare-and-set `save_if`), used as `Arc<dyn TaskStore>`;
//! - [`transition`]: the read → decide → compare-and-set loop that moves a Task from one state to
//!   the next without losing a concurrent writer's update;
//! - [`state`]: the A2A task states in every protocol version's spelling, and which are terminal;
//! - [`StoreError`]: the one error type, which says whose fault an error is ([`Blame`]);
//! - the two stores that need nothing more: [`InMemoryTaskStore`] and [`FileTaskStore`];
//! - [`options`]: the parsing that every backend's selector options share.
//!
//! It is not a sandbox, a database client or a server: the wasmtime host (`toolnexus-wasm`),
//! the PostgreSQL store (`toolnexus-postgres`) and the A2A server (`toolnexus-a2a`) build on
//! this crate, and `toolnexus` picks a store from a selector string. Nothing here depends on
//! wasmtime, a database driver or an HTTP stack, and nothing here needs the `wasm32-wasip2`
//! target to build.
//!
//! ```
//! use toolnexus_core::{FileTaskStore, Task, TaskStore};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), toolnexus_core::StoreError> {
//! # let dir = tempfile::tempdir().unwrap();
//! let store = FileTaskStore::new(dir.path())?;
//! store.save(&r#"{"id": "task-1", "status": {"state": "submitted"}}"#.parse::<Task>()?).await?;
//! let task = store.get("task-1").await?.expect("just saved");
//! assert_eq!(toolnexus_core::task_state(&task), "submitted");
//! assert!(store.get("no-such-id").await?.is_none()); // a miss is None, never an error
//! # Ok(()) }
//! ```

mod error;
mod file;
mod memory;
pub mod options;
mod push;
mod store;
mod task;
pub mod transition;

pub use error::{Blame, Limit, StoreError, TaskError};
pub use file::FileTaskStore;
pub use memory::InMemoryTaskStore;
pub use push::{
    MAX_PUSH_CONFIG_BYTES, MAX_PUSH_CONFIGS_PER_TASK, PushConfig, check_config_id,
    sort_push_configs,
};
pub use store::{Expect, ListQuery, StoreUsage, TaskPage, TaskStore, check_expected, check_id};
pub use task::Task;
pub use toolnexus_format::Durability;
pub use toolnexus_format::Timestamp;
/// Listing: the order, the opaque page tokens ([`query::SortKey`]) and one-page collection
/// ([`query::PageCollector`]) every built-in store shares.
pub use toolnexus_format::query;
pub use toolnexus_format::state;
pub use transition::{Start, Step, TransitionError, transition, transition_from};

/// Where durable stores keep Tasks when no directory is named: `.toolnexus/tasks` under the
/// current directory.
pub const DEFAULT_DATA_DIR: &str = ".toolnexus/tasks";

/// The state of a Task (`status.state`) as stored, in whatever spelling, or `""` if it has none.
/// Compare states with [`state::same_state`] or parse them with [`state::TaskState::parse`].
pub fn task_state(task: &Task) -> &str {
    task.get("status")
        .and_then(|s| s.get("state"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
}

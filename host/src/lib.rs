//! Task persistence for A2A agent runtimes.
//!
//! An A2A runtime creates Tasks (`submitted → working → completed/failed/…`) and must find them
//! again, across polls and restarts. This crate is the persistence seam for that: the
//! [`TaskStore`] trait (`get` / `save`, async, usable as `Arc<dyn TaskStore>`) and its stores:
//!
//! - [`InMemoryTaskStore`]: the default, for the life of the process;
//! - [`FileTaskStore`]: one JSON file per Task, atomic writes;
//! - [`WasmTaskStore`]: any WebAssembly component of the `toolnexus:task-store` world (see
//!   `wit/`), sandboxed by wasmtime; the file store itself ships as one;
//! - `PostgresTaskStore` (cargo feature `postgres`, on by default): one PostgreSQL table, shared
//!   by every replica of a runtime (`docs/postgres.md`).
//!
//! [`resolve_store`] picks one from a selector string such as `"file:./tasks"` or
//! `"wasm:./store.wasm?dir=./tasks"`. It is not an A2A server or client; it is where one keeps
//! its Tasks.
//!
//! ```no_run
//! use toolnexus::serve::{resolve_store, Task};
//! # async fn demo() -> Result<(), toolnexus::StoreError> {
//! let store = resolve_store("wasm:builtin?dir=./tasks")?;
//! store.save(&r#"{"id": "task-1", "status": {"state": "submitted"}}"#.parse::<Task>()?).await?;
//! let task = store.get("task-1").await?.expect("just saved");
//! assert_eq!(task.get("status").unwrap()["state"], "submitted");
//! assert!(store.get("no-such-id").await?.is_none()); // a miss is None, never an error
//! # Ok(()) }
//! ```

mod cache;
mod error;
mod file;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
mod selector;
pub mod server;
mod store;
mod task;
mod wasm;

pub use cache::{CacheOutcome, default_cache_dir};
pub use error::{Blame, Limit, StoreError, TaskError};
pub use file::FileTaskStore;
pub use memory::InMemoryTaskStore;
#[cfg(feature = "postgres")]
pub use postgres::{
    DEFAULT_TABLE as POSTGRES_DEFAULT_TABLE, POSTGRES_OPTIONS, PostgresTaskStore,
    PostgresTaskStoreBuilder,
};
pub use selector::{
    BUILTIN_COMPONENT, DEFAULT_DATA_DIR, StoreSelector, WASM_OPTIONS, resolve_store,
};
pub use store::{ListQuery, TaskPage, TaskStore};
pub use task::Task;
pub use toolnexus_format::Durability;
pub use wasm::{
    CATALOG_INTERFACE, CONFIG_INTERFACE, CacheDir, ComponentSource, FILE_STORE_COMPONENT, Limits,
    LoadReport, STORE_INTERFACE, STORE_PACKAGE, WasmTaskStore, WasmTaskStoreBuilder,
};

/// The state of a Task (`status.state`), or `""` if it has none.
pub fn task_state(task: &Task) -> &str {
    task.get("status")
        .and_then(|s| s.get("state"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
}

/// The names the reference Python and JavaScript packages use (`toolnexus.serve`).
pub mod serve {
    pub use crate::server::{Agent, EchoAgent, ServerConfig, router, serve};
    pub use crate::{
        FileTaskStore, InMemoryTaskStore, ListQuery, StoreError, StoreSelector, Task, TaskPage,
        TaskStore, WasmTaskStore, resolve_store,
    };
}

//! Task persistence for A2A agent runtimes.
//!
//! An A2A runtime creates Tasks (`submitted → working → completed/failed/…`) and must find them
//! again, across polls and restarts. This crate is the front door to the persistence seam: it
//! re-exports the seam itself ([`TaskStore`], [`Task`], [`StoreError`], the [`transition`]
//! helper, the [`state`] rules, [`InMemoryTaskStore`] and [`FileTaskStore`], all from
//! `toolnexus-core`), the backends behind cargo features, and [`resolve_store`], which picks a
//! store from a selector string such as `"file:./tasks"` or `"wasm:./store.wasm?dir=./tasks"`:
//!
//! - [`wasm`] (feature `wasm`, on by default; `toolnexus-wasm`): any WebAssembly component of
//!   the `toolnexus:task-store` world, sandboxed by wasmtime; the file store ships as one;
//! - [`postgres`] (feature `postgres`, on by default; `toolnexus-postgres`): one PostgreSQL
//!   table, shared by every replica of a runtime (`docs/postgres.md`).
//!
//! It is not an A2A server: that is `toolnexus-a2a`, which serves any store this crate makes.
//! A runtime that needs only the trait and the in-process stores can depend on
//! `toolnexus-core` alone, or on this crate with `default-features = false`.
//!
//! ```no_run
//! use toolnexus::{Task, resolve_store};
//! # async fn demo() -> Result<(), toolnexus::StoreError> {
//! let store = resolve_store("wasm:builtin?dir=./tasks")?;
//! store.save(&r#"{"id": "task-1", "status": {"state": "submitted"}}"#.parse::<Task>()?).await?;
//! let task = store.get("task-1").await?.expect("just saved");
//! assert_eq!(task.get("status").unwrap()["state"], "submitted");
//! assert!(store.get("no-such-id").await?.is_none()); // a miss is None, never an error
//! # Ok(()) }
//! ```

mod namespace;
mod selector;

pub use namespace::{
    MAX_NAMESPACE_DEPTH, MAX_NAMESPACED_TABLE, MAX_SEGMENT_LEN, Namespaces, check_namespace,
    check_namespace_segment, namespace_table,
};
pub use selector::{StoreSelector, resolve_store};
pub use toolnexus_core::{
    Blame, DEFAULT_DATA_DIR, Durability, Expect, FileTaskStore, InMemoryTaskStore, Limit,
    ListQuery, MAX_PUSH_CONFIG_BYTES, MAX_PUSH_CONFIGS_PER_TASK, PushConfig, Step, StoreError,
    StoreUsage, Task, TaskError, TaskPage, TaskStore, Timestamp, TransitionError, check_config_id,
    options, query, sort_push_configs, state, task_state, transition,
};

/// Sandboxed WebAssembly component stores: [`wasm::WasmTaskStore`] and its builder, limits,
/// compiled-component cache and the embedded file-store component (the `toolnexus-wasm`
/// crate).
#[cfg(feature = "wasm")]
pub use toolnexus_wasm as wasm;

/// The PostgreSQL store: [`postgres::PostgresTaskStore`] and its builder (the
/// `toolnexus-postgres` crate).
#[cfg(feature = "postgres")]
pub use toolnexus_postgres as postgres;

// The README's Rust examples, compiled and run as doctests.
#[cfg(all(doctest, feature = "wasm"))]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

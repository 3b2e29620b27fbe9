//! [`resolve_store`]: one selector string (or an already-built store) → a store. The prefix
//! picks the backend; each backend crate parses the rest of its own selector.

use std::sync::Arc;
use toolnexus_core::options::redact;
use toolnexus_core::{FileTaskStore, InMemoryTaskStore, StoreError, TaskStore};

/// What [`resolve_store`] accepts: nothing (the default), a selector string, or a store.
#[derive(Clone)]
pub enum StoreSelector {
    /// No selector: the in-memory store.
    Default,
    /// A selector string, such as `"memory"`, `"file:./tasks"` or `"wasm:./store.wasm"`.
    Named(String),
    /// An already-built store, used as it is.
    Store(Arc<dyn TaskStore>),
}

impl From<&str> for StoreSelector {
    fn from(s: &str) -> Self {
        StoreSelector::Named(s.to_owned())
    }
}

impl From<String> for StoreSelector {
    fn from(s: String) -> Self {
        StoreSelector::Named(s)
    }
}

impl From<Option<&str>> for StoreSelector {
    fn from(s: Option<&str>) -> Self {
        s.map_or(StoreSelector::Default, StoreSelector::from)
    }
}

impl From<Option<String>> for StoreSelector {
    fn from(s: Option<String>) -> Self {
        s.map_or(StoreSelector::Default, StoreSelector::Named)
    }
}

impl From<Arc<dyn TaskStore>> for StoreSelector {
    fn from(store: Arc<dyn TaskStore>) -> Self {
        StoreSelector::Store(store)
    }
}

/// Turns a selector into a store.
///
/// | selector | store |
/// |---|---|
/// | none, `"memory"` | a new [`InMemoryTaskStore`] |
/// | `"file:<dir>"` | [`FileTaskStore`] over `<dir>` (created if missing) |
/// | `"wasm:<component>[?dir=<dir>]"` | [`crate::wasm::WasmTaskStore`] running the component file, granted `<dir>` (default [`crate::DEFAULT_DATA_DIR`]); `wasm:builtin` is the embedded file-store component |
/// | `"postgres://<user>:<password>@<host>:<port>/<db>[?table=<name>&pool=8&timeout=5s]"` (or `postgresql://`) | [`crate::postgres::PostgresTaskStore`] (cargo feature `postgres`): one table on that server, created if missing; other options are libpq connection parameters |
/// | an `Arc<dyn TaskStore>` | that same store |
/// | anything else | [`StoreError::UnknownSelector`]: `Unknown A2A store "…"` |
///
/// Each backend parses its own selector: `wasm:` in [`crate::wasm::builder_from_selector`],
/// `postgres://` in [`crate::postgres::builder_from_selector`]; `memory` and `file:` are core's.
///
/// `wasm:` options after `?` ([`crate::wasm::WASM_OPTIONS`]) are described once, in the
/// repository's `docs/wasm-options.md`.
///
/// A `wasm:` component is loaded, compiled and checked here, so a missing or wrong component
/// fails now rather than at the first call (compiling may take a second: from async code, call
/// this in `spawn_blocking`). A `postgres://` store connects and creates its table here, so a
/// bad URL, wrong credentials or an unreachable server fail now too (within the connect
/// timeout, 5 s by default); this blocks the calling thread, inside a Tokio runtime or not.
pub fn resolve_store(selector: impl Into<StoreSelector>) -> Result<Arc<dyn TaskStore>, StoreError> {
    let selector = match selector.into() {
        StoreSelector::Default => return Ok(Arc::new(InMemoryTaskStore::new())),
        StoreSelector::Store(store) => return Ok(store),
        StoreSelector::Named(s) => s,
    };
    if selector == "memory" {
        return Ok(Arc::new(InMemoryTaskStore::new()));
    }
    if let Some(dir) = selector.strip_prefix("file:") {
        if dir.is_empty() {
            return Err(StoreError::InvalidSelector {
                selector: selector.clone(),
                reason: "no directory after \"file:\"".into(),
            });
        }
        return Ok(Arc::new(FileTaskStore::new(dir)?));
    }
    if selector.starts_with("wasm:") {
        return resolve_wasm(&selector);
    }
    if selector.starts_with("postgres://") || selector.starts_with("postgresql://") {
        return resolve_postgres(&selector);
    }
    // A mistyped scheme (`postgress://…`) may still carry a password: never show it.
    Err(StoreError::UnknownSelector(redact(&selector)))
}

#[cfg(feature = "wasm")]
fn resolve_wasm(selector: &str) -> Result<Arc<dyn TaskStore>, StoreError> {
    Ok(Arc::new(
        toolnexus_wasm::builder_from_selector(selector)?.build()?,
    ))
}

#[cfg(not(feature = "wasm"))]
fn resolve_wasm(selector: &str) -> Result<Arc<dyn TaskStore>, StoreError> {
    Err(StoreError::InvalidSelector {
        selector: selector.to_owned(),
        reason: "this build of toolnexus lacks WebAssembly component support: rebuild it with \
                 the cargo feature \"wasm\" (on by default)"
            .into(),
    })
}

#[cfg(feature = "postgres")]
fn resolve_postgres(selector: &str) -> Result<Arc<dyn TaskStore>, StoreError> {
    Ok(Arc::new(
        toolnexus_postgres::builder_from_selector(selector)?.connect_blocking()?,
    ))
}

#[cfg(not(feature = "postgres"))]
fn resolve_postgres(selector: &str) -> Result<Arc<dyn TaskStore>, StoreError> {
    // Whatever follows the scheme is not shown: it may hold a password.
    let scheme = selector.split("://").next().unwrap_or("postgres");
    Err(StoreError::InvalidSelector {
        selector: format!("{scheme}://…"),
        reason: "this build of toolnexus lacks PostgreSQL support: rebuild it with the cargo \
                 feature \"postgres\" (on by default)"
            .into(),
    })
}

//! The store type: a handle on its own small Tokio runtime, where the driver's connections
//! live, so the store works from any runtime (or none) and dropping it never blocks.

use crate::pool::{Shared, deadline};
use std::future::Future;
use std::sync::Arc;
use toolnexus_core::StoreError;

/// Tasks in a PostgreSQL table: durable, shared by every process that opens the same table, and
/// listable and deletable.
///
/// ```no_run
/// # async fn demo() -> Result<(), toolnexus_core::StoreError> {
/// use toolnexus_core::TaskStore;
/// use toolnexus_postgres::PostgresTaskStore;
/// let store = PostgresTaskStore::builder("postgres://app:secret@db:5432/agents")
///     .table("tasks")
///     .pool_size(16)
///     .connect()
///     .await?;
/// store.save(&r#"{"id": "task-1"}"#.parse()?).await?;
/// # Ok(()) }
/// ```
///
/// Every call fails promptly with [`StoreError::Unavailable`] while the server cannot be
/// reached (within the call timeout, 5 s by default), and the store recovers by itself when it is
/// back: broken connections are discarded and new ones made on demand.
pub struct PostgresTaskStore {
    pub(crate) shared: Arc<Shared>,
    pub(crate) handle: tokio::runtime::Handle,
    /// Owned so that dropping the store stops its threads; `None` only during drop.
    pub(crate) runtime: Option<tokio::runtime::Runtime>,
}

impl PostgresTaskStore {
    /// The table, as written in SQL (quoted).
    pub fn table(&self) -> &str {
        &self.shared.sql.table
    }

    /// Runs `op` on the store's runtime, within the call timeout.
    pub(crate) async fn run<T, F>(&self, op: impl FnOnce(Arc<Shared>) -> F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let shared = Arc::clone(&self.shared);
        let call = deadline(shared.timeout, shared.describe.clone(), op(shared));
        self.handle
            .spawn(call)
            .await
            .map_err(|e| StoreError::Backend {
                store: self.shared.describe.clone(),
                reason: format!("the store's worker stopped: {e}"),
            })?
    }
}

impl Drop for PostgresTaskStore {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Never blocks, so dropping the store inside async code is fine.
            runtime.shutdown_background();
        }
    }
}

impl std::fmt::Debug for PostgresTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresTaskStore")
            .field("store", &self.shared.describe)
            .finish_non_exhaustive()
    }
}

//! What every call of a store shares (the connection pool, the statements, the call timeout),
//! and how one call runs: within the timeout, on a connection that is alive.

use crate::errors::{connection_lost, pg_error, pool_error};
use crate::statements::Sql;
use deadpool_postgres::{Object, Pool};
use std::future::Future;
use std::time::Duration;
use toolnexus_core::StoreError;

/// The state of a store that its calls share, on the store's runtime.
pub(crate) struct Shared {
    pub(crate) pool: Pool,
    pub(crate) sql: Sql,
    pub(crate) timeout: Duration,
    pub(crate) describe: String,
}

/// `call` within `timeout`; past it, [`StoreError::Unavailable`] naming `store`.
pub(crate) async fn deadline<T>(
    timeout: Duration,
    store: String,
    call: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::time::timeout(timeout, call)
        .await
        .unwrap_or_else(|_| {
            Err(StoreError::Unavailable {
                store,
                reason: format!("no answer within {timeout:?}"),
            })
        })
}

/// `call` within the store's call timeout.
pub(crate) async fn within<T>(
    shared: &Shared,
    call: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    deadline(shared.timeout, shared.describe.clone(), call).await
}

/// A connection from the pool, one query on it, and one retry on a fresh connection if the
/// first one turned out to be dead (the server restarted since it was made). `retry` is false
/// for calls whose answer a lost reply could change (delete).
pub(crate) async fn with_client<T, F, Fut>(
    shared: &Shared,
    retry: bool,
    mut f: F,
) -> Result<T, StoreError>
where
    F: FnMut(Object) -> Fut,
    Fut: Future<Output = (Object, Result<T, tokio_postgres::Error>)>,
{
    let store = &shared.describe;
    let mut attempts_left = if retry { 2 } else { 1 };
    loop {
        attempts_left -= 1;
        let client = shared
            .pool
            .get()
            .await
            .map_err(|e| pool_error(store, e, false))?;
        let (client, result) = f(client).await;
        match result {
            Ok(value) => return Ok(value),
            Err(e) if connection_lost(&e) => {
                // Never hand this connection out again.
                drop(Object::take(client));
                if attempts_left == 0 {
                    return Err(pg_error(store, &e, false));
                }
            }
            Err(e) => return Err(pg_error(store, &e, false)),
        }
    }
}

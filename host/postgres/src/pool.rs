//! What every call of a store shares (the connection pool, the statements, the call timeout),
//! and how one call runs: within the timeout, on a connection that is alive.

use crate::errors::{chain, connection_lost, pg_error, pool_error};
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

/// What a connection lost during a call means for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnLost {
    /// A read: tried once more on a fresh connection.
    Retry,
    /// A write: it may have been sent and committed, and a retry could undo a write another
    /// client made meanwhile, so it is never retried; its outcome is said to be unknown
    /// ([`StoreError::OutcomeUnknown`]).
    Unknown,
}

/// A connection from the pool (one the pool hands out already closed is dropped and another
/// taken: nothing was sent on it), one query on it, and, if the connection breaks during the
/// query, what `on_lost` says.
pub(crate) async fn with_client<T, F, Fut>(
    shared: &Shared,
    on_lost: OnLost,
    mut f: F,
) -> Result<T, StoreError>
where
    F: FnMut(Object) -> Fut,
    Fut: Future<Output = (Object, Result<T, tokio_postgres::Error>)>,
{
    let store = &shared.describe;
    let mut attempts_left = 2;
    loop {
        attempts_left -= 1;
        let client = shared
            .pool
            .get()
            .await
            .map_err(|e| pool_error(store, e, false))?;
        if client.is_closed() && attempts_left > 0 {
            drop(Object::take(client));
            continue;
        }
        let (client, result) = f(client).await;
        match result {
            Ok(value) => return Ok(value),
            Err(e) if connection_lost(&e) => {
                // Never hand this connection out again.
                drop(Object::take(client));
                match on_lost {
                    OnLost::Retry if attempts_left > 0 => {}
                    OnLost::Retry => return Err(pg_error(store, &e, false)),
                    OnLost::Unknown => {
                        return Err(StoreError::OutcomeUnknown {
                            store: store.clone(),
                            reason: format!(
                                "the connection broke while the write was on its way or its \
                                 answer was ({}); it may have been committed: read again \
                                 before writing again",
                                chain(&e)
                            ),
                        });
                    }
                }
            }
            Err(e) => return Err(pg_error(store, &e, false)),
        }
    }
}

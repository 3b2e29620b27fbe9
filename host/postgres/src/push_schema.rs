//! The push-config table's part of making a store's tables ready: created if missing (beside
//! a new Task table, or beside one made by an earlier release, which had none), then checked
//! to be one of ours.

use crate::errors::{chain, pg_error};
use crate::pool::{Shared, within};
use crate::push_sql::PUSH_COLUMN_TYPES;
use tokio_postgres::error::SqlState;
use toolnexus_core::StoreError;

/// Creates the push-config table if it is missing (in a transaction under the advisory lock
/// `lock_key` of the schema step, so replicas starting together create it once), then checks
/// it.
pub(crate) async fn ensure(
    shared: &Shared,
    client: &mut deadpool_postgres::Client,
    lock_key: i64,
) -> Result<(), StoreError> {
    let failed = |e: tokio_postgres::Error| pg_error(&shared.describe, &e, true);
    let tx = within(shared, async { client.transaction().await.map_err(failed) }).await?;
    within(shared, async {
        tx.query_one(&format!("SELECT pg_advisory_xact_lock({lock_key})"), &[])
            .await
            .map_err(failed)
    })
    .await?;
    create_if_missing(shared, &tx).await?;
    within(shared, async { tx.commit().await.map_err(failed) }).await?;
    check(shared, client).await
}

/// Creates the push-config table if it is missing. Only when missing: even `CREATE TABLE IF
/// NOT EXISTS` needs the right to create in the schema, which a user that may only read and
/// write existing tables lacks.
async fn create_if_missing(
    shared: &Shared,
    tx: &tokio_postgres::Transaction<'_>,
) -> Result<(), StoreError> {
    let store = &shared.describe;
    let push = &shared.sql.push;
    let exists: bool = within(shared, async {
        tx.query_one("SELECT to_regclass($1) IS NOT NULL", &[&push.table])
            .await
            .map_err(|e| pg_error(store, &e, true))
    })
    .await?
    .get(0);
    if exists {
        return Ok(());
    }
    let create = push.create(&shared.sql.table);
    tracing::info!(store = %store, table = %push.table, "creating the push config table");
    within(shared, async {
        tx.batch_execute(&create).await.map_err(|e| {
            if e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) {
                StoreError::InvalidSelector {
                    selector: store.clone(),
                    reason: format!(
                        "the push config table {} is missing (tables made before push \
                         notifications have none), and this user may not create it ({}); \
                         connect once as a user who may, or have one run: {create}",
                        push.table,
                        chain(&e)
                    ),
                }
            } else {
                pg_error(store, &e, true)
            }
        })
    })
    .await
}

/// Checks that the push-config table has the columns the store reads and writes, with their
/// types, so a foreign table of the same name is refused rather than written to.
async fn check(shared: &Shared, client: &deadpool_postgres::Client) -> Result<(), StoreError> {
    let store = &shared.describe;
    let push = &shared.sql.push;
    let not_ours = |reason: String| StoreError::InvalidSelector {
        selector: store.clone(),
        reason: format!(
            "table {} exists but is not a toolnexus push config table: {reason}",
            push.table
        ),
    };
    let probe = within(shared, async {
        client
            .prepare(&push.probe())
            .await
            .map_err(|e| match e.code() {
                // Syntax error or access rule violation: a missing column, say.
                Some(code) if code.code().starts_with("42") => not_ours(chain(&e)),
                _ => pg_error(store, &e, true),
            })
    })
    .await?;
    for (column, want) in probe.columns().iter().zip(PUSH_COLUMN_TYPES) {
        if column.type_().name() != want {
            return Err(not_ours(format!(
                "column {} is {}, not {want}",
                column.name(),
                column.type_().name()
            )));
        }
    }
    // Statements are prepared on first use on each connection; this one also checks the rights.
    within(shared, async {
        client
            .prepare_cached(&push.get)
            .await
            .map_err(|e| pg_error(store, &e, true))?;
        Ok(())
    })
    .await
}

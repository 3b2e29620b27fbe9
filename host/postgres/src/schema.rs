//! The table: created with its indexes if missing, migrated from an earlier version (and its
//! new list-order column backfilled), and checked to be one of ours, when a store connects;
//! likewise the push-config table beside it (`push_schema`).

use crate::errors::{chain, pg_error, pool_error};
use crate::pool::{OnLost, Shared, with_client, within};
use crate::push_schema;
use crate::statements::BACKFILLED;
use std::sync::Arc;
use tokio_postgres::error::SqlState;
use toolnexus_core::StoreError;
use toolnexus_format::query::Timestamp;

/// Rows read and updated per statement of the backfill.
const BACKFILL_BATCH: i64 = 500;

/// Makes the table ready, then fills in what a migration left to do.
pub(crate) async fn open(shared: Arc<Shared>) -> Result<(), StoreError> {
    if setup(&shared).await? {
        backfill(&shared).await?;
    }
    Ok(())
}

/// Creates the table and its indexes if missing, or migrates a table of an earlier version
/// (under an advisory lock, so replicas starting together do not race), then checks that the
/// table has the columns this store needs; then the same for the push-config table. `true` if
/// `status_ts_ns` may still need a backfill.
///
/// Each step has the call timeout, except the migration's DDL: an index build takes as long
/// as the table needs, so it runs without a statement timeout (but waits for its locks at most
/// the call timeout).
async fn setup(shared: &Shared) -> Result<bool, StoreError> {
    let store = &shared.describe;
    let sql = &shared.sql;
    let table = &sql.table;
    let failed = |e: tokio_postgres::Error| pg_error(store, &e, true);
    let mut client = within(shared, async {
        shared
            .pool
            .get()
            .await
            .map_err(|e| pool_error(store, e, true))
    })
    .await?;
    let lock_key = fnv1a(table.as_bytes()) as i64;
    let tx = within(shared, async { client.transaction().await.map_err(failed) }).await?;
    let exists: bool = within(shared, async {
        tx.query_one(
            &format!("SELECT pg_advisory_xact_lock({lock_key}), to_regclass($1) IS NOT NULL"),
            &[table],
        )
        .await
        .map_err(failed)
    })
    .await?
    .get(1);
    if !exists {
        let create = format!(
            "CREATE TABLE {table} (\
                 id bytea PRIMARY KEY, \
                 task jsonb NOT NULL, \
                 exact text, \
                 context_id bytea, \
                 state bytea, \
                 updated_at timestamptz NOT NULL DEFAULT now(), \
                 version bigint NOT NULL, \
                 status_ts_ns numeric); \
             {} \
             COMMENT ON TABLE {table} IS 'toolnexus A2A Tasks (see docs/postgres.md)'; \
             COMMENT ON COLUMN {table}.status_ts_ns IS '{BACKFILLED}'",
            sql.list_indexes(false),
        );
        within(shared, async {
            tx.batch_execute(&create).await.map_err(failed)
        })
        .await?;
    } else {
        let columns: Vec<(String, String)> = within(shared, async {
            tx.query(
                "SELECT attname::text, atttypid::regtype::text FROM pg_attribute \
                 WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped",
                &[table],
            )
            .await
            .map_err(failed)
        })
        .await?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
        let has = |name: &str| columns.iter().any(|(c, _)| c == name);
        let ours = [
            ("id", "bytea"),
            ("task", "jsonb"),
            ("exact", "text"),
            ("context_id", "bytea"),
            ("state", "bytea"),
            ("updated_at", "timestamp with time zone"),
        ]
        .iter()
        .all(|(name, ty)| columns.iter().any(|(c, t)| c == name && t == ty));
        // A table of an earlier version: ours, but without versions or the list order. (A
        // table that is not ours is left alone; the check below refuses it.)
        if ours && !(has("version") && has("status_ts_ns")) {
            let migrate = format!(
                "SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = {}; {}",
                shared.timeout.as_millis().max(1),
                sql.migration()
            );
            tracing::info!(store = %store, "migrating the table to versions and timestamp order");
            tx.batch_execute(&migrate).await.map_err(|e| {
                if e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) {
                    StoreError::InvalidSelector {
                        selector: store.clone(),
                        reason: format!(
                            "table {table} is from an earlier version of toolnexus and needs \
                             new columns, but this user may not alter it ({}); connect once as \
                             its owner, or have the owner run: {}",
                            chain(&e),
                            sql.migration()
                        ),
                    }
                } else {
                    failed(e)
                }
            })?;
        }
    }
    within(shared, async { tx.commit().await.map_err(failed) }).await?;

    // The table may have existed already: check it is one of ours.
    let probe = within(shared, async {
        client
            .prepare(&format!(
                "SELECT id, task, exact, context_id, state, updated_at, version, status_ts_ns \
                 FROM {table} WHERE false"
            ))
            .await
            .map_err(|e| match e.code() {
                Some(code) if code.code().starts_with("42") => StoreError::InvalidSelector {
                    selector: store.clone(),
                    reason: format!(
                        "table {table} exists but is not a toolnexus task table: {}",
                        chain(&e)
                    ),
                },
                _ => failed(e),
            })
    })
    .await?;
    let want = [
        "bytea",
        "jsonb",
        "text",
        "bytea",
        "bytea",
        "timestamptz",
        "int8",
        "numeric",
    ];
    for (column, want) in probe.columns().iter().zip(want) {
        if column.type_().name() != want {
            return Err(StoreError::InvalidSelector {
                selector: store.clone(),
                reason: format!(
                    "table {table} exists but is not a toolnexus task table: column {} is {}, \
                     not {want}",
                    column.name(),
                    column.type_().name()
                ),
            });
        }
    }
    let comment: Option<String> = within(shared, async {
        client
            .query_one(
                "SELECT col_description(attrelid, attnum) FROM pg_attribute \
                 WHERE attrelid = to_regclass($1) AND attname = 'status_ts_ns'",
                &[table],
            )
            .await
            .map_err(failed)
    })
    .await?
    .get(0);
    // Statements are prepared on first use on each connection; this one also checks the rights.
    within(shared, async {
        client.prepare_cached(&sql.get).await.map_err(failed)?;
        Ok(())
    })
    .await?;
    // Only beside a table of ours: a foreign one was refused above, and gets no neighbour.
    push_schema::ensure(shared, &mut client, lock_key).await?;
    Ok(comment.as_deref() != Some(BACKFILLED))
}

/// Fills `status_ts_ns` of the rows a migration found without it, from their
/// `status.timestamp`, in batches by id (each its own statement and call timeout, so replicas
/// and saves go on meanwhile), then marks the column complete. A row saved meanwhile has its
/// column set by that save and a new version, and is left alone; running it again (another
/// replica, a restart after an interruption) only does what is left.
async fn backfill(shared: &Shared) -> Result<(), StoreError> {
    let store = &shared.describe;
    let table = &shared.sql.table;
    let select = format!(
        "SELECT id, version, task->'status'->>'timestamp' FROM {table} \
         WHERE id > $1 AND status_ts_ns IS NULL \
         AND jsonb_typeof(task->'status'->'timestamp') = 'string' \
         ORDER BY id LIMIT {BACKFILL_BATCH}"
    );
    let update = format!(
        "UPDATE {table} AS t SET status_ts_ns = u.ts::numeric \
         FROM unnest($1::bytea[], $2::bigint[], $3::text[]) AS u(id, version, ts) \
         WHERE t.id = u.id AND t.version = u.version AND t.status_ts_ns IS NULL"
    );
    let mut after: Vec<u8> = Vec::new();
    let mut filled = 0u64;
    loop {
        let rows: Vec<(Vec<u8>, i64, String)> = within(
            shared,
            with_client(shared, OnLost::Retry, |client| {
                let (select, after) = (&select, &after);
                async move {
                    let result = client.query(select, &[after]).await.map(|rows| {
                        rows.iter()
                            .map(|r| (r.get(0), r.get(1), r.get(2)))
                            .collect()
                    });
                    (client, result)
                }
            }),
        )
        .await?;
        let Some((last, _, _)) = rows.last() else {
            break;
        };
        after = last.clone();
        let full = rows.len() as i64 == BACKFILL_BATCH;
        let (mut ids, mut versions, mut stamps) = (Vec::new(), Vec::new(), Vec::new());
        for (id, version, text) in rows {
            if let Ok(ts) = Timestamp::parse(&text) {
                ids.push(id);
                versions.push(version);
                stamps.push(ts.unix_nanos().to_string());
            }
        }
        if !ids.is_empty() {
            filled += within(
                shared,
                with_client(shared, OnLost::Retry, |client| {
                    let (update, ids, versions, stamps) = (&update, &ids, &versions, &stamps);
                    async move {
                        let result = client.execute(update, &[ids, versions, stamps]).await;
                        (client, result)
                    }
                }),
            )
            .await?;
        }
        if !full {
            break;
        }
    }
    let mark = format!("COMMENT ON COLUMN {table}.status_ts_ns IS '{BACKFILLED}'");
    let marked = within(
        shared,
        with_client(shared, OnLost::Retry, |client| {
            let mark = &mark;
            async move {
                let result = client.batch_execute(mark).await;
                (client, result)
            }
        }),
    )
    .await;
    match marked {
        Ok(()) => {
            tracing::info!(store = %store, rows = filled, "status timestamps backfilled");
        }
        // Only the table's owner may comment; the next start by the owner marks it.
        Err(e) => tracing::warn!(
            store = %store,
            rows = filled,
            "status timestamps backfilled, but the column could not be marked complete: {e}"
        ),
    }
    Ok(())
}

/// A 64-bit FNV-1a hash: a stable advisory-lock key per table.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

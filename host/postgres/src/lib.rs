//! [`PostgresTaskStore`]: every Task in one PostgreSQL table, so several replicas of a runtime
//! share their Tasks.
//!
//! The table (created if missing, migrated from an earlier version at connect; see
//! `docs/postgres.md`):
//!
//! ```sql
//! CREATE TABLE toolnexus_tasks (
//!     id           bytea PRIMARY KEY, -- the id's UTF-8 bytes: byte order, and U+0000 fits
//!     task         jsonb NOT NULL,    -- the Task, for SQL
//!     exact        text,              -- NULL, or the Task's own JSON text when jsonb cannot
//!                                     -- give it back (see below)
//!     context_id   bytea,             -- contextId, for the list filter
//!     state        bytea,             -- status.state, normalized, for the list filter
//!     updated_at   timestamptz NOT NULL DEFAULT now(),
//!     version      bigint NOT NULL,   -- 1 at the first save, +1 with every save
//!     status_ts_ns numeric            -- status.timestamp, ns since the Unix epoch; NULL if
//!                                     -- absent or unreadable (list order, time filter)
//! );
//! CREATE INDEX toolnexus_tasks_listed ON toolnexus_tasks
//!     (status_ts_ns DESC NULLS LAST, id);
//! CREATE INDEX toolnexus_tasks_context_listed ON toolnexus_tasks
//!     (context_id, status_ts_ns DESC NULLS LAST, id);
//! CREATE INDEX toolnexus_tasks_state_listed ON toolnexus_tasks
//!     (state, status_ts_ns DESC NULLS LAST, id);
//! ```
//!
//! Every save is one statement that also returns the new version; a conditional save
//! (`save_versioned` with [`Expect::Absent`] or [`Expect::Version`]) is atomic against every
//! other writer of the table, whatever process it is in. A listing is one statement: a keyset
//! page in list order through one of the `_listed` indexes, and the count of the matches.
//!
//! Fidelity: a Task comes back equal as JSON to what was saved, always. jsonb keeps members in
//! its own order (shorter keys first) and drops insignificant whitespace, which JSON equality
//! ignores; it respells some numbers (`-0.0` becomes `0.0`, `1e-3` becomes `0.001`) and cannot
//! hold U+0000 at all. A Task with such a number or character keeps its exact JSON text in
//! `exact` (and `task` holds it with U+0000 replaced by U+FFFD), so nothing a caller can build
//! is refused or changed.
//!
//! `toolnexus::resolve_store` hands this crate every `postgres://` selector
//! ([`builder_from_selector`]); the trait, `Task` and the errors come from `toolnexus-core`.
//!
//! Calls run on a small Tokio runtime the store owns (the driver's connections live there), so
//! the store works from any runtime, or none at construction, and dropping it never blocks.
//!
//! TLS: rustls (the *ring* provider), with libpq's `sslmode` (`disable`, `prefer` — the
//! default —, `require`, `verify-ca`, `verify-full`) and `sslrootcert` (a PEM file of CA
//! certificates, or `system`), with libpq's meanings; see the `tls` module and
//! `docs/postgres.md`.

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use serde_json::{Map, Value};
use std::fmt::Write as _;
use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Config, NoTls};
use toolnexus_core::state::normalize_state;
use toolnexus_core::{Expect, ListQuery, StoreError, Task, TaskPage, TaskStore, check_id};
use toolnexus_format::query::{SortKey, Timestamp};

mod errors;
mod selector;
mod tls;

use errors::{chain, connection_lost, pg_error, pool_error};
pub use selector::{builder_from_selector, redact};

/// The table used when none is named.
pub const DEFAULT_TABLE: &str = "toolnexus_tasks";

/// The options a `postgres://` selector takes for the store itself (after `?`); every other
/// option is a libpq connection parameter (`sslmode`, `sslrootcert`, `connect_timeout`,
/// `application_name`, `options`, …): `sslmode` and `sslrootcert` set up TLS, the rest is
/// passed to the driver.
pub const POSTGRES_OPTIONS: &[&str] = &["table", "pool", "timeout"];

const DEFAULT_POOL_SIZE: usize = 8;
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest table name accepted, leaving room for the index names within PostgreSQL's 63.
const MAX_TABLE_NAME: usize = 48;
/// Numbers longer than this (or with a larger exponent) are kept in `task` as strings, so any
/// number, however large, can be saved (PostgreSQL's numeric has limits; JSON has none).
const MAX_JSONB_NUMBER: usize = 1000;

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
    shared: Arc<Shared>,
    handle: tokio::runtime::Handle,
    /// Owned so that dropping the store stops its threads; `None` only during drop.
    runtime: Option<tokio::runtime::Runtime>,
}

struct Shared {
    pool: Pool,
    sql: Sql,
    timeout: Duration,
    describe: String,
}

/// The statements, for one table (a listing's are made per call: [`Sql::list`]). A save's
/// parameters: `$1` id, `$2` task, `$3` exact, `$4` context_id, `$5` state, `$6` the status
/// timestamp in ns (text, for numeric), and for `replace`, `$7` the expected version.
struct Sql {
    table: String,
    /// The Task and its version.
    get: String,
    /// The version alone (for a conflict's answer).
    version: String,
    /// Save whatever is stored: a new row at version 1, or the next version.
    upsert: String,
    /// Insert only if there is no row for the id.
    insert_new: String,
    /// Replace the row only if it still has the expected version.
    replace: String,
    delete: String,
}

/// Settings for a [`PostgresTaskStore`]; [`connect`](Self::connect) or
/// [`connect_blocking`](Self::connect_blocking) makes it.
#[derive(Debug, Clone)]
pub struct PostgresTaskStoreBuilder {
    url: String,
    table: String,
    pool_size: usize,
    timeout: Duration,
    connect_timeout: Option<Duration>,
}

impl PostgresTaskStore {
    /// Settings for a store over the server at `url`: a libpq connection URL
    /// (`postgres://user:password@host:port/dbname?sslmode=verify-full`) or key-value string
    /// (`host=db user=app dbname=agents sslmode=require`). TLS follows libpq's `sslmode`
    /// (`disable`, `prefer` — the default —, `require`, `verify-ca`, `verify-full`) and
    /// `sslrootcert` (a PEM file of CA certificates, or `system`; default for verification:
    /// the system's roots).
    pub fn builder(url: impl Into<String>) -> PostgresTaskStoreBuilder {
        PostgresTaskStoreBuilder {
            url: url.into(),
            table: DEFAULT_TABLE.to_owned(),
            pool_size: DEFAULT_POOL_SIZE,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: None,
        }
    }

    /// The table, as written in SQL (quoted).
    pub fn table(&self) -> &str {
        &self.shared.sql.table
    }

    /// Runs `op` on the store's runtime, within the call timeout.
    async fn run<T, F>(&self, op: impl FnOnce(Arc<Shared>) -> F) -> Result<T, StoreError>
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

async fn deadline<T>(
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

impl PostgresTaskStoreBuilder {
    /// The table holding the Tasks (default [`DEFAULT_TABLE`]): a plain identifier
    /// (`[A-Za-z_][A-Za-z0-9_]*`, at most 48 bytes), optionally with its schema (`app.tasks`).
    /// Created, with its indexes, if missing.
    pub fn table(mut self, table: impl Into<String>) -> Self {
        self.table = table.into();
        self
    }

    /// How many connections the store keeps open at most (default 8): the number of calls that
    /// run at once; further calls wait for a free connection, within the call timeout.
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size;
        self
    }

    /// How long one call may take in all, waiting for a connection included (default 5 s);
    /// also the server-side `statement_timeout`. A call over it fails with
    /// [`StoreError::Unavailable`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long making one connection may take (default: the URL's `connect_timeout`, else 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// Connects, creates the table if missing (or migrates one of an earlier version), and
    /// checks it, so a bad URL, wrong credentials, an unreachable server or an unusable table
    /// fail here rather than at the first call.
    pub async fn connect(self) -> Result<PostgresTaskStore, StoreError> {
        let store = self.prepare()?;
        let shared = Arc::clone(&store.shared);
        store
            .handle
            .spawn(open(shared))
            .await
            .map_err(|e| StoreError::Backend {
                store: store.shared.describe.clone(),
                reason: format!("the store's worker stopped while connecting: {e}"),
            })??;
        Ok(store)
    }

    /// [`connect`](Self::connect) for synchronous code. Blocks the calling thread until the
    /// store is ready; works inside a Tokio runtime too (from async code, prefer
    /// [`connect`](Self::connect) or call this in `spawn_blocking`).
    pub fn connect_blocking(self) -> Result<PostgresTaskStore, StoreError> {
        let store = self.prepare()?;
        let call = open(Arc::clone(&store.shared));
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        store.handle.spawn(async move {
            let _ = tx.send(call.await);
        });
        rx.recv().map_err(|_| StoreError::Backend {
            store: store.shared.describe.clone(),
            reason: "the store's worker stopped while connecting".into(),
        })??;
        Ok(store)
    }

    /// Everything short of talking to the server.
    fn prepare(self) -> Result<PostgresTaskStore, StoreError> {
        let shown = redact(&self.url);
        let invalid = |reason: String| StoreError::InvalidSelector {
            selector: shown.clone(),
            reason,
        };
        let (url, tls) = tls::Tls::take_from(&self.url).map_err(&invalid)?;
        let mut config = Config::from_str(&url)
            .map_err(|e| invalid(format!("not a PostgreSQL connection URL: {}", chain(&e))))?;
        config.ssl_mode(tls.driver_mode());
        if config.get_hosts().is_empty() {
            return Err(invalid("no host in the URL".into()));
        }
        if config.get_user().is_none() {
            return Err(invalid("no user in the URL".into()));
        }
        // As libpq: sslmode does not apply to Unix sockets, which never carry TLS.
        if config
            .get_hosts()
            .iter()
            .all(|host| matches!(host, Host::Unix(_)))
        {
            config.ssl_mode(SslMode::Disable);
        }
        let table = quote_table(&self.table).map_err(invalid)?;
        if self.pool_size == 0 {
            return Err(invalid("the pool size must be at least 1".into()));
        }
        if self.timeout.is_zero() || self.connect_timeout.is_some_and(|t| t.is_zero()) {
            return Err(invalid("timeouts must be longer than zero".into()));
        }
        let connect_timeout = self
            .connect_timeout
            .or_else(|| config.get_connect_timeout().copied())
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        config.connect_timeout(connect_timeout);
        // The server gives up on a statement when the caller does.
        let statement_timeout = format!("-c statement_timeout={}", self.timeout.as_millis());
        let options = match config.get_options() {
            Some(given) if !given.trim().is_empty() => format!("{given} {statement_timeout}"),
            _ => statement_timeout,
        };
        config.options(options);
        if config.get_application_name().is_none() {
            config.application_name("toolnexus");
        }
        // The roots are read now: a missing or unusable sslrootcert fails here, naming it.
        let connector = tls.connector().map_err(&invalid)?;
        let describe = describe(&config, &self.table);

        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("toolnexus-postgres")
            .enable_all()
            .build()
            .map_err(|e| StoreError::io("cannot start the PostgreSQL store's threads", e))?;
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match connector {
            Some(rustls) => Manager::from_config(config, rustls, manager_config),
            None => Manager::from_config(config, NoTls, manager_config),
        };
        let pool = Pool::builder(manager)
            .max_size(self.pool_size)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(self.timeout))
            .create_timeout(Some(connect_timeout))
            .recycle_timeout(Some(self.timeout))
            .build()
            .map_err(|e| StoreError::Backend {
                store: describe.clone(),
                reason: format!("cannot make the connection pool: {e}"),
            })?;
        Ok(PostgresTaskStore {
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
            shared: Arc::new(Shared {
                pool,
                sql: Sql::new(table),
                timeout: self.timeout,
                describe,
            }),
        })
    }
}

/// The columns a page of a listing reads: the id, the Task's text, its sort timestamp.
const LIST_COLUMNS: &str = "id, COALESCE(exact, task::text) AS doc, status_ts_ns AS ts";
/// List order: newest status timestamp first, Tasks without one last, ties by id (bytea: byte
/// order). The `_listed` indexes are in this order.
const LIST_ORDER: &str = "status_ts_ns DESC NULLS LAST, id";
/// The comment on `status_ts_ns` once every row has it (new tables, finished migrations);
/// anything else means rows of an earlier version may still lack it (see [`backfill`]).
const BACKFILLED: &str = "toolnexus: status.timestamp in ns since the Unix epoch; complete";
/// The comment while a migration's backfill has not finished.
const BACKFILL_PENDING: &str =
    "toolnexus: status.timestamp in ns since the Unix epoch; backfill pending";
/// Rows read and updated per statement of the backfill.
const BACKFILL_BATCH: i64 = 500;

impl Sql {
    fn new(table: String) -> Self {
        let columns = "id, task, exact, context_id, state, status_ts_ns, version, updated_at";
        let values = "$1, $2::text::jsonb, $3, $4, $5, $6::text::numeric";
        Sql {
            get: format!("SELECT COALESCE(exact, task::text), version FROM {table} WHERE id = $1"),
            version: format!("SELECT version FROM {table} WHERE id = $1"),
            upsert: format!(
                "INSERT INTO {table} AS t ({columns}) VALUES ({values}, 1, clock_timestamp()) \
                 ON CONFLICT (id) DO UPDATE SET task = EXCLUDED.task, exact = EXCLUDED.exact, \
                 context_id = EXCLUDED.context_id, state = EXCLUDED.state, \
                 status_ts_ns = EXCLUDED.status_ts_ns, version = t.version + 1, \
                 updated_at = EXCLUDED.updated_at \
                 RETURNING version"
            ),
            insert_new: format!(
                "INSERT INTO {table} ({columns}) VALUES ({values}, 1, clock_timestamp()) \
                 ON CONFLICT (id) DO NOTHING RETURNING version"
            ),
            replace: format!(
                "UPDATE {table} SET task = $2::text::jsonb, exact = $3, context_id = $4, \
                 state = $5, status_ts_ns = $6::text::numeric, version = version + 1, \
                 updated_at = clock_timestamp() \
                 WHERE id = $1 AND version = $7 RETURNING version"
            ),
            delete: format!("DELETE FROM {table} WHERE id = $1"),
            table,
        }
    }

    /// The statement for one page of a listing, and the total: `$1` is the number of rows to
    /// fetch (page size + 1), then the filters that are set (`context_id`, `state`, the
    /// timestamp lower bound), then the cursor's timestamp (if it has one) and id.
    ///
    /// Keyset paging on (`status_ts_ns` descending, NULLs last, `id`): the rows after a cursor
    /// with a timestamp are those with the same timestamp and a greater id, then those with an
    /// older timestamp, then those without one; after a cursor without a timestamp, only rows
    /// without one and a greater id. Each part is one range of a `_listed` index, and the page
    /// merges them in order, so a page reads about one page of rows, however deep it is.
    fn list(&self, shape: ListShape) -> String {
        let table = &self.table;
        let mut n = 1;
        let mut next = || {
            n += 1;
            n
        };
        let mut filter = String::from("true");
        if shape.context {
            let _ = write!(filter, " AND context_id = ${}", next());
        }
        if shape.state {
            let _ = write!(filter, " AND state = ${}", next());
        }
        if shape.after {
            let _ = write!(filter, " AND status_ts_ns >= ${}::text::numeric", next());
        }
        let part = |condition: &str| {
            format!(
                "SELECT {LIST_COLUMNS} FROM {table} WHERE {filter}{condition} \
                 ORDER BY {LIST_ORDER} LIMIT $1"
            )
        };
        let page = match shape.cursor {
            CursorShape::Start => part(""),
            CursorShape::Timed => {
                let (ts, id) = (next(), next());
                let mut parts = vec![
                    part(&format!(
                        " AND status_ts_ns = ${ts}::text::numeric AND id > ${id}"
                    )),
                    part(&format!(" AND status_ts_ns < ${ts}::text::numeric")),
                ];
                if !shape.after {
                    // With a timestamp bound, no Task without a timestamp matches.
                    parts.push(part(" AND status_ts_ns IS NULL"));
                }
                let parts: Vec<String> = parts.into_iter().map(|p| format!("({p})")).collect();
                format!(
                    "SELECT * FROM ({}) AS parts ORDER BY ts DESC NULLS LAST, id LIMIT $1",
                    parts.join(" UNION ALL ")
                )
            }
            CursorShape::Untimed => {
                let id = next();
                part(&format!(" AND status_ts_ns IS NULL AND id > ${id}"))
            }
        };
        format!(
            "SELECT total.n, page.id, page.doc, page.ts::text \
             FROM (SELECT count(*) AS n FROM {table} WHERE {filter}) AS total \
             LEFT JOIN ({page}) AS page ON true ORDER BY page.ts DESC NULLS LAST, page.id"
        )
    }

    /// An index of the table, `suffix` appended to the table's name; `qualified`: with the
    /// table's schema, if it has one (an index lives in its table's schema).
    fn index(&self, suffix: &str, qualified: bool) -> String {
        let (schema, bare) = match self.table.rsplit_once('.') {
            Some((schema, bare)) => (Some(schema), bare),
            None => (None, self.table.as_str()),
        };
        let name = format!("\"{}_{suffix}\"", bare.trim_matches('"'));
        match schema {
            Some(schema) if qualified => format!("{schema}.{name}"),
            _ => name,
        }
    }

    /// The three indexes of a listing: all Tasks, by context, by state, each in list order.
    fn list_indexes(&self, if_not_exists: bool) -> String {
        let table = &self.table;
        let guard = if if_not_exists { "IF NOT EXISTS " } else { "" };
        format!(
            "CREATE INDEX {guard}{} ON {table} ({LIST_ORDER}); \
             CREATE INDEX {guard}{} ON {table} (context_id, {LIST_ORDER}); \
             CREATE INDEX {guard}{} ON {table} (state, {LIST_ORDER});",
            self.index("listed", false),
            self.index("context_listed", false),
            self.index("state_listed", false),
        )
    }

    /// What turns a table of an earlier version (before versions and timestamp order) into
    /// one of this version, except the backfill of `status_ts_ns`. Idempotent.
    fn migration(&self) -> String {
        let table = &self.table;
        format!(
            "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS version bigint NOT NULL DEFAULT 1, \
                 ADD COLUMN IF NOT EXISTS status_ts_ns numeric; \
             ALTER TABLE {table} ALTER COLUMN version DROP DEFAULT; \
             DROP INDEX IF EXISTS {}; \
             DROP INDEX IF EXISTS {}; \
             {} \
             COMMENT ON COLUMN {table}.status_ts_ns IS '{BACKFILL_PENDING}'",
            self.index("context_id", true),
            self.index("state", true),
            self.list_indexes(true),
        )
    }
}

/// Which statement a listing needs: the filters it has, and where its cursor is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ListShape {
    context: bool,
    state: bool,
    after: bool,
    cursor: CursorShape,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CursorShape {
    /// The first page.
    Start,
    /// After a Task with a status timestamp.
    Timed,
    /// After a Task without one.
    Untimed,
}

/// `call` within the store's call timeout.
async fn within<T>(
    shared: &Shared,
    call: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    deadline(shared.timeout, shared.describe.clone(), call).await
}

/// Makes the table ready, then fills in what a migration left to do.
async fn open(shared: Arc<Shared>) -> Result<(), StoreError> {
    if setup(&shared).await? {
        backfill(&shared).await?;
    }
    Ok(())
}

/// Creates the table and its indexes if missing, or migrates a table of an earlier version
/// (under an advisory lock, so replicas starting together do not race), then checks that the
/// table has the columns this store needs. `true` if `status_ts_ns` may still need a backfill.
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
            with_client(shared, true, |client| {
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
                with_client(shared, true, |client| {
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
        with_client(shared, true, |client| {
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

/// A connection from the pool, one query on it, and one retry on a fresh connection if the
/// first one turned out to be dead (the server restarted since it was made). `retry` is false
/// for calls whose answer a lost reply could change (delete).
async fn with_client<T, F, Fut>(shared: &Shared, retry: bool, mut f: F) -> Result<T, StoreError>
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

#[async_trait::async_trait]
impl TaskStore for PostgresTaskStore {
    async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
        Ok(self.get_versioned(id).await?.map(|(task, _)| task))
    }

    /// One statement, by primary key.
    async fn get_versioned(&self, id: &str) -> Result<Option<(Task, u64)>, StoreError> {
        check_id(id)?;
        let id = id.to_owned();
        self.run(move |shared| async move {
            let row: Option<(String, i64)> = with_client(&shared, true, |client| {
                let (sql, id) = (&shared.sql.get, id.as_bytes());
                async move {
                    let result = async {
                        let statement = client.prepare_cached(sql).await?;
                        let row = client.query_opt(&statement, &[&id]).await?;
                        Ok(row.map(|row| (row.get(0), row.get(1))))
                    }
                    .await;
                    (client, result)
                }
            })
            .await?;
            row.map(|(text, version)| {
                let id = id.as_bytes();
                Ok((
                    read_task(&shared, id, &text)?,
                    read_version(&shared, id, version)?,
                ))
            })
            .transpose()
        })
        .await
    }

    async fn save(&self, task: &Task) -> Result<(), StoreError> {
        self.save_versioned(task, Expect::Any).await.map(|_| ())
    }

    /// One statement: `INSERT … ON CONFLICT (id) DO UPDATE SET version = version + 1` for
    /// [`Expect::Any`], `INSERT … ON CONFLICT (id) DO NOTHING` for [`Expect::Absent`],
    /// `UPDATE … WHERE id = $1 AND version = $v` for [`Expect::Version`], each `RETURNING
    /// version`. No row back: another writer got there first, and the current version is read
    /// for the [`StoreError::Conflict`]. Only the plain upsert is retried on a lost connection
    /// (a conditional save's first attempt may have committed, and its retry would then
    /// conflict with itself).
    async fn save_versioned(&self, task: &Task, expect: Expect) -> Result<u64, StoreError> {
        let task = task.clone();
        self.run(move |shared| async move {
            let row = SaveRow::of(&task);
            let id = task.id().as_bytes();
            let mut attempts = 0;
            loop {
                attempts += 1;
                let written = write(&shared, &row, &task, expect).await?;
                if let Some(version) = written {
                    return read_version(&shared, id, version);
                }
                let current: Option<i64> = with_client(&shared, true, |client| {
                    let sql = &shared.sql.version;
                    async move {
                        let result = async {
                            let statement = client.prepare_cached(sql).await?;
                            let row = client.query_opt(&statement, &[&id]).await?;
                            Ok(row.map(|row| row.get(0)))
                        }
                        .await;
                        (client, result)
                    }
                })
                .await?;
                let current = current
                    .map(|version| read_version(&shared, id, version))
                    .transpose()?;
                // The write missed, but what is stored now is what it expected: the row changed
                // between the two statements (a delete, a re-creation). Try again, a few times.
                // (A plain save never misses, so it never gets here.)
                let holds = expect != Expect::Any && expect.holds(current);
                if !holds || attempts == 3 {
                    return Err(StoreError::Conflict {
                        id: task.id().to_owned(),
                        expected: expect,
                        current,
                    });
                }
            }
        })
        .await
    }

    /// One statement: the page, keyset-paginated on (status timestamp, id) through an index in
    /// list order (see [`Sql::list`]), and the number of matching Tasks, from one snapshot.
    async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
        let cursor = query.cursor().map_err(|e| StoreError::InvalidQuery {
            reason: e.to_string(),
        })?;
        let query = query.clone();
        self.run(move |shared| async move {
            let limit = query.limit();
            let shape = ListShape {
                context: query.context_id.is_some(),
                state: query.state.is_some(),
                after: query.status_timestamp_after.is_some(),
                cursor: match &cursor {
                    None => CursorShape::Start,
                    Some(SortKey {
                        timestamp: Some(_), ..
                    }) => CursorShape::Timed,
                    Some(SortKey {
                        timestamp: None, ..
                    }) => CursorShape::Untimed,
                },
            };
            let sql = shared.sql.list(shape);
            let mut params: Vec<Box<dyn ToSql + Sync + Send>> = Vec::with_capacity(6);
            params.push(Box::new(i64::try_from(limit + 1).unwrap_or(i64::MAX)));
            if let Some(context) = &query.context_id {
                params.push(Box::new(context.as_bytes().to_vec()));
            }
            if let Some(state) = &query.state {
                params.push(Box::new(normalize_state(state).into_bytes()));
            }
            if let Some(after) = query.status_timestamp_after {
                params.push(Box::new(after.unix_nanos().to_string()));
            }
            if let Some(cursor) = &cursor {
                if let Some(timestamp) = cursor.timestamp {
                    params.push(Box::new(timestamp.unix_nanos().to_string()));
                }
                params.push(Box::new(cursor.id.as_bytes().to_vec()));
            }
            type PageRow = (i64, Option<Vec<u8>>, Option<String>, Option<String>);
            let rows: Vec<PageRow> = with_client(&shared, true, |client| {
                let (sql, params) = (&sql, &params);
                async move {
                    let result = async {
                        let statement = client.prepare_cached(sql).await?;
                        let params: Vec<&(dyn ToSql + Sync)> = params
                            .iter()
                            .map(|p| p.as_ref() as &(dyn ToSql + Sync))
                            .collect();
                        let rows = client.query(&statement, &params).await?;
                        Ok(rows
                            .iter()
                            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
                            .collect())
                    }
                    .await;
                    (client, result)
                }
            })
            .await?;
            let total = rows.first().map_or(0, |row| row.0);
            let more = rows.len() > limit;
            let mut tasks = Vec::with_capacity(rows.len().min(limit));
            let mut last = None;
            for (_, id, text, ts) in rows.into_iter().take(limit) {
                // A row without an id is the empty page's (the total alone).
                let (Some(id), Some(text)) = (id, text) else {
                    continue;
                };
                let task = read_task(&shared, &id, &text)?;
                let timestamp = ts
                    .map(|ts| {
                        ts.parse::<i128>()
                            .map(Timestamp::from_unix_nanos)
                            .map_err(|_| corrupt(&shared, &id, format!("status_ts_ns is {ts}")))
                    })
                    .transpose()?;
                last = Some(SortKey {
                    timestamp,
                    id: task.id().to_owned(),
                });
                tasks.push(task);
            }
            Ok(TaskPage {
                tasks,
                next_page_token: last.filter(|_| more).map(|key| key.encode()),
                total_size: Some(u64::try_from(total).unwrap_or(0)),
            })
        })
        .await
    }

    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        check_id(id)?;
        let id = id.to_owned();
        self.run(move |shared| async move {
            let deleted = with_client(&shared, false, |client| {
                let (sql, id) = (&shared.sql.delete, id.as_bytes());
                async move {
                    let result = async {
                        let statement = client.prepare_cached(sql).await?;
                        client.execute(&statement, &[&id]).await
                    }
                    .await;
                    (client, result)
                }
            })
            .await?;
            Ok(deleted > 0)
        })
        .await
    }

    fn describe(&self) -> String {
        self.shared.describe.clone()
    }
}

/// The one write of a save: the new version, or `None` if what `expect` says is not stored.
async fn write(
    shared: &Shared,
    row: &SaveRow,
    task: &Task,
    expect: Expect,
) -> Result<Option<i64>, StoreError> {
    let expected_version = match expect {
        // No row has a version beyond i64: it cannot be stored.
        Expect::Version(v) => match i64::try_from(v) {
            Ok(v) => Some(v),
            Err(_) => return Ok(None),
        },
        Expect::Any | Expect::Absent => None,
    };
    let sql = match expect {
        Expect::Any => &shared.sql.upsert,
        Expect::Absent => &shared.sql.insert_new,
        Expect::Version(_) => &shared.sql.replace,
    };
    with_client(shared, expect == Expect::Any, |client| async move {
        let result = async {
            let statement = client.prepare_cached(sql).await?;
            let (jsonb, exact) = row.task_columns(task);
            let id = task.id().as_bytes();
            let (context, state) = row.filter_columns();
            let ts = row.status_ts.as_deref();
            let mut params: Vec<&(dyn ToSql + Sync)> =
                vec![&id, &jsonb, &exact, &context, &state, &ts];
            if let Some(version) = &expected_version {
                params.push(version);
            }
            let row = client.query_opt(&statement, &params).await?;
            Ok(row.map(|row| row.get(0)))
        }
        .await;
        (client, result)
    })
    .await
}

/// A stored version as the trait's: never negative.
fn read_version(shared: &Shared, id: &[u8], version: i64) -> Result<u64, StoreError> {
    u64::try_from(version).map_err(|_| corrupt(shared, id, format!("version is {version}")))
}

fn corrupt(shared: &Shared, id: &[u8], reason: String) -> StoreError {
    StoreError::Corrupt {
        location: format!("{} row {:?}", shared.describe, String::from_utf8_lossy(id)),
        reason,
    }
}

/// A stored row back into a Task: it must be one, with the id of its row.
fn read_task(shared: &Shared, id: &[u8], text: &str) -> Result<Task, StoreError> {
    let corrupt = |reason: String| corrupt(shared, id, reason);
    let task = Task::from_json(text).map_err(|e| corrupt(e.to_string()))?;
    if task.id().as_bytes() != id {
        return Err(corrupt(format!("the row holds the Task {:?}", task.id())));
    }
    Ok(task)
}

/// What a save writes besides the id and the Task's text.
struct SaveRow {
    /// `None` if the Task's own text is what `task` should hold (jsonb gives it back as JSON
    /// equal); else what `task` holds instead, and the Task's text goes to `exact`.
    jsonb: Option<String>,
    context_id: Option<Vec<u8>>,
    state: Option<String>,
    /// The status timestamp in nanoseconds since the epoch, as text for `numeric` (an RFC 3339
    /// instant can lie beyond i64's nanoseconds: year 2262).
    status_ts: Option<String>,
}

impl SaveRow {
    fn of(task: &Task) -> Self {
        let map = task.as_map();
        let jsonb = (!map_is_jsonb_exact(map)).then(|| {
            let view: Map<String, Value> = map
                .iter()
                .map(|(k, v)| (jsonb_string(k), jsonb_view(v)))
                .collect();
            serde_json::to_string(&view).unwrap_or_else(|_| "{}".to_owned())
        });
        SaveRow {
            jsonb,
            context_id: map
                .get("contextId")
                .and_then(Value::as_str)
                .map(|c| c.as_bytes().to_vec()),
            state: map
                .get("status")
                .and_then(|s| s.get("state"))
                .and_then(Value::as_str)
                .map(normalize_state),
            status_ts: Timestamp::of_task(map).map(|t| t.unix_nanos().to_string()),
        }
    }
}

impl SaveRow {
    /// The `task` and `exact` columns for `task` (the Task this row was made of).
    fn task_columns<'a>(&'a self, task: &'a Task) -> (&'a str, Option<&'a str>) {
        match &self.jsonb {
            Some(jsonb) => (jsonb, Some(task.as_json())),
            None => (task.as_json(), None),
        }
    }

    /// The `context_id` and `state` columns.
    fn filter_columns(&self) -> (Option<&[u8]>, Option<&[u8]>) {
        (
            self.context_id.as_deref(),
            self.state.as_deref().map(str::as_bytes),
        )
    }
}

fn map_is_jsonb_exact(map: &Map<String, Value>) -> bool {
    map.iter()
        .all(|(k, v)| !k.contains('\0') && is_jsonb_exact(v))
}

/// Whether jsonb gives this value back equal as JSON (numbers compare by their spelling here).
fn is_jsonb_exact(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(_) => true,
        Value::String(s) => !s.contains('\0'),
        Value::Number(n) => is_canonical_numeric(&n.to_string()),
        Value::Array(items) => items.iter().all(is_jsonb_exact),
        Value::Object(map) => map_is_jsonb_exact(map),
    }
}

/// Whether PostgreSQL's numeric prints this JSON number back the same: no exponent, no negative
/// zero, and not too long.
fn is_canonical_numeric(number: &str) -> bool {
    let digits = number.strip_prefix('-').unwrap_or(number);
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let plain = !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit())
        && !(digits.contains('.') && frac.is_empty());
    let negative_zero = number.starts_with('-') && digits.bytes().all(|b| b == b'0' || b == b'.');
    plain && !negative_zero && number.len() <= MAX_JSONB_NUMBER
}

/// The value as jsonb can hold it: U+0000 → U+FFFD; a number numeric cannot hold → its text.
fn jsonb_view(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(jsonb_string(s)),
        Value::Number(n) => {
            let text = n.to_string();
            let exponent_ok = text
                .split_once(['e', 'E'])
                .is_none_or(|(_, e)| e.trim_start_matches(['+', '-']).len() <= 3);
            if text.len() <= MAX_JSONB_NUMBER && exponent_ok {
                value.clone()
            } else {
                Value::String(text)
            }
        }
        Value::Array(items) => Value::Array(items.iter().map(jsonb_view).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (jsonb_string(k), jsonb_view(v)))
                .collect(),
        ),
        Value::Null | Value::Bool(_) => value.clone(),
    }
}

fn jsonb_string(s: &str) -> String {
    s.replace('\0', "\u{FFFD}")
}

/// `name` or `schema.name`, each a plain identifier, quoted for SQL.
fn quote_table(table: &str) -> Result<String, String> {
    let parts: Vec<&str> = table.split('.').collect();
    let ident = |s: &str| {
        s.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    if parts.len() > 2 || !parts.iter().all(|p| ident(p)) || table.len() > 2 * 63 {
        return Err(format!(
            "table {table:?} must be an identifier ([A-Za-z_][A-Za-z0-9_]*), optionally \
             schema-qualified (schema.table)"
        ));
    }
    if parts.last().is_some_and(|name| name.len() > MAX_TABLE_NAME) {
        return Err(format!(
            "table name {table:?} is longer than {MAX_TABLE_NAME} bytes"
        ));
    }
    Ok(parts
        .iter()
        .map(|p| format!("\"{p}\""))
        .collect::<Vec<_>>()
        .join("."))
}

/// `postgres://user@host:port/dbname?table=name`: what the store is, without the password.
fn describe(config: &Config, table: &str) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = config
                .get_ports()
                .get(i)
                .or(config.get_ports().first())
                .copied()
                .unwrap_or(5432);
            match host {
                Host::Tcp(name) if name.contains(':') => format!("[{name}]:{port}"),
                Host::Tcp(name) => format!("{name}:{port}"),
                Host::Unix(dir) => format!("{}:{port}", dir.display()),
            }
        })
        .collect();
    let user = config.get_user().unwrap_or("");
    format!(
        "postgres://{user}@{}/{}?table={table}",
        hosts.join(","),
        config.get_dbname().unwrap_or(user)
    )
}

/// A 64-bit FNV-1a hash: a stable advisory-lock key per table.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_numbers_are_the_ones_numeric_prints_back() {
        for n in [
            "0",
            "1",
            "-1",
            "0.0",
            "1.50",
            "-2.25",
            "9007199254740993",
            "0.1",
        ] {
            assert!(is_canonical_numeric(n), "{n}");
        }
        for n in ["-0", "-0.0", "-0.000", "1e3", "1E-3", "1.5e+2", "-0e0"] {
            assert!(!is_canonical_numeric(n), "{n}");
        }
        assert!(!is_canonical_numeric(&"9".repeat(MAX_JSONB_NUMBER + 1)));
    }

    #[test]
    fn tasks_jsonb_cannot_hold_keep_their_text() {
        let plain = Task::from_json(r#"{"id": "a", "n": [1, 2.5], "s": "x"}"#).unwrap();
        assert!(SaveRow::of(&plain).jsonb.is_none());
        let nul = Task::from_json(r#"{"id": "nul\u0000byte", "k\u0000": -0.0}"#).unwrap();
        let view: Value = serde_json::from_str(&SaveRow::of(&nul).jsonb.unwrap()).unwrap();
        assert_eq!(view["id"], "nul\u{FFFD}byte");
        assert_eq!(view["k\u{FFFD}"].to_string(), "-0.0");
        let huge = Task::from_json(r#"{"id": "h", "n": 1e99999}"#).unwrap();
        let view: Value = serde_json::from_str(&SaveRow::of(&huge).jsonb.unwrap()).unwrap();
        assert_eq!(
            view["n"],
            huge.get("n").unwrap().to_string(),
            "kept as text"
        );
    }

    #[test]
    fn filter_columns_follow_the_list_contract() {
        let t = Task::from_json(
            r#"{"id": "a", "contextId": "c", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}"#,
        )
        .unwrap();
        let row = SaveRow::of(&t);
        assert_eq!(row.context_id.as_deref(), Some(&b"c"[..]));
        assert_eq!(row.state.as_deref(), Some("input-required"));
        let none = SaveRow::of(&Task::from_json(r#"{"id": "a", "contextId": 3}"#).unwrap());
        assert!(none.context_id.is_none() && none.state.is_none());
    }

    #[test]
    fn table_names_are_identifiers() {
        assert_eq!(quote_table("tasks").unwrap(), "\"tasks\"");
        assert_eq!(quote_table("app.tasks_2").unwrap(), "\"app\".\"tasks_2\"");
        for bad in [
            "",
            "1tasks",
            "tasks;drop",
            "a.b.c",
            "ta\"sks",
            "a.",
            "x-y",
            &"t".repeat(MAX_TABLE_NAME + 1),
        ] {
            assert!(quote_table(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn list_statements_number_their_parameters_and_page_by_keyset() {
        let sql = Sql::new(quote_table("t").unwrap());
        let first = sql.list(ListShape {
            context: false,
            state: false,
            after: false,
            cursor: CursorShape::Start,
        });
        assert_eq!(
            first,
            "SELECT total.n, page.id, page.doc, page.ts::text FROM (SELECT count(*) AS n FROM \
             \"t\" WHERE true) AS total LEFT JOIN (SELECT id, COALESCE(exact, task::text) AS doc, \
             status_ts_ns AS ts FROM \"t\" WHERE true ORDER BY status_ts_ns DESC NULLS LAST, id \
             LIMIT $1) AS page ON true ORDER BY page.ts DESC NULLS LAST, page.id"
        );
        let timed = sql.list(ListShape {
            context: true,
            state: true,
            after: false,
            cursor: CursorShape::Timed,
        });
        let filter = "WHERE true AND context_id = $2 AND state = $3";
        assert!(timed.contains(&format!("count(*) AS n FROM \"t\" {filter}) AS total")));
        assert!(timed.contains(&format!(
            "{filter} AND status_ts_ns = $4::text::numeric AND id > $5 ORDER BY"
        )));
        assert!(timed.contains(&format!(
            "{filter} AND status_ts_ns < $4::text::numeric ORDER BY"
        )));
        assert!(timed.contains(&format!("{filter} AND status_ts_ns IS NULL ORDER BY")));
        assert!(!timed.contains("$6"));
        let bounded = sql.list(ListShape {
            context: false,
            state: true,
            after: true,
            cursor: CursorShape::Timed,
        });
        assert!(bounded.contains("AND state = $2 AND status_ts_ns >= $3::text::numeric"));
        assert!(bounded.contains("status_ts_ns = $4::text::numeric AND id > $5"));
        assert!(
            !bounded.contains("IS NULL"),
            "no untimed part under a timestamp bound"
        );
        let untimed = sql.list(ListShape {
            context: true,
            state: false,
            after: false,
            cursor: CursorShape::Untimed,
        });
        assert!(untimed.contains("context_id = $2 AND status_ts_ns IS NULL AND id > $3 ORDER BY"));
        assert!(!untimed.contains("UNION"));
    }

    #[test]
    fn index_names_live_in_the_tables_schema() {
        let sql = Sql::new(quote_table("app.tasks").unwrap());
        assert_eq!(sql.index("listed", false), "\"tasks_listed\"");
        assert_eq!(sql.index("state", true), "\"app\".\"tasks_state\"");
        let longest = Sql::new(quote_table(&"t".repeat(MAX_TABLE_NAME)).unwrap());
        assert!(
            longest
                .index("context_listed", false)
                .trim_matches('"')
                .len()
                <= 63
        );
    }

    #[test]
    fn a_save_keeps_the_status_timestamp_in_nanoseconds_whatever_its_year() {
        let row = |ts: &str| {
            let task = Task::from_json(&format!(
                r#"{{"id": "a", "status": {{"state": "working", "timestamp": "{ts}"}}}}"#
            ))
            .unwrap();
            SaveRow::of(&task).status_ts
        };
        assert_eq!(row("1970-01-01T00:00:01.5Z").as_deref(), Some("1500000000"));
        assert_eq!(row("1970-01-01T01:00:00+01:00").as_deref(), Some("0"));
        assert_eq!(
            row("9999-12-31T23:59:59.999999999Z").as_deref(),
            Some("253402300799999999999")
        );
        assert_eq!(row("yesterday"), None);
    }
}

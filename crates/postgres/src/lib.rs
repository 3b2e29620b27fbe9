//! [`PostgresTaskStore`]: every Task in one PostgreSQL table, so several replicas of a runtime
//! share their Tasks.
//!
//! The table (created if missing; see `docs/postgres.md`):
//!
//! ```sql
//! CREATE TABLE toolnexus_tasks (
//!     id         bytea PRIMARY KEY,   -- the id's UTF-8 bytes: byte order, and U+0000 fits
//!     task       jsonb NOT NULL,      -- the Task, for SQL
//!     exact      text,                -- NULL, or the Task's own JSON text when jsonb cannot
//!                                     -- give it back (see below)
//!     context_id bytea,               -- contextId, for the list filter
//!     state      bytea,               -- status.state, normalized, for the list filter
//!     updated_at timestamptz NOT NULL DEFAULT now()
//! );
//! CREATE INDEX toolnexus_tasks_context_id ON toolnexus_tasks (context_id, id);
//! CREATE INDEX toolnexus_tasks_state ON toolnexus_tasks (state, id);
//! ```
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
use tokio_postgres::{Config, NoTls};
use toolnexus_core::state::normalize_state;
use toolnexus_core::{ListQuery, StoreError, Task, TaskPage, TaskStore, check_expected, check_id};

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

/// The statements, for one table.
struct Sql {
    table: String,
    get: String,
    save: String,
    /// Compare-and-set over an existing row: $6/$7 are the expected `task` and `exact`.
    replace: String,
    /// Insert only if there is no row for the id.
    insert_new: String,
    delete: String,
    /// Indexed by [`list_variant`]: with a page token, a context filter, a state filter.
    list: [String; 8],
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

    /// Connects, creates the table if missing, and checks it, so a bad URL, wrong credentials,
    /// an unreachable server or an unusable table fail here rather than at the first call.
    pub async fn connect(self) -> Result<PostgresTaskStore, StoreError> {
        let store = self.prepare()?;
        store.run(setup).await?;
        Ok(store)
    }

    /// [`connect`](Self::connect) for synchronous code. Blocks the calling thread until the
    /// store is ready; works inside a Tokio runtime too (from async code, prefer
    /// [`connect`](Self::connect) or call this in `spawn_blocking`).
    pub fn connect_blocking(self) -> Result<PostgresTaskStore, StoreError> {
        let store = self.prepare()?;
        let shared = Arc::clone(&store.shared);
        let call = deadline(shared.timeout, shared.describe.clone(), setup(shared));
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

impl Sql {
    fn new(table: String) -> Self {
        let list = std::array::from_fn(|variant| {
            let mut sql = format!("SELECT id, COALESCE(exact, task::text) FROM {table} WHERE true");
            let mut n = 0;
            let mut param = |column: &str, op: &str| {
                n += 1;
                format!(" AND {column} {op} ${n}")
            };
            if variant & 1 != 0 {
                sql.push_str(&param("id", ">"));
            }
            if variant & 2 != 0 {
                sql.push_str(&param("context_id", "="));
            }
            if variant & 4 != 0 {
                sql.push_str(&param("state", "="));
            }
            let _ = write!(sql, " ORDER BY id LIMIT ${}", n + 1);
            sql
        });
        Sql {
            get: format!("SELECT COALESCE(exact, task::text) FROM {table} WHERE id = $1"),
            save: format!(
                "INSERT INTO {table} (id, task, exact, context_id, state, updated_at) \
                 VALUES ($1, $2::text::jsonb, $3, $4, $5, clock_timestamp()) \
                 ON CONFLICT (id) DO UPDATE SET task = EXCLUDED.task, exact = EXCLUDED.exact, \
                 context_id = EXCLUDED.context_id, state = EXCLUDED.state, \
                 updated_at = EXCLUDED.updated_at"
            ),
            replace: format!(
                "UPDATE {table} SET task = $2::text::jsonb, exact = $3, context_id = $4, \
                 state = $5, updated_at = clock_timestamp() \
                 WHERE id = $1 AND task = $6::text::jsonb AND exact IS NOT DISTINCT FROM $7"
            ),
            insert_new: format!(
                "INSERT INTO {table} (id, task, exact, context_id, state, updated_at) \
                 VALUES ($1, $2::text::jsonb, $3, $4, $5, clock_timestamp()) \
                 ON CONFLICT (id) DO NOTHING"
            ),
            delete: format!("DELETE FROM {table} WHERE id = $1"),
            list,
            table,
        }
    }
}

fn list_variant(query: &ListQuery) -> usize {
    usize::from(query.page_token.is_some())
        | usize::from(query.context_id.is_some()) << 1
        | usize::from(query.state.is_some()) << 2
}

/// Creates the table and its indexes if missing (under an advisory lock, so replicas starting
/// together do not race), then checks that the table has the columns this store needs.
async fn setup(shared: Arc<Shared>) -> Result<(), StoreError> {
    let store = &shared.describe;
    let mut client = shared
        .pool
        .get()
        .await
        .map_err(|e| pool_error(store, e, true))?;
    let table = &shared.sql.table;
    let index = |suffix: &str| {
        // `"schema"."name"` → `"name_suffix"`: an index lives in its table's schema.
        let bare = table.rsplit('.').next().unwrap_or(table);
        format!("\"{}_{suffix}\"", bare.trim_matches('"'))
    };
    let lock_key = fnv1a(table.as_bytes()) as i64;
    let tx = client
        .transaction()
        .await
        .map_err(|e| pg_error(store, &e, true))?;
    let exists: bool = tx
        .query_one(
            &format!("SELECT pg_advisory_xact_lock({lock_key}), to_regclass($1) IS NOT NULL"),
            &[table],
        )
        .await
        .map_err(|e| pg_error(store, &e, true))?
        .get(1);
    if !exists {
        let create = format!(
            "CREATE TABLE {table} (\
                 id bytea PRIMARY KEY, \
                 task jsonb NOT NULL, \
                 exact text, \
                 context_id bytea, \
                 state bytea, \
                 updated_at timestamptz NOT NULL DEFAULT now()); \
             CREATE INDEX {} ON {table} (context_id, id); \
             CREATE INDEX {} ON {table} (state, id); \
             COMMENT ON TABLE {table} IS 'toolnexus A2A Tasks (see docs/postgres.md)'",
            index("context_id"),
            index("state"),
        );
        tx.batch_execute(&create)
            .await
            .map_err(|e| pg_error(store, &e, true))?;
    }
    tx.commit().await.map_err(|e| pg_error(store, &e, true))?;

    // The table may have existed already: check it is one of ours.
    let probe = client
        .prepare(&format!(
            "SELECT id, task, exact, context_id, state, updated_at FROM {table} WHERE false"
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
            _ => pg_error(store, &e, true),
        })?;
    let want = ["bytea", "jsonb", "text", "bytea", "bytea", "timestamptz"];
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
    // Statements are prepared on first use on each connection; this one also checks the rights.
    client
        .prepare_cached(&shared.sql.get)
        .await
        .map_err(|e| pg_error(store, &e, true))?;
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
        check_id(id)?;
        let id = id.to_owned();
        self.run(move |shared| async move {
            let text: Option<String> = with_client(&shared, true, |client| {
                let (sql, id) = (&shared.sql.get, id.as_bytes());
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
            text.map(|text| read_task(&shared, id.as_bytes(), &text))
                .transpose()
        })
        .await
    }

    async fn save(&self, task: &Task) -> Result<(), StoreError> {
        let task = task.clone();
        self.run(move |shared| async move {
            let row = SaveRow::of(&task);
            with_client(&shared, true, |client| {
                let (sql, row, task) = (&shared.sql.save, &row, &task);
                async move {
                    let result = async {
                        let statement = client.prepare_cached(sql).await?;
                        let (jsonb, exact) = row.task_columns(task);
                        let id = task.id().as_bytes();
                        let (context, state) = row.filter_columns();
                        client
                            .execute(&statement, &[&id, &jsonb, &exact, &context, &state])
                            .await
                    }
                    .await;
                    (client, result)
                }
            })
            .await?;
            Ok(())
        })
        .await
    }

    /// One statement: an `UPDATE … WHERE` the row still holds `expected` (compared as the
    /// store compares what it wrote: `task` as jsonb, and `exact` as text when the row has it),
    /// or an `INSERT … ON CONFLICT DO NOTHING` when `expected` is `None`. Not retried on a lost
    /// connection: the first attempt may have committed, and a retry would then answer `false`.
    async fn save_if(&self, task: &Task, expected: Option<&Task>) -> Result<bool, StoreError> {
        check_expected(task, expected)?;
        let (task, expected) = (task.clone(), expected.cloned());
        self.run(move |shared| async move {
            let row = SaveRow::of(&task);
            let old = expected.as_ref().map(|e| (SaveRow::of(e), e));
            let written = with_client(&shared, false, |client| {
                let (sql, row, task, old) = (&shared.sql, &row, &task, &old);
                async move {
                    let result = async {
                        let (jsonb, exact) = row.task_columns(task);
                        let id = task.id().as_bytes();
                        let (context, state) = row.filter_columns();
                        match old {
                            Some((old, expected)) => {
                                let statement = client.prepare_cached(&sql.replace).await?;
                                let (old_jsonb, old_exact) = old.task_columns(expected);
                                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 7] = [
                                    &id, &jsonb, &exact, &context, &state, &old_jsonb, &old_exact,
                                ];
                                client.execute(&statement, &params).await
                            }
                            None => {
                                let statement = client.prepare_cached(&sql.insert_new).await?;
                                client
                                    .execute(&statement, &[&id, &jsonb, &exact, &context, &state])
                                    .await
                            }
                        }
                    }
                    .await;
                    (client, result)
                }
            })
            .await?;
            Ok(written == 1)
        })
        .await
    }

    async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
        let query = query.clone();
        self.run(move |shared| async move {
            let limit = query.limit();
            let rows: Vec<(Vec<u8>, String)> = with_client(&shared, true, |client| {
                let (sql, query) = (&shared.sql.list[list_variant(&query)], &query);
                async move {
                    let result = async {
                        let statement = client.prepare_cached(sql).await?;
                        let token = query.page_token.as_deref().map(str::as_bytes);
                        let context = query.context_id.as_deref().map(str::as_bytes);
                        let state = query.state.as_deref().map(normalize_state);
                        let fetch = i64::try_from(limit + 1).unwrap_or(i64::MAX);
                        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                            Vec::with_capacity(4);
                        if let Some(token) = &token {
                            params.push(token);
                        }
                        if let Some(context) = &context {
                            params.push(context);
                        }
                        let state_bytes = state.as_deref().map(str::as_bytes);
                        if let Some(state) = &state_bytes {
                            params.push(state);
                        }
                        params.push(&fetch);
                        let rows = client.query(&statement, &params).await?;
                        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
                    }
                    .await;
                    (client, result)
                }
            })
            .await?;
            let more = rows.len() > limit;
            let mut tasks = Vec::with_capacity(rows.len().min(limit));
            let mut last_id = None;
            for (id, text) in rows.into_iter().take(limit) {
                let task = read_task(&shared, &id, &text)?;
                last_id = Some(task.id().to_owned());
                tasks.push(task);
            }
            Ok(TaskPage {
                tasks,
                next_page_token: if more { last_id } else { None },
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

/// A stored row back into a Task: it must be one, with the id of its row.
fn read_task(shared: &Shared, id: &[u8], text: &str) -> Result<Task, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt {
        location: format!("{} row {:?}", shared.describe, String::from_utf8_lossy(id)),
        reason,
    };
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
    fn list_statements_use_keyset_paging() {
        let sql = Sql::new(quote_table("t").unwrap());
        assert_eq!(
            sql.list[7],
            "SELECT id, COALESCE(exact, task::text) FROM \"t\" WHERE true AND id > $1 \
             AND context_id = $2 AND state = $3 ORDER BY id LIMIT $4"
        );
        assert_eq!(
            sql.list[0],
            "SELECT id, COALESCE(exact, task::text) FROM \"t\" WHERE true ORDER BY id LIMIT $1"
        );
        let q = ListQuery {
            state: Some("x".into()),
            page_token: Some("t".into()),
            ..Default::default()
        };
        assert_eq!(list_variant(&q), 5);
    }
}

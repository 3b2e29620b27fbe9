//! Settings of a store and its connecting: the URL and TLS checked, the pool and runtime
//! made, then the table made ready.

use crate::errors::chain;
use crate::pool::Shared;
use crate::schema::open;
use crate::statements::Sql;
use crate::store::PostgresTaskStore;
use crate::table_name::quote_table;
use crate::tls;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::{Config, NoTls};
use toolnexus_core::StoreError;
use toolnexus_core::options::redact;

/// The table used when none is named.
pub const DEFAULT_TABLE: &str = "toolnexus_tasks";

const DEFAULT_POOL_SIZE: usize = 8;
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

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

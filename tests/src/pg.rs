//! PostgreSQL for tests: the server named by `TOOLNEXUS_TEST_POSTGRES_URL`, or a throwaway
//! cluster of our own ([`Cluster`], from `toolnexus-pg-cluster`: `initdb` + `postgres` from
//! `PATH` or `/usr/lib/postgresql/*/bin`, run as the `postgres` user when we are root, on a free
//! local port, in a temp dir removed afterwards).
//!
//! When neither is possible a test prints why and returns (a skip), unless
//! `TOOLNEXUS_REQUIRE_POSTGRES=1` (CI), where that is a failure. Tests isolate themselves with
//! a table of their own ([`unique_table`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
pub use toolnexus_pg_cluster::{Cluster, PASSWORD, REQUIRE_ENV, USER, execute};
use toolnexus_pg_cluster::{SharedCluster, unavailable};

/// A server to use instead of starting one: `postgres://user:password@host:port/db`.
pub const URL_ENV: &str = "TOOLNEXUS_TEST_POSTGRES_URL";

/// The PostgreSQL server a test uses; keeps a cluster of ours running while it lives.
pub struct Server {
    url: String,
    external: bool,
    _cluster: Option<Arc<Cluster>>,
}

impl Server {
    /// `postgres://user:password@127.0.0.1:port/postgres`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL with the store's options (`table=…`) appended.
    pub fn selector(&self, options: &str) -> String {
        let sep = if self.url.contains('?') { '&' } else { '?' };
        format!("{}{sep}{options}", self.url)
    }

    /// Whether the server is the environment's (its tables outlive the test unless dropped).
    pub fn is_external(&self) -> bool {
        self.external
    }
}

/// A server for one test, or `None` (after printing why) if there is none and none is required.
/// Tests running at once share one cluster of ours; it stops when the last of them ends.
pub fn server() -> Option<Server> {
    if let Ok(url) = std::env::var(URL_ENV)
        && !url.is_empty()
    {
        return Some(Server {
            url,
            external: true,
            _cluster: None,
        });
    }
    static SHARED: SharedCluster = SharedCluster::new();
    let cluster = match SHARED.get_or_start(Cluster::start) {
        Ok(cluster) => cluster,
        Err(reason) => return skip(&reason),
    };
    Some(Server {
        url: cluster.url(),
        external: false,
        _cluster: Some(cluster),
    })
}

/// A cluster of the test's own, which it may stop and start (fault tests), or `None` (after
/// printing why) if none can be started and none is required. Ignores `TOOLNEXUS_TEST_POSTGRES_URL`.
pub fn own_cluster() -> Option<Cluster> {
    match Cluster::start() {
        Ok(cluster) => Some(cluster),
        Err(reason) => skip(&reason),
    }
}

fn skip<T>(reason: &str) -> Option<T> {
    unavailable(reason, Some(&format!("Set {URL_ENV} to a server")))
}

/// A table name no other test (in this process or another) uses.
pub fn unique_table(prefix: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    // Short enough for any prefix: table names must stay within 48 bytes.
    let prefix: String = prefix.chars().take(16).collect();
    format!(
        "{prefix}_{:x}_{}_{nanos:x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Drops a test's table at the end of the test, on servers that outlive it.
pub struct TableGuard {
    url: Option<String>,
    table: String,
}

impl TableGuard {
    pub fn new(server: &Server, table: &str) -> Self {
        TableGuard {
            url: server.is_external().then(|| server.url().to_owned()),
            table: table.to_owned(),
        }
    }
}

impl Drop for TableGuard {
    fn drop(&mut self) {
        if let Some(url) = &self.url {
            let _ = execute(url, &format!("DROP TABLE IF EXISTS \"{}\"", self.table));
        }
    }
}

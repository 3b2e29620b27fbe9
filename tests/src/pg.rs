//! PostgreSQL for tests: the server named by `TOOLNEXUS_TEST_POSTGRES_URL`, or a throwaway
//! cluster of our own ([`Cluster`], from `toolnexus-pg-cluster`: `initdb` + `postgres` from
//! `PATH` or `/usr/lib/postgresql/*/bin`, run as the `postgres` user when we are root, on a free
//! local port, in a temp dir removed afterwards).
//!
//! When neither is possible a test prints why and returns (a skip), unless
//! `TOOLNEXUS_REQUIRE_POSTGRES=1` (CI), where that is a failure. Tests isolate themselves with
//! a table of their own ([`unique_table`]).

use toolnexus_pg_cluster::unavailable;
pub use toolnexus_pg_cluster::{
    Cluster, PASSWORD, REQUIRE_ENV, Server, URL_ENV, USER, execute, server, unique_table,
};

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
            // The store's push-config table goes with its Task table.
            let _ = execute(
                url,
                &format!(
                    "DROP TABLE IF EXISTS \"{0}\", \"{0}_push_configs\"",
                    self.table
                ),
            );
        }
    }
}

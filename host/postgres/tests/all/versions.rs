//! Versions and conditional saves on a real PostgreSQL (raced by many
//! writers through several stores, each with a pool of its own, as replicas would), the A2A 1.0
//! listing (newest status timestamp first, filters, keyset pages, total size) checked against
//! the memory store (the reference semantics), and the migration of a table made by an earlier
//! version.
//!
//! The server is `TOOLNEXUS_TEST_POSTGRES_URL`, or a throwaway cluster; without one the tests
//! print `SKIPPED: …` and pass, unless `TOOLNEXUS_REQUIRE_POSTGRES=1`, where that fails.
//!
//! Shared here: the test's own table, task builders, the conflict assertion and the page walk;
//! the tests are in the submodules, one subject each.

mod compare_and_set;
mod listing;
mod migration;

use crate::support;

use crate::support::{Server, execute, unique_table};
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;
use toolnexus_core::{
    Blame, Expect, InMemoryTaskStore, ListQuery, StoreError, Task, TaskPage, TaskStore,
};
use toolnexus_format::Timestamp;
use toolnexus_postgres::PostgresTaskStore;

/// A table of the test's own, dropped at the end with the push table beside it.
struct Table {
    url: String,
    name: String,
}

impl Table {
    fn new(server: &Server, prefix: &str) -> Table {
        Table {
            url: server.url().to_owned(),
            name: unique_table(prefix),
        }
    }

    fn sql(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        execute(&self.url, sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// The first column of the first row.
    fn one(&self, sql: &str) -> Option<String> {
        self.sql(sql)
            .into_iter()
            .next()
            .and_then(|row| row[0].clone())
    }

    async fn store(&self) -> PostgresTaskStore {
        self.store_with_pool(4).await
    }

    async fn store_with_pool(&self, pool: usize) -> PostgresTaskStore {
        PostgresTaskStore::builder(&self.url)
            .table(&self.name)
            .pool_size(pool)
            .connect()
            .await
            .unwrap_or_else(|e| panic!("connect: {e}"))
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        let _ = execute(
            &self.url,
            &format!(
                "DROP TABLE IF EXISTS \"{0}\", \"{0}_push_configs\"",
                self.name
            ),
        );
    }
}

fn task(value: serde_json::Value) -> Task {
    Task::from_json(&value.to_string()).unwrap()
}

fn timed(id: &str, context: &str, state: &str, timestamp: &str) -> Task {
    task(json!({
        "id": id,
        "contextId": context,
        "status": {"state": state, "timestamp": timestamp},
    }))
}

#[track_caller]
fn assert_conflict(
    result: Result<u64, StoreError>,
    id: &str,
    expected: Expect,
    current: Option<u64>,
) {
    match result {
        Err(StoreError::Conflict {
            id: got_id,
            expected: got_expected,
            current: got_current,
        }) => {
            assert_eq!(
                (got_id.as_str(), got_expected, got_current),
                (id, expected, current)
            );
        }
        other => panic!("expected a conflict (current {current:?}), got {other:?}"),
    }
}

/// Every page of `query`, walked with its page size: the Tasks in order and each page's total.
async fn walk(store: &dyn TaskStore, query: &ListQuery) -> (Vec<Task>, Vec<TaskPage>) {
    let mut query = query.clone();
    let mut tasks = Vec::new();
    let mut pages = Vec::new();
    loop {
        let page = store.list(&query).await.unwrap();
        assert!(page.tasks.len() <= query.limit());
        tasks.extend(page.tasks.iter().cloned());
        query.page_token = page.next_page_token.clone();
        let last = query.page_token.is_none();
        pages.push(page);
        if last {
            return (tasks, pages);
        }
        assert!(pages.len() < 10_000, "the walk does not end");
    }
}

fn ids(tasks: &[Task]) -> Vec<&str> {
    tasks.iter().map(Task::id).collect()
}

//! Store contract 0.2 on a real PostgreSQL: versions and conditional saves (raced by many
//! writers through several stores, each with a pool of its own, as replicas would), the A2A 1.0
//! listing (newest status timestamp first, filters, keyset pages, total size) checked against
//! the memory store (the reference semantics), and the migration of a table made by an earlier
//! version.
//!
//! The server is `TOOLNEXUS_TEST_POSTGRES_URL`, or a throwaway cluster; without one the tests
//! print `SKIPPED: …` and pass, unless `TOOLNEXUS_REQUIRE_POSTGRES=1`, where that fails.

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

/// A table of the test's own, dropped at the end.
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
            &format!("DROP TABLE IF EXISTS \"{}\"", self.name),
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

#[tokio::test(flavor = "multi_thread")]
async fn versions_start_at_one_and_grow_by_one_with_every_save() {
    let Some(server) = support::server() else {
        return;
    };
    let table = Table::new(&server, "versions");
    let store = table.store().await;
    let v = |n: u64| task(json!({"id": "t", "n": n}));

    assert_eq!(store.get_versioned("t").await.unwrap(), None);
    store.save(&v(1)).await.unwrap();
    assert_eq!(store.get_versioned("t").await.unwrap(), Some((v(1), 1)));
    assert_eq!(store.save_versioned(&v(2), Expect::Any).await.unwrap(), 2);
    assert_eq!(
        store
            .save_versioned(&v(3), Expect::Version(2))
            .await
            .unwrap(),
        3
    );
    // A conditional save that does not hold writes nothing and names the stored version.
    assert_conflict(
        store.save_versioned(&v(4), Expect::Version(2)).await,
        "t",
        Expect::Version(2),
        Some(3),
    );
    assert_conflict(
        store.save_versioned(&v(4), Expect::Absent).await,
        "t",
        Expect::Absent,
        Some(3),
    );
    assert_conflict(
        store.save_versioned(&v(4), Expect::Version(u64::MAX)).await,
        "t",
        Expect::Version(u64::MAX),
        Some(3),
    );
    assert_eq!(store.get_versioned("t").await.unwrap(), Some((v(3), 3)));
    assert_eq!(
        table
            .one(&format!("SELECT version FROM \"{}\"", table.name))
            .as_deref(),
        Some("3")
    );
    let err = store
        .save_versioned(&v(4), Expect::Version(1))
        .await
        .unwrap_err();
    assert_eq!(err.blame(), Blame::Caller);

    // Another store over the table (another replica) sees the same versions.
    let other = table.store().await;
    assert_eq!(other.get_versioned("t").await.unwrap(), Some((v(3), 3)));
    assert_eq!(
        other
            .save_versioned(&v(4), Expect::Version(3))
            .await
            .unwrap(),
        4
    );
    assert_eq!(store.get_versioned("t").await.unwrap(), Some((v(4), 4)));

    // Delete forgets the version: a re-created Task starts at 1.
    assert!(store.delete("t").await.unwrap());
    assert_conflict(
        store.save_versioned(&v(5), Expect::Version(4)).await,
        "t",
        Expect::Version(4),
        None,
    );
    assert_eq!(store.get_versioned("t").await.unwrap(), None);
    assert_eq!(
        store.save_versioned(&v(5), Expect::Absent).await.unwrap(),
        1
    );
    store.save(&v(6)).await.unwrap();
    assert_eq!(store.get_versioned("t").await.unwrap(), Some((v(6), 2)));
    assert_eq!(store.get("t").await.unwrap(), Some(v(6)));

    // Tasks keep versions of their own; a Task jsonb cannot hold keeps its text and counts alike.
    let odd = Task::from_json(r#"{"id": "odd\u0000id", "n": -0.0}"#).unwrap();
    assert_eq!(store.save_versioned(&odd, Expect::Absent).await.unwrap(), 1);
    assert_eq!(
        store
            .save_versioned(&odd, Expect::Version(1))
            .await
            .unwrap(),
        2
    );
    let (back, version) = store.get_versioned("odd\u{0}id").await.unwrap().unwrap();
    assert_eq!((back.as_json(), version), (odd.as_json(), 2));
    assert_eq!(store.get_versioned("t").await.unwrap().unwrap().1, 2);
}

/// `writers` tasks across `stores` (each a pool of its own) make the same conditional save of
/// `id` at once, each with a document of its own; returns each writer's answer, by writer.
async fn race(
    stores: &[Arc<PostgresTaskStore>],
    writers: usize,
    id: &str,
    expect: Expect,
) -> Vec<(Task, Result<u64, StoreError>)> {
    let barrier = Arc::new(tokio::sync::Barrier::new(writers));
    let handles: Vec<_> = (0..writers)
        .map(|writer| {
            let store = Arc::clone(&stores[writer % stores.len()]);
            let barrier = Arc::clone(&barrier);
            let doc = task(json!({"id": id, "writer": writer}));
            tokio::spawn(async move {
                barrier.wait().await;
                let result = store.save_versioned(&doc, expect).await;
                (doc, result)
            })
        })
        .collect();
    let mut answers = Vec::new();
    for handle in handles {
        answers.push(handle.await.unwrap());
    }
    answers
}

/// Exactly one writer won with `won`; every other one got a conflict naming `won` as current;
/// the stored document is the winner's.
async fn check_race(
    store: &PostgresTaskStore,
    id: &str,
    expect: Expect,
    answers: Vec<(Task, Result<u64, StoreError>)>,
    won: u64,
) {
    let mut winners = Vec::new();
    for (doc, result) in answers {
        match result {
            Ok(version) => {
                assert_eq!(version, won);
                winners.push(doc);
            }
            other => assert_conflict(other, id, expect, Some(won)),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one writer wins: {winners:?}");
    assert_eq!(
        store.get_versioned(id).await.unwrap(),
        Some((winners.remove(0), won))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn racing_conditional_saves_from_one_version_have_exactly_one_winner() {
    let Some(server) = support::server() else {
        return;
    };
    let table = Table::new(&server, "race_version");
    let mut stores = Vec::new();
    for _ in 0..3 {
        stores.push(Arc::new(table.store_with_pool(8).await));
    }
    const WRITERS: usize = 24;
    stores[0]
        .save(&task(json!({"id": "r", "writer": "first"})))
        .await
        .unwrap();
    for v in 1..=10 {
        let answers = race(&stores, WRITERS, "r", Expect::Version(v)).await;
        check_race(&stores[1], "r", Expect::Version(v), answers, v + 1).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn racing_creates_have_exactly_one_winner() {
    let Some(server) = support::server() else {
        return;
    };
    let table = Table::new(&server, "race_absent");
    let mut stores = Vec::new();
    for _ in 0..3 {
        stores.push(Arc::new(table.store_with_pool(8).await));
    }
    for round in 0..10 {
        let id = format!("new-{round}");
        let answers = race(&stores, 24, &id, Expect::Absent).await;
        check_race(&stores[2], &id, Expect::Absent, answers, 1).await;
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

/// The Tasks of the listing tests: timestamps in every spelling (offsets, fractions down to the
/// nanosecond, years beyond i64's nanoseconds), ties broken by id in byte order, Tasks whose
/// status timestamp is missing or unreadable, three contexts and every spelling of a state.
fn listing_tasks() -> Vec<Task> {
    let mut tasks = vec![
        timed("b", "c1", "working", "2025-01-01T12:00:00Z"),
        timed("a", "c1", "TASK_STATE_WORKING", "2025-01-01T13:00:00+01:00"),
        timed("é", "c2", "completed", "2025-01-01T12:00:00Z"),
        timed("z", "c2", "Working", "2025-01-01T12:00:00.000000001Z"),
        timed("y", "c1", "cancelled", "2025-01-01T11:59:59.999999999Z"),
        timed("far-future", "c3", "canceled", "9999-12-31T23:59:59Z"),
        timed("far-past", "c3", "submitted", "1600-01-01T00:00:00Z"),
        timed("epoch", "c1", "working", "1970-01-01T00:00:00Z"),
        timed("before-epoch", "c2", "working", "1969-12-31T23:59:59.5Z"),
        timed("bad-time", "c1", "working", "yesterday"),
        task(json!({"id": "no-status", "contextId": "c1"})),
        task(
            json!({"id": "number-time", "contextId": "c2", "status": {"state": "working", "timestamp": 5}}),
        ),
        task(json!({"id": "A", "status": {"state": "working"}})),
        task(
            json!({"id": "\u{0}nul", "contextId": "c1", "status": {"state": "working", "timestamp": "2025-01-01T12:00:00Z"}}),
        ),
    ];
    for i in 0..40 {
        tasks.push(timed(
            &format!("bulk-{i:02}"),
            ["c1", "c2", "c3"][i % 3],
            [
                "working",
                "completed",
                "input-required",
                "TASK_STATE_COMPLETED",
            ][i % 4],
            &format!("2025-01-01T12:00:{:02}.{:03}Z", i % 7, i % 3),
        ));
    }
    tasks
}

fn queries() -> Vec<ListQuery> {
    let at = |t: &str| Some(Timestamp::parse(t).unwrap());
    let mut queries = Vec::new();
    for page_size in [1, 3, 7, 0] {
        let q = ListQuery {
            page_size,
            ..Default::default()
        };
        queries.push(q.clone());
        queries.push(ListQuery {
            context_id: Some("c1".into()),
            ..q.clone()
        });
        queries.push(ListQuery {
            state: Some("TASK_STATE_WORKING".into()),
            ..q.clone()
        });
        queries.push(ListQuery {
            state: Some("canceled".into()),
            context_id: Some("c3".into()),
            ..q.clone()
        });
        queries.push(ListQuery {
            status_timestamp_after: at("2025-01-01T12:00:00Z"),
            ..q.clone()
        });
        queries.push(ListQuery {
            status_timestamp_after: at("2025-01-01T13:00:03.001+01:00"),
            state: Some("completed".into()),
            ..q.clone()
        });
        queries.push(ListQuery {
            status_timestamp_after: at("1969-01-01T00:00:00Z"),
            context_id: Some("c2".into()),
            ..q.clone()
        });
        queries.push(ListQuery {
            context_id: Some("nobody".into()),
            ..q.clone()
        });
    }
    queries
}

#[tokio::test(flavor = "multi_thread")]
async fn listing_pages_and_filters_are_the_memory_stores() {
    let Some(server) = support::server() else {
        return;
    };
    let table = Table::new(&server, "listing");
    let store = table.store().await;
    let memory = InMemoryTaskStore::new();
    for task in listing_tasks() {
        store.save(&task).await.unwrap();
        memory.save(&task).await.unwrap();
    }

    // The order, spelled out once: newest first (instants, not text), ties by id in byte order,
    // then the Tasks without a readable timestamp, by id.
    let all = ListQuery {
        page_size: 1000,
        ..Default::default()
    };
    let (listed, _) = walk(&store, &all).await;
    let named: Vec<&str> = ids(&listed)
        .into_iter()
        .filter(|id| !id.starts_with("bulk-"))
        .collect();
    assert_eq!(
        named,
        [
            "far-future",
            "z",
            "\u{0}nul",
            "a",
            "b",
            "é",
            "y",
            "epoch",
            "before-epoch",
            "far-past",
            "A",
            "bad-time",
            "no-status",
            "number-time",
        ]
    );

    for query in queries() {
        let (pg_tasks, pg_pages) = walk(&store, &query).await;
        let (mem_tasks, mem_pages) = walk(&memory, &query).await;
        assert_eq!(ids(&pg_tasks), ids(&mem_tasks), "{query:?}");
        assert_eq!(pg_tasks, mem_tasks, "{query:?}");
        // The same pages, tokens (opaque, but the same sort keys) and totals.
        assert_eq!(pg_pages, mem_pages, "{query:?}");
        let unique: HashSet<&str> = ids(&pg_tasks).into_iter().collect();
        assert_eq!(unique.len(), pg_tasks.len(), "{query:?}");
    }
    let filtered = ListQuery {
        context_id: Some("c1".into()),
        state: Some("working".into()),
        ..Default::default()
    };
    let page = store.list(&filtered).await.unwrap();
    assert!(!page.tasks.is_empty());
    for task in &page.tasks {
        assert_eq!(task.get("contextId"), Some(&json!("c1")));
    }
    assert_eq!(page.total_size, Some(page.tasks.len() as u64));
}

#[tokio::test(flavor = "multi_thread")]
async fn walking_250_tasks_in_pages_of_7_returns_each_once_in_order() {
    let Some(server) = support::server() else {
        return;
    };
    let table = Table::new(&server, "walk");
    let store = table.store().await;
    let memory = InMemoryTaskStore::new();
    let mut saved = Vec::new();
    for i in 0..250 {
        // Many share a timestamp (ties by id), every tenth has none.
        let task = if i % 10 == 0 {
            task(json!({"id": format!("t{i:03}"), "contextId": "c"}))
        } else {
            timed(
                &format!("t{i:03}"),
                if i % 2 == 0 { "even" } else { "odd" },
                "working",
                &format!("2025-06-01T00:{:02}:00Z", i % 13),
            )
        };
        store.save(&task).await.unwrap();
        memory.save(&task).await.unwrap();
        saved.push(task);
    }
    let query = ListQuery {
        page_size: 7,
        ..Default::default()
    };
    let (tasks, pages) = walk(&store, &query).await;
    assert_eq!(pages.len(), 250usize.div_ceil(7));
    assert!(pages.iter().all(|p| p.total_size == Some(250)));
    let unique: HashSet<&str> = ids(&tasks).into_iter().collect();
    assert_eq!((tasks.len(), unique.len()), (250, 250));
    let (expected, _) = walk(
        &memory,
        &ListQuery {
            page_size: 1000,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(ids(&tasks), ids(&expected));
    // Newest first, untimed last.
    assert!(tasks[0].id() != "t000" && tasks[249].id() == "t240");

    // Saves between pages neither repeat nor skip the Tasks that keep their timestamps.
    let mut query = ListQuery {
        page_size: 7,
        context_id: Some("odd".into()),
        ..Default::default()
    };
    let mut seen = Vec::new();
    let mut n = 0;
    loop {
        let page = store.list(&query).await.unwrap();
        assert_eq!(page.total_size, Some(125 + n));
        seen.extend(page.tasks.iter().map(|t| t.id().to_owned()));
        store
            .save(&timed(
                &format!("late{n}"),
                "odd",
                "working",
                "2025-06-02T00:00:00Z",
            ))
            .await
            .unwrap();
        n += 1;
        match page.next_page_token {
            Some(token) => query.page_token = Some(token),
            None => break,
        }
    }
    let expected: Vec<String> = {
        let mut odd: Vec<&Task> = saved
            .iter()
            .filter(|t| t.get("contextId") == Some(&json!("odd")))
            .collect();
        odd.sort_by_key(|t| {
            let ts = t.get("status").unwrap()["timestamp"]
                .as_str()
                .unwrap()
                .to_owned();
            (std::cmp::Reverse(ts), t.id().to_owned())
        });
        odd.iter().map(|t| t.id().to_owned()).collect()
    };
    assert_eq!(seen, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_token_the_store_did_not_make_is_an_invalid_query() {
    let Some(server) = support::server() else {
        return;
    };
    let table = Table::new(&server, "tokens");
    let store = table.store().await;
    store
        .save(&timed("a", "c", "working", "2025-01-01T00:00:00Z"))
        .await
        .unwrap();
    // Garbage, an id (the tokens of the earlier version), base64 of something else, no id.
    for token in ["garbage!!", "a", "e30", "WyIxIiwiIl0", ""] {
        let query = ListQuery {
            page_token: Some(token.to_owned()),
            ..Default::default()
        };
        match store.list(&query).await {
            Err(err @ StoreError::InvalidQuery { .. }) => assert_eq!(err.blame(), Blame::Caller),
            other => panic!("token {token:?}: {other:?}"),
        }
    }
}

/// The table as the version before versions made it.
fn old_schema(table: &str) -> String {
    format!(
        "CREATE TABLE \"{table}\" (\
             id bytea PRIMARY KEY, \
             task jsonb NOT NULL, \
             exact text, \
             context_id bytea, \
             state bytea, \
             updated_at timestamptz NOT NULL DEFAULT now()); \
         CREATE INDEX \"{table}_context_id\" ON \"{table}\" (context_id, id); \
         CREATE INDEX \"{table}_state\" ON \"{table}\" (state, id); \
         COMMENT ON TABLE \"{table}\" IS 'toolnexus A2A Tasks (see docs/postgres.md)'"
    )
}

/// A row as the earlier version saved it.
fn old_row(table: &str, id: &str, task: &str, exact: Option<&str>) -> String {
    let exact = exact.map_or("NULL".to_owned(), |e| format!("'{e}'"));
    format!(
        "INSERT INTO \"{table}\" (id, task, exact, context_id, state) VALUES \
         (convert_to('{id}', 'UTF8'), '{task}'::jsonb, {exact}, \
          convert_to('{task}'::jsonb->>'contextId', 'UTF8'), \
          convert_to('{task}'::jsonb->'status'->>'state', 'UTF8'))"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_table_of_the_earlier_schema_is_migrated_at_connect() {
    let Some(server) = support::server() else {
        return;
    };
    let table = Table::new(&server, "migrate");
    let name = &table.name;
    table.sql(&old_schema(name));
    table.sql(&old_row(
        name,
        "old",
        r#"{"id": "old", "contextId": "c", "status": {"state": "working", "timestamp": "2024-05-01T10:00:00+02:00"}}"#,
        None,
    ));
    table.sql(&old_row(
        name,
        "new",
        r#"{"id": "new", "contextId": "c", "status": {"state": "completed", "timestamp": "2024-05-01T09:00:00.5Z"}}"#,
        None,
    ));
    table.sql(&old_row(
        name,
        "untimed",
        r#"{"id": "untimed", "contextId": "c"}"#,
        None,
    ));
    // A Task kept with its exact text (a number jsonb would respell).
    let exact = r#"{"id": "exact", "n": -0.0, "status": {"state": "working", "timestamp": "2024-05-01T09:00:00Z"}}"#;
    table.sql(&old_row(
        name,
        "exact",
        r#"{"id": "exact", "n": 0.0, "status": {"state": "working", "timestamp": "2024-05-01T09:00:00Z"}}"#,
        Some(exact),
    ));
    // More than one batch of the backfill.
    table.sql(&format!(
        "INSERT INTO \"{name}\" (id, task, context_id, state) \
         SELECT convert_to('bulk-' || lpad(i::text, 5, '0'), 'UTF8'), \
                jsonb_build_object('id', 'bulk-' || lpad(i::text, 5, '0'), 'contextId', 'bulk', \
                    'status', jsonb_build_object('state', 'working', 'timestamp', \
                        to_char(timestamp '2020-01-01' + i * interval '1 second', \
                                'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'))), \
                convert_to('bulk', 'UTF8'), convert_to('working', 'UTF8') \
         FROM generate_series(1, 1234) AS i"
    ));

    let store = table.store().await;
    // Old rows are at version 1, and save on from there.
    for id in ["old", "new", "untimed", "exact", "bulk-00001"] {
        let (_, version) = store.get_versioned(id).await.unwrap().unwrap();
        assert_eq!(version, 1, "{id}");
    }
    assert_eq!(
        store.get("exact").await.unwrap().unwrap().as_json(),
        Task::from_json(exact).unwrap().as_json()
    );
    // Listable by timestamp: every row got its timestamp, the untimed one is last.
    let page = store
        .list(&ListQuery {
            context_id: Some("c".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(ids(&page.tasks), ["new", "old", "untimed"]);
    assert_eq!(page.total_size, Some(3));
    let page = store
        .list(&ListQuery {
            status_timestamp_after: Some(Timestamp::parse("2024-05-01T07:30:00Z").unwrap()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(ids(&page.tasks), ["new", "exact", "old"]);
    assert_eq!(
        table.one(&format!(
            "SELECT count(*) FROM \"{name}\" WHERE status_ts_ns IS NULL"
        )),
        Some("1".into()),
        "only the untimed row has no timestamp"
    );
    let (bulk, _) = walk(
        &store,
        &ListQuery {
            context_id: Some("bulk".into()),
            page_size: 1000,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(bulk.len(), 1234);
    assert_eq!(
        (bulk[0].id(), bulk[1233].id()),
        ("bulk-01234", "bulk-00001")
    );
    assert_eq!(
        store
            .save_versioned(&bulk[0], Expect::Version(1))
            .await
            .unwrap(),
        2
    );

    // The column is marked complete, the list indexes replace the id-ordered ones.
    assert_eq!(
        table.one(&format!(
            "SELECT col_description('\"{name}\"'::regclass, attnum) FROM pg_attribute \
             WHERE attrelid = '\"{name}\"'::regclass AND attname = 'status_ts_ns'"
        )),
        Some("toolnexus: status.timestamp in ns since the Unix epoch; complete".into())
    );
    let mut indexes: Vec<String> = table
        .sql(&format!(
            "SELECT indexname FROM pg_indexes WHERE tablename = '{name}' ORDER BY 1"
        ))
        .into_iter()
        .filter_map(|row| row[0].clone())
        .collect();
    indexes.sort();
    let mut want = vec![
        format!("{name}_context_listed"),
        format!("{name}_listed"),
        format!("{name}_pkey"),
        format!("{name}_state_listed"),
    ];
    want.sort();
    assert_eq!(indexes, want);

    // Connecting again changes nothing.
    let again = table.store().await;
    assert_eq!(
        again.get_versioned("bulk-01234").await.unwrap().unwrap().1,
        2
    );
    assert_eq!(again.get_versioned("old").await.unwrap().unwrap().1, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unfinished_backfill_is_finished_by_the_next_connect() {
    let Some(server) = support::server() else {
        return;
    };
    let table = Table::new(&server, "refill");
    let name = &table.name;
    let store = table.store().await;
    for i in 0..5 {
        store
            .save(&timed(
                &format!("t{i}"),
                "c",
                "working",
                &format!("2025-01-01T00:00:0{i}Z"),
            ))
            .await
            .unwrap();
    }
    // As if the migration had stopped after its DDL (or the columns were added by hand).
    table.sql(&format!(
        "UPDATE \"{name}\" SET status_ts_ns = NULL; COMMENT ON COLUMN \"{name}\".status_ts_ns IS NULL"
    ));
    let before = store.list(&ListQuery::default()).await.unwrap();
    assert_eq!(
        ids(&before.tasks),
        ["t0", "t1", "t2", "t3", "t4"],
        "untimed: by id"
    );
    drop(store);
    let store = table.store().await;
    let after = store.list(&ListQuery::default()).await.unwrap();
    assert_eq!(ids(&after.tasks), ["t4", "t3", "t2", "t1", "t0"]);
    // The backfill writes no versions.
    assert_eq!(store.get_versioned("t4").await.unwrap().unwrap().1, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_user_who_may_not_migrate_the_table_is_told_what_to_run() {
    let Some(server) = support::server() else {
        return;
    };
    let table = Table::new(&server, "norights");
    let name = &table.name;
    let role = format!("{name}_user");
    table.sql(&old_schema(name));
    if let Err(e) = execute(
        server.url(),
        &format!(
            "CREATE ROLE \"{role}\" LOGIN PASSWORD 'pw'; \
             GRANT SELECT, INSERT, UPDATE, DELETE ON \"{name}\" TO \"{role}\""
        ),
    ) {
        // An external server may not let the test make roles.
        eprintln!("SKIPPED: cannot create a role: {e}");
        return;
    }
    let url = server.url().replacen("://", &format!("://{role}:pw@"), 1);
    // Drop the original credentials: `scheme://role:pw@user:password@host` → `role:pw@host`.
    let url = match url.split_once('@') {
        Some((head, rest)) => match rest.split_once('@') {
            Some((_, host)) => format!("{head}@{host}"),
            None => url.clone(),
        },
        None => url.clone(),
    };
    let result = PostgresTaskStore::builder(&url)
        .table(name.as_str())
        .connect()
        .await;
    let _ = execute(
        server.url(),
        &format!("DROP OWNED BY \"{role}\"; DROP ROLE \"{role}\""),
    );
    match result {
        Err(StoreError::InvalidSelector { reason, .. }) => {
            assert!(reason.contains("earlier version"), "{reason}");
            assert!(
                reason.contains("ADD COLUMN IF NOT EXISTS version"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    // Nothing was changed.
    assert_eq!(
        table.one(&format!(
            "SELECT count(*) FROM pg_attribute WHERE attrelid = '\"{name}\"'::regclass \
             AND attname IN ('version', 'status_ts_ns')"
        )),
        Some("0".into())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_foreign_table_with_the_same_column_names_is_never_migrated() {
    let Some(server) = support::server() else {
        return;
    };
    let table = Table::new(&server, "foreign");
    let name = &table.name;
    // The earlier schema's names, but `id` is text: not a table of ours.
    table.sql(&old_schema(name).replacen("id bytea PRIMARY KEY", "id text PRIMARY KEY", 1));
    let result = PostgresTaskStore::builder(server.url())
        .table(name.as_str())
        .connect()
        .await;
    match result {
        Err(StoreError::InvalidSelector { reason, .. }) => {
            assert!(reason.contains("is not a toolnexus task table"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        table.one(&format!(
            "SELECT count(*) FROM pg_attribute WHERE attrelid = '\"{name}\"'::regclass \
             AND attname IN ('version', 'status_ts_ns')"
        )),
        Some("0".into())
    );
}

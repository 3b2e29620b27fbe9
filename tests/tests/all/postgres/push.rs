//! Push-notification configs in PostgreSQL beyond the conformance suite's `push_*` cases: a
//! table of the previous release (no push table) upgraded at connect without losing anything,
//! corrupt rows reported rather than skipped, namespaces keeping their configs apart, and two
//! stores over one table (as two replicas) seeing each other's configs.

use super::push_table;
use serde_json::json;
use std::sync::Arc;
use toolnexus::postgres::PostgresTaskStore;
use toolnexus::{Namespaces, PushConfig, StoreError, Task, TaskStore, namespace_table};
use toolnexus_conformance::pg::{self, TableGuard};
use toolnexus_conformance::task;

fn config(value: serde_json::Value) -> PushConfig {
    PushConfig::from_value(value).unwrap()
}

fn ids(configs: &[PushConfig]) -> Vec<&str> {
    configs.iter().map(PushConfig::id).collect()
}

/// Guards for a test's Task table and the push table beside it.
fn guards(server: &pg::Server, table: &str) -> [TableGuard; 2] {
    [
        TableGuard::new(server, table),
        TableGuard::new(server, &push_table(table)),
    ]
}

async fn connect(url: &str, table: &str) -> PostgresTaskStore {
    PostgresTaskStore::builder(url)
        .table(table)
        .connect()
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"))
}

/// The Task table as the release before push notifications made it, with its indexes and its
/// backfill marked complete, and no push table.
fn previous_release_schema(table: &str) -> String {
    let order = "status_ts_ns DESC NULLS LAST, id";
    format!(
        "CREATE TABLE \"{table}\" (\
             id bytea PRIMARY KEY, task jsonb NOT NULL, exact text, context_id bytea, \
             state bytea, updated_at timestamptz NOT NULL DEFAULT now(), \
             version bigint NOT NULL, status_ts_ns numeric); \
         CREATE INDEX \"{table}_listed\" ON \"{table}\" ({order}); \
         CREATE INDEX \"{table}_context_listed\" ON \"{table}\" (context_id, {order}); \
         CREATE INDEX \"{table}_state_listed\" ON \"{table}\" (state, {order}); \
         COMMENT ON TABLE \"{table}\" IS 'toolnexus A2A Tasks (see docs/postgres.md)'; \
         COMMENT ON COLUMN \"{table}\".status_ts_ns IS \
             'toolnexus: status.timestamp in ns since the Unix epoch; complete'"
    )
}

/// A row as the previous release saved it, at `version`.
fn previous_release_row(table: &str, task: &str, exact: Option<&str>, version: i64) -> String {
    let exact = exact.map_or("NULL".to_owned(), |e| format!("'{e}'"));
    format!(
        "INSERT INTO \"{table}\" (id, task, exact, context_id, state, version, status_ts_ns) \
         VALUES (convert_to('{task}'::jsonb->>'id', 'UTF8'), '{task}'::jsonb, {exact}, \
                 convert_to('{task}'::jsonb->>'contextId', 'UTF8'), \
                 convert_to('{task}'::jsonb->'status'->>'state', 'UTF8'), {version}, \
                 (extract(epoch FROM ('{task}'::jsonb->'status'->>'timestamp')::timestamptz) \
                     * 1000000000)::bigint)"
    )
}

/// Replicas of this release starting together over a table of the previous release all start,
/// the push table appears once, every Task is intact (text, version, list order), and configs
/// work and survive a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_table_of_the_previous_release_gets_its_push_table_at_connect() {
    let Some(server) = pg::server() else { return };
    let table = pg::unique_table("push_upgrade");
    let _guards = guards(&server, &table);
    let sql = |statement: &str| {
        pg::execute(server.url(), statement).unwrap_or_else(|e| panic!("{statement}: {e}"))
    };
    sql(&previous_release_schema(&table));
    let older = r#"{"id": "older", "contextId": "c", "status": {"state": "working", "timestamp": "2025-03-01T10:00:00Z"}}"#;
    let newer = r#"{"id": "newer", "contextId": "c", "status": {"state": "completed", "timestamp": "2025-03-02T10:00:00Z"}, "n": -0.0}"#;
    sql(&previous_release_row(&table, older, None, 3));
    sql(&previous_release_row(
        &table,
        &newer.replace("-0.0", "0.0"),
        Some(newer),
        7,
    ));
    let exists = format!(
        "SELECT to_regclass('\"{}\"') IS NOT NULL",
        push_table(&table)
    );
    assert_eq!(sql(&exists), [[Some("f".to_owned())]], "no push table yet");

    let starts: Vec<_> = (0..4)
        .map(|_| {
            tokio::spawn(
                PostgresTaskStore::builder(server.url())
                    .table(&table)
                    .connect(),
            )
        })
        .collect();
    let mut stores = Vec::new();
    for start in starts {
        stores.push(start.await.unwrap().expect("every replica starts"));
    }
    assert_eq!(
        sql(&exists),
        [[Some("t".to_owned())]],
        "the push table was made"
    );

    let store = &stores[0];
    for (text, version) in [(older, 3), (newer, 7)] {
        let want = Task::from_json(text).unwrap();
        let got = store.get_versioned(want.id()).await.unwrap();
        assert_eq!(got, Some((want, version)), "{text}");
    }
    let page = store.list(&Default::default()).await.unwrap();
    let listed: Vec<&str> = page.tasks.iter().map(Task::id).collect();
    assert_eq!(listed, ["newer", "older"]);
    assert_eq!(page.total_size, Some(2));

    let hook = config(json!({"id": "c1", "url": "https://hooks.example/a", "token": "t"}));
    store.save_push_config("older", &hook).await.unwrap();
    assert_eq!(
        stores[3].list_push_configs("older").await.unwrap(),
        std::slice::from_ref(&hook)
    );
    assert_eq!(
        store
            .save_versioned(&task(json!({"id": "older"})), toolnexus::Expect::Version(3))
            .await
            .unwrap(),
        4,
        "Tasks save on from their version"
    );

    // A restart changes nothing.
    drop(stores);
    let again = connect(server.url(), &table).await;
    assert_eq!(
        again.get_push_config("older", "c1").await.unwrap(),
        Some(hook)
    );
    assert_eq!(again.get_versioned("newer").await.unwrap().unwrap().1, 7);
}

/// A row that is not a config, or holds another config than its key says, is `Corrupt` naming
/// the table and both ids: a get of it and every listing of its Task, which never skips it.
/// Good rows of the same Task read as ever, and a bad row can be deleted.
#[tokio::test(flavor = "multi_thread")]
async fn a_corrupt_push_config_row_is_reported_not_skipped() {
    let Some(server) = pg::server() else { return };
    let table = pg::unique_table("push_corrupt");
    let _guards = guards(&server, &table);
    let store = connect(server.url(), &table).await;
    let good = [config(json!({"id": "a"})), config(json!({"id": "z"}))];
    for c in &good {
        store.save_push_config("t", c).await.unwrap();
    }
    let push = push_table(&table);
    let bad = [
        ("b", "not json", "JSON"),
        (
            "c",
            r#"{"id": "other", "url": "https://x.example"}"#,
            "other",
        ),
        ("d", "[1, 2]", "object"),
        ("e", r#"{"url": "https://x.example"}"#, "member"),
    ];
    for (config_id, text, _) in bad {
        pg::execute(
            server.url(),
            &format!(
                "INSERT INTO \"{push}\" (task_id, config_id, config) \
                 VALUES (convert_to('t', 'UTF8'), convert_to('{config_id}', 'UTF8'), '{text}')"
            ),
        )
        .unwrap();
    }
    let assert_corrupt = |result: Result<(), StoreError>, config_id: &str, says: &str| match result
    {
        Err(StoreError::Corrupt { location, reason }) => {
            assert!(location.contains(&push), "{location}");
            assert!(location.contains("task \"t\""), "{location}");
            assert!(
                location.contains(&format!("config {config_id:?}")),
                "{location}"
            );
            assert!(
                reason.contains(says),
                "{config_id}: {reason} should say {says:?}"
            );
        }
        other => panic!("config {config_id}: expected Corrupt, got {other:?}"),
    };
    for (config_id, _, says) in bad {
        assert_corrupt(
            store.get_push_config("t", config_id).await.map(drop),
            config_id,
            says,
        );
    }
    // The listing reports the first bad row in its order, and never answers the good ones alone.
    assert_corrupt(store.list_push_configs("t").await.map(drop), "b", "JSON");
    assert_eq!(
        store.get_push_config("t", "a").await.unwrap(),
        Some(good[0].clone())
    );
    for (config_id, _, _) in bad {
        assert!(store.delete_push_config("t", config_id).await.unwrap());
    }
    assert_eq!(store.list_push_configs("t").await.unwrap(), good);
}

/// Each namespace's configs are in its own table (a hashed namespace's too, its name within
/// PostgreSQL's 63 bytes): the same Task id and config id in the root and two namespaces are
/// three configs, and changing one leaves the others.
#[tokio::test(flavor = "multi_thread")]
async fn namespaced_stores_keep_push_configs_apart() {
    let Some(server) = pg::server() else { return };
    let base = pg::unique_table("n");
    let long = format!("t.{}/o.{}", "a".repeat(60), "b".repeat(60));
    let spaces = ["t.acme", long.as_str()];
    let mut tables = vec![base.clone()];
    tables.extend(spaces.iter().map(|ns| namespace_table(&base, ns).unwrap()));
    let _guards: Vec<_> = tables.iter().flat_map(|t| guards(&server, t)).collect();
    let selector = server.selector(&format!("table={base}&pool=2"));
    let namespaces = Arc::new(Namespaces::new(selector.as_str()).unwrap());
    let mut stores: Vec<Arc<dyn TaskStore>> = vec![namespaces.root()];
    for ns in spaces {
        let (namespaces, ns) = (Arc::clone(&namespaces), ns.to_owned());
        let store = tokio::task::spawn_blocking(move || namespaces.store(&ns))
            .await
            .unwrap()
            .unwrap();
        stores.push(store);
    }
    let hook = |i: usize| config(json!({"id": "c", "url": format!("https://{i}.example/hook")}));
    for (i, store) in stores.iter().enumerate() {
        assert!(store.supports_push_configs());
        store.save(&task(json!({"id": "t"}))).await.unwrap();
        store.save_push_config("t", &hook(i)).await.unwrap();
    }
    for (i, store) in stores.iter().enumerate() {
        assert_eq!(
            store.list_push_configs("t").await.unwrap(),
            [hook(i)],
            "store {i}"
        );
    }
    assert!(stores[1].delete_push_config("t", "c").await.unwrap());
    assert!(stores[0].delete("t").await.unwrap());
    assert!(stores[0].list_push_configs("t").await.unwrap().is_empty());
    assert!(stores[1].get_push_config("t", "c").await.unwrap().is_none());
    assert_eq!(
        stores[2].get_push_config("t", "c").await.unwrap(),
        Some(hook(2)),
        "the hashed namespace kept its config"
    );

    // Each namespace's push table is where its name says.
    for table in &tables {
        let push = push_table(table);
        assert!(push.len() <= 63, "{push}");
        let rows = pg::execute(server.url(), &format!("SELECT count(*) FROM \"{push}\"")).unwrap();
        let want = if table == &tables[2] { "1" } else { "0" };
        assert_eq!(rows, [[Some(want.to_owned())]], "{push}");
    }
}

/// Two stores over one table, each with its own pool (as two replicas): each sees the other's
/// configs at once, replaced, listed in byte order, deleted one by one and with their Task.
#[tokio::test(flavor = "multi_thread")]
async fn two_stores_over_one_table_see_each_others_push_configs() {
    let Some(server) = pg::server() else { return };
    let table = pg::unique_table("push_replicas");
    let _guards = guards(&server, &table);
    let (a, b) = (
        connect(server.url(), &table).await,
        connect(server.url(), &table).await,
    );
    a.save(&task(json!({"id": "t"}))).await.unwrap();
    let first = config(json!({"id": "c1", "url": "https://a.example/hook"}));
    a.save_push_config("t", &first).await.unwrap();
    assert_eq!(b.get_push_config("t", "c1").await.unwrap(), Some(first));

    let replaced = config(json!({"id": "c1", "url": "https://b.example/hook", "n": 1.50}));
    b.save_push_config("t", &replaced).await.unwrap();
    // Byte order: uppercase before lowercase, U+0000 first after its prefix, non-ASCII last.
    for id in ["é", "b", "Z", "c1\u{0}"] {
        b.save_push_config("t", &config(json!({"id": id})))
            .await
            .unwrap();
    }
    let listed = a.list_push_configs("t").await.unwrap();
    assert_eq!(ids(&listed), ["Z", "b", "c1", "c1\u{0}", "é"]);
    assert_eq!(
        listed[2], replaced,
        "the replacement, number spelling and all"
    );
    assert_eq!(listed[2].as_json(), replaced.as_json());

    assert!(a.delete_push_config("t", "b").await.unwrap());
    assert!(
        !b.delete_push_config("t", "b").await.unwrap(),
        "already gone"
    );
    assert!(b.get_push_config("t", "b").await.unwrap().is_none());

    assert!(a.delete("t").await.unwrap());
    assert!(b.list_push_configs("t").await.unwrap().is_empty());
    let rows = pg::execute(
        server.url(),
        &format!("SELECT count(*) FROM \"{}\"", push_table(&table)),
    )
    .unwrap();
    assert_eq!(
        rows,
        [[Some("0".to_owned())]],
        "no config outlives its Task"
    );
}

//! The PostgreSQL store against a real server: the conformance suite, selectors, fidelity,
//! listing, the server going away and coming back, a reply lost after the commit
//! (`postgres/lost_reply.rs`), and push-notification configs (a table of
//! the previous release upgraded, corrupt rows, namespaces, replicas; in `postgres/push.rs`).
//!
//! The server is `TOOLNEXUS_TEST_POSTGRES_URL`, or a throwaway cluster these tests start
//! (see `toolnexus_conformance::pg`); without either they skip, unless
//! `TOOLNEXUS_REQUIRE_POSTGRES=1`. Each test uses a table of its own.

use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use toolnexus::postgres::PostgresTaskStore;
use toolnexus::{Blame, InMemoryTaskStore, ListQuery, StoreError, Task, TaskStore, resolve_store};
use toolnexus_conformance::pg::{self, TableGuard};
use toolnexus_conformance::{StoreFactory, suite, task};

mod lost_reply;
mod push;

/// Stores over one table of a server: every `open` sees the same Tasks.
struct Pg {
    url: String,
    table: String,
}

impl StoreFactory for Pg {
    fn open(&self, _dir: &Path) -> Arc<dyn TaskStore> {
        // Synchronous, inside the test's runtime: the store connects on its own threads.
        let store = PostgresTaskStore::builder(&self.url)
            .table(&self.table)
            .connect_blocking()
            .expect("the PostgreSQL store connects");
        Arc::new(store)
    }
    fn durable(&self) -> bool {
        true
    }
}

macro_rules! conformance {
    ($($case:ident),* $(,)?) => {
        mod conformance {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    let Some(server) = pg::server() else { return };
                    let table = pg::unique_table(stringify!($case));
                    let _guard = TableGuard::new(&server, &table);
                    let _push_guard = TableGuard::new(&server, &push_table(&table));
                    let dir = tempfile::tempdir().unwrap();
                    let factory = Pg { url: server.url().to_owned(), table };
                    suite::$case(&factory, dir.path()).await;
                }
            )*
        }
    };
}

toolnexus_conformance::for_each_case!(conformance);
// The push-notification config cases, in a module of their own (the callback names its modules).
mod push_cases {
    use super::*;
    toolnexus_conformance::for_each_push_case!(conformance);
}

/// The push-config table the store makes beside the Task table `table`.
fn push_table(table: &str) -> String {
    format!("{table}_push_configs")
}

fn selector_error(selector: &str) -> StoreError {
    match resolve_store(selector) {
        Ok(store) => panic!("{selector} resolved to {}", store.describe()),
        Err(e) => e,
    }
}

/// The selector resolves (`postgres://` and `postgresql://`), creates its table, and describes
/// itself without the password.
#[tokio::test(flavor = "multi_thread")]
async fn selector_resolves_and_hides_the_password() {
    let Some(server) = pg::server() else { return };
    let table = pg::unique_table("selector");
    let _guard = TableGuard::new(&server, &table);
    let selector = server.selector(&format!("table={table}&pool=2&timeout=3s"));
    let store = resolve_store(selector.as_str()).unwrap();
    store.save(&task(json!({"id": "s-1"}))).await.unwrap();
    let described = store.describe();
    assert!(described.starts_with("postgres://"), "{described}");
    assert!(
        described.ends_with(&format!("?table={table}")),
        "{described}"
    );
    assert!(!described.contains(pg::PASSWORD), "{described}");

    let other = selector.replacen("postgres://", "postgresql://", 1);
    let again = resolve_store(other.as_str()).unwrap();
    assert!(again.get("s-1").await.unwrap().is_some());
    // The concrete type is there for callers that need it.
    assert!((&*again as &dyn std::any::Any).is::<PostgresTaskStore>());
}

/// Malformed selectors fail at resolve time with a reason, never quoting the password; an
/// unreachable server fails at resolve time too, as unavailable.
#[test]
fn bad_selectors_and_unreachable_servers_fail_at_resolve_time() {
    let cases = [
        (
            "postgres://u:pw-1@h:notaport/db",
            "not a PostgreSQL connection URL",
        ),
        ("postgres://u:pw-1@h/db?bogus=1", "bogus"),
        (
            "postgres://u:pw-1@h/db?table=x;drop",
            "must be an identifier",
        ),
        (
            "postgres://u:pw-1@h/db?table=a.b.c",
            "must be an identifier",
        ),
        ("postgres://u:pw-1@h/db?pool=0", "\"pool\" must be"),
        ("postgres://u:pw-1@h/db?timeout=soon", "\"timeout\" must be"),
        ("postgres://u:pw-1@h/db?table=a&table=b", "given twice"),
        ("postgres://u:pw-1@h/db?sslmode=bogus", "sslmode \"bogus\""),
        ("postgres:///db", "no host"),
    ];
    for (selector, want) in cases {
        let err = selector_error(selector);
        let msg = err.to_string();
        assert!(
            matches!(err, StoreError::InvalidSelector { .. }),
            "{selector}: {msg}"
        );
        assert_eq!(err.blame(), Blame::Caller, "{selector}");
        assert!(msg.contains(want), "{selector}: {msg} should say {want:?}");
        assert!(
            !msg.contains("pw-1"),
            "{selector}: {msg} shows the password"
        );
    }

    // Nothing listens on port 1: refused at once, at resolve time, blamed on the environment.
    let err = selector_error("postgres://u:pw-1@127.0.0.1:1/db?connect_timeout=2");
    assert!(
        matches!(err, StoreError::Unavailable { .. }),
        "unreachable: {err}"
    );
    assert_eq!(err.blame(), Blame::Environment);
    assert!(!err.to_string().contains("pw-1"), "{err}");

    // The unknown-selector rule still holds for every other scheme.
    for other in ["postgre://h/db", "mysql://h/db", "pg://h/db"] {
        assert!(matches!(
            selector_error(other),
            StoreError::UnknownSelector(_)
        ));
    }
}

/// Wrong credentials and a missing database are refused at resolve time, naming why.
#[test]
fn wrong_credentials_are_refused_at_resolve_time() {
    let Some(cluster) = pg::own_cluster() else {
        return;
    };
    let port = cluster.port();
    let wrong = format!(
        "postgres://{}:not-the-password@127.0.0.1:{port}/postgres",
        pg::USER
    );
    let err = selector_error(&wrong);
    let msg = err.to_string();
    assert!(matches!(err, StoreError::InvalidSelector { .. }), "{msg}");
    assert!(msg.contains("password authentication failed"), "{msg}");
    assert!(!msg.contains("not-the-password"), "{msg}");

    let no_user = format!("postgres://nobody:x@127.0.0.1:{port}/postgres");
    assert!(selector_error(&no_user).to_string().contains("nobody"));

    let no_db = format!(
        "postgres://{}:{}@127.0.0.1:{port}/no_such_db",
        pg::USER,
        pg::PASSWORD
    );
    let msg = selector_error(&no_db).to_string();
    assert!(msg.contains("does not exist"), "{msg}");
}

/// A table of the same name that is not ours is refused rather than written to.
#[tokio::test(flavor = "multi_thread")]
async fn a_foreign_table_is_refused() {
    let Some(server) = pg::server() else { return };
    let table = pg::unique_table("foreign");
    let _guard = TableGuard::new(&server, &table);
    pg::execute(
        server.url(),
        &format!("CREATE TABLE \"{table}\" (id text PRIMARY KEY)"),
    )
    .unwrap();
    let err = PostgresTaskStore::builder(server.url())
        .table(&table)
        .connect()
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("is not a toolnexus task table"),
        "{err}"
    );
    assert_eq!(err.blame(), Blame::Caller);
}

/// Replicas starting at once over a new table all succeed: the creation is serialized.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_starting_together_create_the_table_once() {
    let Some(server) = pg::server() else { return };
    let table = pg::unique_table("race");
    let _guard = TableGuard::new(&server, &table);
    let starts: Vec<_> = (0..6)
        .map(|_| {
            let builder = PostgresTaskStore::builder(server.url()).table(&table);
            tokio::spawn(builder.connect())
        })
        .collect();
    let mut stores = Vec::new();
    for s in starts {
        stores.push(s.await.unwrap().expect("every replica starts"));
    }
    stores[0].save(&task(json!({"id": "r"}))).await.unwrap();
    for s in &stores {
        assert!(s.get("r").await.unwrap().is_some());
    }
}

/// Whatever jsonb would change or cannot hold comes back exactly: numbers spelled any way,
/// U+0000 in ids, keys and values, huge numbers. Plain Tasks are stored once (no `exact` copy),
/// readable with SQL.
#[tokio::test(flavor = "multi_thread")]
async fn numbers_and_nul_round_trip_exactly() {
    let Some(server) = pg::server() else { return };
    let table = pg::unique_table("fidelity");
    let _guard = TableGuard::new(&server, &table);
    let store = PostgresTaskStore::builder(server.url())
        .table(&table)
        .connect()
        .await
        .unwrap();
    let huge = format!("1{}", "0".repeat(5000));
    let texts = [
        r#"{"id": "plain", "contextId": "c", "n": [0, 1.50, -2, 9007199254740993, 0.1]}"#
            .to_owned(),
        r#"{"id": "neg-zero", "a": -0.0, "b": -0, "c": 0.0}"#.to_owned(),
        r#"{"id": "exp", "a": 1e-300, "b": 1E3, "c": 2.5e+10, "d": 1e99999}"#.to_owned(),
        r#"{"id": "nul\u0000id", "k\u0000ey": "v\u0000al", "n": 1}"#.to_owned(),
        format!(r#"{{"id": "huge", "n": {huge}, "m": -{huge}.5}}"#),
        r#"{"zeta": 1, "id": "order", "alpha": {"y": 2, "x": 1}}"#.to_owned(),
    ];
    for text in &texts {
        let saved = Task::from_json(text).unwrap();
        store.save(&saved).await.unwrap();
        let got = store.get(saved.id()).await.unwrap().expect("saved");
        // Numbers compare by their spelling (serde_json's arbitrary_precision), not their value.
        assert_eq!(got, saved, "{text}");
    }
    let rows = pg::execute(
        server.url(),
        &format!(
            "SELECT convert_from(id, 'UTF8'), exact IS NULL, task->>'contextId' FROM \"{table}\" \
             WHERE id = 'plain'::bytea"
        ),
    )
    .unwrap();
    assert_eq!(
        rows,
        [[Some("plain".to_owned()), Some("t".into()), Some("c".into())]],
        "a plain Task is stored once, as jsonb"
    );
    let rows = pg::execute(
        server.url(),
        &format!("SELECT exact IS NULL FROM \"{table}\" WHERE id = 'neg-zero'::bytea"),
    )
    .unwrap();
    assert_eq!(rows, [[Some("f".to_owned())]], "-0.0 keeps its text");
}

/// Pages follow the ids' byte order (U+0000 and non-ASCII included) exactly as the in-memory
/// store's do, page tokens are last ids, and any token is accepted.
#[tokio::test(flavor = "multi_thread")]
async fn listing_matches_the_memory_store_byte_for_byte() {
    let Some(server) = pg::server() else { return };
    let table = pg::unique_table("order");
    let _guard = TableGuard::new(&server, &table);
    let pg_store = PostgresTaskStore::builder(server.url())
        .table(&table)
        .connect()
        .await
        .unwrap();
    let memory = InMemoryTaskStore::new();
    let ids = [
        "a", "a\0", "a\0b", "b", "B", "é", "z", "日本", "🚀", "a b", "~", "%", "Z\u{7f}",
    ];
    for (i, id) in ids.iter().enumerate() {
        let state = ["working", "TASK_STATE_WORKING", "Working", "completed"][i % 4];
        let t = task(json!({"id": id, "contextId": format!("c{}", i % 2),
            "status": {"state": state}}));
        pg_store.save(&t).await.unwrap();
        memory.save(&t).await.unwrap();
    }
    let queries = [
        ListQuery {
            page_size: 3,
            ..Default::default()
        },
        ListQuery {
            page_size: 2,
            state: Some("TASK_STATE_WORKING".into()),
            ..Default::default()
        },
        ListQuery {
            page_size: 1,
            context_id: Some("c1".into()),
            state: Some("working".into()),
            ..Default::default()
        },
        ListQuery {
            page_token: Some(
                toolnexus::query::SortKey {
                    timestamp: None,
                    id: "a\0".into(),
                }
                .encode(),
            ),
            ..Default::default()
        },
        ListQuery {
            page_token: Some(
                toolnexus::query::SortKey {
                    timestamp: None,
                    id: "not an id at all \u{0}🚀".into(),
                }
                .encode(),
            ),
            ..Default::default()
        },
    ];
    for query in queries {
        let (mut a, mut b) = (query.clone(), query.clone());
        loop {
            let (pa, pb) = (
                pg_store.list(&a).await.unwrap(),
                memory.list(&b).await.unwrap(),
            );
            assert_eq!(pa, pb, "{query:?}");
            match pa.next_page_token {
                Some(token) => {
                    a.page_token = Some(token.clone());
                    b.page_token = Some(token);
                }
                None => break,
            }
        }
    }
}

/// The server going away: every call fails promptly with a typed error; when it is back, the
/// same store (not re-resolved) works again and every acknowledged Task is intact. Both a fast
/// shutdown and an immediate one (the server crashing, recovering from its WAL on restart).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn server_outage_gives_typed_errors_then_recovers_losing_nothing() {
    let Some(cluster) = pg::own_cluster() else {
        return;
    };
    let store = resolve_store(format!("{}?table=outage&timeout=3s&pool=4", cluster.url()).as_str())
        .unwrap();
    let mut acknowledged = Vec::new();
    for (round, mode) in ["fast", "immediate"].into_iter().enumerate() {
        for i in 0..20 {
            let t = task(json!({"id": format!("t-{round}-{i}"), "contextId": "ctx",
                "status": {"state": "working"}, "n": -0.0, "i": i}));
            store.save(&t).await.unwrap();
            acknowledged.push(t);
        }
        // Connections are in the pool; now the server goes away.
        assert_eq!(
            store.list(&ListQuery::default()).await.unwrap().tasks.len(),
            acknowledged.len()
        );
        cluster.stop(mode);

        let down = [
            store.get("t-0-0").await.map(drop),
            store.save(&task(json!({"id": "during-outage"}))).await,
            store.list(&ListQuery::default()).await.map(drop),
            store.delete("t-0-1").await.map(drop),
            store.get("t-0-0").await.map(drop),
        ];
        for (call, result) in down.into_iter().enumerate() {
            let err = result.expect_err("the server is down");
            // A write (calls 1 and 3) on a connection that broke once the write was on its way
            // cannot say whether it was committed.
            let write = call == 1 || call == 3;
            assert!(
                matches!(err, StoreError::Unavailable { .. })
                    || write && matches!(err, StoreError::OutcomeUnknown { .. }),
                "call {call} during a {mode} outage: {err}"
            );
            assert_eq!(err.blame(), Blame::Environment, "{err}");
            assert!(!err.to_string().contains(pg::PASSWORD), "{err}");
        }

        cluster.resume().expect("the server starts again");
        for t in &acknowledged {
            let got = store.get(t.id()).await.expect("recovered").expect("kept");
            assert_eq!(&got, t, "after a {mode} outage");
        }
        let all = store
            .list(&ListQuery {
                page_size: 1000,
                ..Default::default()
            })
            .await
            .unwrap();
        // The save during the outage failed; it may or may not have landed, nothing else did.
        let listed: Vec<_> = all
            .tasks
            .iter()
            .filter(|t| t.id() != "during-outage")
            .cloned()
            .collect();
        let mut want = acknowledged.clone();
        want.sort_by(|a, b| a.id().cmp(b.id()));
        assert_eq!(listed, want);
    }
}

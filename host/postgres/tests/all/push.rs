//! Push-notification configs in the table beside the Tasks, on a real PostgreSQL: what the
//! table holds and in which order, a Task's delete taking its configs, the checks of ids, and
//! the schema step refusing a foreign push table or telling a user without the right to create
//! the table what to run. (The conformance suite's `push_*` cases, upgrades, namespaces and
//! replicas are in the `toolnexus-conformance` tests.)

use crate::support::{self, Server, execute, unique_table};
use serde_json::json;
use toolnexus_core::{PushConfig, StoreError, Task, TaskStore};
use toolnexus_postgres::PostgresTaskStore;

/// A Task table of the test's own and the push table beside it (or a schema holding them),
/// dropped at the end.
struct Tables {
    url: String,
    name: String,
    /// A schema of the test's own, dropped with everything in it.
    schema: Option<String>,
    /// A role of the test's own, dropped after the schema.
    role: Option<String>,
}

impl Tables {
    fn new(server: &Server, prefix: &str) -> Tables {
        Tables {
            url: server.url().to_owned(),
            name: unique_table(prefix),
            schema: None,
            role: None,
        }
    }

    fn sql(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        execute(&self.url, sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    async fn store(&self, table: &str) -> Result<PostgresTaskStore, StoreError> {
        PostgresTaskStore::builder(&self.url)
            .table(table)
            .connect()
            .await
    }
}

impl Drop for Tables {
    fn drop(&mut self) {
        let drop = match &self.schema {
            Some(schema) => format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"),
            None => format!(
                "DROP TABLE IF EXISTS \"{0}\", \"{0}_push_configs\"",
                self.name
            ),
        };
        let _ = execute(&self.url, &drop);
        if let Some(role) = &self.role {
            let _ = execute(
                &self.url,
                &format!("DROP OWNED BY \"{role}\"; DROP ROLE \"{role}\""),
            );
        }
    }
}

fn config(value: serde_json::Value) -> PushConfig {
    PushConfig::from_value(value).unwrap()
}

/// Configs come back exactly (numbers by their spelling, U+0000 in ids and values), listed by
/// config id in byte order, one row per (Task, config id), and a Task's delete removes its
/// configs, even when there was no Task (the store does not check it exists).
#[tokio::test(flavor = "multi_thread")]
async fn configs_round_trip_in_byte_order_and_go_with_their_task() {
    let Some(server) = support::server() else {
        return;
    };
    let tables = Tables::new(&server, "push_rows");
    let store = tables.store(&tables.name).await.unwrap();
    assert!(store.supports_push_configs());
    let huge = format!("1{}", "0".repeat(2000));
    let texts = [
        r#"{"id": "é", "n": 1.50}"#.to_owned(),
        r#"{"id": "a\u0000", "v": "x\u0000y", "z": -0.0}"#.to_owned(),
        format!(r#"{{"id": "a", "big": {huge}, "e": 1e-300}}"#),
        r#"{"url": "https://h.example/", "id": "B"}"#.to_owned(),
    ];
    let configs: Vec<PushConfig> = texts
        .iter()
        .map(|t| PushConfig::from_json(t).unwrap())
        .collect();
    for c in &configs {
        store.save_push_config("t\u{0}1", c).await.unwrap();
    }
    let listed = store.list_push_configs("t\u{0}1").await.unwrap();
    let listed_ids: Vec<&str> = listed.iter().map(PushConfig::id).collect();
    assert_eq!(listed_ids, ["B", "a", "a\u{0}", "é"]);
    for c in &configs {
        let got = store.get_push_config("t\u{0}1", c.id()).await.unwrap();
        assert_eq!(got.as_ref().map(PushConfig::as_json), Some(c.as_json()));
    }
    // Another Task's id, a prefix of this one's, sees none of them.
    assert!(store.list_push_configs("t").await.unwrap().is_empty());
    assert!(store.get_push_config("t", "a").await.unwrap().is_none());

    // A save replaces; the table holds one row per key, the config as its JSON text.
    let replaced = config(json!({"id": "a", "url": "https://new.example/"}));
    store.save_push_config("t\u{0}1", &replaced).await.unwrap();
    let push = format!("\"{}_push_configs\"", tables.name);
    let rows = tables.sql(&format!(
        "SELECT config FROM {push} WHERE config_id = 'a'::bytea"
    ));
    assert_eq!(rows, [[Some(replaced.as_json().to_owned())]]);

    // No Task was ever saved: the delete says so, and removes the configs all the same.
    assert!(!store.delete("t\u{0}1").await.unwrap());
    assert!(store.list_push_configs("t\u{0}1").await.unwrap().is_empty());
    assert_eq!(
        tables.sql(&format!("SELECT count(*) FROM {push}")),
        [[Some("0".to_owned())]]
    );

    // With a Task: the same statement removes both.
    store
        .save(&Task::from_json(r#"{"id": "t"}"#).unwrap())
        .await
        .unwrap();
    store.save_push_config("t", &replaced).await.unwrap();
    assert!(store.delete("t").await.unwrap());
    assert!(store.get("t").await.unwrap().is_none());
    assert!(store.get_push_config("t", "a").await.unwrap().is_none());
}

/// Empty ids are the caller's error, typed, before any statement; a miss is `None` or `false`.
#[tokio::test(flavor = "multi_thread")]
async fn empty_ids_are_refused_and_misses_are_not_errors() {
    let Some(server) = support::server() else {
        return;
    };
    let tables = Tables::new(&server, "push_ids");
    let store = tables.store(&tables.name).await.unwrap();
    let c = config(json!({"id": "c"}));
    assert!(matches!(
        store.save_push_config("", &c).await,
        Err(StoreError::InvalidId { .. })
    ));
    assert!(matches!(
        store.list_push_configs("").await,
        Err(StoreError::InvalidId { .. })
    ));
    assert!(matches!(
        store.get_push_config("t", "").await,
        Err(StoreError::InvalidPushConfig { .. })
    ));
    assert!(matches!(
        store.delete_push_config("t", "").await,
        Err(StoreError::InvalidPushConfig { .. })
    ));
    assert!(store.get_push_config("t", "c").await.unwrap().is_none());
    assert!(!store.delete_push_config("t", "c").await.unwrap());
    assert!(store.list_push_configs("t").await.unwrap().is_empty());
}

/// A table of the push table's name that is not ours is refused at connect, not written to.
#[tokio::test(flavor = "multi_thread")]
async fn a_foreign_push_table_is_refused() {
    let Some(server) = support::server() else {
        return;
    };
    let tables = Tables::new(&server, "push_foreign");
    let name = &tables.name;
    tables.sql(&format!(
        "CREATE TABLE \"{name}_push_configs\" (task_id text, config_id text, config jsonb)"
    ));
    match tables.store(name).await {
        Err(StoreError::InvalidSelector { reason, .. }) => {
            assert!(
                reason.contains("is not a toolnexus push config table"),
                "{reason}"
            );
            assert!(reason.contains("task_id is text, not bytea"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

/// A user who may read and write a Task table of the previous release (no push table), but not
/// create tables in its schema, is told at connect what to have run; once it has been, the
/// same user connects and keeps configs.
#[tokio::test(flavor = "multi_thread")]
async fn a_user_who_may_not_create_the_push_table_is_told_what_to_run() {
    let Some(server) = support::server() else {
        return;
    };
    let mut tables = Tables::new(&server, "push_rights");
    let schema = tables.name.clone();
    tables.schema = Some(schema.clone());
    let role = format!("{schema}_user");
    tables.role = Some(role.clone());
    let qualified = format!("{schema}.tasks");
    // The Task table as this release makes it; then the push table dropped, as the previous
    // release left it.
    tables.sql(&format!("CREATE SCHEMA \"{schema}\""));
    tables.store(&qualified).await.unwrap();
    tables.sql(&format!("DROP TABLE \"{schema}\".\"tasks_push_configs\""));
    if let Err(e) = execute(
        server.url(),
        &format!(
            "CREATE ROLE \"{role}\" LOGIN PASSWORD 'pw'; \
             GRANT USAGE ON SCHEMA \"{schema}\" TO \"{role}\"; \
             GRANT SELECT, INSERT, UPDATE, DELETE ON \"{schema}\".\"tasks\" TO \"{role}\""
        ),
    ) {
        // An external server may not let the test make roles.
        eprintln!("SKIPPED: cannot create a role: {e}");
        return;
    }
    let url = as_role(server.url(), &role);
    let result = PostgresTaskStore::builder(&url)
        .table(qualified.as_str())
        .connect()
        .await;
    let create = match result {
        Err(StoreError::InvalidSelector { reason, .. }) => {
            assert!(reason.contains("push config table"), "{reason}");
            assert!(reason.contains("may not create it"), "{reason}");
            let (_, create) = reason
                .split_once("have one run: ")
                .unwrap_or_else(|| panic!("{reason}"));
            create.to_owned()
        }
        other => panic!("{other:?}"),
    };
    // What the message says to run, run by the owner, is all it takes.
    tables.sql(&create);
    tables.sql(&format!(
        "GRANT SELECT, INSERT, UPDATE, DELETE ON \"{schema}\".\"tasks_push_configs\" TO \"{role}\""
    ));
    let store = PostgresTaskStore::builder(&url)
        .table(qualified.as_str())
        .connect()
        .await
        .unwrap();
    let c = config(json!({"id": "c"}));
    store.save_push_config("t", &c).await.unwrap();
    assert_eq!(store.list_push_configs("t").await.unwrap(), [c]);
}

/// `url` with `role:pw` as its credentials.
fn as_role(url: &str, role: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    format!("{scheme}://{role}:pw@{host}")
}

//! Migration of a table made by an earlier version: at connect, a backfill finished later, a
//! user without the rights told what to run, and a foreign table left alone.

use super::*;

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

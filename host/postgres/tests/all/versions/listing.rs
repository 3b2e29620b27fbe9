//! The A2A 1.0 listing against the memory store: pages, filters, total size, a long walk in
//! small pages, and page tokens the store did not make.

use super::*;

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

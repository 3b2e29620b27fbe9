//! Versions and conditional saves: versions grow by one per save, and conditional saves and
//! creates raced across stores with pools of their own have exactly one winner.

use super::*;

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

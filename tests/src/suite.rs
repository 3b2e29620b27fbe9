//! The behaviours every store must have. Each function is one behaviour;
//! `tests/all/conformance.rs` instantiates all of them for each store. Those of push-notification
//! configs are in [`push`] (listed by [`for_each_push_case!`](crate::for_each_push_case)).

pub mod push;
pub use push::*;

use crate::{StoreFactory, state, task, vectors};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use toolnexus::{Expect, ListQuery, StoreError, StoreUsage, Task, TaskStore};

/// Reference example 1: save then get round-trips; a miss is `None`.
pub async fn save_then_get_round_trips(f: &dyn StoreFactory, dir: &Path) {
    let store = f.open(dir);
    let t = task(json!({"id": "task-1", "status": {"state": "submitted"}}));
    store.save(&t).await.unwrap();
    assert_eq!(store.get("task-1").await.unwrap(), Some(t));
    assert_eq!(store.get("no-such-id").await.unwrap(), None);
}

/// A miss is `None`, never an error, even in an empty or fresh store.
pub async fn miss_is_none(f: &dyn StoreFactory, dir: &Path) {
    let store = f.open(dir);
    for id in ["missing", "..", "a/b", "日本"] {
        assert!(store.get(id).await.unwrap().is_none(), "{id}");
    }
}

/// An empty id names no Task: `get("")` is an invalid-id error, not a miss.
pub async fn empty_id_is_an_error(f: &dyn StoreFactory, dir: &Path) {
    let err = f.open(dir).get("").await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidId { .. }), "{err}");
}

/// Reference example 2: the latest of submitted → working → completed wins, and a fresh store
/// over the same directory (for durable stores) sees it with its artifact.
pub async fn lifecycle_latest_write_wins(f: &dyn StoreFactory, dir: &Path) {
    let first = f.open(dir);
    first
        .save(&task(
            json!({"id": "task-2", "status": {"state": "submitted"}}),
        ))
        .await
        .unwrap();
    first
        .save(&task(
            json!({"id": "task-2", "status": {"state": "working"}}),
        ))
        .await
        .unwrap();
    first
        .save(&task(json!({
            "id": "task-2",
            "status": {"state": "completed"},
            "artifacts": [{"artifactId": "a1", "parts": [{"kind": "text", "text": "done"}]}],
        })))
        .await
        .unwrap();
    let reopened = if f.durable() { f.open(dir) } else { first };
    let got = reopened
        .get("task-2")
        .await
        .unwrap()
        .expect("task-2 was saved");
    assert_eq!(state(&got), "completed");
    assert_eq!(got.get("artifacts").unwrap()[0]["parts"][0]["text"], "done");
}

/// Every shared vector comes back equal as JSON, including through a fresh store.
pub async fn vectors_round_trip(f: &dyn StoreFactory, dir: &Path) {
    let store = f.open(dir);
    let all = vectors();
    for (name, t) in &all {
        store
            .save(t)
            .await
            .unwrap_or_else(|e| panic!("saving {name}: {e}"));
    }
    let reader = if f.durable() { f.open(dir) } else { store };
    for (name, t) in &all {
        let got = reader
            .get(t.id())
            .await
            .unwrap_or_else(|e| panic!("getting {name}: {e}"));
        assert_eq!(got.as_ref(), Some(t), "{name} did not round-trip");
    }
}

/// Ids that are hostile as file names all work, stay distinct and round-trip.
pub async fn odd_ids_round_trip_and_stay_distinct(f: &dyn StoreFactory, dir: &Path) {
    let long = "x".repeat(10_000);
    let long2 = format!("{}y", "x".repeat(9_999));
    let ids = [
        "..",
        ".",
        "/",
        "\\",
        "a/b",
        "a_b",
        "a%2Fb",
        "a\\b",
        "nul\0byte",
        ".hidden",
        "..hidden",
        "../../etc/passwd",
        "/abs/path",
        "C:\\windows",
        "задача-✓-日本語-🚀",
        "tmp",
        ".tmp-1234",
        "x.json",
        "con",
        "a b",
        "~",
        "%",
        long.as_str(),
        long2.as_str(),
    ];
    let store = f.open(dir);
    for (i, id) in ids.iter().enumerate() {
        store
            .save(&task(json!({"id": id, "n": i})))
            .await
            .unwrap_or_else(|e| panic!("{id:?}: {e}"));
    }
    let reader = if f.durable() { f.open(dir) } else { store };
    for (i, id) in ids.iter().enumerate() {
        let got = reader
            .get(id)
            .await
            .unwrap_or_else(|e| panic!("{id:?}: {e}"))
            .expect("saved");
        assert_eq!(got.id(), *id);
        assert_eq!(
            got.get("n").unwrap(),
            &json!(i),
            "{id:?} was overwritten by another id"
        );
    }
}

/// Many concurrent saves of different ids all land; concurrent saves of one id leave one of them.
pub async fn concurrent_saves_all_land(f: &dyn StoreFactory, dir: &Path) {
    let store = f.open(dir);
    let mut handles = Vec::new();
    for i in 0..64 {
        let store = Arc::clone(&store);
        handles.push(tokio::spawn(async move {
            store
                .save(&task(json!({"id": format!("t-{i}"), "i": i})))
                .await
                .unwrap();
            store
                .save(&task(json!({"id": "shared", "writer": i})))
                .await
                .unwrap();
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    for i in 0..64 {
        let got = store.get(&format!("t-{i}")).await.unwrap().expect("saved");
        assert_eq!(got.get("i").unwrap(), &json!(i));
    }
    let shared = store.get("shared").await.unwrap().expect("saved");
    let writer = shared
        .get("writer")
        .and_then(|w| w.as_u64())
        .expect("a writer's version");
    assert!(writer < 64);
}

/// Readers racing a writer always see a whole version of the Task, never an error or a mix.
pub async fn readers_never_see_a_partial_task(f: &dyn StoreFactory, dir: &Path) {
    let store = f.open(dir);
    let big = crate::vector("long-history.json");
    let id = big.id().to_owned();
    let mut small = big.clone().into_value();
    small["history"] = json!([]);
    let small = Task::try_from(small).unwrap();
    store.save(&small).await.unwrap();

    let writer = {
        let (store, big, small) = (Arc::clone(&store), big.clone(), small.clone());
        tokio::spawn(async move {
            for i in 0..40 {
                store
                    .save(if i % 2 == 0 { &big } else { &small })
                    .await
                    .unwrap();
            }
        })
    };
    let mut readers = Vec::new();
    for _ in 0..4 {
        let (store, id, big, small) = (Arc::clone(&store), id.clone(), big.clone(), small.clone());
        readers.push(tokio::spawn(async move {
            for _ in 0..40 {
                let got = store
                    .get(&id)
                    .await
                    .expect("a read during writes must not fail");
                let got = got.expect("the task exists throughout");
                assert!(
                    got == big || got == small,
                    "a reader saw a version that was never saved"
                );
            }
        }));
    }
    writer.await.unwrap();
    for r in readers {
        r.await.unwrap();
    }
}

/// The `Arc<dyn TaskStore>` form works across tasks and threads (the trait is `Send + Sync`).
pub async fn store_is_shareable_across_threads(f: &dyn StoreFactory, dir: &Path) {
    let store: Arc<dyn TaskStore> = f.open(dir);
    let s2 = Arc::clone(&store);
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(s2.save(&task(json!({"id": "from-thread"}))))
            .unwrap();
    })
    .join()
    .unwrap();
    assert!(store.get("from-thread").await.unwrap().is_some());
}

/// `list` pages newest status timestamp first (ties by id, Tasks without a timestamp last),
/// with filters on context, state (either protocol version's spelling) and status timestamp,
/// a total size across pages, and never returns a Task twice; a page token the store did not
/// make is refused by name.
pub async fn list_pages_and_filters(f: &dyn StoreFactory, dir: &Path) {
    let store = f.open(dir);
    // t00 … t24: t(i) has timestamp minute i, except every fifth shares minute 0; t24 has none.
    for i in 0..25 {
        let state = ["submitted", "TASK_STATE_WORKING", "completed"][i % 3];
        let context = format!("ctx-{}", i % 2);
        let minute = if i % 5 == 0 { 0 } else { i };
        let mut status =
            json!({"state": state, "timestamp": format!("2025-03-01T10:{minute:02}:00.000Z")});
        if i == 24 {
            status = json!({"state": state});
        }
        store
            .save(&task(
                json!({"id": format!("t{i:02}"), "contextId": context, "status": status}),
            ))
            .await
            .unwrap();
    }
    let mut expected: Vec<(i64, String)> = (0..25)
        .map(|i| {
            let minute = if i == 24 {
                -1
            } else if i % 5 == 0 {
                0
            } else {
                i
            };
            (-minute, format!("t{i:02}"))
        })
        .collect();
    expected.sort();
    let expected: Vec<String> = expected.into_iter().map(|(_, id)| id).collect();
    let mut seen = Vec::new();
    let mut query = ListQuery {
        page_size: 10,
        ..Default::default()
    };
    let mut pages = 0;
    loop {
        let page = store.list(&query).await.unwrap();
        assert!(page.tasks.len() <= 10);
        assert_eq!(page.total_size, Some(25), "total size counts every page");
        pages += 1;
        seen.extend(page.tasks.iter().map(|t| t.id().to_owned()));
        match page.next_page_token {
            Some(token) => query.page_token = Some(token),
            None => break,
        }
    }
    assert_eq!(seen, expected, "every Task once, newest first, ties by id");
    assert_eq!(&seen[19..], ["t00", "t05", "t10", "t15", "t20", "t24"]);
    assert_eq!(pages, 3);

    let working = store
        .list(&ListQuery {
            state: Some("working".into()),
            context_id: Some("ctx-0".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let ids: Vec<_> = working.tasks.iter().map(|t| t.id()).collect();
    assert_eq!(ids, ["t22", "t16", "t04", "t10"]);
    assert_eq!(working.tasks[0].get("contextId").unwrap(), "ctx-0");
    assert_eq!(working.next_page_token, None);
    assert_eq!(working.total_size, Some(4));

    // At or after 10:21, written with another offset: compared as instants.
    let recent = store
        .list(&ListQuery {
            status_timestamp_after: Some(
                toolnexus::Timestamp::parse("2025-03-01T11:21:00+01:00").unwrap(),
            ),
            page_size: 2,
            ..Default::default()
        })
        .await
        .unwrap();
    let ids: Vec<_> = recent.tasks.iter().map(|t| t.id()).collect();
    assert_eq!(ids, ["t23", "t22"]);
    assert_eq!(recent.total_size, Some(3));
    assert!(recent.next_page_token.is_some());

    for bad in ["not-a-token", "e30", "%%%"] {
        let err = store
            .list(&ListQuery {
                page_token: Some(bad.into()),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert!(
            matches!(err, StoreError::InvalidQuery { .. }),
            "{bad}: {err}"
        );
    }
}

/// `delete` removes a Task (`true`), reports a miss (`false`), and a deleted Task is gone for
/// `get` and `list`, through a fresh store too.
pub async fn delete_removes_a_task(f: &dyn StoreFactory, dir: &Path) {
    let store = f.open(dir);
    store.save(&task(json!({"id": "keep"}))).await.unwrap();
    store
        .save(&task(
            json!({"id": "a/b", "status": {"state": "completed"}}),
        ))
        .await
        .unwrap();
    assert!(store.delete("a/b").await.unwrap());
    assert!(!store.delete("a/b").await.unwrap());
    assert!(!store.delete("never-saved").await.unwrap());
    let reader = if f.durable() { f.open(dir) } else { store };
    assert_eq!(reader.get("a/b").await.unwrap(), None);
    let all = reader.list(&ListQuery::default()).await.unwrap();
    assert_eq!(
        all.tasks.iter().map(|t| t.id()).collect::<Vec<_>>(),
        ["keep"]
    );
    assert!(matches!(
        reader.delete("").await,
        Err(StoreError::InvalidId { .. })
    ));
}

/// `usage`, where the store reports it, counts the Tasks stored and the bytes of their JSON
/// (as a `get` returns it, give or take the spacing of the store's own text form: PostgreSQL's
/// `jsonb` puts a space after `:` and `,`), and follows saves that grow or shrink a Task and
/// deletes; a store that cannot tell answers `None`, never an error.
pub async fn usage_counts_what_is_stored(f: &dyn StoreFactory, dir: &Path) {
    let store = f.open(dir);
    let empty = store.usage().await.unwrap();
    if empty.is_none() {
        return;
    }
    assert_eq!(empty, Some(StoreUsage::default()));
    store.save(&task(json!({"id": "a", "n": 1}))).await.unwrap();
    store
        .save(&task(json!({"id": "b/c", "text": "x".repeat(5000)})))
        .await
        .unwrap();
    store
        .save(&task(json!({"id": "a", "n": 12345})))
        .await
        .unwrap();
    let stored = |ids: &'static [&'static str]| {
        let store = Arc::clone(&store);
        async move {
            let mut bytes = 0;
            for id in ids {
                bytes += store.get(id).await.unwrap().unwrap().as_json().len() as u64;
            }
            StoreUsage {
                tasks: ids.len() as u64,
                bytes,
            }
        }
    };
    let about = |usage: Option<StoreUsage>, expected: StoreUsage| {
        let usage = usage.expect("a store that reported usage once reports it again");
        assert_eq!(
            usage.tasks, expected.tasks,
            "{usage:?} against {expected:?}"
        );
        let spacing = 16 * expected.tasks;
        assert!(
            (expected.bytes..=expected.bytes + spacing).contains(&usage.bytes),
            "{usage:?} against {expected:?}"
        );
    };
    about(store.usage().await.unwrap(), stored(&["a", "b/c"]).await);
    assert!(store.delete("b/c").await.unwrap());
    about(store.usage().await.unwrap(), stored(&["a"]).await);
}

/// `save_if` is a compare-and-set: it saves only over the version the caller expects (equal as
/// JSON), never over a newer one, and among racing writers that read the same version exactly
/// one wins.
pub async fn save_if_is_a_compare_and_set(f: &dyn StoreFactory, dir: &Path) {
    let store = f.open(dir);
    let v1 = task(json!({"id": "cas", "status": {"state": "working"}, "n": 1}));
    assert!(
        store.save_if(&v1, None).await.unwrap(),
        "saves when there is no Task yet"
    );
    assert_eq!(store.get("cas").await.unwrap(), Some(v1.clone()));

    // Expecting no Task when there is one: refused, nothing written.
    let v2 = task(json!({"id": "cas", "status": {"state": "input-required"}, "n": 2}));
    assert!(!store.save_if(&v2, None).await.unwrap());
    assert_eq!(store.get("cas").await.unwrap(), Some(v1.clone()));
    // Expecting the version read back: saved.
    let read = store.get("cas").await.unwrap().unwrap();
    assert!(store.save_if(&v2, Some(&read)).await.unwrap());
    // A stale expectation: refused, and the newer version stays.
    let v3 = task(json!({"id": "cas", "status": {"state": "working"}, "n": 3}));
    assert!(!store.save_if(&v3, Some(&v1)).await.unwrap());
    assert_eq!(store.get("cas").await.unwrap(), Some(v2.clone()));
    // Equal as JSON is what counts, not the spelling: members in another order match.
    let v2_reordered = task(json!({"n": 2, "status": {"state": "input-required"}, "id": "cas"}));
    assert!(store.save_if(&v3, Some(&v2_reordered)).await.unwrap());
    // The expected version must be a version of the same Task.
    let err = store
        .save_if(&v3, Some(&task(json!({"id": "other"}))))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidId { .. }), "{err}");
    // Exact-fidelity Tasks (numbers jsonb would rewrite, NUL) compare too.
    let odd = vectors()
        .into_iter()
        .find(|(name, _)| name == "numbers-and-escapes.json")
        .expect("the numbers vector")
        .1;
    store.save(&odd).await.unwrap();
    let odd_read = store.get(odd.id()).await.unwrap().unwrap();
    let mut next = odd.clone().into_value();
    next["casMarker"] = json!(1);
    let next = Task::try_from(next).unwrap();
    assert!(store.save_if(&next, Some(&odd_read)).await.unwrap());
    assert!(!store.save_if(&next, Some(&odd_read)).await.unwrap());

    // Eight writers race from the same read: exactly one wins.
    let base = store.get("cas").await.unwrap().unwrap();
    let mut racers = Vec::new();
    for i in 0..8 {
        let (store, base) = (Arc::clone(&store), base.clone());
        racers.push(tokio::spawn(async move {
            // The state stays (a terminal one, which a lifecycle guard keeps).
            let status = base.get("status").cloned().unwrap_or_default();
            let mine = task(json!({"id": "cas", "winner": i, "status": status}));
            store.save_if(&mine, Some(&base)).await.unwrap()
        }));
    }
    let mut winners = Vec::new();
    for (i, racer) in racers.into_iter().enumerate() {
        if racer.await.unwrap() {
            winners.push(i);
        }
    }
    assert_eq!(winners.len(), 1, "exactly one writer wins: {winners:?}");
    let stored = store.get("cas").await.unwrap().unwrap();
    assert_eq!(stored.get("winner").unwrap(), &json!(winners[0]));
}

/// Every save (plain or conditional) moves the version on by one; a conditional save that does
/// not hold writes nothing and names the current version; a delete forgets the version.
pub async fn versions_count_every_save(f: &dyn StoreFactory, dir: &Path) {
    let store = f.open(dir);
    // The capability the server relies on to skip its in-process lock matches the behaviour.
    assert!(
        store.supports_versions(),
        "{} keeps versions but does not report it",
        store.describe()
    );
    let t = |n: u32| task(json!({"id": "ver", "n": n}));
    assert_eq!(store.get_versioned("ver").await.unwrap(), None);
    assert_eq!(
        store.save_versioned(&t(1), Expect::Absent).await.unwrap(),
        1
    );
    store.save(&t(2)).await.unwrap();
    assert_eq!(store.get_versioned("ver").await.unwrap(), Some((t(2), 2)));
    assert_eq!(store.save_versioned(&t(3), Expect::Any).await.unwrap(), 3);
    assert_eq!(
        store
            .save_versioned(&t(4), Expect::Version(3))
            .await
            .unwrap(),
        4
    );
    for (stale, expect) in [
        (Expect::Version(3), "version 3"),
        (Expect::Absent, "no task"),
    ] {
        let err = store.save_versioned(&t(99), stale).await.unwrap_err();
        match &err {
            StoreError::Conflict {
                id,
                expected,
                current,
            } => {
                assert_eq!((id.as_str(), *expected, *current), ("ver", stale, Some(4)));
                assert!(err.to_string().contains(expect), "{err}");
            }
            other => panic!("expected a conflict, got {other}"),
        }
    }
    let err = store
        .save_versioned(&task(json!({"id": "nobody"})), Expect::Version(1))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Conflict { current: None, .. }),
        "{err}"
    );
    assert_eq!(store.get("nobody").await.unwrap(), None, "nothing written");
    let reader = if f.durable() {
        f.open(dir)
    } else {
        Arc::clone(&store)
    };
    assert_eq!(reader.get_versioned("ver").await.unwrap(), Some((t(4), 4)));
    assert!(store.delete("ver").await.unwrap());
    assert_eq!(
        store.save_versioned(&t(5), Expect::Absent).await.unwrap(),
        1
    );
}

/// Writers that all read one version race conditional saves on it: exactly one wins each
/// round, every loser gets a conflict naming the winner's version, and the stored Task is the
/// winner's. Durable stores race through separate store instances over the same storage.
pub async fn conditional_saves_race_with_one_winner(f: &dyn StoreFactory, dir: &Path) {
    let stores: Vec<Arc<dyn TaskStore>> = if f.durable() {
        (0..4).map(|_| f.open(dir)).collect()
    } else {
        vec![f.open(dir)]
    };
    let first = &stores[0];
    assert_eq!(
        first
            .save_versioned(&task(json!({"id": "race"})), Expect::Absent)
            .await
            .unwrap(),
        1
    );
    for round in 1..=4u64 {
        let mut racers = Vec::new();
        for w in 0..8usize {
            let store = Arc::clone(&stores[w % stores.len()]);
            racers.push(tokio::spawn(async move {
                let mine = task(json!({"id": "race", "round": round, "writer": w}));
                (w, store.save_versioned(&mine, Expect::Version(round)).await)
            }));
        }
        let mut winners = Vec::new();
        for racer in racers {
            let (w, outcome) = racer.await.unwrap();
            match outcome {
                Ok(v) => {
                    assert_eq!(v, round + 1);
                    winners.push(w);
                }
                Err(StoreError::Conflict { current, .. }) => {
                    assert_eq!(
                        current,
                        Some(round + 1),
                        "a loser names the winner's version"
                    )
                }
                Err(e) => panic!("writer {w}: {e}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
        let (stored, version) = first.get_versioned("race").await.unwrap().unwrap();
        assert_eq!(version, round + 1);
        assert_eq!(stored.get("writer").unwrap(), &json!(winners[0]));
        assert_eq!(stored.get("round").unwrap(), &json!(round));
    }
    // Create-if-absent races the same way.
    let mut racers = Vec::new();
    for w in 0..8usize {
        let store = Arc::clone(&stores[w % stores.len()]);
        racers.push(tokio::spawn(async move {
            let mine = task(json!({"id": "fresh", "writer": w}));
            store.save_versioned(&mine, Expect::Absent).await
        }));
    }
    let mut wins = 0;
    for racer in racers {
        match racer.await.unwrap() {
            Ok(1) => wins += 1,
            Err(StoreError::Conflict {
                current: Some(1), ..
            }) => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(wins, 1);
}

//! The behaviours every store must have. Each function is one behaviour; `tests/conformance.rs`
//! instantiates all of them for each store.

use crate::{StoreFactory, state, task, vectors};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use toolnexus::{ListQuery, StoreError, Task, TaskStore};

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

/// `list` pages through every Task in id order, with filters on context and state (either
/// protocol version's spelling), and never returns a Task twice.
pub async fn list_pages_and_filters(f: &dyn StoreFactory, dir: &Path) {
    let store = f.open(dir);
    for i in 0..25 {
        let state = ["submitted", "TASK_STATE_WORKING", "completed"][i % 3];
        let context = format!("ctx-{}", i % 2);
        store
            .save(&task(
                json!({"id": format!("t{i:02}"), "contextId": context, "status": {"state": state}}),
            ))
            .await
            .unwrap();
    }
    let mut seen = Vec::new();
    let mut query = ListQuery {
        page_size: 10,
        ..Default::default()
    };
    let mut pages = 0;
    loop {
        let page = store.list(&query).await.unwrap();
        assert!(page.tasks.len() <= 10);
        pages += 1;
        seen.extend(page.tasks.iter().map(|t| t.id().to_owned()));
        match page.next_page_token {
            Some(token) => query.page_token = Some(token),
            None => break,
        }
    }
    let expected: Vec<String> = (0..25).map(|i| format!("t{i:02}")).collect();
    assert_eq!(seen, expected, "every Task once, in id order");
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
    assert_eq!(ids, ["t04", "t10", "t16", "t22"]);
    assert_eq!(working.tasks[0].get("contextId").unwrap(), "ctx-0");
    assert_eq!(working.next_page_token, None);
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

/// `save_if` (optional) is a compare-and-set: it saves only over the version the caller
/// expects (equal as JSON), never over a newer one, and among racing writers that read the same
/// version exactly one wins. A store without it answers `Unsupported` and writes nothing.
pub async fn save_if_is_a_compare_and_set(f: &dyn StoreFactory, dir: &Path) {
    let store = f.open(dir);
    let v1 = task(json!({"id": "cas", "status": {"state": "working"}, "n": 1}));
    match store.save_if(&v1, None).await {
        Err(StoreError::Unsupported { operation, .. }) => {
            assert_eq!(operation, "save_if");
            assert_eq!(store.get("cas").await.unwrap(), None, "nothing written");
            return;
        }
        other => assert!(other.unwrap(), "saves when there is no Task yet"),
    }
    assert_eq!(store.get("cas").await.unwrap(), Some(v1.clone()));

    // Expecting no Task when there is one: refused, nothing written.
    let v2 = task(json!({"id": "cas", "status": {"state": "completed"}, "n": 2}));
    assert!(!store.save_if(&v2, None).await.unwrap());
    assert_eq!(store.get("cas").await.unwrap(), Some(v1.clone()));
    // Expecting the version read back: saved.
    let read = store.get("cas").await.unwrap().unwrap();
    assert!(store.save_if(&v2, Some(&read)).await.unwrap());
    // A stale expectation: refused, and the newer version stays.
    let v3 = task(json!({"id": "cas", "status": {"state": "canceled"}, "n": 3}));
    assert!(!store.save_if(&v3, Some(&v1)).await.unwrap());
    assert_eq!(store.get("cas").await.unwrap(), Some(v2.clone()));
    // Equal as JSON is what counts, not the spelling: members in another order match.
    let v2_reordered = task(json!({"n": 2, "status": {"state": "completed"}, "id": "cas"}));
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
            let mine = task(json!({"id": "cas", "winner": i}));
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

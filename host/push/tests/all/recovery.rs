//! Intents: a sender that dies between a save and its outbox entry delivers the Task as stored
//! after it starts again, and one that died after the entry but before dropping the intent does
//! not deliver that state twice.

use crate::{DEADLINE, Receiver};
use serde_json::{Value, json};
use std::sync::Arc;
use toolnexus_a2a_protocol::{PushNotifier, SingleStore};
use toolnexus_core::{InMemoryTaskStore, PushConfig, Task, TaskStore};
use toolnexus_push::{AllowList, PushOptions, PushSender};

fn task(id: &str, state: &str) -> Task {
    Task::try_from(json!({"id": id, "status": {"state": state}})).unwrap()
}

/// The Task id and state a delivery's body carries.
fn what(body: &Value) -> (String, String) {
    let task = &body["task"];
    (
        task["id"].as_str().unwrap_or_default().to_owned(),
        task["status"]["state"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn intents_left_by_a_crash_deliver_what_was_saved_once() {
    let mut receiver = Receiver::start().await;
    let outbox = tempfile::tempdir().unwrap();
    let store = Arc::new(InMemoryTaskStore::new());
    for id in ["t1", "t2"] {
        store.save(&task(id, "working")).await.unwrap();
        let config = json!({"id": "c", "taskId": id, "protocolVersion": "1.0",
            "url": format!("http://127.0.0.1:{}/hook", receiver.port)});
        store
            .save_push_config(id, &PushConfig::from_value(config).unwrap())
            .await
            .unwrap();
    }
    let options = PushOptions {
        allow: AllowList::parse(&format!("127.0.0.1:{}", receiver.port)).unwrap(),
        outbox: Some(outbox.path().to_owned()),
        store_name: "memory-for-the-test".into(),
        ..PushOptions::default()
    };
    let stores = Arc::new(SingleStore(Arc::clone(&store) as Arc<dyn TaskStore>));

    // The first run, in a runtime of its own that is then dropped: a crash, its deliveries
    // stopped where they were.
    let held = receiver.hold_next();
    let first_run = {
        let (store, stores, options) = (Arc::clone(&store), Arc::clone(&stores), options.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async {
                let sender = PushSender::start(stores, options).unwrap();
                // t1: its working state is being delivered (held); its completed state is saved
                // and written, but the crash comes before the intent is dropped.
                sender.task_saved(None, &task("t1", "working")).await;
                sender.task_saving(None, "t1").await;
                store.save(&task("t1", "completed")).await.unwrap();
                sender.task_saved(None, &task("t1", "completed")).await;
                sender.task_saving(None, "t1").await;
                // t2: saved completed, the crash before its entry is written.
                sender.task_saving(None, "t2").await;
                store.save(&task("t2", "completed")).await.unwrap();
            });
        })
    };
    let first = tokio::time::timeout(DEADLINE, receiver.bodies.recv())
        .await
        .expect("the first delivery")
        .unwrap();
    assert_eq!(what(&first), ("t1".into(), "TASK_STATE_WORKING".into()));
    tokio::task::spawn_blocking(move || first_run.join().unwrap())
        .await
        .unwrap();
    drop(held);

    let sender = PushSender::start(stores, options).unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        let body = tokio::time::timeout(DEADLINE, receiver.bodies.recv())
            .await
            .expect("a delivery after the restart")
            .unwrap();
        got.push(what(&body));
    }
    tokio::time::timeout(DEADLINE, sender.drained())
        .await
        .expect("the queue drains");
    while let Ok(body) = receiver.bodies.try_recv() {
        got.push(what(&body));
    }
    got.sort();
    assert_eq!(
        got,
        [
            ("t1".into(), "TASK_STATE_COMPLETED".into()),
            ("t1".into(), "TASK_STATE_WORKING".into()),
            ("t2".into(), "TASK_STATE_COMPLETED".into()),
        ],
        "the cut delivery again, t1's completed state once, t2's recovered"
    );
}

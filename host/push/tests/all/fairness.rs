//! Fair shares: one namespace flooding a webhook that accepts connections and never answers
//! (100 configs per Task, save after save) neither fills the queue for the others nor holds
//! every in-flight slot: another namespace's deliveries to a working webhook all arrive, in
//! order, while the flood goes on.

use crate::DEADLINE;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::mpsc;
use toolnexus_a2a_protocol::{PushNotifier, Stores};
use toolnexus_core::{InMemoryTaskStore, PushConfig, StoreError, Task, TaskStore};
use toolnexus_push::{AllowList, PushOptions, PushSender};

/// One in-memory store per namespace.
struct Namespaces(HashMap<Option<String>, Arc<InMemoryTaskStore>>);

#[async_trait::async_trait]
impl Stores for Namespaces {
    async fn store(&self, namespace: Option<&str>) -> Result<Arc<dyn TaskStore>, StoreError> {
        match self.0.get(&namespace.map(str::to_owned)) {
            Some(store) => Ok(Arc::clone(store) as Arc<dyn TaskStore>),
            None => Err(StoreError::Unsupported {
                store: "the test's stores".into(),
                operation: "this namespace",
            }),
        }
    }
}

/// A listener that accepts every connection and never reads or answers; its port.
async fn black_hole() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    port
}

/// A webhook answering 200 at once; its port and the step of each body it gets.
async fn working_webhook() -> (u16, mpsc::UnboundedReceiver<u64>) {
    let (tx, rx) = mpsc::unbounded_channel();
    async fn receive(State(tx): State<mpsc::UnboundedSender<u64>>, body: Bytes) -> StatusCode {
        let body: Value = serde_json::from_slice(&body).unwrap_or_default();
        let step = body["task"]["metadata"]["step"]
            .as_u64()
            .unwrap_or(u64::MAX);
        let _ = tx.send(step);
        StatusCode::OK
    }
    let app = axum::Router::new().fallback(receive).with_state(tx);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, rx)
}

fn task(id: &str, step: u64) -> Task {
    Task::try_from(json!({"id": id, "status": {"state": "working"}, "metadata": {"step": step}}))
        .unwrap()
}

async fn add_config(store: &InMemoryTaskStore, task_id: &str, config_id: &str, port: u16) {
    let config = json!({"id": config_id, "taskId": task_id, "protocolVersion": "1.0",
        "url": format!("http://127.0.0.1:{port}/hook")});
    store
        .save_push_config(task_id, &PushConfig::from_value(config).unwrap())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_namespace_flooding_a_webhook_that_never_answers_does_not_starve_another() {
    const FLOOD_CONFIGS: usize = 100;
    const FLOOD_SAVES: u64 = 80;
    const GOOD_SAVES: u64 = 20;
    let hole = black_hole().await;
    let (good_port, mut arrivals) = working_webhook().await;
    let (flooding, good) = (Some("o.flooding"), Some("o.good"));
    let flood_store = Arc::new(InMemoryTaskStore::new());
    let good_store = Arc::new(InMemoryTaskStore::new());
    flood_store.save(&task("flood", 0)).await.unwrap();
    good_store.save(&task("good", 0)).await.unwrap();
    for n in 0..FLOOD_CONFIGS {
        add_config(&flood_store, "flood", &format!("c{n}"), hole).await;
    }
    add_config(&good_store, "good", "c", good_port).await;
    let stores = Namespaces(HashMap::from([
        (flooding.map(str::to_owned), flood_store),
        (good.map(str::to_owned), good_store),
    ]));
    // The defaults, but for the allow-list: what an operator runs.
    let options = PushOptions {
        allow: AllowList::parse(&format!("127.0.0.1:{hole},127.0.0.1:{good_port}")).unwrap(),
        ..PushOptions::default()
    };
    let sender = Arc::new(PushSender::start(Arc::new(stores), options).unwrap());

    // The flood goes on while the other namespace saves.
    let flood = {
        let sender = Arc::clone(&sender);
        tokio::spawn(async move {
            for step in 1..=FLOOD_SAVES {
                sender.task_saved(flooding, &task("flood", step)).await;
            }
        })
    };
    // Well into the flood (five saves' deliveries queued) before the other namespace starts.
    tokio::time::timeout(DEADLINE, async {
        while sender.queued() < 5 * FLOOD_CONFIGS {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the flood is queued");
    for step in 1..=GOOD_SAVES {
        sender.task_saved(good, &task("good", step)).await;
    }
    let mut got = Vec::new();
    let all_arrived = tokio::time::timeout(DEADLINE, async {
        while got.len() < GOOD_SAVES as usize {
            got.push(arrivals.recv().await.expect("the webhook runs"));
        }
    })
    .await;
    assert!(
        all_arrived.is_ok(),
        "only {} of {GOOD_SAVES} deliveries to the working webhook arrived in {DEADLINE:?}: {got:?}",
        got.len()
    );
    assert_eq!(got, (1..=GOOD_SAVES).collect::<Vec<_>>(), "in save order");
    flood.await.unwrap();
}

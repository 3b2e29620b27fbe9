//! Someone who can write the store but has no key changes a config with sealed secrets behind
//! the server's back: points it at another URL, moves it to another namespace or Task. A real
//! `PushSender` then sends nothing (no credentials reach the new URL, nor the old one for a
//! Task or namespace they were not given for), and opening it for Get fails naming why.

use crate::{PushOptions, PushSender, SealKey};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use toolnexus_a2a_protocol::{PushNotifier, Stores};
use toolnexus_core::{InMemoryTaskStore, PushConfig, StoreError, Task, TaskStore};
use toolnexus_egress::allow_list::AllowList;

const DEADLINE: Duration = Duration::from_secs(30);

/// A webhook that reports the secret headers of every request it gets.
struct Hook {
    url: String,
    got: mpsc::UnboundedReceiver<(Option<String>, Option<String>)>,
}

async fn record(
    State(tx): State<mpsc::UnboundedSender<(Option<String>, Option<String>)>>,
    headers: HeaderMap,
) -> StatusCode {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let _ = tx.send((text("authorization"), text("x-a2a-notification-token")));
    StatusCode::OK
}

impl Hook {
    async fn start() -> Hook {
        let (tx, got) = mpsc::unbounded_channel();
        let app = axum::Router::new().fallback(record).with_state(tx);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Hook { url, got }
    }

    /// Nothing arrived (asked once the sender drained: a request sent would be here).
    fn assert_nothing(&mut self, when: &str) {
        if let Ok(got) = self.got.try_recv() {
            panic!("{when}: the webhook at {} got {got:?}", self.url);
        }
    }
}

/// A memory store per namespace.
#[derive(Default)]
struct Namespaces(Mutex<HashMap<String, Arc<InMemoryTaskStore>>>);

impl Namespaces {
    fn get(&self, namespace: Option<&str>) -> Arc<InMemoryTaskStore> {
        let mut stores = self.0.lock().unwrap();
        Arc::clone(
            stores
                .entry(namespace.unwrap_or("").to_owned())
                .or_default(),
        )
    }
}

#[async_trait::async_trait]
impl Stores for Namespaces {
    async fn store(&self, namespace: Option<&str>) -> Result<Arc<dyn TaskStore>, StoreError> {
        Ok(self.get(namespace) as Arc<dyn TaskStore>)
    }
}

fn task(id: &str) -> Task {
    Task::try_from(json!({"id": id, "status": {"state": "working"}})).unwrap()
}

async fn drained(sender: &PushSender) {
    tokio::time::timeout(DEADLINE, sender.drained())
        .await
        .expect("the deliveries are done in time");
}

const A: Option<&str> = Some("t.a");
const B: Option<&str> = Some("t.b");

#[tokio::test(flavor = "multi_thread")]
async fn a_sealed_config_changed_or_moved_behind_the_servers_back_sends_nothing() {
    let mut good = Hook::start().await;
    let mut evil = Hook::start().await;
    let stores = Arc::new(Namespaces::default());
    let options = PushOptions {
        allow: AllowList::parse("127.0.0.1").unwrap(),
        key: Some(SealKey::from_bytes(&[7; 32]).unwrap()),
        ..PushOptions::default()
    };
    let sender = PushSender::start(Arc::clone(&stores) as Arc<dyn Stores>, options).unwrap();
    for (namespace, id) in [(A, "t"), (A, "u"), (B, "t")] {
        stores.get(namespace).save(&task(id)).await.unwrap();
    }
    let config = json!({"id": "c", "taskId": "t", "url": good.url, "protocolVersion": "1.0",
        "token": "tok-SECRET", "authentication": {"scheme": "Bearer", "credentials": "cred-SECRET"}});
    let Value::Object(config) = config else {
        unreachable!()
    };
    // Sealed as the service seals it, for namespace t.a and Task t.
    let sealed: Map<String, Value> = sender.seal(A, "t", config).unwrap();
    let sealed = PushConfig::from_map(sealed).unwrap();
    stores.get(A).save_push_config("t", &sealed).await.unwrap();

    // Untouched, it delivers the secrets to its webhook.
    sender.task_saved(A, &task("t")).await;
    let got = tokio::time::timeout(DEADLINE, good.got.recv())
        .await
        .expect("a delivery in time")
        .unwrap();
    assert_eq!(
        got,
        (
            Some("Bearer cred-SECRET".to_owned()),
            Some("tok-SECRET".to_owned())
        )
    );
    drained(&sender).await;

    // Its URL changed in the store: nothing is sent, and it does not open for Get.
    let mut redirected = sealed.to_map();
    redirected.insert("url".into(), json!(evil.url));
    let redirected = PushConfig::from_map(redirected).unwrap();
    stores
        .get(A)
        .save_push_config("t", &redirected)
        .await
        .unwrap();
    sender.task_saved(A, &task("t")).await;
    drained(&sender).await;
    evil.assert_nothing("after the URL was changed");
    good.assert_nothing("after the URL was changed");
    let why = sender.open(A, "t", redirected.to_map()).unwrap_err();
    assert!(why.contains("cannot be opened"), "{why}");

    // Moved, unchanged, to another namespace's Task of the same id, or to another Task of its
    // namespace: nothing is sent, and it does not open there.
    stores.get(B).save_push_config("t", &sealed).await.unwrap();
    stores.get(A).save_push_config("u", &sealed).await.unwrap();
    sender.task_saved(B, &task("t")).await;
    sender.task_saved(A, &task("u")).await;
    drained(&sender).await;
    good.assert_nothing("after the config was moved");
    evil.assert_nothing("after the config was moved");
    for (namespace, task_id) in [(B, "t"), (A, "u")] {
        let why = sender
            .open(namespace, task_id, sealed.to_map())
            .unwrap_err();
        assert!(
            why.contains("token cannot be opened"),
            "{namespace:?} {task_id}: {why}"
        );
    }
    // Where it was sealed, it still opens.
    let opened = sender.open(A, "t", sealed.to_map()).unwrap();
    assert_eq!(opened["token"], "tok-SECRET");
}

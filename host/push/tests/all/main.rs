//! `PushSender` over an in-memory store, delivering to a real webhook receiver in the test
//! process: a config deleted while its deliveries wait gets none of them, and past the queue
//! bound new deliveries are refused while the queued ones keep their order; HTTPS webhooks
//! (`https.rs`); fair shares between namespaces (`fairness.rs`).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use toolnexus_a2a_protocol::{PushNotifier, SingleStore};
use toolnexus_core::{InMemoryTaskStore, PushConfig, Task, TaskStore};
use toolnexus_push::{AllowList, PushOptions, PushSender};

mod fairness;
mod https;
mod recovery;

pub const DEADLINE: Duration = Duration::from_secs(30);

/// A receiver whose answers wait for the test where the script says so.
struct Receiver {
    port: u16,
    gates: Arc<Mutex<VecDeque<oneshot::Receiver<()>>>>,
    bodies: mpsc::UnboundedReceiver<Value>,
}

type Shared = (
    Arc<Mutex<VecDeque<oneshot::Receiver<()>>>>,
    mpsc::UnboundedSender<Value>,
);

async fn receive(State((gates, tx)): State<Shared>, body: Bytes) -> StatusCode {
    let _ = tx.send(serde_json::from_slice(&body).unwrap_or(Value::Null));
    let gate = gates.lock().unwrap().pop_front();
    if let Some(gate) = gate {
        let _ = gate.await;
    }
    StatusCode::OK
}

impl Receiver {
    async fn start() -> Receiver {
        let (tx, bodies) = mpsc::unbounded_channel();
        let gates = Arc::new(Mutex::new(VecDeque::new()));
        let app = axum::Router::new()
            .fallback(receive)
            .with_state((Arc::clone(&gates), tx));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver {
            port,
            gates,
            bodies,
        }
    }

    /// The next request will not be answered until the returned sender is used (or dropped).
    fn hold_next(&self) -> oneshot::Sender<()> {
        let (open, gate) = oneshot::channel();
        self.gates.lock().unwrap().push_back(gate);
        open
    }

    /// The state of the Task in the next delivery's body.
    async fn next_state(&mut self) -> String {
        let body = tokio::time::timeout(DEADLINE, self.bodies.recv())
            .await
            .expect("a delivery in time")
            .unwrap();
        body["task"]["status"]["state"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

fn task(state: &str) -> Task {
    Task::from_json(&format!(r#"{{"id":"t","status":{{"state":"{state}"}}}}"#)).unwrap()
}

async fn setup(max_queued: usize) -> (Arc<InMemoryTaskStore>, PushSender, Receiver) {
    let receiver = Receiver::start().await;
    let store = Arc::new(InMemoryTaskStore::new());
    store.save(&task("submitted")).await.unwrap();
    let options = PushOptions {
        allow: AllowList::parse(&format!("127.0.0.1:{}", receiver.port)).unwrap(),
        concurrency: 1,
        max_queued,
        ..PushOptions::default()
    };
    let stores = Arc::new(SingleStore(Arc::clone(&store) as Arc<dyn TaskStore>));
    let sender = PushSender::start(stores, options).unwrap();
    (store, sender, receiver)
}

async fn add_config(store: &InMemoryTaskStore, receiver: &Receiver) {
    let config = json!({"id": "c", "taskId": "t", "protocolVersion": "1.0",
        "url": format!("http://127.0.0.1:{}/hook", receiver.port)});
    let config = PushConfig::from_value(config).unwrap();
    store.save_push_config("t", &config).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_config_deleted_while_its_deliveries_wait_gets_none_of_them() {
    let (store, sender, mut receiver) = setup(100).await;
    add_config(&store, &receiver).await;
    let release = receiver.hold_next();
    sender.task_saved(None, &task("submitted")).await;
    assert_eq!(receiver.next_state().await, "TASK_STATE_SUBMITTED");
    // Queued behind the held one, then its config goes.
    sender.task_saved(None, &task("working")).await;
    assert!(store.delete_push_config("t", "c").await.unwrap());
    release.send(()).unwrap();
    tokio::time::timeout(DEADLINE, sender.drained())
        .await
        .expect("the queue drains");
    assert!(
        receiver.bodies.try_recv().is_err(),
        "nothing delivered after the delete"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn past_the_queue_bound_new_deliveries_are_refused_and_the_queued_keep_their_order() {
    let (store, sender, mut receiver) = setup(2).await;
    add_config(&store, &receiver).await;
    let release = receiver.hold_next();
    sender.task_saved(None, &task("submitted")).await;
    assert_eq!(receiver.next_state().await, "TASK_STATE_SUBMITTED");
    sender.task_saved(None, &task("working")).await;
    assert_eq!(sender.queued(), 2);
    // Over the bound: refused, not queued.
    sender.task_saved(None, &task("input-required")).await;
    assert_eq!(sender.queued(), 2);
    release.send(()).unwrap();
    assert_eq!(receiver.next_state().await, "TASK_STATE_WORKING");
    sender.task_saved(None, &task("completed")).await;
    assert_eq!(receiver.next_state().await, "TASK_STATE_COMPLETED");
}

//! What a `SendMessage` asks of the store: a run saves each of its versions on the version it
//! saved last, without reading the Task first, and a blocking send answers with the Task as the
//! run saved it; a change another writer made meanwhile is still never overwritten.

use crate::harness::{config, send_params};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::Semaphore;
use toolnexus_a2a_protocol::{
    AgentLimits, Answer, Artifact, Call, EmitError, Message, Outcome, OwnerLimits, Part, Scope,
    Service, SingleStore, Version, Work,
};
use toolnexus_core::{
    Expect, InMemoryTaskStore, ListQuery, StoreError, StoreUsage, Task, TaskPage, TaskStore,
    task_state,
};

/// A memory store that counts the reads, saves and counts (listings, usage) asked of it.
#[derive(Default)]
struct Counting {
    inner: InMemoryTaskStore,
    reads: AtomicUsize,
    saves: AtomicUsize,
    counts: AtomicUsize,
}

#[async_trait::async_trait]
impl TaskStore for Counting {
    async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.get(id).await
    }
    async fn save(&self, task: &Task) -> Result<(), StoreError> {
        self.saves.fetch_add(1, Ordering::SeqCst);
        self.inner.save(task).await
    }
    fn supports_versions(&self) -> bool {
        true
    }
    async fn get_versioned(&self, id: &str) -> Result<Option<(Task, u64)>, StoreError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.get_versioned(id).await
    }
    async fn save_versioned(&self, task: &Task, expect: Expect) -> Result<u64, StoreError> {
        self.saves.fetch_add(1, Ordering::SeqCst);
        self.inner.save_versioned(task, expect).await
    }
    async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
        self.counts.fetch_add(1, Ordering::SeqCst);
        self.inner.list(query).await
    }
    async fn usage(&self) -> Result<Option<StoreUsage>, StoreError> {
        self.counts.fetch_add(1, Ordering::SeqCst);
        self.inner.usage().await
    }
    fn describe(&self) -> String {
        "counting memory store".into()
    }
}

fn service_over(store: Arc<Counting>, agent: Arc<dyn toolnexus_a2a_protocol::Agent>) -> Service {
    bounded_service_over(store, agent, OwnerLimits::default())
}

fn bounded_service_over(
    store: Arc<Counting>,
    agent: Arc<dyn toolnexus_a2a_protocol::Agent>,
    limits: OwnerLimits,
) -> Service {
    Service::new(
        Arc::new(SingleStore(store)),
        config(agent, AgentLimits::default(), limits),
        Arc::new(crate::harness::TokioSpawn),
    )
}

async fn blocking_send(service: &Service, text: &str) -> Value {
    let call = Call::Send(send_params(text, false));
    match service.call(&Scope::default(), call, Version::V1_0).await {
        Ok(Answer::Value(answer)) => answer["task"].clone(),
        Ok(Answer::Stream(_)) => panic!("a value, not a stream"),
        Err(e) => panic!("the send is taken: {e}"),
    }
}

/// Two status updates and an artifact, then `completed`.
struct ThreeUpdates;

#[async_trait::async_trait]
impl toolnexus_a2a_protocol::Agent for ThreeUpdates {
    async fn run(&self, work: &mut Work) -> Result<Outcome, String> {
        for step in ["one", "two"] {
            work.update_status(Some(Message::agent_text(step)))
                .await
                .map_err(|e| e.to_string())?;
        }
        let artifact = Artifact::new("a", vec![Part::text("result")]);
        work.update_artifact(artifact, false, true)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Outcome::Completed(Some(Message::agent_text("done"))))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_send_saves_each_version_once_and_reads_none() {
    let store = Arc::new(Counting::default());
    let service = service_over(Arc::clone(&store), Arc::new(ThreeUpdates));
    let answered = blocking_send(&service, "go").await;
    assert_eq!(answered["status"]["state"], "TASK_STATE_COMPLETED");
    // Submitted, working, three updates, completed.
    assert_eq!(store.saves.load(Ordering::SeqCst), 6);
    assert_eq!(
        store.reads.load(Ordering::SeqCst),
        0,
        "the run reads back no version it saved, nor the send its answer"
    );
    let id = answered["id"].as_str().unwrap();
    let stored = store.inner.get(id).await.unwrap().unwrap();
    assert_eq!(task_state(&stored), "completed");
    assert_eq!(stored.get("artifacts").unwrap()[0]["artifactId"], "a");
}

/// Waits for the test's gate, then tries one update and reports how it went as its outcome.
struct GatedUpdate {
    gate: Arc<Semaphore>,
    /// How the update was answered.
    answered: Arc<std::sync::Mutex<Option<Result<(), EmitError>>>>,
}

#[async_trait::async_trait]
impl toolnexus_a2a_protocol::Agent for GatedUpdate {
    async fn run(&self, work: &mut Work) -> Result<Outcome, String> {
        self.gate
            .acquire()
            .await
            .map_err(|e| e.to_string())?
            .forget();
        let answer = work.update_status(Some(Message::agent_text("late"))).await;
        *self.answered.lock().unwrap() = Some(answer);
        Ok(Outcome::Completed(Some(Message::agent_text("done"))))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_never_overwrites_what_another_writer_saved_meanwhile() {
    let store = Arc::new(Counting::default());
    let gate = Arc::new(Semaphore::new(0));
    let answered = Arc::new(std::sync::Mutex::new(None));
    let agent = GatedUpdate {
        gate: Arc::clone(&gate),
        answered: Arc::clone(&answered),
    };
    let service = service_over(Arc::clone(&store), Arc::new(agent));
    let mut params = send_params("go", false);
    params.return_immediately = true;
    let call = Call::Send(params);
    let Ok(Answer::Value(answer)) = service.call(&Scope::default(), call, Version::V1_0).await
    else {
        panic!("a Task")
    };
    let id = answer["task"]["id"].as_str().unwrap().to_owned();
    // Another replica cancels the Task behind this server's back, once it is `working`.
    let mut canceled = loop {
        let (task, _) = store.inner.get_versioned(&id).await.unwrap().unwrap();
        if task_state(&task) == "working" {
            break task.into_value();
        }
        tokio::task::yield_now().await;
    };
    canceled["status"]["state"] = "canceled".into();
    store
        .inner
        .save(&Task::try_from(canceled).unwrap())
        .await
        .unwrap();
    gate.add_permits(1);
    // The run's update and outcome find the Task terminal: both stop, nothing is saved.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while answered.lock().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent's update was not answered"
        );
        tokio::task::yield_now().await;
    }
    assert!(
        matches!(*answered.lock().unwrap(), Some(Err(EmitError::Stopped))),
        "the update after the cancel answers stopped, not {:?}",
        answered.lock().unwrap()
    );
    service.background_idle().await;
    let stored = store.inner.get(&id).await.unwrap().unwrap();
    assert_eq!(task_state(&stored), "canceled");
}

/// A namespace's Tasks are counted once, at its first new Task, when a bound needs the count;
/// with neither Tasks nor bytes bounded, never (a server with a fresh instance per request
/// would otherwise list its whole store on every new Task).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_is_counted_once_for_its_bounds_and_never_without_them() {
    let unbounded = OwnerLimits {
        max_tasks_per_owner: u64::MAX,
        max_bytes_per_owner: u64::MAX,
        ..OwnerLimits::default()
    };
    for (limits, counts) in [(OwnerLimits::default(), 1), (unbounded, 0)] {
        let store = Arc::new(Counting::default());
        let service = bounded_service_over(Arc::clone(&store), Arc::new(ThreeUpdates), limits);
        for _ in 0..3 {
            let answered = blocking_send(&service, "go").await;
            assert_eq!(answered["status"]["state"], "TASK_STATE_COMPLETED");
        }
        assert_eq!(store.counts.load(Ordering::SeqCst), counts, "{limits:?}");
    }
}

//! A run's life at its edges: a cancel reaches the next run of a continued Task even when
//! that run starts before the previous one has cleaned up, a panicking agent fails its Task,
//! and a stop of the service ends the runs in progress.

use crate::harness::{collect, config, send, send_params, service, stream};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use toolnexus_a2a_protocol::{
    Agent, AgentLimits, Answer, Call, Message, Outcome, RUN_STOPPED_MESSAGE, Scope, Service,
    SingleStore, Spawn, Version, Work,
};
use toolnexus_core::{Expect, InMemoryTaskStore, StoreError, Task, TaskStore};

/// How long a test waits for something that should happen at once before it calls it lost.
const LOST: Duration = Duration::from_secs(10);

/// Tokio's spawn, telling `ended` each time a background future is over.
struct ReportingSpawn {
    ended: mpsc::UnboundedSender<()>,
}

impl Spawn for ReportingSpawn {
    fn spawn(&self, future: BoxFuture<'static, ()>) {
        let ended = self.ended.clone();
        tokio::spawn(async move {
            future.await;
            let _ = ended.send(());
        });
    }
}

/// A memory store that, on the first save of a Task waiting for input, tells `paused` once the
/// save is done and holds the saver until `resume` comes.
struct PausingStore {
    inner: InMemoryTaskStore,
    pause: Mutex<Option<(oneshot::Sender<()>, oneshot::Receiver<()>)>>,
}

#[async_trait::async_trait]
impl TaskStore for PausingStore {
    async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
        self.inner.get(id).await
    }
    async fn save(&self, task: &Task) -> Result<(), StoreError> {
        self.inner.save(task).await
    }
    fn supports_versions(&self) -> bool {
        true
    }
    async fn get_versioned(&self, id: &str) -> Result<Option<(Task, u64)>, StoreError> {
        self.inner.get_versioned(id).await
    }
    async fn save_versioned(&self, task: &Task, expect: Expect) -> Result<u64, StoreError> {
        let saved = self.inner.save_versioned(task, expect).await;
        let asks =
            task.get("status").and_then(|s| s.get("state")) == Some(&json!("input-required"));
        let pause = if asks {
            self.pause.lock().unwrap().take()
        } else {
            None
        };
        if let Some((paused, resume)) = pause {
            let _ = paused.send(());
            let _ = resume.await;
        }
        saved
    }
    fn describe(&self) -> String {
        "pausing memory store".into()
    }
}

/// First message: asks for input. The next: says it runs, then waits for the cancel and says
/// it saw it.
struct AsksThenWaits {
    running: mpsc::UnboundedSender<()>,
    saw_cancel: mpsc::UnboundedSender<()>,
}

#[async_trait::async_trait]
impl Agent for AsksThenWaits {
    async fn run(&self, work: &mut Work) -> Result<Outcome, String> {
        if !work.request().continued {
            return Ok(Outcome::InputRequired(Some(Message::agent_text("more?"))));
        }
        let _ = self.running.send(());
        work.canceled().await;
        let _ = self.saw_cancel.send(());
        Ok(Outcome::Canceled(None))
    }
}

fn continue_params(task_id: &str) -> toolnexus_a2a_protocol::SendParams {
    let mut params = send_params("go on", false);
    params.message["taskId"] = json!(task_id);
    params.return_immediately = true;
    params
}

async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(LOST, future)
        .await
        .unwrap_or_else(|_| panic!("{what} within {LOST:?}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_reaches_the_next_run_even_when_it_started_before_the_first_cleaned_up() {
    let (paused_tx, paused) = oneshot::channel();
    let (resume, resume_rx) = oneshot::channel();
    let store = Arc::new(PausingStore {
        inner: InMemoryTaskStore::new(),
        pause: Mutex::new(Some((paused_tx, resume_rx))),
    });
    let (running_tx, mut running) = mpsc::unbounded_channel();
    let (saw_tx, mut saw_cancel) = mpsc::unbounded_channel();
    let (ended_tx, mut ended) = mpsc::unbounded_channel();
    let agent = Arc::new(AsksThenWaits {
        running: running_tx,
        saw_cancel: saw_tx,
    });
    let service = Service::new(
        Arc::new(SingleStore(store)),
        config(agent, AgentLimits::default(), Default::default()),
        Arc::new(ReportingSpawn { ended: ended_tx }),
    );
    let mut first = send_params("start", false);
    first.return_immediately = true;
    let id = match send(&service, first).await {
        Answer::Value(v) => v["task"]["id"].as_str().expect("a task id").to_owned(),
        Answer::Stream(_) => panic!("a value"),
    };
    // The first run has saved the Task waiting for input and is held before its cleanup.
    within("the first run's last save", paused).await.unwrap();
    // The Task is continued: its second run registers its cancel signal and starts.
    send(&service, continue_params(&id)).await;
    within("the second run", running.recv()).await;
    // Only now does the first run clean up, and end.
    resume.send(()).unwrap();
    within("the first run's end", ended.recv()).await;
    // A cancel must reach the second run.
    let canceled = match service
        .call(
            &Scope::default(),
            Call::Cancel { id: id.clone() },
            Version::V1_0,
        )
        .await
        .expect("canceled")
    {
        Answer::Value(v) => v,
        Answer::Stream(_) => panic!("a value"),
    };
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    within("the second run told of the cancel", saw_cancel.recv()).await;
    within("the second run's end", ended.recv()).await;
}

/// Panics when it runs.
struct Panics;

#[async_trait::async_trait]
impl Agent for Panics {
    async fn run(&self, _work: &mut Work) -> Result<Outcome, String> {
        panic!("the agent's own bug")
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_panicking_agent_fails_its_task_and_ends_its_streams() {
    let service = service(Arc::new(Panics));
    let events = collect(stream(&service, "boom").await).await;
    assert_eq!(
        events.last().map(String::as_str),
        Some("status:TASK_STATE_FAILED:the agent failed: it panicked"),
        "{events:?}"
    );
    // A blocking send answers too, with the Task failed.
    let answer = match send(&service, send_params("boom", false)).await {
        Answer::Value(v) => v,
        Answer::Stream(_) => panic!("a value"),
    };
    assert_eq!(answer["task"]["status"]["state"], "TASK_STATE_FAILED");
    within("the runs' end", service.background_idle()).await;
}

/// Says it runs, then works until it is dropped.
struct Endless {
    running: mpsc::UnboundedSender<()>,
}

#[async_trait::async_trait]
impl Agent for Endless {
    async fn run(&self, _work: &mut Work) -> Result<Outcome, String> {
        let _ = self.running.send(());
        std::future::pending().await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stop_fails_the_runs_in_progress_and_refuses_new_sends() {
    let (running_tx, mut running) = mpsc::unbounded_channel();
    let service = service(Arc::new(Endless {
        running: running_tx,
    }));
    let events = stream(&service, "forever").await;
    within("the run", running.recv()).await;
    assert_eq!(service.background_running(), 1);
    service.stop_runs();
    let events = collect(events).await;
    assert_eq!(
        events.last().map(String::as_str),
        Some(format!("status:TASK_STATE_FAILED:{RUN_STOPPED_MESSAGE}").as_str()),
        "{events:?}"
    );
    within("the stopped run's end", service.background_idle()).await;
    let refused = service
        .call(
            &Scope::default(),
            Call::Send(send_params("late", false)),
            Version::V1_0,
        )
        .await;
    assert_eq!(refused.err().map(|e| e.code()), Some(-32000));
    let listed: Value = match service
        .call(
            &Scope::default(),
            Call::List(Default::default()),
            Version::V1_0,
        )
        .await
        .expect("listed")
    {
        Answer::Value(v) => v,
        Answer::Stream(_) => panic!("a value"),
    };
    assert_eq!(
        listed["tasks"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
}

/// Stops the service itself mid-run, then gives up as an agent does when told of a cancel
/// (its next update refused): the stop lands within one poll of the run, before the run has
/// seen it.
#[derive(Default)]
struct StopsThenGivesUp {
    service: std::sync::OnceLock<Service>,
}

#[async_trait::async_trait]
impl Agent for StopsThenGivesUp {
    async fn run(&self, work: &mut Work) -> Result<Outcome, String> {
        self.service.get().expect("the service is set").stop_runs();
        work.update_status(None).await.map_err(|e| e.to_string())?;
        Ok(Outcome::Completed(None))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_that_gives_up_on_the_stop_ends_stopped_too() {
    let agent = Arc::new(StopsThenGivesUp::default());
    let service = service(Arc::clone(&agent) as _);
    assert!(agent.service.set(service.clone()).is_ok());
    let events = collect(stream(&service, "stop").await).await;
    assert_eq!(
        events.last().map(String::as_str),
        Some(format!("status:TASK_STATE_FAILED:{RUN_STOPPED_MESSAGE}").as_str()),
        "{events:?}"
    );
}

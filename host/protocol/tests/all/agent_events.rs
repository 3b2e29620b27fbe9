//! Streams carry exactly the events the agent emitted, in order, to every subscriber.

use crate::harness::{collect, send_params, service, stream, subscribe};
use std::sync::Arc;
use tokio::sync::Semaphore;
use toolnexus_a2a_protocol::{
    Agent, Answer, Artifact, Call, Message, Outcome, Part, Scope, Version, Work,
};

/// Emits, for a message `N`, N rounds of a status update ("step i") and an artifact update
/// (a new artifact `a` in round 0, then appends "i"), after the test opens its gate.
struct Rounds {
    gate: Arc<Semaphore>,
}

#[async_trait::async_trait]
impl Agent for Rounds {
    async fn run(&self, work: &mut Work) -> Result<Outcome, String> {
        let rounds: usize = work
            .request()
            .message
            .text()
            .parse()
            .map_err(|_| "a number")?;
        self.gate
            .acquire()
            .await
            .map_err(|e| e.to_string())?
            .forget();
        for i in 0..rounds {
            let step = Message::agent_text(format!("step {i}"));
            work.update_status(Some(step))
                .await
                .map_err(|e| e.to_string())?;
            let artifact = Artifact::new("a", vec![Part::text(i.to_string())]);
            work.update_artifact(artifact, i > 0, i + 1 == rounds)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(Outcome::Completed(Some(Message::agent_text("done"))))
    }
}

fn expected(rounds: usize) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..rounds {
        out.push(format!("status:TASK_STATE_WORKING:step {i}"));
        let plus = if i > 0 { "+" } else { "" };
        let last = if i + 1 == rounds { "!" } else { "" };
        out.push(format!("artifact:a:{plus}{i}{last}"));
    }
    out.push("status:TASK_STATE_COMPLETED:done".into());
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_streams_get_every_event_in_the_order_emitted() {
    let gate = Arc::new(Semaphore::new(0));
    let service = service(Arc::new(Rounds {
        gate: Arc::clone(&gate),
    }));
    let rounds = 300;
    let sent = stream(&service, &rounds.to_string()).await;
    let id = sent.task_id().to_owned();
    let subscribed = subscribe(&service, &id).await;
    let (first, second, ()) = tokio::join!(collect(sent), collect(subscribed), async {
        gate.add_permits(1);
    });
    let mut want = vec![
        "task:TASK_STATE_SUBMITTED".to_owned(),
        "status:TASK_STATE_WORKING:".to_owned(),
    ];
    want.extend(expected(rounds));
    assert_eq!(first, want);
    // The subscriber attached before the agent emitted anything: the Task as it was
    // (submitted, or working if the run had started), then the same events as the sender's.
    let skipped = match second[0].as_str() {
        "task:TASK_STATE_SUBMITTED" => 1,
        "task:TASK_STATE_WORKING" => 2,
        other => panic!("the subscription starts with {other}"),
    };
    assert_eq!(second[1..], want[skipped..]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_subscriber_that_joins_midway_gets_the_task_then_every_later_event() {
    let gate = Arc::new(Semaphore::new(0));
    let service = service(Arc::new(Rounds {
        gate: Arc::clone(&gate),
    }));
    let rounds = 200;
    let sent = stream(&service, &rounds.to_string()).await;
    let id = sent.task_id().to_owned();
    let whole = tokio::spawn(collect(sent));
    gate.add_permits(1);
    // Joins while the agent emits: what it missed is in the Task it gets first.
    let late = collect(subscribe(&service, &id).await).await;
    let whole = whole.await.unwrap();
    let task = &late[0];
    assert!(task.starts_with("task:"), "{late:?}");
    let tail = &late[1..];
    assert!(
        whole.ends_with(tail),
        "the late stream's events are the end of the whole one: {tail:?}"
    );
}

/// Asks for input first (`ask`), then emits one status per message.
struct AskThenWork;

#[async_trait::async_trait]
impl Agent for AskThenWork {
    async fn run(&self, work: &mut Work) -> Result<Outcome, String> {
        if !work.request().continued {
            return Ok(Outcome::InputRequired(Some(Message::agent_text("which?"))));
        }
        for i in 0..3 {
            let update = Message::agent_text(format!("w{i}"));
            work.update_status(Some(update))
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(Outcome::Completed(None))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stream_opened_while_the_task_waits_follows_the_next_run_event_by_event() {
    let service = service(Arc::new(AskThenWork));
    let asked = collect(stream(&service, "first").await).await;
    assert_eq!(
        asked.last().map(String::as_str),
        Some("status:TASK_STATE_INPUT_REQUIRED:which?")
    );
    let id = {
        let Answer::Value(list) = service
            .call(
                &Scope::default(),
                Call::List(Default::default()),
                Version::V1_0,
            )
            .await
            .unwrap()
        else {
            panic!("a value")
        };
        list["tasks"][0]["id"].as_str().unwrap().to_owned()
    };
    let waiting = subscribe(&service, &id).await;
    let follower = tokio::spawn(collect(waiting));
    let mut next = send_params("second", false);
    next.message["taskId"] = serde_json::json!(id);
    crate::harness::send(&service, next).await;
    let followed = follower.await.unwrap();
    assert_eq!(followed[0], "task:TASK_STATE_INPUT_REQUIRED");
    // In order and ending with the run's last events; events of the run from before the
    // stream found it (it read the store until then) may arrive merged into one.
    let statuses: Vec<&str> = followed[1..].iter().map(String::as_str).collect();
    let all = [
        "status:TASK_STATE_SUBMITTED:",
        "status:TASK_STATE_WORKING:",
        "status:TASK_STATE_WORKING:w0",
        "status:TASK_STATE_WORKING:w1",
        "status:TASK_STATE_WORKING:w2",
        "status:TASK_STATE_COMPLETED:",
    ];
    let mut rest = all.iter();
    for status in &statuses {
        assert!(
            rest.any(|s| s == status),
            "out of order or unknown: {followed:?}"
        );
    }
    assert_eq!(
        statuses.last(),
        Some(&"status:TASK_STATE_COMPLETED:"),
        "{followed:?}"
    );
}

//! A hostile or broken agent component fails its own Task with a message naming the agent,
//! never anything else: other Tasks are served meanwhile, and the agent serves later runs.

use crate::agents::harness::{
    collect, fixture, get, run, service, service_with, start, status, subscribe,
};
use std::time::{Duration, Instant};
use toolnexus_a2a_protocol::AgentLimits;
use toolnexus_wasm::Sandboxed;

const EVENT_WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hung_agent_fails_its_task_at_the_deadline_while_other_tasks_complete() {
    let deadline = Duration::from_secs(5);
    let service = service(
        fixture()
            .timeout(deadline)
            .max_instances(4)
            .build()
            .unwrap(),
    );
    let started = Instant::now();
    let computing = start(&service, "hang").await;
    let sleeping = start(&service, "sleep").await;
    // Followed from now (a subscription to an ended Task is refused): each ends with the Task.
    let watch = [&computing, &sleeping].map(|id| {
        let service = service.clone();
        let id = id.clone();
        tokio::spawn(async move { collect(subscribe(&service, &id).await, EVENT_WAIT).await })
    });
    // Other Tasks are served while both hold their instances.
    for i in 0..5 {
        let task = run(&service, &format!("updates:{i}")).await;
        assert_eq!(status(&task).0, "TASK_STATE_COMPLETED", "{task}");
    }
    let served = started.elapsed();
    for id in [&computing, &sleeping] {
        // Whichever is slower, runs still within their deadline remain working.
        if started.elapsed() < deadline {
            assert_eq!(status(&get(&service, id).await).0, "TASK_STATE_WORKING");
        }
    }
    assert!(
        served < deadline,
        "the others waited for the hung ones: {served:?}"
    );
    for watch in watch {
        watch.await.unwrap();
    }
    for id in [&computing, &sleeping] {
        let (state, message) = status(&get(&service, id).await);
        assert_eq!(state, "TASK_STATE_FAILED", "{id}: {message}");
        assert_eq!(
            message,
            "agent fixture: stopped at its deadline of 5s per run"
        );
    }
    assert!(started.elapsed() >= deadline, "not before the deadline");
    let task = run(&service, "outcome:completed").await;
    assert_eq!(
        status(&task).0,
        "TASK_STATE_COMPLETED",
        "the agent serves on"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_hoarding_and_traps_fail_the_task_naming_the_agent() {
    let service = service(
        fixture()
            .memory_limit(32 << 20)
            .max_instances(1)
            .build()
            .unwrap(),
    );
    let (state, message) = status(&run(&service, "hoard").await);
    assert_eq!(state, "TASK_STATE_FAILED");
    assert!(
        message.starts_with("agent fixture: stopped: over its memory limit of 33554432 bytes"),
        "{message}"
    );
    let (state, message) = status(&run(&service, "trap").await);
    assert_eq!(state, "TASK_STATE_FAILED");
    assert_eq!(
        message,
        "agent fixture: trapped: wasm `unreachable` instruction executed"
    );
    // The one instance was dropped each time; a fresh one serves the next run.
    let task = run(&service, "updates:2").await;
    assert_eq!(status(&task).0, "TASK_STATE_COMPLETED", "{task}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn floods_and_oversized_updates_are_refused_as_over_a_limit() {
    let limits = AgentLimits {
        max_update_bytes: 64 << 10,
        max_updates: 40,
        ..AgentLimits::default()
    };
    let service = service_with(fixture().build().unwrap(), limits);
    let (state, message) = status(&run(&service, "flood").await);
    assert_eq!(state, "TASK_STATE_FAILED");
    assert!(message.starts_with("limit: "), "{message}");
    let (state, message) = status(&run(&service, "oversized:100000").await);
    assert_eq!(state, "TASK_STATE_FAILED");
    assert!(message.starts_with("limit: "), "{message}");
    let (state, message) = status(&run(&service, "oversized:1000").await);
    assert_eq!(
        (state.as_str(), message.as_str()),
        ("TASK_STATE_COMPLETED", "ok")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn invalid_json_in_an_update_is_refused_and_in_an_outcome_fails_the_task() {
    let service = service(fixture().build().unwrap());
    let (state, message) = status(&run(&service, "bad-update-metadata").await);
    assert_eq!(state, "TASK_STATE_FAILED");
    assert_eq!(
        message,
        "invalid: the status message metadata is JSON but not an object"
    );
    let (state, message) = status(&run(&service, "bad-data").await);
    assert_eq!(state, "TASK_STATE_FAILED");
    assert!(
        message.starts_with("invalid: the status message part 0 data is not JSON"),
        "{message}"
    );
    let (state, message) = status(&run(&service, "bad-outcome-metadata").await);
    assert_eq!(state, "TASK_STATE_FAILED");
    assert!(
        message.starts_with("agent fixture: the outcome's message metadata is not JSON"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_canceled_task_whose_agent_hangs_gives_its_instance_back_long_before_the_deadline() {
    // One instance and a deadline beyond the test's waits: the next run gets the instance in
    // time only if the canceled run was stopped.
    let service = service(
        fixture()
            .timeout(EVENT_WAIT * 2)
            .max_instances(1)
            .build()
            .unwrap(),
    );
    let id = start(&service, "hang").await;
    let mut events = subscribe(&service, &id).await;
    loop {
        let event = tokio::time::timeout(EVENT_WAIT, events.next())
            .await
            .expect("an event in time")
            .expect("working before the end")
            .expect("no store error");
        if crate::agents::harness::describe(&event).contains("TASK_STATE_WORKING") {
            break;
        }
    }
    let cancel = toolnexus_a2a_protocol::Call::Cancel { id: id.clone() };
    service
        .call(
            &toolnexus_a2a_protocol::Scope::default(),
            cancel,
            toolnexus_a2a_protocol::Version::V1_0,
        )
        .await
        .expect("canceled");
    let next = tokio::time::timeout(EVENT_WAIT, run(&service, "outcome:completed"))
        .await
        .expect("the instance came back");
    assert_eq!(status(&next).0, "TASK_STATE_COMPLETED");
    assert_eq!(status(&get(&service, &id).await).0, "TASK_STATE_CANCELED");
}

/// An agent that writes into an outgoing request's body without ever sending it waits inside
/// a host call, where epoch interruption cannot reach. Each run fails at its deadline, and its
/// instance is dropped there, wherever it waits: after as many wedged runs as there are
/// instances, a new run still completes (before, every instance stayed held forever and later
/// Tasks stayed `working`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn runs_wedged_in_a_host_call_give_their_instances_back_at_the_deadline() {
    let deadline = Duration::from_secs(2);
    let instances = 2;
    let service = service(
        fixture()
            .timeout(deadline)
            .max_instances(instances)
            .build()
            .unwrap(),
    );
    for _ in 0..instances {
        let wedged = tokio::time::timeout(EVENT_WAIT, run(&service, "wedge-body"))
            .await
            .expect("a wedged run ends at its deadline");
        let (state, message) = status(&wedged);
        assert_eq!(state, "TASK_STATE_FAILED", "{message}");
        assert_eq!(
            message,
            "agent fixture: stopped at its deadline of 2s per run"
        );
    }
    let next = tokio::time::timeout(EVENT_WAIT, run(&service, "outcome:completed"))
        .await
        .expect("an instance came back");
    assert_eq!(status(&next).0, "TASK_STATE_COMPLETED");
}

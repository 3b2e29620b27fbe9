//! What a well-behaved agent component does through the host: updates in order, every
//! outcome, a direct reply, the request it is given, its settings, a cancel.

use crate::agents::harness::{
    collect, describe, fixture, get, run, send, send_params, send_value, service,
    service_with_tenants, status, stream,
};
use serde_json::json;
use std::time::Duration;
use toolnexus_a2a_protocol::{Answer, Call, Scope, Version};
use toolnexus_wasm::Sandboxed;

const EVENT_WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn updates_reach_the_stream_in_the_order_the_agent_emitted_them() {
    let service = service(fixture().build().unwrap());
    let events = collect(stream(&service, "updates:4").await, EVENT_WAIT).await;
    let mut want = vec![
        "task:TASK_STATE_SUBMITTED".to_owned(),
        "status:TASK_STATE_WORKING:".to_owned(),
    ];
    for i in 0..4 {
        want.push(format!("status:TASK_STATE_WORKING:step {i}"));
        let plus = if i > 0 { "+" } else { "" };
        let last = if i == 3 { "!" } else { "" };
        want.push(format!("artifact:a:{plus}{i}{last}"));
    }
    want.push("status:TASK_STATE_COMPLETED:done".into());
    assert_eq!(events, want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_outcome_is_the_tasks_final_state_with_its_message() {
    let service = service(fixture().build().unwrap());
    for (kind, state) in [
        ("completed", "TASK_STATE_COMPLETED"),
        ("failed", "TASK_STATE_FAILED"),
        ("rejected", "TASK_STATE_REJECTED"),
        ("input-required", "TASK_STATE_INPUT_REQUIRED"),
        ("auth-required", "TASK_STATE_AUTH_REQUIRED"),
    ] {
        let task = run(&service, &format!("outcome:{kind}")).await;
        assert_eq!(status(&task), (state.to_owned(), kind.to_owned()), "{task}");
        assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT");
    }
    let task = run(&service, "outcome:canceled").await;
    assert_eq!(status(&task).0, "TASK_STATE_CANCELED", "{task}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_direct_reply_answers_the_send_with_the_agents_message() {
    let service = service(fixture().build().unwrap());
    let answer = send_value(&service, "reply:hello there").await;
    let message = &answer["message"];
    assert_eq!(message["parts"][0]["text"], "hello there", "{answer}");
    assert_eq!(message["role"], "ROLE_AGENT");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_component_gets_the_request_and_a_continued_task_its_history() {
    let service = service(fixture().build().unwrap());
    let mut params = send_params("request", false);
    params.metadata = Some(json!({"k": "v"}));
    params.accepted_output_modes = vec!["text/plain".into()];
    let Answer::Value(answer) = send(&service, params).await else {
        panic!("a value")
    };
    let task = &answer["task"];
    let id = task["id"].as_str().unwrap();
    let context = task["contextId"].as_str().unwrap();
    let (state, said) = status(task);
    assert_eq!(state, "TASK_STATE_COMPLETED");
    assert_eq!(
        said,
        format!(
            "task={id} context={context} continued=false history=0 metadata={{\"k\":\"v\"}} \
             owner=none modes=text/plain"
        )
    );

    // An input-required Task's next message runs the agent again, continued, with history.
    let asked = run(&service, "outcome:input-required").await;
    let id = asked["id"].as_str().unwrap().to_owned();
    let mut params = send_params("request", false);
    params.message["taskId"] = json!(id);
    params.message["contextId"] = asked["contextId"].clone();
    let Answer::Value(answer) = send(&service, params).await else {
        panic!("a value")
    };
    let (state, said) = status(&answer["task"]);
    assert_eq!(state, "TASK_STATE_COMPLETED", "{answer}");
    assert!(said.contains(&format!("task={id} ")), "{said}");
    assert!(said.contains("continued=true history=2"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn settings_reach_configure_and_a_refused_one_stops_the_build() {
    let agent = fixture()
        .setting("model", "small")
        .setting("greeting", "hi there")
        .build()
        .unwrap();
    let service = service(agent);
    let task = run(&service, "config").await;
    assert_eq!(
        status(&task),
        (
            "TASK_STATE_COMPLETED".to_owned(),
            "model=small,greeting=hi there".to_owned()
        )
    );
    let refused = fixture().setting("refuse", "yes").build().unwrap_err();
    let text = refused.to_string();
    assert!(text.contains("refused its settings"), "{text}");
    assert!(text.contains("the fixture refuses"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancel_reaches_the_running_component_and_the_task_stays_canceled() {
    // One instance: the runs after the cancel get it only if the canceled run gave it back.
    let service = service(fixture().max_instances(1).build().unwrap());
    let mut events = stream(&service, "wait-cancel").await;
    let id = events.task_id().to_owned();
    // The cancel lands once the run is working (before, it cancels a submitted Task, which is
    // as good for the Task but does not reach the component).
    loop {
        let event = tokio::time::timeout(EVENT_WAIT, events.next())
            .await
            .expect("an event in time")
            .expect("the run is working before the stream ends")
            .expect("no store error");
        if describe(&event) == "status:TASK_STATE_WORKING:" {
            break;
        }
    }
    let canceled = service
        .call(
            &Scope::default(),
            Call::Cancel { id: id.clone() },
            Version::V1_0,
        )
        .await
        .expect("canceled");
    let Answer::Value(canceled) = canceled else {
        panic!("a value")
    };
    assert_eq!(status(&canceled).0, "TASK_STATE_CANCELED");
    let rest = collect(events, EVENT_WAIT).await;
    assert_eq!(rest, vec!["status:TASK_STATE_CANCELED:".to_owned()]);
    for _ in 0..2 {
        let task = run(&service, "outcome:completed").await;
        assert_eq!(status(&task).0, "TASK_STATE_COMPLETED");
    }
    assert_eq!(status(&get(&service, &id).await).0, "TASK_STATE_CANCELED");
}

/// An agent that exports `scoped-cancel` is told whose Task was canceled (the owner and tenant
/// of the cancel) instead of only its ids, so that it never releases another owner's resources
/// kept under a context id both chose.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancel_tells_a_scoped_agent_whose_task_it_was() {
    let service = service_with_tenants(fixture().max_instances(1).build().unwrap(), &["acme"]);
    let scope = Scope {
        tenant: Some("acme".into()),
        owner: Some("alice".into()),
    };
    let send = Call::Send(send_params("outcome:input-required", false));
    let sent = match service.call(&scope, send, Version::V1_0).await {
        Ok(Answer::Value(sent)) => sent,
        Ok(Answer::Stream(_)) => panic!("a value, not a stream"),
        Err(e) => panic!("the send is taken: {e}"),
    };
    let task = &sent["task"];
    assert_eq!(status(task).0, "TASK_STATE_INPUT_REQUIRED");
    let (id, context) = (
        task["id"].as_str().unwrap(),
        task["contextId"].as_str().unwrap(),
    );
    let cancel = Call::Cancel { id: id.to_owned() };
    service
        .call(&scope, cancel, Version::V1_0)
        .await
        .expect("canceled");
    // The agent is told after the cancel is answered, on the one instance there is: ask that
    // instance until it has been told.
    let want = format!("task={id} context={context} owner=alice tenant=acme");
    let deadline = std::time::Instant::now() + EVENT_WAIT;
    loop {
        let told = status(&run(&service, "canceled").await).1;
        if !told.is_empty() {
            assert_eq!(told, want);
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the agent was not told of the cancel"
        );
        tokio::task::yield_now().await;
    }
}

/// By default an instance serves run after run, and what one run leaves in its linear memory
/// is there for the next (the speed of reuse). With `fresh_instances(true)` every run gets a
/// fresh instance: nothing of one run reaches the next, whoever sent it.
#[tokio::test(flavor = "multi_thread")]
async fn fresh_instances_keep_one_runs_memory_from_the_next() {
    for (fresh, second) in [(false, "remembered=secret"), (true, "remembered=")] {
        let service = service(
            fixture()
                .max_instances(1)
                .fresh_instances(fresh)
                .build()
                .unwrap(),
        );
        let first = run(&service, "remember:secret").await;
        assert_eq!(
            status(&first),
            ("TASK_STATE_COMPLETED".into(), "remembered=".into())
        );
        let next = run(&service, "remember:other").await;
        assert_eq!(
            status(&next),
            ("TASK_STATE_COMPLETED".into(), second.into()),
            "fresh_instances({fresh})"
        );
    }
}

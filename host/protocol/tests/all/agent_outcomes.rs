//! Every way a run can end, what the agent is told about the request, and the limits on
//! what it emits.

use crate::harness::{collect, send, send_params, send_value, service, service_with, stream};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use toolnexus_a2a_protocol::{
    Agent, AgentLimits, Answer, Artifact, Call, EmitError, Message, Outcome, Part, Request, Scope,
    Version, Work,
};

/// Ends as the message's text says; records what it was asked.
#[derive(Default)]
struct Ends {
    seen: Mutex<Vec<Request>>,
}

#[async_trait::async_trait]
impl Agent for Ends {
    async fn run(&self, work: &mut Work) -> Result<Outcome, String> {
        self.seen.lock().unwrap().push(work.request().clone());
        let say = |t: &str| Some(Message::agent_text(t));
        Ok(match work.request().message.text().as_str() {
            "completed" => Outcome::Completed(say("ok")),
            "failed" => Outcome::Failed(say("no")),
            "rejected" => Outcome::Rejected(say("never")),
            "canceled" => Outcome::Canceled(None),
            "input" => Outcome::InputRequired(say("more?")),
            "auth" => Outcome::AuthRequired(say("log in")),
            "reply" => Outcome::Reply(Message::agent(vec![
                Part::text("direct"),
                Part::data(json!({"n": 1})),
            ])),
            "late-reply" => {
                let artifact = Artifact::new("x", vec![Part::text("x")]);
                work.update_artifact(artifact, false, true)
                    .await
                    .map_err(|e| e.to_string())?;
                Outcome::Reply(Message::agent_text("too late"))
            }
            "error" => return Err("it broke".into()),
            other => Outcome::Completed(say(other)),
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_outcome_is_the_final_state_with_its_message() {
    let service = service(Arc::new(Ends::default()));
    for (text, state, message) in [
        ("completed", "TASK_STATE_COMPLETED", "ok"),
        ("failed", "TASK_STATE_FAILED", "no"),
        ("rejected", "TASK_STATE_REJECTED", "never"),
        ("input", "TASK_STATE_INPUT_REQUIRED", "more?"),
        ("auth", "TASK_STATE_AUTH_REQUIRED", "log in"),
        ("error", "TASK_STATE_FAILED", "it broke"),
        (
            "late-reply",
            "TASK_STATE_FAILED",
            "the agent answered with a message after emitting updates",
        ),
    ] {
        let answer = send_value(&service, text).await;
        let task = &answer["task"];
        assert_eq!(task["status"]["state"], state, "{text}: {answer}");
        assert_eq!(
            task["status"]["message"]["parts"][0]["text"], message,
            "{text}: {answer}"
        );
        assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT");
    }
    let canceled = send_value(&service, "canceled").await;
    assert_eq!(canceled["task"]["status"]["state"], "TASK_STATE_CANCELED");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_direct_reply_answers_the_message_and_keeps_the_exchange() {
    let service = service(Arc::new(Ends::default()));
    let answer = send_value(&service, "reply").await;
    let message = &answer["message"];
    assert_eq!(message["role"], "ROLE_AGENT", "{answer}");
    assert_eq!(message["parts"][0]["text"], "direct");
    assert_eq!(message["parts"][1]["data"], json!({"n": 1}));
    assert!(
        message["messageId"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
    // The Task kept for the exchange: completed, both messages in its history.
    let id = message["taskId"].as_str().unwrap();
    let Answer::Value(got) = service
        .call(
            &Scope::default(),
            Call::Get {
                id: id.into(),
                history_length: None,
            },
            Version::V1_0,
        )
        .await
        .unwrap()
    else {
        panic!("a value")
    };
    assert_eq!(got["status"]["state"], "TASK_STATE_COMPLETED", "{got}");
    let history = got["history"].as_array().unwrap();
    assert_eq!(history.len(), 2, "{got}");
    assert_eq!(history[1]["messageId"], message["messageId"]);
    // In a stream the reply is an event of its own, before the completion.
    let events = collect(stream(&service, "reply").await).await;
    assert_eq!(
        events,
        [
            "task:TASK_STATE_SUBMITTED",
            "status:TASK_STATE_WORKING:",
            "message:direct|{\"data\":{\"n\":1}}",
            "status:TASK_STATE_COMPLETED:"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agent_sees_the_whole_request() {
    let agent = Arc::new(Ends::default());
    let service = service(Arc::clone(&agent) as _);
    let mut params = send_params("input", false);
    params.message["parts"] = json!([
        {"kind": "text", "text": "input"},
        {"kind": "file", "file": {"bytes": "AAE=", "mimeType": "application/octet-stream", "name": "f.bin"}},
        {"kind": "data", "data": {"k": [1, 2]}},
    ]);
    params.message["extensions"] = json!(["https://ext/a"]);
    params.metadata = Some(json!({"trace": "t-1"}));
    params.accepted_output_modes = vec!["text/plain".into()];
    params.extensions = vec!["https://ext/a".into()];
    let Answer::Value(first) = send(&service, params).await else {
        panic!("a value")
    };
    let id = first["task"]["id"].as_str().unwrap().to_owned();
    let mut next = send_params("second", false);
    next.message["taskId"] = json!(id);
    send(&service, next).await;
    let seen = agent.seen.lock().unwrap().clone();
    let (one, two) = (&seen[0], &seen[1]);
    assert!(!one.continued);
    assert_eq!(one.task_id, id);
    assert_eq!(one.message.parts.len(), 3);
    assert_eq!(
        one.message.parts[1],
        Part {
            content: toolnexus_a2a_protocol::PartContent::Raw(vec![0, 1]),
            media_type: Some("application/octet-stream".into()),
            filename: Some("f.bin".into()),
            metadata: None,
        }
    );
    assert_eq!(one.message.parts[2], Part::data(json!({"k": [1, 2]})));
    assert_eq!(one.message.extensions, ["https://ext/a"]);
    assert_eq!(
        one.metadata.as_ref().map(|m| m["trace"].clone()),
        Some(json!("t-1"))
    );
    assert_eq!(one.accepted_output_modes, ["text/plain"]);
    assert_eq!(one.extensions, ["https://ext/a"]);
    assert!(one.history.is_empty());
    // The second turn: the first message and the agent's question came before it.
    assert!(two.continued);
    assert_eq!(two.message.text(), "second");
    let turns: Vec<String> = two.history.iter().map(Message::text).collect();
    assert_eq!(turns, ["input", "more?"]);
}

/// Emits what its message asks, and answers with the update's result.
struct Emits;

#[async_trait::async_trait]
impl Agent for Emits {
    async fn run(&self, work: &mut Work) -> Result<Outcome, String> {
        let result = match work.request().message.text().as_str() {
            "big" => {
                let artifact = Artifact::new("big", vec![Part::text("x".repeat(2048))]);
                work.update_artifact(artifact, false, true).await
            }
            "many" => {
                let mut result = Ok(());
                for i in 0..10 {
                    result = work
                        .update_status(Some(Message::agent_text(i.to_string())))
                        .await;
                    if result.is_err() {
                        break;
                    }
                }
                result
            }
            "append" => {
                let artifact = Artifact::new("nowhere", vec![Part::text("x")]);
                work.update_artifact(artifact, true, false).await
            }
            "unnamed" => {
                work.update_artifact(Artifact::new("", vec![]), false, false)
                    .await
            }
            _ => Ok(()),
        };
        Ok(match result {
            Ok(()) => Outcome::Completed(None),
            Err(e) => Outcome::Failed(Some(Message::agent_text(match e {
                EmitError::Limit(m) => format!("limit: {m}"),
                EmitError::Invalid(m) => format!("invalid: {m}"),
                other => other.to_string(),
            }))),
        })
    }
}

fn status_text(answer: &Value) -> String {
    answer["task"]["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn updates_over_a_limit_or_malformed_are_refused_and_change_nothing() {
    let limits = AgentLimits {
        max_update_bytes: 1024,
        max_updates: 5,
        max_task_bytes: 1 << 20,
    };
    let service = service_with(Arc::new(Emits), limits);
    let big = send_value(&service, "big").await;
    assert!(
        status_text(&big).starts_with("limit: an update of"),
        "{big}"
    );
    assert!(
        big["task"].get("artifacts").is_none(),
        "nothing saved: {big}"
    );
    let many = send_value(&service, "many").await;
    assert_eq!(
        status_text(&many),
        "limit: a run may emit at most 5 updates",
        "{many}"
    );
    let append = send_value(&service, "append").await;
    assert!(
        status_text(&append).starts_with("invalid: append to artifact \"nowhere\""),
        "{append}"
    );
    let unnamed = send_value(&service, "unnamed").await;
    assert!(
        status_text(&unnamed).starts_with("invalid: an artifact needs"),
        "{unnamed}"
    );
    // The task as a whole is bounded too.
    let small_tasks = AgentLimits {
        max_task_bytes: 1500,
        ..AgentLimits::default()
    };
    let service = service_with(Arc::new(Emits), small_tasks);
    let big = send_value(&service, "big").await;
    assert!(
        status_text(&big).starts_with("limit: the task would be"),
        "{big}"
    );
}

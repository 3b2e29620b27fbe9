//! One simulated client: the A2A JSON-RPC requests of the workloads (send, get, stream) over
//! one connection, each checked to be a well-formed, completed answer.

use crate::answer_checks::{check_reply, rpc_result, task_id};
use crate::cli::Protocol;
use crate::http_client::{HttpConnection, Target, next_chunk, read_body};
use crate::outcome::{Done, Failure, fail, shape, truncate};
use crate::stream_check::StreamCheck;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

pub struct A2aClient {
    pub http: HttpConnection,
    protocol: Protocol,
    poll_interval: Duration,
    next_id: u64,
}

impl A2aClient {
    pub fn new(target: Target, protocol: Protocol, poll_interval: Duration) -> A2aClient {
        A2aClient {
            http: HttpConnection::new(target),
            protocol,
            poll_interval,
            next_id: 0,
        }
    }

    /// POSTs a JSON-RPC request; its id and the response (head; body unread).
    async fn post(
        &mut self,
        method: &str,
        params: Value,
        accept: &str,
    ) -> Result<(u64, hyper::Response<hyper::body::Incoming>), Failure> {
        self.next_id += 1;
        let id = self.next_id;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut headers = vec![("content-type", "application/json"), ("accept", accept)];
        if self.protocol == Protocol::V1_0 {
            headers.push(("A2A-Version", "1.0"));
        }
        let path = self.http.target.path.clone();
        let response = self
            .http
            .request(hyper::Method::POST, &path, &headers, body.to_string())
            .await
            .map_err(|f| Failure {
                detail: format!("{method}: {}", f.detail),
                ..f
            })?;
        Ok((id, response))
    }

    /// A unary JSON-RPC call: its `result`, or the failure.
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, Failure> {
        let (id, response) = self.post(method, params, "application/json").await?;
        let status = response.status();
        let body = read_body(response.into_body()).await.map_err(|f| Failure {
            detail: format!("{method}: {}", f.detail),
            ..f
        })?;
        if status != hyper::StatusCode::OK {
            return Err(fail(
                format!("http {}", status.as_u16()),
                format!(
                    "{method}: HTTP {status}: {}",
                    truncate(&String::from_utf8_lossy(&body), 300)
                ),
            ));
        }
        let value: Value = serde_json::from_slice(&body).map_err(|e| {
            shape(
                "answer not JSON",
                format!(
                    "{method}: answer is not JSON ({e}): {}",
                    truncate(&String::from_utf8_lossy(&body), 200)
                ),
            )
        })?;
        rpc_result(method, id, value)
    }

    pub async fn send(&mut self) -> Result<Done, Failure> {
        let message_id = uuid::Uuid::new_v4().to_string();
        match self.protocol {
            Protocol::V1_0 => {
                let params = json!({
                    "message": {"role": "ROLE_USER", "messageId": message_id,
                                "parts": [{"text": "hello"}]},
                    "configuration": {"returnImmediately": false},
                });
                let result = self.call("SendMessage", params).await?;
                let Some(task) = result.get("task") else {
                    return Err(shape(
                        "SendMessage result not {task}",
                        format!(
                            "SendMessage: result is not {{\"task\": …}}: {}",
                            truncate(&result.to_string(), 200)
                        ),
                    ));
                };
                let id = task_id(task, "SendMessage")?;
                let state = &task["status"]["state"];
                if state != "TASK_STATE_COMPLETED" {
                    return Err(shape(
                        "SendMessage answered before completed",
                        format!(
                            "SendMessage (returnImmediately false) answered state {state}, not TASK_STATE_COMPLETED"
                        ),
                    ));
                }
                check_reply(task, "SendMessage")?;
                Ok(Done {
                    task_id: Some(id),
                    ..Done::default()
                })
            }
            Protocol::V0_3 => {
                let params = json!({
                    "message": {"role": "user", "messageId": message_id, "kind": "message",
                                "parts": [{"kind": "text", "text": "hello"}]},
                });
                let mut task = self.call("message/send", params).await?;
                if task["kind"] != "task" {
                    return Err(shape(
                        "message/send result not a Task",
                        format!(
                            "message/send: result is not a Task: {}",
                            truncate(&task.to_string(), 200)
                        ),
                    ));
                }
                let id = task_id(&task, "message/send")?;
                let mut polls = 0;
                let started = Instant::now();
                loop {
                    match task["status"]["state"].as_str() {
                        Some("completed") => break,
                        Some("submitted" | "working") => {}
                        other => {
                            return Err(shape(
                                "Task not completed",
                                format!("Task {id} is in state {other:?}, not completed"),
                            ));
                        }
                    }
                    if started.elapsed() > Duration::from_secs(30) {
                        return Err(fail(
                            "timeout",
                            format!("Task {id} not completed after 30 s of polling"),
                        ));
                    }
                    if !self.poll_interval.is_zero() {
                        tokio::time::sleep(self.poll_interval).await;
                    }
                    task = self.call("tasks/get", json!({"id": id})).await?;
                    polls += 1;
                    if task_id(&task, "tasks/get")? != id {
                        return Err(shape("another Task", "tasks/get answered another Task"));
                    }
                }
                check_reply(&task, "tasks/get")?;
                Ok(Done {
                    task_id: Some(id),
                    polls,
                    events: 0,
                })
            }
        }
    }

    pub async fn get(&mut self, id: &str) -> Result<Done, Failure> {
        let (method, completed) = match self.protocol {
            Protocol::V1_0 => ("GetTask", "TASK_STATE_COMPLETED"),
            Protocol::V0_3 => ("tasks/get", "completed"),
        };
        let task = self.call(method, json!({"id": id})).await?;
        if task_id(&task, method)? != id {
            return Err(shape(
                "another Task",
                format!("{method} answered another Task"),
            ));
        }
        if task["status"]["state"] != completed {
            return Err(shape(
                "Task not completed",
                format!(
                    "{method}: Task in state {}, not {completed}",
                    task["status"]["state"]
                ),
            ));
        }
        Ok(Done::default())
    }

    pub async fn stream(&mut self) -> Result<Done, Failure> {
        let message_id = uuid::Uuid::new_v4().to_string();
        let (method, params) = match self.protocol {
            Protocol::V1_0 => (
                "SendStreamingMessage",
                json!({"message": {"role": "ROLE_USER", "messageId": message_id,
                                   "parts": [{"text": "hello"}]}}),
            ),
            Protocol::V0_3 => (
                "message/stream",
                json!({"message": {"role": "user", "messageId": message_id, "kind": "message",
                                   "parts": [{"kind": "text", "text": "hello"}]}}),
            ),
        };
        let (id, response) = self.post(method, params, "text/event-stream").await?;
        let status = response.status();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let mut body = response.into_body();
        if status != hyper::StatusCode::OK || !content_type.starts_with("text/event-stream") {
            let body = read_body(body).await.unwrap_or_default();
            let body = String::from_utf8_lossy(&body);
            // A JSON-RPC error answered as plain JSON is a JSON-RPC error, not a shape error.
            if status == hyper::StatusCode::OK
                && let Ok(value) = serde_json::from_str::<Value>(&body)
                && value.get("error").is_some()
            {
                rpc_result(method, id, value)?;
            }
            return Err(fail(
                if status == hyper::StatusCode::OK {
                    "shape: not text/event-stream".to_owned()
                } else {
                    format!("http {}", status.as_u16())
                },
                format!(
                    "{method}: HTTP {status}, content-type {content_type:?}: {}",
                    truncate(&body, 300)
                ),
            ));
        }
        let mut buffer: Vec<u8> = Vec::new();
        let mut check = StreamCheck::new(self.protocol, method, id);
        loop {
            let chunk = tokio::time::timeout(Duration::from_secs(30), next_chunk(&mut body))
                .await
                .map_err(|_| fail("timeout", format!("{method}: no event for 30 s")))?
                .map_err(|e| fail("transport", format!("{method}: reading the stream: {e}")))?;
            let Some(chunk) = chunk else { break };
            buffer.extend_from_slice(&chunk);
            // Whole lines only; an event ends at a blank line, but each `data:` line holds one
            // whole JSON-RPC response here, so lines suffice.
            while let Some(end) = buffer.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                check.line(&line)?;
            }
        }
        if !buffer.is_empty() {
            let rest = std::mem::take(&mut buffer);
            check.line(&rest)?;
        }
        check.finish()
    }
}

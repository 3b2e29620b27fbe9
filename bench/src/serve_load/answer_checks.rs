//! Checks of a JSON-RPC answer: a response to the request sent, a Task id, the echoed reply.

use crate::outcome::{Failure, fail, shape, truncate};
use serde_json::{Value, json};

pub fn rpc_result(method: &str, id: u64, mut value: Value) -> Result<Value, Failure> {
    if let Some(error) = value.get("error") {
        let code = error["code"].as_i64().unwrap_or(0);
        return Err(fail(
            format!("rpc {code}"),
            format!(
                "{method}: JSON-RPC error {}",
                truncate(&error.to_string(), 300)
            ),
        ));
    }
    if value["id"] != json!(id) || value["jsonrpc"] != "2.0" {
        return Err(shape(
            "not a JSON-RPC response",
            format!(
                "{method}: not a JSON-RPC 2.0 response to id {id}: {}",
                truncate(&value.to_string(), 200)
            ),
        ));
    }
    match value.get_mut("result") {
        Some(result) => Ok(result.take()),
        None => Err(shape(
            "no result",
            format!("{method}: response has no result"),
        )),
    }
}

pub fn task_id(task: &Value, method: &str) -> Result<String, Failure> {
    match task["id"].as_str() {
        Some(id) if !id.is_empty() => Ok(id.to_owned()),
        _ => Err(shape(
            "no Task id",
            format!(
                "{method}: no Task id in {}",
                truncate(&task.to_string(), 200)
            ),
        )),
    }
}

/// The echo agent's answer: an artifact "reply" whose first part is the text sent.
pub fn check_reply(task: &Value, method: &str) -> Result<(), Failure> {
    let ok = task["artifacts"].as_array().is_some_and(|artifacts| {
        artifacts
            .iter()
            .any(|a| a["name"] == "reply" && a["parts"][0]["text"] == "hello")
    });
    if ok {
        Ok(())
    } else {
        Err(shape(
            "no reply artifact",
            format!("{method}: completed Task without the \"reply\" artifact echoing \"hello\""),
        ))
    }
}

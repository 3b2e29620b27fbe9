//! Recovery at startup, through real processes: `tnstore serve` killed with SIGKILL while its
//! agent works on a Task, then restarted over the same store. By default the restarted server
//! marks the interrupted Task `failed` with a reason before it answers anyone; with
//! `--recovery off` it leaves it `working`. The `listening on` banner comes after recovery.

use serde_json::{Value, json};
use std::path::Path;

use crate::common;
use crate::common::{call, wait_for_state};

const INTERRUPTED: &str = "interrupted: the server stopped before this task finished";

/// `tnstore serve` over `selector` whose agent thinks for a minute: a Task stays `working`
/// until the kill. Killed (SIGKILL) when dropped.
fn start_server(selector: &str, cache: &Path, extra: &[&str]) -> common::Serving {
    let mut args = vec!["--echo-delay-ms", "60000"];
    args.extend_from_slice(extra);
    common::serve(&["--store", selector], &args, |c| {
        c.env("TOOLNEXUS_CACHE_DIR", cache);
    })
}

/// Sends a message, waits until its Task is `working`, kills the server with SIGKILL, restarts
/// it over the same store with `restart_args`, and returns the Task as the restarted server
/// answers it.
async fn interrupt_and_restart(selector: &str, cache: &Path, restart_args: &[&str]) -> Value {
    let client = reqwest::Client::new();
    let first = start_server(selector, cache, &[]);
    let sent = call(
        &client,
        &first.url,
        "SendMessage",
        json!({"configuration": {"blocking": false}, "message": {"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "never finished"}]}}),
    )
    .await;
    let id = sent["result"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("acknowledged: {sent}"))
        .to_owned();
    wait_for_state(&client, &first.url, &id, "working").await;
    first.kill();

    let restarted = start_server(selector, cache, restart_args);
    let got = call(&client, &restarted.url, "GetTask", json!({"id": id})).await;
    assert_eq!(got["result"]["id"], id.as_str(), "{got}");
    assert_eq!(
        got["result"]["history"][0]["parts"][0]["text"], "never finished",
        "the rest of the Task is kept: {got}"
    );
    got["result"].clone()
}

fn assert_failed_as_interrupted(task: &Value) {
    assert_eq!(task["status"]["state"], "failed", "{task}");
    let message = &task["status"]["message"];
    assert_eq!(message["kind"], "message", "{task}");
    assert_eq!(message["role"], "agent", "{task}");
    assert!(
        message["messageId"].as_str().is_some_and(|m| m.len() == 36),
        "{task}"
    );
    assert_eq!(message["parts"][0]["kind"], "text", "{task}");
    assert_eq!(message["parts"][0]["text"], INTERRUPTED, "{task}");
    assert!(task["status"]["timestamp"].is_string(), "{task}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_interrupted_by_sigkill_is_failed_at_restart_over_files() {
    let tmp = tempfile::tempdir().unwrap();
    let selector = format!("file:{}", tmp.path().join("tasks").display());
    let task = interrupt_and_restart(&selector, &tmp.path().join("cache"), &[]).await;
    assert_failed_as_interrupted(&task);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_interrupted_by_sigkill_is_failed_at_restart_over_the_component() {
    let tmp = tempfile::tempdir().unwrap();
    let selector = format!("wasm:builtin?dir={}", tmp.path().join("tasks").display());
    let task = interrupt_and_restart(&selector, &tmp.path().join("cache"), &[]).await;
    assert_failed_as_interrupted(&task);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_recovery_off_an_interrupted_task_stays_working() {
    let tmp = tempfile::tempdir().unwrap();
    let selector = format!("file:{}", tmp.path().join("tasks").display());
    let task =
        interrupt_and_restart(&selector, &tmp.path().join("cache"), &["--recovery", "off"]).await;
    assert_eq!(task["status"]["state"], "working", "{task}");
    assert!(task["status"].get("message").is_none(), "{task}");
}

/// Only `submitted` and `working` Tasks from before the start are touched: terminal ones,
/// ones waiting for their user, and a cancel of a recovered Task is refused (it is terminal).
#[tokio::test(flavor = "multi_thread")]
async fn recovery_touches_only_unfinished_tasks() {
    let tmp = tempfile::tempdir().unwrap();
    let selector = format!("file:{}", tmp.path().join("tasks").display());
    let cache = tmp.path().join("cache");
    let old = "2020-01-01T00:00:00.000Z";
    let tasks = [
        ("sub", "submitted"),
        ("work", "TASK_STATE_WORKING"),
        ("done", "completed"),
        ("asking", "input-required"),
    ];
    for (id, state) in tasks {
        let task = json!({"id": id, "status": {"state": state, "timestamp": old}});
        let saved = common::run(&["--store", &selector, "save"], &task.to_string(), |_| {});
        assert_eq!(saved.status.code(), Some(0), "{saved:?}");
    }
    let server = start_server(&selector, &cache, &[]);
    let client = reqwest::Client::new();
    for (id, state) in tasks {
        let got = call(&client, &server.url, "GetTask", json!({"id": id})).await;
        let task = &got["result"];
        match id {
            "sub" | "work" => assert_failed_as_interrupted(task),
            // As stored; the 0.3 answer adds the `kind` 0.3 requires.
            _ => assert_eq!(
                *task,
                json!({"id": id, "status": {"state": state, "timestamp": old}, "kind": "task"}),
                "untouched"
            ),
        }
    }
    let cancel = call(&client, &server.url, "CancelTask", json!({"id": "work"})).await;
    assert_eq!(cancel["error"]["code"], -32002, "{cancel}");
}

/// `listening on` is printed once recovery is done: a process that reads the store the moment
/// the banner appears (here `tnstore list`, over the same directory) finds no interrupted Task
/// left, however many there were.
#[tokio::test(flavor = "multi_thread")]
async fn the_banner_comes_after_recovery() {
    let tmp = tempfile::tempdir().unwrap();
    let selector = format!("file:{}", tmp.path().join("tasks").display());
    let files: Vec<String> = (0..300)
        .map(|i| {
            let path = tmp.path().join(format!("t{i}.json"));
            let task = json!({"id": format!("t{i:03}"),
                "status": {"state": "working", "timestamp": "2020-01-01T00:00:00.000Z"}});
            std::fs::write(&path, task.to_string()).unwrap();
            path.display().to_string()
        })
        .collect();
    let mut args = vec!["--store", &selector, "save"];
    args.extend(files.iter().map(String::as_str));
    let saved = common::run(&args, "", |_| {});
    assert_eq!(saved.status.code(), Some(0), "{saved:?}");

    let _server = start_server(&selector, &tmp.path().join("cache"), &[]);
    let listed = common::run(
        &["--store", &selector, "list", "--state", "working"],
        "",
        |_| {},
    );
    assert_eq!(listed.status.code(), Some(0), "{listed:?}");
    let page: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(page["tasks"], json!([]), "still working after the banner");
    let failed = common::run(
        &[
            "--store",
            &selector,
            "list",
            "--state",
            "failed",
            "--page-size",
            "1000",
        ],
        "",
        |_| {},
    );
    let page: Value = serde_json::from_slice(&failed.stdout).unwrap();
    assert_eq!(page["tasks"].as_array().map(Vec::len), Some(300), "{page}");
}

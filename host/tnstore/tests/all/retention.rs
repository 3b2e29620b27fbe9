//! Retention through real processes: `tnstore prune` once, and `tnstore serve --retain` in the
//! background, over Tasks saved with `tnstore save` with old and recent status timestamps.

use serde_json::{Value, json};
use std::path::Path;
use std::process::Output;
use std::time::{Duration, SystemTime};

use crate::common;
use crate::common::{call, poll_task, wait_for_state};

/// Long before any `--older-than 1h`.
const OLD: &str = "2020-01-01T00:00:00.000Z";

fn recent() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

fn tnstore(selector: &str, args: &[&str], stdin: &str, cache: &Path) -> Output {
    let mut all = vec!["--store", selector];
    all.extend_from_slice(args);
    common::run(&all, stdin, |c| {
        c.env("TOOLNEXUS_CACHE_DIR", cache);
    })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn save(selector: &str, cache: &Path, id: &str, state: &str, timestamp: Option<&str>) {
    let mut task = json!({"id": id, "contextId": "ctx", "status": {"state": state}});
    if let Some(t) = timestamp {
        task["status"]["timestamp"] = json!(t);
    }
    let saved = tnstore(selector, &["save"], &task.to_string(), cache);
    assert_eq!(saved.status.code(), Some(0), "{}", text(&saved.stderr));
}

/// Every id in the store, sorted (through `tnstore list`).
fn ids(selector: &str, cache: &Path) -> Vec<String> {
    let listed = tnstore(selector, &["list", "--page-size", "1000"], "", cache);
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed.stderr));
    let page: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert!(page["nextPageToken"].is_null(), "one page: {page}");
    let mut ids: Vec<String> = page["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

/// `tnstore prune …`: its exit code and the `deleted` count it printed.
fn prune(selector: &str, cache: &Path, args: &[&str]) -> (Option<i32>, Value, String) {
    let mut all = vec!["prune"];
    all.extend_from_slice(args);
    let out = tnstore(selector, &all, "", cache);
    let printed = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), printed, text(&out.stderr))
}

fn sorted(ids: &[&str]) -> Vec<String> {
    let mut ids: Vec<String> = ids.iter().map(|s| (*s).to_owned()).collect();
    ids.sort();
    ids
}

#[test]
fn prune_deletes_old_terminal_tasks_and_keeps_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    for selector in [
        format!("file:{}", tmp.path().join("files").display()),
        format!(
            "wasm:builtin?dir={}",
            tmp.path().join("component").display()
        ),
    ] {
        let now = recent();
        let tasks: [(&str, &str, Option<&str>); 11] = [
            ("old-completed", "completed", Some(OLD)),
            ("old-canceled", "TASK_STATE_CANCELLED", Some(OLD)),
            ("old-failed", "failed", Some("2024-05-01T10:00:00+02:00")),
            ("old-rejected", "TASK_STATE_REJECTED", Some(OLD)),
            ("old-working", "working", Some(OLD)),
            ("old-working-v1", "TASK_STATE_WORKING", Some(OLD)),
            ("old-submitted", "submitted", Some(OLD)),
            ("new-completed", "completed", Some(&now)),
            ("new-failed", "failed", Some(&now)),
            ("new-working", "working", Some(&now)),
            ("untimed-completed", "completed", None),
        ];
        for (id, state, timestamp) in tasks {
            save(&selector, &cache, id, state, timestamp);
        }

        let (code, printed, stderr) = prune(&selector, &cache, &["--older-than", "1h"]);
        assert_eq!(code, Some(0), "{selector}: {stderr}");
        assert_eq!(printed, json!({"deleted": 4}), "{selector}");
        assert_eq!(
            ids(&selector, &cache),
            sorted(&[
                "old-working",
                "old-working-v1",
                "old-submitted",
                "new-completed",
                "new-failed",
                "new-working",
                "untimed-completed",
            ]),
            "{selector}: old terminal Tasks gone, old unfinished, recent and untimed ones kept"
        );

        // Exactly the states asked for, in any spelling: only the old working ones go.
        let (code, printed, stderr) = prune(
            &selector,
            &cache,
            &["--older-than", "1h", "--state", "TASK_STATE_WORKING"],
        );
        assert_eq!(code, Some(0), "{selector}: {stderr}");
        assert_eq!(printed, json!({"deleted": 2}), "{selector}");
        assert_eq!(
            ids(&selector, &cache),
            sorted(&[
                "old-submitted",
                "new-completed",
                "new-failed",
                "new-working",
                "untimed-completed",
            ]),
            "{selector}"
        );

        // Several states; a short age reaches the recent ones too.
        std::thread::sleep(Duration::from_millis(20));
        let (code, printed, stderr) = prune(
            &selector,
            &cache,
            &[
                "--older-than",
                "10ms",
                "--state",
                "submitted",
                "--state",
                "failed",
            ],
        );
        assert_eq!(code, Some(0), "{selector}: {stderr}");
        assert_eq!(printed, json!({"deleted": 2}), "{selector}");
        assert_eq!(
            ids(&selector, &cache),
            sorted(&["new-completed", "new-working", "untimed-completed"]),
            "{selector}"
        );
    }
}

#[test]
fn prune_exit_codes() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let files = format!("file:{}", tmp.path().join("files").display());
    save(&files, &cache, "old", "completed", Some(OLD));

    // A bad duration is the caller's: exit 2, nothing deleted.
    for bad in ["soon", "-1h", "1 fortnight", ""] {
        let (code, printed, stderr) = prune(&files, &cache, &["--older-than", bad]);
        assert_eq!(code, Some(2), "{bad:?}: {stderr}");
        assert_eq!(printed, Value::Null, "{bad:?}");
    }
    let (code, _, stderr) = prune(&files, &cache, &[]);
    assert_eq!(code, Some(2), "--older-than is required: {stderr}");
    assert_eq!(ids(&files, &cache), ["old"]);

    // A store without a catalog (this component exports no `catalog`): exit 2, named.
    let component = tmp.path().join("no-catalog.wasm");
    std::fs::write(&component, toolnexus_conformance::HOSTILE_COMPONENT).unwrap();
    let no_catalog = format!(
        "wasm:{}?dir={}",
        component.display(),
        tmp.path().join("hostile").display()
    );
    let (code, printed, stderr) = prune(&no_catalog, &cache, &["--older-than", "1h"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(printed, Value::Null);
    assert!(stderr.contains("does not support list"), "{stderr}");

    // `--retain` takes the same durations, and not zero.
    for bad in ["soon", "0s"] {
        let out = tnstore(&files, &["serve", "--retain", bad], "", &cache);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", text(&out.stderr));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_retain_deletes_old_terminal_tasks_in_the_background() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let selector = format!("file:{}", tmp.path().join("tasks").display());
    let now = recent();
    let old = ["old-1", "old-2", "old-3"];
    for (i, id) in old.iter().enumerate() {
        let state = ["completed", "TASK_STATE_FAILED", "canceled"][i];
        save(&selector, &cache, id, state, Some(OLD));
    }
    let kept = [
        ("new-completed", "completed", Some(now.as_str())),
        ("untimed-completed", "completed", None),
        ("old-input", "input-required", Some(OLD)),
    ];
    for (id, state, timestamp) in kept {
        save(&selector, &cache, id, state, timestamp);
    }

    let serving = common::serve(&["--store", &selector], &["--retain", "1h"], |c| {
        c.env("TOOLNEXUS_CACHE_DIR", &cache);
    });
    let url = serving.url.clone();
    let client = reqwest::Client::new();
    for id in old {
        // Bounded: the first pass runs at startup.
        let (last, gone) =
            poll_task(&client, &url, id, 500, |got| got["error"]["code"] == -32001).await;
        assert!(gone, "{id} was not removed in the background: {last}");
    }
    for (id, state, _) in kept {
        let got = call(&client, &url, "GetTask", json!({"id": id})).await;
        assert_eq!(
            got["result"]["status"]["state"], state,
            "{id} is kept: {got}"
        );
    }
    // And a Task finished through this server now is far younger than an hour: kept too.
    let sent = call(
        &client,
        &url,
        "SendMessage",
        json!({"configuration": {"blocking": false}, "message": {"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "fresh"}]}}),
    )
    .await;
    let id = sent["result"]["id"]
        .as_str()
        .expect("acknowledged")
        .to_owned();
    wait_for_state(&client, &url, &id, "completed").await;
}

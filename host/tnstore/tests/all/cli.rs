//! `tnstore` as a user runs it: a real process, real files, exit codes.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::common;

/// Runs `tnstore <args>` in `cwd` to its end, with `stdin` as its input.
fn tnstore(cwd: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    common::run(args, stdin.unwrap_or(""), |c| {
        c.current_dir(cwd);
    })
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const TASK: &str = r#"{"id": "task-1", "status": {"state": "submitted"}}"#;

#[test]
fn default_store_persists_under_dot_toolnexus() {
    let cwd = tempfile::tempdir().unwrap();
    let saved = tnstore(cwd.path(), &["save"], Some(TASK));
    assert_eq!(saved.status.code(), Some(0), "{}", stderr(&saved));
    assert!(cwd.path().join(".toolnexus/tasks/task-1.json").is_file());
    let got = tnstore(cwd.path(), &["get", "task-1"], None);
    assert_eq!(got.status.code(), Some(0), "{}", stderr(&got));
    let value: serde_json::Value = serde_json::from_str(&stdout(&got)).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"id": "task-1", "status": {"state": "submitted"}})
    );
}

#[test]
fn every_store_kind_round_trips_through_the_cli() {
    let cwd = tempfile::tempdir().unwrap();
    let component = tnstore(cwd.path(), &["component", "--out", "store.wasm"], None);
    assert_eq!(component.status.code(), Some(0), "{}", stderr(&component));
    for selector in [
        "file:./files",
        "wasm:./store.wasm?dir=./wasm-tasks",
        "wasm:builtin?dir=./b",
    ] {
        fs::write(cwd.path().join("task.json"), TASK).unwrap();
        let saved = tnstore(
            cwd.path(),
            &["--store", selector, "save", "task.json"],
            None,
        );
        assert_eq!(
            saved.status.code(),
            Some(0),
            "{selector}: {}",
            stderr(&saved)
        );
        let got = tnstore(cwd.path(), &["--store", selector, "get", "task-1"], None);
        assert_eq!(got.status.code(), Some(0), "{selector}: {}", stderr(&got));
        assert!(stdout(&got).contains("\"submitted\""), "{selector}");
    }
}

#[test]
fn the_store_can_come_from_the_environment() {
    let cwd = tempfile::tempdir().unwrap();
    let out = common::tnstore_command()
        .current_dir(cwd.path())
        .env("TNSTORE_STORE", "file:./from-env")
        .args(["get", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(cwd.path().join("from-env").is_dir());
}

#[test]
fn a_miss_exits_1_with_a_message() {
    let cwd = tempfile::tempdir().unwrap();
    let got = tnstore(cwd.path(), &["--store", "file:./t", "get", "nope"], None);
    assert_eq!(got.status.code(), Some(1));
    assert!(
        stderr(&got).contains("no task with id \"nope\""),
        "{}",
        stderr(&got)
    );
    assert!(stdout(&got).is_empty());
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let cwd = tempfile::tempdir().unwrap();
    let cases = [
        ("not json", "not valid JSON"),
        ("[1]", "must be a JSON object"),
        ("{}", "no \"id\""),
        (r#"{"id": 5}"#, "must be a string"),
        (r#"{"id": ""}"#, "empty"),
    ];
    for (input, want) in cases {
        let out = tnstore(
            cwd.path(),
            &["--store", "file:./t", "save", "-"],
            Some(input),
        );
        assert_eq!(out.status.code(), Some(2), "{input}");
        assert!(stderr(&out).contains(want), "{input}: {}", stderr(&out));
    }
    // The store directory is never even created for invalid input.
    assert!(!cwd.path().join("t").exists());
    let out = tnstore(cwd.path(), &["--store", "file:./t", "get", ""], None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn bad_selectors_and_usage_exit_2() {
    let cwd = tempfile::tempdir().unwrap();
    let unknown = tnstore(cwd.path(), &["--store", "nats://x", "get", "a"], None);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("Unknown A2A store \"nats://x\""),
        "{}",
        stderr(&unknown)
    );
    let usage = tnstore(cwd.path(), &["frobnicate"], None);
    assert_eq!(usage.status.code(), Some(2));
    let missing_file = tnstore(
        cwd.path(),
        &["--store", "memory", "save", "nope.json"],
        None,
    );
    assert_eq!(missing_file.status.code(), Some(2));
}

#[test]
fn store_failures_exit_3() {
    let cwd = tempfile::tempdir().unwrap();
    fs::create_dir(cwd.path().join("t")).unwrap();
    fs::write(cwd.path().join("t/bad.json"), "{broken").unwrap();
    let out = tnstore(cwd.path(), &["--store", "file:./t", "get", "bad"], None);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("bad.json"), "{}", stderr(&out));
    let missing = tnstore(
        cwd.path(),
        &["--store", "wasm:./none.wasm", "get", "a"],
        None,
    );
    assert_eq!(missing.status.code(), Some(3), "{}", stderr(&missing));
    assert!(stderr(&missing).contains("none.wasm"));
}

#[test]
fn list_and_delete_through_every_durable_store() {
    let cwd = tempfile::tempdir().unwrap();
    for selector in ["file:./t", "wasm:builtin?dir=./t"] {
        for (id, ctx) in [("a", "c1"), ("b", "c2"), ("c", "c1")] {
            let task = format!(
                r#"{{"id": "{id}", "contextId": "{ctx}", "status": {{"state": "working"}}}}"#
            );
            let out = tnstore(cwd.path(), &["--store", selector, "save"], Some(&task));
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        }
        let out = tnstore(
            cwd.path(),
            &[
                "--store",
                selector,
                "list",
                "--context-id",
                "c1",
                "--page-size",
                "1",
            ],
            None,
        );
        assert_eq!(out.status.code(), Some(0), "{selector}: {}", stderr(&out));
        let page: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(page["tasks"][0]["id"], "a", "{selector}");
        assert_eq!(page["totalSize"], 2, "{selector}");
        let token = page["nextPageToken"]
            .as_str()
            .expect("a next page")
            .to_owned();
        let out = tnstore(
            cwd.path(),
            &[
                "--store",
                selector,
                "list",
                "--context-id",
                "c1",
                "--page-token",
                &token,
            ],
            None,
        );
        let page: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(page["tasks"][0]["id"], "c", "{selector}");
        assert_eq!(page["nextPageToken"], serde_json::Value::Null, "{selector}");
        let bad = tnstore(
            cwd.path(),
            &["--store", selector, "list", "--page-token", "a"],
            None,
        );
        assert_eq!(bad.status.code(), Some(2), "{selector}: {}", stderr(&bad));
        assert!(
            stderr(&bad).contains("invalid page token"),
            "{}",
            stderr(&bad)
        );

        let deleted = tnstore(cwd.path(), &["--store", selector, "delete", "b"], None);
        assert_eq!(
            deleted.status.code(),
            Some(0),
            "{selector}: {}",
            stderr(&deleted)
        );
        let again = tnstore(cwd.path(), &["--store", selector, "delete", "b"], None);
        assert_eq!(again.status.code(), Some(1), "{selector}");
        let gone = tnstore(cwd.path(), &["--store", selector, "get", "b"], None);
        assert_eq!(gone.status.code(), Some(1), "{selector}");
        for id in ["a", "c"] {
            tnstore(cwd.path(), &["--store", selector, "delete", id], None);
        }
    }
}

/// A Task file with a lone surrogate escape (which JavaScript and Python write happily) is
/// checked in full where it is read: every command reports it as corrupt (exit 3), none
/// panics, and the other Tasks stay readable. Native file store and component alike.
#[test]
fn a_task_file_with_a_lone_surrogate_is_corrupt_not_a_crash() {
    let cwd = tempfile::tempdir().unwrap();
    for selector in ["file:./t", "wasm:builtin?dir=./t"] {
        let saved = tnstore(cwd.path(), &["--store", selector, "save"], Some(TASK));
        assert_eq!(saved.status.code(), Some(0), "{}", stderr(&saved));
        fs::write(cwd.path().join("t/x.json"), r#"{"id":"x","a":"\ud800"}"#).unwrap();
        for args in [vec!["get", "x"], vec!["list"]] {
            let mut all = vec!["--store", selector];
            all.extend(&args);
            let out = tnstore(cwd.path(), &all, None);
            assert_eq!(
                out.status.code(),
                Some(3),
                "{selector} {args:?}: {}",
                stderr(&out)
            );
            assert!(
                stderr(&out).contains("corrupt"),
                "{selector} {args:?}: {}",
                stderr(&out)
            );
        }
        let good = tnstore(cwd.path(), &["--store", selector, "get", "task-1"], None);
        assert_eq!(good.status.code(), Some(0), "{}", stderr(&good));
    }
}

/// A selector in the environment may hold a password: `--help` does not print it.
#[test]
fn help_never_shows_the_selector_from_the_environment() {
    let cwd = tempfile::tempdir().unwrap();
    let out = common::tnstore_command()
        .current_dir(cwd.path())
        .arg("--help")
        .env("TNSTORE_STORE", "postgres://app:s3cret@db/agents")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("TNSTORE_STORE"), "{}", stdout(&out));
    assert!(!stdout(&out).contains("s3cret"), "{}", stdout(&out));
}

/// `save --if-version N` / `--if-absent` are compare-and-sets (exit 4 on a conflict, nothing
/// written), every save prints the new version, `get --show-version` prints it, and
/// `list --after` keeps Tasks whose status changed at or after that instant.
#[test]
fn conditional_saves_versions_and_list_after_through_every_durable_store() {
    let cwd = tempfile::tempdir().unwrap();
    for selector in ["file:./v", "wasm:builtin?dir=./v"] {
        let task = |n: u32, ts: &str| {
            format!(
                r#"{{"id": "v", "n": {n}, "status": {{"state": "working", "timestamp": "{ts}"}}}}"#
            )
        };
        let save = |args: &[&str], text: &str| {
            let mut all = vec!["--store", selector, "save"];
            all.extend_from_slice(args);
            tnstore(cwd.path(), &all, Some(text))
        };
        let out = save(&["--if-absent"], &task(1, "2025-01-01T00:00:00Z"));
        assert_eq!(out.status.code(), Some(0), "{selector}: {}", stderr(&out));
        assert!(stderr(&out).contains("at version 1"), "{}", stderr(&out));
        let out = save(&["--if-absent"], &task(9, "2025-01-01T00:00:00Z"));
        assert_eq!(out.status.code(), Some(4), "{selector}: {}", stderr(&out));
        assert!(stderr(&out).contains("version 1"), "{}", stderr(&out));
        let out = save(&["--if-version", "1"], &task(2, "2025-06-01T00:00:00Z"));
        assert_eq!(out.status.code(), Some(0), "{selector}: {}", stderr(&out));
        assert!(stderr(&out).contains("at version 2"), "{}", stderr(&out));
        let out = save(&["--if-version", "1"], &task(9, "2025-06-01T00:00:00Z"));
        assert_eq!(out.status.code(), Some(4), "{selector}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("expected version 1") && stderr(&out).contains("version 2"),
            "{}",
            stderr(&out)
        );
        let got = tnstore(
            cwd.path(),
            &["--store", selector, "get", "v", "--show-version"],
            None,
        );
        assert_eq!(got.status.code(), Some(0), "{}", stderr(&got));
        assert!(stderr(&got).contains("version: 2"), "{}", stderr(&got));
        let stored: serde_json::Value = serde_json::from_str(&stdout(&got)).unwrap();
        assert_eq!(stored["n"], 2, "the refused saves wrote nothing");
        for (after, count) in [("2025-05-31T23:59:59Z", 1), ("2025-06-01T00:00:01Z", 0)] {
            let out = tnstore(
                cwd.path(),
                &["--store", selector, "list", "--after", after],
                None,
            );
            let page: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
            assert_eq!(page["totalSize"], count, "{selector} {after}: {page}");
        }
        let bad = tnstore(
            cwd.path(),
            &["--store", selector, "list", "--after", "yesterday"],
            None,
        );
        assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
        assert!(stderr(&bad).contains("--after"), "{}", stderr(&bad));
        tnstore(cwd.path(), &["--store", selector, "delete", "v"], None);
    }
}

/// `tnstore save A B C`: every file is read and checked before anything is saved, so one bad
/// file, or two holding the same id, saves none of them (exit 2, naming the file); otherwise
/// each is saved and acknowledged by id.
#[test]
fn several_files_are_all_checked_first_then_all_saved() {
    let cwd = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| fs::write(cwd.path().join(name), text).unwrap();
    for k in 0..3 {
        write(
            &format!("t{k}.json"),
            &format!(r#"{{"id":"many-{k}","status":{{"state":"working"}}}}"#),
        );
    }
    write("bad.json", r#"{"status":{"state":"working"}}"#);
    write(
        "again.json",
        r#"{"id":"many-1","status":{"state":"completed"}}"#,
    );
    for selector in ["file:./files", "wasm:builtin?dir=./component"] {
        let save = |files: &[&str]| {
            let mut args = vec!["--store", selector, "save"];
            args.extend_from_slice(files);
            tnstore(cwd.path(), &args, None)
        };
        for (files, culprit) in [
            (&["t0.json", "bad.json", "t2.json"][..], "bad.json"),
            (&["t0.json", "t1.json", "again.json"][..], "again.json"),
        ] {
            let refused = save(files);
            assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
            assert!(stderr(&refused).contains(culprit), "{}", stderr(&refused));
            let got = tnstore(cwd.path(), &["--store", selector, "get", "many-0"], None);
            assert_eq!(
                got.status.code(),
                Some(1),
                "{selector}: nothing is saved when one file is refused"
            );
        }
        let many_with_a_condition = save(&["--if-absent", "t0.json", "t1.json"]);
        assert_eq!(many_with_a_condition.status.code(), Some(2));
        let saved = save(&["t0.json", "t1.json", "t2.json"]);
        assert_eq!(saved.status.code(), Some(0), "{}", stderr(&saved));
        for k in 0..3 {
            assert!(
                stderr(&saved).contains(&format!(r#"saved "many-{k}""#)),
                "{}",
                stderr(&saved)
            );
            let got = tnstore(
                cwd.path(),
                &["--store", selector, "get", &format!("many-{k}")],
                None,
            );
            assert_eq!(got.status.code(), Some(0), "{}", stderr(&got));
            assert!(stdout(&got).contains("working"), "{}", stdout(&got));
        }
    }
}

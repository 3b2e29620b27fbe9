//! `tn-compose` as a user runs it: files in, one component out, loaded with a `wasm:` selector.

use serde_json::json;
use std::path::Path;
use std::process::{Command, Output};
use toolnexus::{PushConfig, StoreError, Task, resolve_store};
use toolnexus_conformance::{HOSTILE_COMPONENT, LIFECYCLE_GUARD_COMPONENT};

const TN_COMPOSE: &str = env!("CARGO_BIN_EXE_tn-compose");

pub(crate) fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(TN_COMPOSE)
        .current_dir(dir)
        .args(args)
        .output()
        .expect("tn-compose runs")
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `tn-compose` in `dir` with each case's arguments: each exits 2 saying what it expects
/// and writes no `out.wasm`.
pub(crate) fn assert_each_exits_2_writing_nothing(dir: &Path, cases: &[(&[&str], &str)]) {
    for (args, expected) in cases {
        let out = run(dir, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(expected),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(!dir.join("out.wasm").exists(), "{args:?}");
    }
}

fn task(state: &str) -> Task {
    Task::try_from(json!({"id": "t-1", "status": {"state": state}})).unwrap()
}

/// A work directory with the two inputs users compose: `guard.wasm` and `file-store.wasm`.
fn inputs() -> tempfile::TempDir {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("guard.wasm"), LIFECYCLE_GUARD_COMPONENT).unwrap();
    std::fs::write(
        work.path().join("file-store.wasm"),
        toolnexus::wasm::FILE_STORE_COMPONENT,
    )
    .unwrap();
    work
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn composes_files_into_a_store_that_loads_with_a_wasm_selector() {
    let work = inputs();
    let out = run(
        work.path(),
        &[
            "--middleware",
            "guard.wasm",
            "--store",
            "file-store.wasm",
            "--out",
            "guarded.wasm",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("guarded.wasm"));
    assert!(
        !work.path().join("guarded.wasm.tmp").exists(),
        "no temp file left"
    );

    let composed = work.path().join("guarded.wasm");
    let tasks = work.path().join("tasks");
    let selector = format!("wasm:{}?dir={}", composed.display(), tasks.display());
    let store = resolve_store(selector.as_str()).expect("the composed component loads");
    store.save(&task("working")).await.unwrap();
    store.save(&task("completed")).await.unwrap();
    let err = store.save(&task("working")).await.unwrap_err();
    assert!(matches!(err, StoreError::Rejected { .. }), "{err:?}");
    let got = store.get("t-1").await.unwrap().unwrap();
    assert_eq!(got.get("status").unwrap()["state"], "completed");
    assert!(tasks.join("t-1.json").is_file());
    // Push configs pass through the guard to the file store's files.
    assert!(store.supports_push_configs());
    let config = PushConfig::from_json(r#"{"id":"c1","url":"https://example.com/h"}"#).unwrap();
    store.save_push_config("t-1", &config).await.unwrap();
    assert_eq!(store.list_push_configs("t-1").await.unwrap(), vec![config]);
    assert_eq!(
        std::fs::read_to_string(tasks.join(".push").join("t-1").join("c1.json")).unwrap(),
        r#"{"id":"c1","url":"https://example.com/h"}"#
    );
}

#[test]
fn components_that_do_not_fit_exit_2_and_write_nothing() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("guard.wasm"), LIFECYCLE_GUARD_COMPONENT).unwrap();
    std::fs::write(work.path().join("hostile.wasm"), HOSTILE_COMPONENT).unwrap();
    std::fs::write(work.path().join("junk.wasm"), b"not a component").unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["-m", "guard.wasm", "-s", "hostile.wasm", "-o", "out.wasm"],
            "does not export `toolnexus:task-store/",
        ),
        (
            &["-m", "junk.wasm", "-s", "hostile.wasm", "-o", "out.wasm"],
            "the middleware is not a valid WebAssembly component",
        ),
        (
            &["-m", "hostile.wasm", "-s", "guard.wasm", "-o", "out.wasm"],
            "imports no toolnexus:task-store interface",
        ),
        (
            &["-m", "missing.wasm", "-s", "guard.wasm", "-o", "out.wasm"],
            "cannot read missing.wasm",
        ),
    ];
    assert_each_exits_2_writing_nothing(work.path(), &cases);
}

#[test]
fn an_unwritable_output_exits_3() {
    let work = inputs();
    let out = run(
        work.path(),
        &[
            "-m",
            "guard.wasm",
            "-s",
            "file-store.wasm",
            "-o",
            "no-such-dir/out.wasm",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot write no-such-dir/out.wasm"));
}

//! Real processes sharing one directory: concurrent writers, and writers killed mid-write.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use toolnexus::wasm::FILE_STORE_COMPONENT;
use toolnexus::{FileTaskStore, TaskStore};

const WRITER: &str = env!("CARGO_BIN_EXE_tn-writer");

fn spawn_writer(selector: &str, id: &str, tag: &str, count: u64) -> Child {
    Command::new(WRITER)
        .args([selector, id, tag, &count.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the writer helper starts")
}

/// Asserts the Task is exactly one version some writer saved: a known writer, its padding intact.
fn assert_whole_version(task: &toolnexus::Task, tags: &[&str], count: u64) {
    let writer = task
        .get("writer")
        .and_then(Value::as_str)
        .expect("writer member");
    assert!(tags.contains(&writer), "unknown writer {writer}");
    let seq = task.get("seq").and_then(Value::as_u64).expect("seq member");
    assert!(count == 0 || seq < count);
    let pad = task.get("pad").and_then(Value::as_str).expect("pad member");
    assert_eq!(pad, writer.repeat(4096 / writer.len()), "torn padding");
}

fn selectors(dir: &Path, component: &Path) -> [String; 2] {
    [
        format!("file:{}", dir.display()),
        format!("wasm:{}?dir={}", component.display(), dir.display()),
    ]
}

fn no_temp_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().all(|e| {
        !e.unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with(".tmp-")
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn processes_saving_one_id_at_once_leave_one_whole_version() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    let component = tmp.path().join("store.wasm");
    std::fs::write(&component, FILE_STORE_COMPONENT).unwrap();
    let [file_sel, wasm_sel] = selectors(&dir, &component);
    let tags = ["alpha", "bravo", "charlie", "delta"];
    // Two native and two component writers, all on the same id at the same time.
    let children: Vec<_> = tags
        .iter()
        .enumerate()
        .map(|(i, tag)| {
            spawn_writer(
                if i % 2 == 0 { &file_sel } else { &wasm_sel },
                "contested",
                tag,
                200,
            )
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a writer failed");
    }
    let store = FileTaskStore::new(&dir).unwrap();
    let task = store
        .get("contested")
        .await
        .unwrap()
        .expect("the task exists");
    assert_whole_version(&task, &tags, 200);
    assert_eq!(
        task.get("seq").and_then(Value::as_u64),
        Some(199),
        "the last write of some writer wins"
    );
    assert!(
        no_temp_files(&dir),
        "every writer cleaned up its temp files"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_writer_killed_mid_write_never_leaves_a_torn_task() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    let component = tmp.path().join("store.wasm");
    std::fs::write(&component, FILE_STORE_COMPONENT).unwrap();
    for selector in selectors(&dir, &component) {
        for round in 0..5 {
            let mut child = spawn_writer(&selector, "killed", "kilo", 0);
            let mut line = String::new();
            BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            assert_eq!(line.trim(), "ready", "{selector}");
            // Let it write for a while, at a different point each round, then SIGKILL it.
            std::thread::sleep(std::time::Duration::from_millis(3 + 7 * round));
            child.kill().unwrap();
            child.wait().unwrap();
            for reader in selectors(&dir, &component) {
                let store = toolnexus::resolve_store(reader.as_str()).unwrap();
                let task = store
                    .get("killed")
                    .await
                    .unwrap()
                    .expect("an acknowledged save survives");
                assert_whole_version(&task, &["kilo"], 0);
            }
        }
    }
}

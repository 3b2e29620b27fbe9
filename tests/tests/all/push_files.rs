//! Push-notification configs on disk (native file store): exactly which paths hold which
//! bytes (`docs/on-disk-format.md`, "Push-notification configs"), files written by another
//! implementation, corrupt files, modes, and what a Task's delete removes.

use serde_json::json;
use std::fs;
use std::path::Path;
use toolnexus::{FileTaskStore, ListQuery, PushConfig, StoreError, TaskStore};
use toolnexus_conformance::task;

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

fn ids(configs: &[PushConfig]) -> Vec<&str> {
    configs.iter().map(PushConfig::id).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn configs_are_compact_json_files_under_push_named_like_task_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileTaskStore::new(dir.path()).unwrap();
    store.save(&task(json!({"id": "a/b"}))).await.unwrap();
    let spaced = "{ \"id\": \"c/1\",\n  \"url\": \"https://example.com/h\", \"n\": 1 }";
    store
        .save_push_config("a/b", &PushConfig::from_json(spaced).unwrap())
        .await
        .unwrap();
    let japanese = PushConfig::from_value(json!({"id": "日本", "url": "https://example.com/j"}));
    store
        .save_push_config("a/b", &japanese.unwrap())
        .await
        .unwrap();
    let long_task = "t".repeat(300);
    let dot = PushConfig::from_value(json!({"id": ".", "url": "https://example.com/d"}));
    store
        .save_push_config(&long_task, &dot.unwrap())
        .await
        .unwrap();

    assert_eq!(
        names_in(dir.path()),
        [".push", ".~a%2Fb.v", "a%2Fb.json"],
        "configs add one directory to the root, nothing else"
    );
    let push = dir.path().join(".push");
    // A long Task id's directory has the hashed stem of its Task file.
    let long_file = store.path_of(&long_task).unwrap();
    let long_stem = long_file.file_stem().unwrap().to_str().unwrap();
    assert!(
        long_stem.starts_with(&format!("{}~", "t".repeat(185))),
        "{long_stem}"
    );
    let mut want_dirs = vec!["a%2Fb", long_stem];
    want_dirs.sort();
    assert_eq!(names_in(&push), want_dirs);
    assert_eq!(
        names_in(&push.join("a%2Fb")),
        ["%E6%97%A5%E6%9C%AC.json", "c%2F1.json"]
    );
    assert_eq!(
        fs::read(push.join("a%2Fb/c%2F1.json")).unwrap(),
        br#"{"id":"c/1","url":"https://example.com/h","n":1}"#,
        "the compact text, exactly"
    );
    assert_eq!(
        fs::read_to_string(push.join("a%2Fb/%E6%97%A5%E6%9C%AC.json")).unwrap(),
        r#"{"id":"日本","url":"https://example.com/j"}"#
    );
    assert_eq!(
        fs::read_to_string(push.join(long_stem).join("%2E.json")).unwrap(),
        r#"{"id":".","url":"https://example.com/d"}"#
    );
    // The Tasks listing sees the one Task, not the configs.
    let page = store.list(&ListQuery::default()).await.unwrap();
    assert_eq!(page.tasks.len(), 1);
    assert_eq!(page.total_size, Some(1));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_config_file_written_by_another_implementation_is_read_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileTaskStore::new(dir.path()).unwrap();
    let task_dir = dir.path().join(".push").join("t");
    fs::create_dir_all(&task_dir).unwrap();
    // Not compact: read back exactly as written, ordered by config id (`-` < `.`), not by name
    // (`%2E.json` < `-.json`).
    let dot = "{\"id\": \".\", \"url\": \"https://example.com/\"}";
    fs::write(task_dir.join("%2E.json"), dot).unwrap();
    fs::write(task_dir.join("-.json"), r#"{"id":"-"}"#).unwrap();
    fs::write(task_dir.join(".tmp-0123456789abcdef"), "{").unwrap();
    fs::write(task_dir.join("README"), "foreign").unwrap();
    let listed = store.list_push_configs("t").await.unwrap();
    assert_eq!(ids(&listed), ["-", "."]);
    assert_eq!(listed[1].as_json(), dot);
    let got = store.get_push_config("t", ".").await.unwrap().unwrap();
    assert_eq!(got.as_json(), dot);
    assert_eq!(got.id(), ".");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupt_config_file_is_an_error_naming_it() {
    let cases: [(&str, &[u8]); 4] = [
        ("not json", b"{\"id\": \"c\","),
        ("no id", b"{\"url\": \"https://example.com/\"}"),
        ("another id", b"{\"id\": \"d\"}"),
        ("not utf-8", b"{\"id\": \"c\", \"x\": \"\xff\"}"),
    ];
    for (case, bytes) in cases {
        let dir = tempfile::tempdir().unwrap();
        let store = FileTaskStore::new(dir.path()).unwrap();
        let task_dir = dir.path().join(".push").join("t");
        fs::create_dir_all(&task_dir).unwrap();
        fs::write(task_dir.join("c.json"), bytes).unwrap();
        for err in [
            store.get_push_config("t", "c").await.expect_err(case),
            store.list_push_configs("t").await.expect_err(case),
        ] {
            let msg = err.to_string();
            assert!(matches!(err, StoreError::Corrupt { .. }), "{case}: {msg}");
            assert!(
                msg.contains(".push/t/c.json"),
                "{case}: names the file: {msg}"
            );
        }
        assert_eq!(fs::read(task_dir.join("c.json")).unwrap(), bytes, "{case}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn config_directories_are_0700_and_config_files_0600() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let dir = tempfile::tempdir().unwrap();
    let store = FileTaskStore::new(dir.path()).unwrap();
    let config = PushConfig::from_value(json!({"id": "c"})).unwrap();
    store.save_push_config("t", &config).await.unwrap();
    assert_eq!(mode(&dir.path().join(".push")), 0o700);
    assert_eq!(mode(&dir.path().join(".push/t")), 0o700);
    assert_eq!(mode(&dir.path().join(".push/t/c.json")), 0o600);
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_a_task_removes_its_config_directory_and_only_that() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileTaskStore::new(dir.path()).unwrap();
    let config = PushConfig::from_value(json!({"id": "c"})).unwrap();
    for id in ["gone", "stays"] {
        store.save(&task(json!({"id": id}))).await.unwrap();
        store.save_push_config(id, &config).await.unwrap();
    }
    fs::write(dir.path().join(".push/gone/.tmp-0123"), "{").unwrap();
    assert!(store.delete("gone").await.unwrap());
    assert_eq!(names_in(&dir.path().join(".push")), ["stays"]);
    assert_eq!(names_in(&dir.path().join(".push/stays")), ["c.json"]);
    // A config's delete leaves its Task's directory.
    assert!(store.delete_push_config("stays", "c").await.unwrap());
    assert_eq!(names_in(&dir.path().join(".push")), ["stays"]);
    assert!(names_in(&dir.path().join(".push/stays")).is_empty());
}

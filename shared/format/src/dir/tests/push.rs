//! Push configs: where their files are, what a read refuses, the order of a listing, and what
//! a Task's delete and the temp-file sweep do to them.

use super::*;

fn config(id: &str, n: u32) -> String {
    format!(r#"{{"id":{},"n":{n}}}"#, serde_json::to_string(id).unwrap())
}

fn corrupt_reason(err: DirError) -> (PathBuf, String) {
    match err {
        DirError::Corrupt { file, reason } => (file, reason),
        other => panic!("expected corrupt, got {other}"),
    }
}

#[test]
fn configs_live_in_the_tasks_own_directory_under_push() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    s.save_push_config("a/b", "c/1", &config("c/1", 1)).unwrap();
    let task_dir = dir.path().join(".push").join("a%2Fb");
    assert_eq!(names_in(&task_dir), ["c%2F1.json"]);
    assert_eq!(
        fs::read_to_string(task_dir.join("c%2F1.json")).unwrap(),
        config("c/1", 1),
        "written exactly as given"
    );
    assert_eq!(names_in(dir.path()), [".push"], "no Task file, no record");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for private in [dir.path().join(".push"), task_dir.clone()] {
            let mode = fs::metadata(&private).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{}", private.display());
        }
        let mode = fs::metadata(task_dir.join("c%2F1.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // A long Task id gets the hashed stem its Task file gets.
    let long = "x".repeat(300);
    s.save_push_config(&long, "c", &config("c", 2)).unwrap();
    let stem = id::encode_id(&long).unwrap().replace(".json", "");
    assert!(stem.contains('~'));
    assert_eq!(names_in(&dir.path().join(".push").join(stem)), ["c.json"]);
}

#[test]
fn save_replaces_get_misses_and_delete_says_whether_there_was_one() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    assert_eq!(
        s.get_push_config("t", "c").unwrap(),
        None,
        "no directory yet"
    );
    assert_eq!(s.list_push_configs("t").unwrap(), Vec::<String>::new());
    assert!(!s.delete_push_config("t", "c").unwrap());
    s.save_push_config("t", "c", &config("c", 1)).unwrap();
    s.save_push_config("t", "c", &config("c", 2)).unwrap();
    assert_eq!(s.get_push_config("t", "c").unwrap(), Some(config("c", 2)));
    assert_eq!(s.get_push_config("t", "d").unwrap(), None);
    assert_eq!(s.get_push_config("u", "c").unwrap(), None, "another Task's");
    assert!(s.delete_push_config("t", "c").unwrap());
    assert!(!s.delete_push_config("t", "c").unwrap());
    assert_eq!(s.get_push_config("t", "c").unwrap(), None);
    assert_eq!(
        names_in(&dir.path().join(".push").join("t")),
        Vec::<String>::new()
    );
    assert!(matches!(
        s.save_push_config("", "c", &config("c", 1)),
        Err(DirError::InvalidId(_))
    ));
    for err in [
        s.get_push_config("t", "").unwrap_err(),
        s.save_push_config("t", "", &config("", 1)).unwrap_err(),
        s.delete_push_config("t", "").unwrap_err(),
    ] {
        assert!(
            matches!(err, DirError::InvalidId(id::IdError::EmptyConfigId)),
            "{err}"
        );
        assert_eq!(err.to_string(), "push config id is empty");
    }
}

#[test]
fn a_listing_is_by_config_id_bytes_not_by_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    // File names sort `%2E.json` < `-.json` < `b.json`; the ids sort `-` < `.` < `b`.
    for (n, id) in ["b", ".", "-", "日本"].into_iter().enumerate() {
        s.save_push_config("t", id, &config(id, n as u32)).unwrap();
    }
    fs::write(dir.path().join(".push/t/.tmp-0123"), "{").unwrap();
    fs::write(dir.path().join(".push/t/notes.txt"), "foreign").unwrap();
    let listed = s.list_push_configs("t").unwrap();
    assert_eq!(
        listed,
        [
            config("-", 2),
            config(".", 1),
            config("b", 0),
            config("日本", 3)
        ]
    );
}

#[test]
fn a_config_file_that_is_not_its_config_is_corrupt_never_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    s.save_push_config("t", "c", &config("c", 1)).unwrap();
    let task_dir = dir.path().join(".push/t");
    for (text, reason) in [
        (config("d", 1), r#"holds push config "d", not "c""#),
        ("{".to_owned(), "push config is not valid JSON"),
        (
            r#"{"url":"u"}"#.to_owned(),
            "push config has no \"id\" member",
        ),
    ] {
        fs::write(task_dir.join("c.json"), &text).unwrap();
        let (file, got) = corrupt_reason(s.get_push_config("t", "c").unwrap_err());
        assert_eq!(file, task_dir.join("c.json"));
        assert!(got.starts_with(reason), "{got}");
        let err = s.list_push_configs("t").unwrap_err();
        assert!(
            err.to_string().starts_with("corrupt push config file"),
            "{err}"
        );
    }
    let over = format!(
        r#"{{"id":"c","pad":"{}"}}"#,
        "x".repeat(crate::push_config::MAX_PUSH_CONFIG_BYTES)
    );
    fs::write(task_dir.join("c.json"), over).unwrap();
    let (_, reason) = corrupt_reason(s.get_push_config("t", "c").unwrap_err());
    assert!(reason.contains("over the largest"), "{reason}");
}

#[cfg(unix)]
#[test]
fn a_link_or_a_fifo_is_refused_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    s.save_push_config("t", "real", &config("real", 1)).unwrap();
    let task_dir = dir.path().join(".push/t");
    std::os::unix::fs::symlink(task_dir.join("real.json"), task_dir.join("link.json")).unwrap();
    let (_, reason) = corrupt_reason(s.get_push_config("t", "link").unwrap_err());
    assert!(reason.contains("symbolic link"), "{reason}");
    fs::remove_file(task_dir.join("link.json")).unwrap();
    let fifo = task_dir.join("fifo.json");
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let (_, reason) = corrupt_reason(s.list_push_configs("t").unwrap_err());
    assert!(reason.contains("FIFO"), "{reason}");
}

#[test]
fn deleting_a_task_removes_its_configs_and_no_one_elses() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    s.save_text(r#"{"id":"t"}"#).unwrap();
    s.save_push_config("t", "c", &config("c", 1)).unwrap();
    s.save_push_config("u", "c", &config("c", 2)).unwrap();
    assert!(s.delete("t").unwrap());
    assert_eq!(names_in(&dir.path().join(".push")), ["u"]);
    assert_eq!(s.list_push_configs("t").unwrap(), Vec::<String>::new());
    assert_eq!(s.get_push_config("u", "c").unwrap(), Some(config("c", 2)));
    // Configs of an id with no Task go with a delete of that id too.
    assert!(!s.delete("u").unwrap());
    assert_eq!(names_in(&dir.path().join(".push")), Vec::<String>::new());
    s.save_push_config("t", "c", &config("c", 3)).unwrap();
    assert_eq!(s.get_push_config("t", "c").unwrap(), Some(config("c", 3)));
}

/// Fewer saves and deletes of one Task per round than either retries: neither can fail,
/// however they interleave.
#[test]
fn saves_racing_deletes_of_their_task_never_fail() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    for round in 0..20 {
        let task_id = format!("t{round}");
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for i in 0..15 {
                    let id = format!("c{i}");
                    s.save_push_config(&task_id, &id, &config(&id, i)).unwrap();
                }
            });
            for _ in 0..15 {
                s.delete(&task_id).unwrap();
            }
        });
        // Whatever is left is whole, and a save after the race lands.
        for text in s.list_push_configs(&task_id).unwrap() {
            crate::push_config::check_push_config_text(&text).unwrap();
        }
        s.save_push_config(&task_id, "last", &config("last", 0))
            .unwrap();
        assert_eq!(
            s.get_push_config(&task_id, "last").unwrap(),
            Some(config("last", 0))
        );
    }
}

#[test]
fn task_listing_and_the_sweep_leave_push_alone_but_sweep_its_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    s.save_text(r#"{"id":"t"}"#).unwrap();
    s.save_push_config("t", "c", &config("c", 1)).unwrap();
    let page = s.list_texts(&ListQuery::default()).unwrap();
    assert_eq!(page.tasks.len(), 1);
    assert_eq!(page.total_size, 1);
    fs::write(dir.path().join(".push/t/.tmp-0123"), "{").unwrap();
    assert_eq!(s.sweep_temp_files(Duration::from_secs(3600)).unwrap(), 0);
    assert_eq!(s.sweep_temp_files(Duration::ZERO).unwrap(), 1);
    assert_eq!(names_in(&dir.path().join(".push/t")), ["c.json"]);
    assert_eq!(s.get_push_config("t", "c").unwrap(), Some(config("c", 1)));
}

#[test]
fn relaxed_saves_keep_the_same_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = DirStore::new(dir.path(), Durability::Relaxed);
    s.save_push_config("t", "c", &config("c", 1)).unwrap();
    assert_eq!(
        fs::read_to_string(dir.path().join(".push/t/c.json")).unwrap(),
        config("c", 1)
    );
    assert!(s.delete_push_config("t", "c").unwrap());
}

/// Every config save under full durability flushes the Task's config directory, `.push` and the
/// root, not only the save that made the directories: a second saver that found them made by
/// another (which may not have flushed them yet) is acknowledged only once their entries are
/// on disk. Before, only the maker flushed the parents.
#[test]
fn every_config_save_makes_its_directories_durable() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    s.save_push_config("t", "c1", r#"{"id":"c1"}"#).unwrap();
    s.push_flushes.lock().unwrap().clear();
    s.save_push_config("t", "c2", r#"{"id":"c2"}"#).unwrap();
    let push = dir.path().join(".push");
    assert_eq!(
        *s.push_flushes.lock().unwrap(),
        [push.join("t"), push.clone(), dir.path().to_path_buf()]
    );
}

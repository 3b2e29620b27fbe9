//! Reads and saves: one file per task with the text as given, misses and corrupt files,
//! temp files swept and uniquely named, and the cached read agreeing with the blocking one.

use super::*;

#[test]
fn save_writes_one_file_named_after_the_id_with_the_text_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let t = r#"{"id":"abc-123","status":{"state":"completed"}}"#;
    store(&dir).save_text(t).unwrap();
    let names = names_in(dir.path());
    // The Task file, and beside it its version record (hidden, not a Task file).
    assert_eq!(names, [".~abc-123.v", "abc-123.json"]);
    assert_eq!(
        fs::read_to_string(dir.path().join("abc-123.json")).unwrap(),
        r#"{"id":"abc-123","status":{"state":"completed"}}"#
    );
}

#[test]
fn get_text_returns_what_was_saved_and_none_on_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let t = r#"{"id":"x","n":9007199254740993,"z":-0.0,"big":123456789012345678901234567890}"#;
    s.save_checked("x", t).unwrap();
    assert_eq!(s.get_text("x").unwrap().as_deref(), Some(t));
    assert_eq!(s.get_text("y").unwrap(), None);
}

#[test]
fn a_file_holding_another_id_is_corrupt_not_a_hit() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.json"), r#"{"id":"b"}"#).unwrap();
    let err = store(&dir).get_text("a").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, DirError::Corrupt { .. }), "{msg}");
    assert!(msg.contains("a.json") && msg.contains("\"b\""), "{msg}");
}

#[test]
fn truncated_file_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.json"), r#"{"id":"a","status":{"#).unwrap();
    assert!(matches!(
        store(&dir).get_text("a"),
        Err(DirError::Corrupt { .. })
    ));
}

#[test]
fn invalid_text_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for text in ["nope", "[]", "{}", r#"{"id":1}"#, r#"{"id":""}"#] {
        let err = store(&dir).save_text(text).unwrap_err();
        assert!(matches!(err, DirError::InvalidTask(_)), "{text}: {err}");
    }
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn save_leaves_no_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    for durability in [Durability::Full, Durability::Relaxed] {
        let s = DirStore::new(dir.path(), durability);
        for i in 0..20 {
            s.save_text(&format!(r#"{{"id":"t","i":{i}}}"#)).unwrap();
        }
    }
    let mut names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, [".~t.v", "t.json"]);
}

#[test]
fn sweep_removes_only_stale_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let stale = dir.path().join(".tmp-stale");
    let fresh = dir.path().join(".tmp-fresh");
    let other = dir.path().join(".other");
    for p in [&stale, &fresh, &other] {
        fs::write(p, "{").unwrap();
    }
    let old = SystemTime::now() - STALE_TEMP_AGE - Duration::from_secs(5);
    for p in [&stale, &other] {
        File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    assert_eq!(store(&dir).sweep_temp_files(STALE_TEMP_AGE).unwrap(), 1);
    assert!(!stale.exists() && fresh.exists() && other.exists());
}

/// The read that never waits answers exactly what the blocking read answers for every
/// kind of file it decides on, and leaves a Task too large to check on an async worker to
/// the blocking read.
#[cfg(target_os = "linux")]
#[test]
fn the_cached_read_agrees_with_the_blocking_read() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let text = r#"{"id":"hot","status":{"state":"working"}}"#;
    s.save_checked("hot", text).unwrap();
    // Just written: name and bytes are in the kernel's caches.
    assert_eq!(
        s.try_get_text_cached("hot").unwrap().unwrap(),
        Some(text.into())
    );
    // A miss is decided once the kernel remembers the name is absent (after a lookup that
    // may wait); before that it is left to the blocking read.
    assert!(s.try_get_text_cached("cold").is_none());
    assert_eq!(s.get_text("cold").unwrap(), None);
    assert_eq!(s.try_get_text_cached("cold").unwrap().unwrap(), None);
    assert!(matches!(
        s.try_get_text_cached(""),
        Some(Err(DirError::InvalidId(_)))
    ));
    fs::write(dir.path().join("other.json"), r#"{"id":"hot"}"#).unwrap();
    fs::write(dir.path().join("broken.json"), r#"{"id":"broken""#).unwrap();
    fs::write(
        dir.path().join("latin.json"),
        b"{\"id\":\"latin\",\"x\":\"\xe9\"}",
    )
    .unwrap();
    std::os::unix::fs::symlink("hot.json", dir.path().join("link.json")).unwrap();
    let fifo = std::ffi::CString::new(
        dir.path()
            .join("fifo.json")
            .into_os_string()
            .into_encoded_bytes(),
    )
    .unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    fs::create_dir(dir.path().join("sub.json")).unwrap();
    for id in ["other", "broken", "latin", "link", "fifo", "sub"] {
        let cached = s.try_get_text_cached(id).expect("decided without the disk");
        let blocking = s.get_text(id);
        assert_eq!(
            format!("{cached:?}"),
            format!("{blocking:?}"),
            "{id}: the same answer both ways"
        );
        assert!(
            matches!(cached, Err(DirError::Corrupt { .. })),
            "{id}: {cached:?}"
        );
    }
    let big = format!(
        r#"{{"id":"big","pad":"{}"}}"#,
        "x".repeat(NOWAIT_READ_MAX_BYTES as usize)
    );
    s.save_checked("big", &big).unwrap();
    assert!(
        s.try_get_text_cached("big").is_none(),
        "too large to check inline"
    );
    assert_eq!(s.get_text("big").unwrap(), Some(big));
}

#[test]
fn temp_names_are_unique() {
    let names: std::collections::HashSet<_> = (0..10_000).map(|_| temp::random_u128()).collect();
    assert_eq!(names.len(), 10_000);
}

/// A directory whose file system keeps case apart opens; one that folds it (`A.json` and
/// `a.json` one file) is refused, since Tasks whose ids differ in case would share a lock and a
/// record. The folding is stood in for by a hard link under the upper-case name (this kernel
/// mounts no case-folding file system in a test); what is checked is that the probe tells the
/// same file under the other spelling from a missing or different one.
#[cfg(unix)]
#[test]
fn a_directory_that_folds_case_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    store(&dir).check_case_sensitive().unwrap();
    assert!(names_in(dir.path()).is_empty(), "the probe is removed");
    let probe = dir.path().join(".tmp-0a1b");
    let file = platform::create_new(&probe).unwrap();
    assert!(!folds_case(&probe, file.identity()));
    fs::write(dir.path().join(".TMP-0A1B"), "another file").unwrap();
    assert!(!folds_case(&probe, file.identity()), "a different file");
    fs::remove_file(dir.path().join(".TMP-0A1B")).unwrap();
    fs::hard_link(&probe, dir.path().join(".TMP-0A1B")).unwrap();
    assert!(folds_case(&probe, file.identity()), "the same file");
}

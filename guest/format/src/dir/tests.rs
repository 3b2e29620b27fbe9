//! The directory store's unit tests: saves, reads, listings, versions, locks and what crashed
//! or hostile writers leave behind.

use super::record::{RECORD_LEN, Record, RecordRead};
use super::stat::Stamp;
use super::*;
use std::fs::File;
use std::sync::atomic::Ordering;

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

fn store(dir: &tempfile::TempDir) -> DirStore {
    DirStore::new(dir.path(), Durability::Full)
}

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

fn ids(page: &TextPage) -> Vec<&str> {
    page.tasks.iter().map(|(id, _)| id.as_str()).collect()
}

#[test]
fn list_pages_newest_first_and_delete_removes() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    for i in [3, 1, 2, 5, 4] {
        s.save_text(&format!(
            r#"{{"id":"t{i}","contextId":"c{}","status":{{"state":"working","timestamp":"2025-01-0{i}T00:00:00Z"}}}}"#,
            i % 2
        ))
        .unwrap();
    }
    s.save_text(r#"{"id":"t0"}"#).unwrap();
    fs::write(dir.path().join(".tmp-x"), "{").unwrap();
    let q = ListQuery {
        page_size: 2,
        ..Default::default()
    };
    let page = s.list_texts(&q).unwrap();
    assert_eq!(ids(&page), ["t5", "t4"]);
    assert_eq!(page.total_size, 6);
    let q = ListQuery {
        page_token: page.next_page_token,
        ..q
    };
    let page = s.list_texts(&q).unwrap();
    assert_eq!(ids(&page), ["t3", "t2"]);
    let q = ListQuery {
        page_token: page.next_page_token,
        ..q
    };
    let page = s.list_texts(&q).unwrap();
    assert_eq!(ids(&page), ["t1", "t0"], "no timestamp comes last");
    assert_eq!(page.next_page_token, None);
    let q = ListQuery {
        context_id: Some("c0".into()),
        ..Default::default()
    };
    let page = s.list_texts(&q).unwrap();
    assert_eq!(ids(&page), ["t4", "t2"]);
    assert_eq!((page.next_page_token, page.total_size), (None, 2));
    let q = ListQuery {
        status_timestamp_after: Some(
            crate::query::Timestamp::parse("2025-01-04T00:00:00Z").unwrap(),
        ),
        ..Default::default()
    };
    assert_eq!(ids(&s.list_texts(&q).unwrap()), ["t5", "t4"]);
    let bad = ListQuery {
        page_token: Some("garbage".into()),
        ..Default::default()
    };
    assert!(matches!(s.list_texts(&bad), Err(DirError::InvalidQuery(_))));
    assert!(s.delete("t2").unwrap());
    assert!(!s.delete("t2").unwrap());
    assert_eq!(s.get_text("t2").unwrap(), None);
}

#[test]
fn versions_count_saves_and_conditions_hold() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let t = |n: u32| format!(r#"{{"id":"v","n":{n}}}"#);
    assert_eq!(s.save_checked_if("v", &t(1), Expect::Absent).unwrap(), 1);
    assert_eq!(s.get_versioned("v").unwrap(), Some((t(1), 1)));
    let err = s.save_checked_if("v", &t(9), Expect::Absent).unwrap_err();
    assert!(
        matches!(
            err,
            DirError::Conflict {
                current: Some(1),
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        s.save_checked_if("v", &t(2), Expect::Version(1)).unwrap(),
        2
    );
    let err = s
        .save_checked_if("v", &t(9), Expect::Version(1))
        .unwrap_err();
    assert!(matches!(
        err,
        DirError::Conflict {
            current: Some(2),
            ..
        }
    ));
    assert_eq!(s.save_checked("v", &t(3)).unwrap(), 3);
    assert_eq!(s.get_versioned("v").unwrap(), Some((t(3), 3)));
    let err = s
        .save_checked_if("w", &t(9), Expect::Version(3))
        .unwrap_err();
    assert!(matches!(err, DirError::Conflict { current: None, .. }));
    assert_eq!(
        s.get_text("w").unwrap(),
        None,
        "a refused save writes nothing"
    );
    assert!(s.delete("v").unwrap());
    assert_eq!(s.save_checked_if("v", &t(4), Expect::Absent).unwrap(), 1);
    // Only the Task file, its record and nothing else are left.
    let names = names_in(dir.path());
    assert_eq!(names, [".~v.v", "v.json"]);
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

/// The record's line and check are what `docs/on-disk-format.md` specifies, byte for byte,
/// so any other implementation of the format can write records this one trusts.
#[test]
fn the_record_line_is_the_documented_one() {
    let stamp = Stamp {
        size: 1234,
        mtime_ns: 1_764_547_200_123_456_789,
    };
    let prev = Stamp {
        size: 1200,
        mtime_ns: 1_764_547_100_000_000_000,
    };
    let record = Record {
        version: 7,
        stamp,
        prev: Some(prev),
    };
    let line = record.to_text();
    assert_eq!(line.len(), RECORD_LEN);
    assert_eq!(
        line.trim_end(),
        r#"{"format":2,"version":7,"size":1234,"mtime_ns":1764547200123456789,"prev_size":1200,"prev_mtime_ns":1764547100000000000,"check":"e1df9f6a0b2b31fc"}"#
    );
    assert!(line.ends_with(" \n"));
    assert_eq!(Record::parse(&line), Some(record));
    // A first save's record has no previous file.
    let first = Record {
        version: 1,
        stamp,
        prev: None,
    };
    assert_eq!(
        first.to_text().trim_end(),
        r#"{"format":2,"version":1,"size":1234,"mtime_ns":1764547200123456789,"check":"9396a33d592ed634"}"#
    );
    // Format 1, which savers wrote after their rename, is still read.
    let format_1 = r#"{"format":1,"version":7,"size":1234,"mtime_ns":1764547200123456789,"check":"d88e547c369014c6"}"#;
    assert_eq!(
        Record::parse(format_1),
        Some(Record {
            version: 7,
            stamp,
            prev: None
        })
    );
}

/// A save whose flush takes longer than half the lease (a disk slowed by 300 ms per flush,
/// under a 400 ms lease) renews its lock after the flush instead of giving up: it
/// succeeds, and the version record describes the file as renewed (the next conditional
/// save on its version holds).
#[test]
fn a_save_with_a_slow_flush_renews_its_lock_and_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store(&dir).with_lock_lease(Duration::from_millis(400));
    s.save_checked("h", r#"{"id":"h","n":1}"#).unwrap();
    s.slow_flush = Duration::from_millis(300);
    assert_eq!(s.save_checked("h", r#"{"id":"h","n":2}"#).unwrap(), 2);
    s.slow_flush = Duration::ZERO;
    assert_eq!(
        s.get_versioned("h").unwrap(),
        Some((r#"{"id":"h","n":2}"#.into(), 2))
    );
    assert_eq!(
        s.save_checked_if("h", r#"{"id":"h","n":3}"#, Expect::Version(2))
            .unwrap(),
        3
    );
    assert_eq!(names_in(dir.path()), [".~h.v", "h.json"]);
}

/// A save whose flush outlasts the whole lease (1.5 s under a 200 ms lease) has its lock
/// broken and taken by another writer, which saves version 2. The slow save then fails as
/// having lost its lock and writes nothing: before, it renewed the lock it no longer held
/// and wrote its record over the other writer's, so that the Task read as version 3 and a
/// save conditional on the acknowledged version 2 was refused.
#[test]
fn a_save_whose_lock_was_taken_over_during_its_flush_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let lease = Duration::from_millis(200);
    let mut slow = store(&dir).with_lock_lease(lease);
    slow.save_checked("t", r#"{"id":"t","n":1}"#).unwrap();
    slow.slow_flush = Duration::from_millis(1500);
    let other = store(&dir).with_lock_lease(lease);
    let lock = dir.path().join(".~t.l");
    let slow_result = std::thread::scope(|scope| {
        let slow = scope.spawn(|| slow.save_checked("t", r#"{"id":"t","n":"slow"}"#));
        while !lock.exists() {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Waits until the slow save's lock is stale, breaks it and saves.
        assert_eq!(
            other
                .save_checked("t", r#"{"id":"t","n":"other"}"#)
                .unwrap(),
            2
        );
        slow.join().unwrap()
    });
    let err = slow_result.unwrap_err();
    assert!(
        matches!(&err, DirError::Io { op: "save under lock", source, .. }
            if source.kind() == io::ErrorKind::TimedOut),
        "{err}"
    );
    assert_eq!(
        other.get_versioned("t").unwrap(),
        Some((r#"{"id":"t","n":"other"}"#.into(), 2))
    );
    assert_eq!(
        other
            .save_checked_if("t", r#"{"id":"t","n":3}"#, Expect::Version(2))
            .unwrap(),
        3
    );
}

/// A saver that died after writing its record and before renaming its lock leaves the old
/// Task file, which reads as the version it is (the record's previous file), and a lock
/// holding part of its text, which is never read as the Task and is broken after the
/// lease; the next save on that version succeeds and counts on from it.
#[test]
fn a_save_that_died_before_its_rename_leaves_the_old_version() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir).with_lock_lease(Duration::from_millis(200));
    s.save_checked("d", r#"{"id":"d","n":1}"#).unwrap();
    s.save_checked("d", r#"{"id":"d","n":2}"#).unwrap();
    let old = platform::stamp_at(&dir.path().join("d.json")).unwrap();
    // What the dead saver left: its lock with half a text, and its record for version 3.
    let lock = dir.path().join(".~d.l");
    fs::write(&lock, r#"{"id":"d","n":"#).unwrap();
    let record = Record {
        version: 3,
        stamp: platform::stamp_at(&lock).unwrap(),
        prev: Some(old),
    };
    fs::write(dir.path().join(".~d.v"), record.to_text()).unwrap();
    assert_eq!(
        s.get_versioned("d").unwrap(),
        Some((r#"{"id":"d","n":2}"#.into(), 2))
    );
    let err = s
        .save_checked_if("d", r#"{"id":"d","n":9}"#, Expect::Version(3))
        .unwrap_err();
    assert!(
        matches!(
            err,
            DirError::Conflict {
                current: Some(2),
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        s.save_checked_if("d", r#"{"id":"d","n":3}"#, Expect::Version(2))
            .unwrap(),
        3
    );
    assert_eq!(
        s.get_versioned("d").unwrap(),
        Some((r#"{"id":"d","n":3}"#.into(), 3))
    );
    let names = names_in(dir.path());
    assert_eq!(names, [".~d.v", "d.json"], "the dead saver's lock is gone");
}

/// A save whose file would have the stamp of the file it replaces (the same length,
/// written within one tick of the file system's clock) moves its modification time on:
/// readers tell the two apart by their stamps alone.
#[test]
fn a_stamp_equal_to_the_replaced_one_is_moved_apart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let mut file = platform::create_new(&path).unwrap();
    file.write_from_start(b"{}").unwrap();
    let same = file.stamp().unwrap();
    let apart = lock::stamp_apart(&file, same, b'{').unwrap();
    assert_eq!(apart.size, same.size);
    assert_eq!(apart.mtime_ns, same.mtime_ns + 1, "natively, 1 ns on");
    assert_eq!(platform::stamp_at(&path).unwrap(), apart, "on disk too");
    assert_eq!(fs::read(&path).unwrap(), b"{}", "the text is as it was");
    // Where setting the time cannot part them (inside a component, or a file system with
    // coarse times), writing the first byte again after a pause does.
    let again = file.stamp().unwrap();
    let rewritten = lock::rewrite_until_apart(&file, again, b'{', again).unwrap();
    assert!(rewritten.mtime_ns > again.mtime_ns, "{rewritten:?}");
    assert_eq!(fs::read(&path).unwrap(), b"{}", "the text is as it was");
    let apart = rewritten;
    let other = Stamp {
        size: 99,
        mtime_ns: 5,
    };
    assert_eq!(
        lock::stamp_apart(&file, other, b'{').unwrap(),
        apart,
        "left as it is"
    );
}

/// A reader tells the three files a record can meet apart by their stamps: the one it
/// describes, the one its save replaced (one less: the save has not renamed its file into
/// place yet), and any other (written after it: one more).
#[test]
fn the_version_follows_from_the_record_and_the_stamp() {
    let at = |size, mtime_ns| Stamp { size, mtime_ns };
    let record = RecordRead::Found(Record {
        version: 5,
        stamp: at(10, 2_000),
        prev: Some(at(10, 1_000)),
    });
    assert_eq!(Record::version_of(record, at(10, 2_000)), 5);
    assert_eq!(Record::version_of(record, at(10, 1_000)), 4);
    assert_eq!(Record::version_of(record, at(11, 2_000)), 6);
    assert_eq!(Record::version_of(RecordRead::Unsettled, at(10, 2_000)), 1);
    assert_eq!(Record::version_of(RecordRead::Missing, at(10, 2_000)), 1);
    // A record claiming a file before its first version still gives no version below 1.
    let odd = RecordRead::Found(Record {
        version: 1,
        stamp: at(10, 2_000),
        prev: Some(at(10, 1_000)),
    });
    assert_eq!(Record::version_of(odd, at(10, 1_000)), 1);
}

/// The first save creates the record (in place: a brand-new Task has none to lose); every
/// later one overwrites that same file in place, at its fixed length, with a check a torn
/// copy fails.
#[cfg(unix)]
#[test]
fn the_version_record_is_overwritten_in_place_after_the_first_save() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let record = dir.path().join(".~r.v");
    s.save_checked("r", r#"{"id":"r","n":1}"#).unwrap();
    let first = fs::metadata(&record).unwrap();
    assert_eq!(first.len(), RECORD_LEN as u64);
    for n in 2..=5 {
        s.save_checked("r", &format!(r#"{{"id":"r","n":{n}}}"#))
            .unwrap();
    }
    let last = fs::metadata(&record).unwrap();
    assert_eq!((last.ino(), last.len()), (first.ino(), RECORD_LEN as u64));
    let text = fs::read_to_string(&record).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["version"], 5);
    assert_eq!(
        s.get_versioned("r").unwrap(),
        Some((r#"{"id":"r","n":5}"#.into(), 5))
    );
}

/// Even fields no real file has (a clock centuries off) make a record of the fixed length:
/// never outsized, never a panic.
#[test]
fn the_longest_record_fits_its_fixed_length() {
    let record = Record {
        version: u64::MAX,
        stamp: Stamp {
            size: u64::MAX,
            mtime_ns: i128::MIN,
        },
        prev: Some(Stamp {
            size: u64::MAX,
            mtime_ns: i128::MIN,
        }),
    };
    let line = record.to_text();
    assert_eq!(line.len(), RECORD_LEN, "{line}");
    assert!(line.ends_with(" \n"), "{line}");
}

/// A record written before records had checks (one line, renamed into place) still
/// gives the version; the next save replaces it with a fixed-length one.
#[test]
fn a_record_without_a_check_is_read_and_then_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    s.save_checked("old", r#"{"id":"old","n":1}"#).unwrap();
    let meta = fs::metadata(dir.path().join("old.json")).unwrap();
    let stamp = platform::stamp_of(&meta);
    let legacy = format!(
        "{{\"format\":1,\"version\":41,\"size\":{},\"mtime_ns\":{}}}\n",
        stamp.size, stamp.mtime_ns
    );
    fs::write(dir.path().join(".~old.v"), &legacy).unwrap();
    assert_eq!(s.get_versioned("old").unwrap().unwrap().1, 41);
    assert_eq!(
        s.save_checked_if("old", r#"{"id":"old","n":2}"#, Expect::Version(41))
            .unwrap(),
        42
    );
    let record = fs::read_to_string(dir.path().join(".~old.v")).unwrap();
    assert_eq!(record.len(), RECORD_LEN);
    assert_eq!(s.get_versioned("old").unwrap().unwrap().1, 42);
}

/// A record whose check fails (what a reader sees when it copies the record while a save
/// overwrites it) is never taken at its word: still unsettled when read again, it counts as
/// no record (version 1), and the save after it starts the count again.
#[test]
fn a_record_that_fails_its_check_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    for n in 1..=3 {
        s.save_checked("c", &format!(r#"{{"id":"c","n":{n}}}"#))
            .unwrap();
    }
    let path = dir.path().join(".~c.v");
    let good = fs::read_to_string(&path).unwrap();
    assert!(good.contains(r#""version":3,"#));
    // The version of a later save spliced into this one's line: valid JSON, wrong check.
    let torn = good.replacen(r#""version":3,"#, r#""version":9,"#, 1);
    fs::write(&path, &torn).unwrap();
    assert_eq!(Record::parse(&good).map(|r| r.version), Some(3));
    assert_eq!(Record::parse(&torn), None);
    assert_eq!(s.get_versioned("c").unwrap().unwrap().1, 1);
    assert_eq!(s.save_checked("c", r#"{"id":"c","n":4}"#).unwrap(), 2);
    assert!(
        !dir.path().join(".~c.l").exists(),
        "a read never takes the lock"
    );
}

/// A store whose caller checks what it gets returns a Task file's text unscanned, with its
/// version, and still refuses everything that is not UTF-8 text in a regular file of
/// bounded size; a store that checks refuses the same text, naming the file.
#[test]
fn gets_checked_by_the_caller_skip_only_the_task_scan() {
    let dir = tempfile::tempdir().unwrap();
    let checked = store(&dir);
    let unchecked = store(&dir).with_gets_checked_by_caller();
    checked.save_checked("t", r#"{"id":"t"}"#).unwrap();
    for text in [r#"{"id":"t","n":"#, r#"{"id":"someone-else"}"#, "[1]"] {
        fs::write(dir.path().join("t.json"), text).unwrap();
        let err = checked.get_versioned("t").unwrap_err();
        assert!(
            matches!(&err, DirError::Corrupt { file, .. } if file.ends_with("t.json")),
            "{text}: {err}"
        );
        assert!(checked.get_text("t").is_err(), "{text}");
        // The version counts the foreign text as a save (its stamp is not the record's).
        assert_eq!(
            unchecked.get_versioned("t").unwrap(),
            Some((text.to_owned(), 2)),
            "{text}"
        );
        assert_eq!(unchecked.get_text("t").unwrap(), Some(text.to_owned()));
        #[cfg(target_os = "linux")]
        if let Some(found) = unchecked.try_get_text_cached("t") {
            assert_eq!(found.unwrap(), Some(text.to_owned()));
        }
    }
    fs::write(dir.path().join("t.json"), b"{\"id\":\"t\",\"x\":\"\xff\"}").unwrap();
    let err = unchecked.get_versioned("t").unwrap_err();
    assert!(
        matches!(&err, DirError::Corrupt { file, reason } if file.ends_with("t.json") && reason.contains("UTF-8")),
        "{err}"
    );
    fs::remove_file(dir.path().join("t.json")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("elsewhere.json", dir.path().join("t.json")).unwrap();
    #[cfg(unix)]
    assert!(matches!(
        unchecked.get_text("t").unwrap_err(),
        DirError::Corrupt { .. }
    ));
}

#[test]
fn only_a_record_of_the_documented_shape_is_read() {
    let record = Record {
        version: 7,
        stamp: Stamp {
            size: 12,
            mtime_ns: -3,
        },
        prev: None,
    };
    let line = record.to_text();
    assert_eq!(Record::parse(&line), Some(record));
    let check = record.check(1);
    assert_eq!(check.len(), 16);
    assert_eq!(check, record.check(2), "no previous file: the same check");
    // Members in any order, and members it does not know, are fine.
    let reordered = format!(
        r#"{{"check":"{check}","mtime_ns":-3,"size":12,"extra":[1],"version":7,"format":1}}"#
    );
    assert_eq!(Record::parse(&reordered), Some(record));
    // Written before records had checks.
    let unchecked = r#"{"format":1,"version":7,"size":12,"mtime_ns":-3}"#;
    assert_eq!(Record::parse(unchecked), Some(record));
    let with_prev = Record {
        prev: Some(Stamp {
            size: 5,
            mtime_ns: -4,
        }),
        ..record
    }
    .to_text();
    for bad in [
        // A check must be a string when it is there.
        r#"{"format":1,"version":7,"size":12,"mtime_ns":-3,"check":null}"#.to_owned(),
        r#"{"format":1,"version":7,"size":12,"mtime_ns":-3,"check":7}"#.to_owned(),
        // Another format, a missing or mistyped field, a field out of range.
        line.replacen(r#""format":2"#, r#""format":3"#, 1),
        // Format 2 needs its check; a previous file needs both its fields, and only
        // format 2 has one.
        line.replacen(&format!(r#","check":"{check}""#), "", 1),
        with_prev.replacen(r#","prev_size":5"#, "", 1),
        with_prev.replacen(r#""format":2"#, r#""format":1"#, 1),
        with_prev.replacen(r#""prev_size":5"#, r#""prev_size":6"#, 1),
        line.replacen(r#""size":12,"#, "", 1),
        line.replacen(r#""version":7"#, r#""version":"7""#, 1),
        line.replacen(r#""version":7"#, r#""version":-7"#, 1),
        line.replacen(r#""version":7"#, r#""version":7.0"#, 1),
        line.replacen(r#""mtime_ns":-3"#, r#""mtime_ns":9223372036854775808"#, 1),
        // Not JSON, or cut short.
        line[..line.trim_end().len() / 2].to_owned(),
        "not a record".to_owned(),
    ] {
        assert_eq!(Record::parse(&bad), None, "{bad}");
    }
}

/// Lock-free readers beside a writer: the version read is never newer than the text read
/// (each text carries the version its save returned), whatever moment the record is
/// copied at.
#[test]
fn readers_racing_a_writer_never_see_a_version_newer_than_the_text() {
    let dir = tempfile::tempdir().unwrap();
    let s = std::sync::Arc::new(DirStore::new(dir.path(), Durability::Relaxed));
    s.save_checked("race", r#"{"id":"race","n":1}"#).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (s, stop) = (s.clone(), stop.clone());
            let reads = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
            let counted = reads.clone();
            let thread = std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let (text, version) = s.get_versioned("race").unwrap().unwrap();
                    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
                    let n = value["n"].as_u64().unwrap();
                    assert!(version <= n, "version {version} read with the text of {n}");
                    counted.fetch_add(1, Ordering::Relaxed);
                }
            });
            (thread, reads)
        })
        .collect();
    // At least 300 versions, and on until each reader has read 20 times while they were
    // written (a thread may start late on a loaded machine); a reader that failed ends it.
    let mut n = 1u64;
    while n < 300
        || readers
            .iter()
            .any(|(thread, reads)| !thread.is_finished() && reads.load(Ordering::Relaxed) < 20)
    {
        n += 1;
        let v = s
            .save_checked("race", &format!(r#"{{"id":"race","n":{n}}}"#))
            .unwrap();
        assert_eq!(v, n);
    }
    stop.store(true, Ordering::Relaxed);
    for (thread, reads) in readers {
        thread.join().unwrap();
        assert!(reads.load(Ordering::Relaxed) >= 20);
    }
}

#[test]
fn a_task_written_without_versions_reads_and_moves_on() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    // A seed store (or an older component) writes the plain file only.
    fs::write(dir.path().join("seed.json"), r#"{"id":"seed","n":1}"#).unwrap();
    assert_eq!(s.get_versioned("seed").unwrap().unwrap().1, 1);
    assert_eq!(
        s.save_checked_if("seed", r#"{"id":"seed","n":2}"#, Expect::Version(1))
            .unwrap(),
        2
    );
    // A seed writer overwrites it: the record no longer describes the file.
    std::thread::sleep(Duration::from_millis(20));
    fs::write(dir.path().join("seed.json"), r#"{"id":"seed","n":333}"#).unwrap();
    let (text, version) = s.get_versioned("seed").unwrap().unwrap();
    assert_eq!((text.as_str(), version), (r#"{"id":"seed","n":333}"#, 3));
    let err = s
        .save_checked_if("seed", r#"{"id":"seed","n":4}"#, Expect::Version(2))
        .unwrap_err();
    assert!(matches!(
        err,
        DirError::Conflict {
            current: Some(3),
            ..
        }
    ));
}

#[test]
fn a_lock_left_by_a_crash_is_broken_after_the_lease_and_a_live_one_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir).with_lock_lease(Duration::from_millis(300));
    s.save_text(r#"{"id":"k"}"#).unwrap();
    // A crashed writer's lock: a fresh one must be waited out, then broken.
    let lock = dir.path().join(".~k.l");
    fs::write(&lock, "dead-writer").unwrap();
    // The lease runs from the lock file's modification time, which the kernel takes from a
    // coarse clock (up to a tick before the write returns): measure from it, not from now.
    let written = fs::metadata(&lock).unwrap().modified().unwrap();
    assert_eq!(
        s.save_checked_if("k", r#"{"id":"k","n":2}"#, Expect::Version(1))
            .unwrap(),
        2
    );
    let waited = SystemTime::now().duration_since(written).unwrap();
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(!lock.exists(), "the lock is released after the save");
}

/// A lock planted as a FIFO and a version record planted as a link to an endless file are
/// never read through: the save breaks the stale lock and goes on, the record counts as
/// none. (Reading the FIFO would block for good: no one ever writes it.)
#[cfg(unix)]
#[test]
fn planted_fifos_and_links_as_lock_or_record_are_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir).with_lock_lease(Duration::from_millis(50));
    s.save_text(r#"{"id":"k"}"#).unwrap();
    fs::remove_file(dir.path().join(".~k.v")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.path().join(".~k.v")).unwrap();
    let fifo = std::ffi::CString::new(dir.path().join(".~k.l").to_str().unwrap()).unwrap();
    let old = libc::timespec {
        tv_sec: 1,
        tv_nsec: 0,
    };
    // SAFETY: a valid C path and two valid timespecs.
    unsafe {
        assert_eq!(libc::mkfifo(fifo.as_ptr(), 0o600), 0);
        assert_eq!(
            libc::utimensat(libc::AT_FDCWD, fifo.as_ptr(), [old, old].as_ptr(), 0),
            0
        );
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let version = s.get_versioned("k").map(|v| v.map(|(_, v)| v));
        let saved = s.save_checked_if("k", r#"{"id":"k","n":2}"#, Expect::Version(1));
        let _ = tx.send((version, saved, dir));
    });
    let (version, saved, _dir) = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the save never blocks on what was planted");
    assert_eq!(version.unwrap(), Some(1), "no readable record: version 1");
    assert_eq!(saved.unwrap(), 2);
}

#[test]
fn a_writer_that_lost_its_lock_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    s.save_text(r#"{"id":"k"}"#).unwrap();
    let lock = s.lock(dir.path().join(".~k.l")).unwrap();
    // Another writer judged it stale (as if this one had stalled past its lease), broke it
    // as the protocol does (aside, then removed) and took it.
    let path = dir.path().join(".~k.l");
    let long_ago = SystemTime::now() - s.lock_lease() * 2;
    File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(long_ago)
        .unwrap();
    lock::break_lock(&path, s.lock_lease());
    let theirs = s.lock(dir.path().join(".~k.l")).unwrap();
    let err = lock.check_held().unwrap_err();
    assert!(err.to_string().contains("taken over"), "{err}");
    lock.release();
    assert_eq!(
        platform::identity_at(&path).unwrap(),
        theirs.identity.unwrap(),
        "unlock leaves a lock that is not ours"
    );
    assert!(
        theirs.check_held().is_ok(),
        "the new holder's lock is intact"
    );
}

#[test]
fn racing_conditional_saves_have_exactly_one_winner_per_version() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    s.save_text(r#"{"id":"r"}"#).unwrap();
    for round in 1..=5u64 {
        let wins: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|w| {
                    let s = s.clone();
                    scope.spawn(move || {
                        s.save_checked_if(
                            "r",
                            &format!(r#"{{"id":"r","w":{w}}}"#),
                            Expect::Version(round),
                        )
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let winners = wins.iter().filter(|r| r.is_ok()).count();
        assert_eq!(winners, 1, "round {round}: {wins:?}");
        for r in &wins {
            match r {
                Ok(v) => assert_eq!(*v, round + 1),
                Err(DirError::Conflict { current, .. }) => {
                    assert_eq!(*current, Some(round + 1))
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
}

#[test]
fn list_reports_a_corrupt_file() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("bad.json"), "{").unwrap();
    let err = store(&dir).list_texts(&ListQuery::default()).unwrap_err();
    assert!(
        matches!(err, DirError::Corrupt { .. }) && err.to_string().contains("bad.json"),
        "{err}"
    );
}

#[test]
fn temp_names_are_unique() {
    let names: std::collections::HashSet<_> = (0..10_000).map(|_| temp::random_u128()).collect();
    assert_eq!(names.len(), 10_000);
}

//! Versions and their records: the record line and its fixed length, how the version follows
//! from record and stamp, records without or failing their check, and readers racing a writer.

use super::*;

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
/// overwrites it) is never taken at its word: a lock-free reader that still finds it unsettled
/// counts it as no record (version 1, so a conditional save on what it read fails rather than
/// wrongly succeeds). A saver, holding the lock, knows no one is writing it: it is corruption,
/// named, and nothing is written (counting from 1 again would let an old compare-and-set win)
/// until the record is removed.
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
    for expect in [Expect::Any, Expect::Version(1)] {
        let err = s
            .save_checked_if("c", r#"{"id":"c","n":4}"#, expect)
            .unwrap_err();
        assert!(
            matches!(&err, DirError::Corrupt { file, .. } if file.ends_with(".~c.v")),
            "{err}"
        );
    }
    assert_eq!(fs::read_to_string(&path).unwrap(), torn, "nothing written");
    assert_eq!(
        s.get_text("c").unwrap().as_deref(),
        Some(r#"{"id":"c","n":3}"#)
    );
    assert!(!dir.path().join(".~c.l").exists(), "the lock is released");
    fs::remove_file(&path).unwrap();
    assert_eq!(s.save_checked("c", r#"{"id":"c","n":4}"#).unwrap(), 2);
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

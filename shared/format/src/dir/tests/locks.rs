//! Locks and leases: a slow flush renews its lock, a live writer's lock is never broken however
//! long it stalls, a lock taken over or lost writes nothing (the lease alone, as without kernel
//! locks), a crash before the rename or while holding the lock, locks aged by the waiter's own
//! clock, planted FIFOs and links, and racing conditional saves with one winner per version.

use super::*;

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

/// Without kernel locks (the lease alone guards a lock, as for a component under a host that
/// fences nothing), a save whose flush outlasts the whole lease (1.5 s under a 200 ms lease)
/// has its lock broken and taken by another writer, which saves version 2. The slow save then
/// fails as having lost its lock and writes nothing: before, it renewed the lock it no longer
/// held and wrote its record over the other writer's, so that the Task read as version 3 and a
/// save conditional on the acknowledged version 2 was refused.
#[test]
fn a_save_whose_lock_was_taken_over_during_its_flush_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let lease = Duration::from_millis(200);
    let mut slow = store(&dir).with_lock_lease(lease);
    slow.lease_only = true;
    slow.save_checked("t", r#"{"id":"t","n":1}"#).unwrap();
    slow.slow_flush = Duration::from_millis(1500);
    let mut other = store(&dir).with_lock_lease(lease);
    other.lease_only = true;
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

/// Without kernel locks, the issue's sequence: writer W stalls for a second between its last
/// check and its rename (200 ms lease); writer C breaks W's stale lock, takes it and is slow
/// flushing its text when W's rename moves C's lock over the Task file. W must not be told it
/// won: its rename came past half the lease, and the Task file is not W's file, so its outcome
/// is unknown (before, W was acknowledged). C, whose lock is gone, fails. What stays assumed in
/// this mode is that C's text, in place, was written by then (`docs/on-disk-format.md`).
#[test]
fn a_rename_that_comes_past_half_the_lease_is_not_acknowledged() {
    fn stall(_: &Path) {
        std::thread::sleep(Duration::from_millis(1000));
    }
    let dir = tempfile::tempdir().unwrap();
    let lease = Duration::from_millis(200);
    let mut w = store(&dir).with_lock_lease(lease);
    w.lease_only = true;
    w.save_checked("t", r#"{"id":"t","n":1}"#).unwrap();
    w.before_rename = Some(stall);
    let mut c = store(&dir).with_lock_lease(lease);
    c.lease_only = true;
    c.slow_flush = Duration::from_millis(2000);
    let lock = dir.path().join(".~t.l");
    let (w_result, c_result) = std::thread::scope(|scope| {
        let w = scope.spawn(|| w.save_checked("t", r#"{"id":"t","n":"w"}"#));
        while !lock.exists() {
            std::thread::yield_now();
        }
        let c = scope.spawn(|| c.save_checked("t", r#"{"id":"t","n":"c"}"#));
        (w.join().unwrap(), c.join().unwrap())
    });
    let err = w_result.unwrap_err();
    assert!(matches!(err, DirError::LateRename { .. }), "{err}");
    assert!(err.to_string().contains("read the Task again"), "{err}");
    let err = c_result.unwrap_err();
    assert!(
        matches!(
            &err,
            DirError::Io {
                op: "save under lock",
                ..
            }
        ),
        "{err}"
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

/// A writer whose lock was broken by one that ignores kernel locks (as if it had stalled past
/// its lease under the lease alone) finds out at its last check and changes nothing.
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
    let seen = Seen {
        identity: platform::identity_at(&path).ok(),
        stamp: platform::stamp_at(&path).unwrap(),
    };
    lock::break_lock(&path, seen, Default::default());
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

/// A live writer keeps its lock however long it stalls: its flush takes 1.5 s under a 200 ms
/// lease, and a second writer, finding the lock's kernel lock held, waits instead of breaking
/// it, gives up after three leases having written nothing, and the slow save wins. Before the
/// kernel lock, the second writer broke the lock after the lease and won the version instead.
#[test]
fn a_live_writer_keeps_its_lock_however_long_it_stalls() {
    let dir = tempfile::tempdir().unwrap();
    let lease = Duration::from_millis(200);
    let mut slow = store(&dir).with_lock_lease(lease);
    slow.save_checked("t", r#"{"id":"t","n":1}"#).unwrap();
    slow.slow_flush = Duration::from_millis(1500);
    let other = store(&dir).with_lock_lease(lease);
    let lock = dir.path().join(".~t.l");
    let (slow_result, other_result) = std::thread::scope(|scope| {
        let slow = scope.spawn(|| slow.save_checked("t", r#"{"id":"t","n":"slow"}"#));
        while !lock.exists() {
            std::thread::yield_now();
        }
        let other_result =
            other.save_checked_if("t", r#"{"id":"t","n":"other"}"#, Expect::Version(1));
        (slow.join().unwrap(), other_result)
    });
    assert_eq!(slow_result.unwrap(), 2, "the stalled writer's save holds");
    let err = other_result.unwrap_err();
    assert!(
        matches!(&err, DirError::Io { op: "lock", source, .. }
            if source.kind() == io::ErrorKind::TimedOut),
        "{err}"
    );
    assert_eq!(
        other.get_versioned("t").unwrap(),
        Some((r#"{"id":"t","n":"slow"}"#.into(), 2))
    );
}

/// A crashed writer's lock whose modification time is an hour in the future (a clock stepped
/// back since, or a writer on another machine) is broken once the waiter has seen it unchanged
/// for a lease by its own clock. Judged by its time against the wall clock it looked newer
/// than the lease for an hour, and the Task could not be saved.
#[test]
fn a_dead_lock_from_the_future_is_broken_after_one_lease() {
    let dir = tempfile::tempdir().unwrap();
    let lease = Duration::from_millis(200);
    let s = store(&dir).with_lock_lease(lease);
    s.save_text(r#"{"id":"f"}"#).unwrap();
    let lock = dir.path().join(".~f.l");
    fs::write(&lock, "dead-writer").unwrap();
    File::options()
        .write(true)
        .open(&lock)
        .unwrap()
        .set_modified(SystemTime::now() + Duration::from_secs(3600))
        .unwrap();
    let started = std::time::Instant::now();
    assert_eq!(
        s.save_checked_if("f", r#"{"id":"f","n":2}"#, Expect::Version(1))
            .unwrap(),
        2
    );
    assert!(started.elapsed() >= lease, "{:?}", started.elapsed());
    assert!(!lock.exists());
}

/// Without kernel locks, a lock whose modification time is long past (a clock stepped
/// forward) but that its writer keeps renewing is not broken: the waiter sees it change.
#[test]
fn a_renewed_lock_with_an_old_time_is_not_broken_under_the_lease_alone() {
    let dir = tempfile::tempdir().unwrap();
    let lease = Duration::from_millis(100);
    let mut s = store(&dir).with_lock_lease(lease);
    s.lease_only = true;
    s.save_text(r#"{"id":"r"}"#).unwrap();
    let lock = dir.path().join(".~r.l");
    fs::write(&lock, "live").unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    let result = std::thread::scope(|scope| {
        // The live writer: its lock's time moves on every 20 ms, always a day in the past.
        scope.spawn(|| {
            let mut day_ago = SystemTime::now() - Duration::from_secs(86_400);
            while !done.load(Ordering::Relaxed) {
                day_ago += Duration::from_millis(1);
                let _ = File::options()
                    .write(true)
                    .open(&lock)
                    .and_then(|f| f.set_modified(day_ago));
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let result = s.save_checked("r", r#"{"id":"r","n":2}"#);
        done.store(true, Ordering::Relaxed);
        result
    });
    let err = result.unwrap_err();
    assert!(
        matches!(&err, DirError::Io { op: "lock", .. }),
        "the waiter gave up, breaking nothing: {err}"
    );
    assert_eq!(fs::read_to_string(&lock).unwrap(), "live");
}

/// The temp-file sweep leaves locks alone, however old: one look cannot tell a dead writer's
/// lock from a live one's. The next save of the Task breaks a dead one.
#[test]
fn the_sweep_leaves_locks_to_the_next_save() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir).with_lock_lease(Duration::from_millis(50));
    s.save_text(r#"{"id":"w"}"#).unwrap();
    let lock = dir.path().join(".~w.l");
    fs::write(&lock, "old").unwrap();
    File::options()
        .write(true)
        .open(&lock)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(86_400))
        .unwrap();
    s.sweep_temp_files(Duration::ZERO).unwrap();
    assert!(lock.exists());
    assert_eq!(s.save_text(r#"{"id":"w","n":2}"#).unwrap(), 2);
    assert!(!lock.exists());
}

//! The compiled-component cache across real processes: a second process does not compile again,
//! concurrent processes share one cache safely, and a corrupt entry is recompiled, never trusted.

use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::Command;

const LOADER: &str = env!("CARGO_BIN_EXE_tn-load");

fn load(cache: &Path) -> Value {
    let out = Command::new(LOADER)
        .arg(cache)
        .output()
        .expect("tn-load runs");
    assert!(
        out.status.success(),
        "tn-load failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("tn-load prints JSON")
}

fn entries(cache: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = fs::read_dir(cache)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn a_second_process_loads_from_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    assert_eq!(load(&cache)["outcome"], "compiled");
    let files = entries(&cache);
    assert_eq!(files.len(), 1, "one entry: {files:?}");
    assert!(files[0].extension().is_some_and(|e| e == "cwasm"));
    assert_eq!(load(&cache)["outcome"], "disk");
    assert_eq!(entries(&cache), files, "a hit writes nothing");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "the cache directory is private");
    }
}

#[test]
fn corrupt_or_truncated_entries_are_recompiled_and_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    load(&cache);
    let entry = entries(&cache).pop().unwrap();
    let good = fs::read(&entry).unwrap();
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0xff;
    for bad in [
        flipped,
        good[..good.len() / 3].to_vec(),
        b"garbage".to_vec(),
        Vec::new(),
    ] {
        fs::write(&entry, &bad).unwrap();
        assert_eq!(
            load(&cache)["outcome"],
            "compiled",
            "a bad entry is never used"
        );
        assert_eq!(
            fs::read(&entry).unwrap().len(),
            good.len(),
            "the entry was rewritten whole"
        );
        assert_eq!(load(&cache)["outcome"], "disk");
    }
}

#[test]
fn concurrent_processes_share_one_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let children: Vec<_> = (0..4)
        .map(|_| {
            Command::new(LOADER)
                .arg(&cache)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let files = entries(&cache);
    assert_eq!(
        files.len(),
        1,
        "one entry and no temp files left: {files:?}"
    );
    assert_eq!(load(&cache)["outcome"], "disk");
}

#[test]
fn the_cache_can_be_turned_off() {
    let out = Command::new(LOADER).arg("off").output().unwrap();
    assert!(out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["outcome"], "compiled");
}

/// Entries are native code run without further checks: a cache directory that anyone but us
/// could write to is neither read nor written, and the component is compiled instead.
#[cfg(unix)]
#[test]
fn a_cache_directory_others_can_write_is_never_used() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    load(&cache);
    let entry = entries(&cache).pop().unwrap();
    for mode in [0o777, 0o770, 0o1777] {
        fs::set_permissions(&cache, fs::Permissions::from_mode(mode)).unwrap();
        assert_eq!(
            load(&cache)["outcome"],
            "compiled",
            "mode {mode:o}: an entry there could be anyone's"
        );
    }
    // A fresh directory others can write gets no entry either.
    let open = tmp.path().join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    load(&open);
    assert_eq!(entries(&open), Vec::<std::path::PathBuf>::new());
    // Private again: the entry is used.
    fs::set_permissions(&cache, fs::Permissions::from_mode(0o700)).unwrap();
    assert!(entry.exists());
    assert_eq!(load(&cache)["outcome"], "disk");
}

/// In a private directory, an entry others can write, a link, or an entry another user owns
/// is never used (and is replaced by a fresh private entry).
#[cfg(unix)]
#[test]
fn entries_others_could_have_written_are_never_used() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    load(&cache);
    let entry = entries(&cache).pop().unwrap();
    assert_eq!(
        fs::metadata(&entry).unwrap().permissions().mode() & 0o777,
        0o600,
        "entries are private"
    );

    fs::set_permissions(&entry, fs::Permissions::from_mode(0o666)).unwrap();
    assert_eq!(load(&cache)["outcome"], "compiled", "a writable entry");
    assert_eq!(load(&cache)["outcome"], "disk", "replaced by a private one");

    // The same bytes behind a link (here to a private file of ours, elsewhere).
    let elsewhere = tmp.path().join("elsewhere.cwasm");
    fs::rename(&entry, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &entry).unwrap();
    assert_eq!(load(&cache)["outcome"], "compiled", "a link");
    assert!(!fs::symlink_metadata(&entry).unwrap().is_symlink());
    assert_eq!(load(&cache)["outcome"], "disk");

    // Another user's entry (only root can make one).
    if fs::metadata(&cache).unwrap().uid() == 0 {
        std::os::unix::fs::chown(&entry, Some(65534), Some(65534)).unwrap();
        assert_eq!(load(&cache)["outcome"], "compiled", "another user's entry");
    } else {
        eprintln!("not root: the other-owner case needs chown and is left out of this run");
    }
}

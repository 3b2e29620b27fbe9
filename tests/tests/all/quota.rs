//! The disk quota of read-write components: whichever way a component writes (std's files,
//! `descriptor.write`, output streams, appends, a sparse `set-size`, empty files), its
//! directory never holds more than the quota, the refused write fails inside the guest as
//! `insufficient-space`, and a call that fails because of it is reported as `Limit::Disk`.

use serde_json::json;
use std::path::Path;
use std::time::Duration;
use toolnexus::wasm::{ComponentSource, ENTRY_BYTES, WasmTaskStore};
use toolnexus::wasm::{Sandboxed, SandboxedDir};
use toolnexus::{Limit, StoreError, TaskStore};
use toolnexus_conformance::{hostile_builder, is_limit, task};

const QUOTA: u64 = 1 << 20;

/// What it tries to add: eight times the quota.
const ATTEMPT: u64 = 8 << 20;

fn hostile(dir: &Path, quota: u64) -> WasmTaskStore {
    hostile_builder()
        .dir(dir)
        .timeout(Duration::from_secs(20))
        .disk_quota(quota)
        .build()
        .unwrap()
}

/// Asks the fixture to add [`ATTEMPT`] bytes by `how`: what it added, and what stopped it.
async fn fill(store: &WasmTaskStore, how: &str) -> (u64, String) {
    let report = store
        .get(&format!("fill:{how}:{ATTEMPT}"))
        .await
        .unwrap()
        .expect("a report");
    let field = |name: &str| report.get(name).unwrap().as_str().unwrap().to_owned();
    (field("added").parse().unwrap(), field("stopped"))
}

/// What `dir` holds, counted as the quota counts it, measured here independently.
fn held(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let meta = entry.unwrap().metadata().unwrap();
        total += ENTRY_BYTES + if meta.is_file() { meta.len() } else { 0 };
        if meta.is_dir() {
            panic!("the fixture makes no directories");
        }
    }
    total
}

#[tokio::test(flavor = "multi_thread")]
async fn every_way_of_writing_stops_at_the_quota() {
    for how in [
        "std",
        "pwrite",
        "stream",
        "append",
        "set-size",
        "files",
        "rename-self",
        "truncate-reuse",
        "unlink-held",
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let store = hostile(tmp.path(), QUOTA);
        let (added, stopped) = fill(&store, how).await;
        let stopped = stopped.to_lowercase();
        // wasi-libc (under Rust's std) turns every stream error into EIO; the WASI calls
        // themselves say `insufficient-space`.
        let full = if how == "std" {
            "i/o error"
        } else {
            "insufficient-space"
        };
        assert!(
            stopped.contains(full),
            "{how}: the guest should see the disk as full, it saw {stopped:?} after {added} bytes"
        );
        assert!(added <= QUOTA, "{how}: it added {added} bytes");
        let held = held(tmp.path());
        assert!(held <= QUOTA, "{how}: the directory holds {held} bytes");
        assert_eq!(
            store.disk_used(),
            Some(held),
            "{how}: the count matches the directory"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_that_fails_on_a_refused_write_reports_the_disk_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let store = hostile(tmp.path(), QUOTA);
    let err = store
        .get(&format!("fill-fail:stream:{ATTEMPT}"))
        .await
        .unwrap_err();
    assert!(is_limit(&err, Limit::Disk(QUOTA)), "{err}");
    assert!(
        err.to_string().contains("disk quota of 1048576 bytes"),
        "{err}"
    );
    // The store keeps answering.
    assert_eq!(store.get("nothing").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_count_starts_from_what_the_directory_held() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("old.bin"), vec![0u8; 900 << 10]).unwrap();
    let store = hostile(tmp.path(), QUOTA);
    assert_eq!(store.disk_used(), Some((900 << 10) + ENTRY_BYTES));
    let (added, _) = fill(&store, "pwrite").await;
    assert!(
        added <= QUOTA - (900 << 10) - ENTRY_BYTES,
        "it added {added}"
    );
    assert!(held(tmp.path()) <= QUOTA);
}

/// The built-in file store under a small quota: rewriting a Task reuses its room (the rename
/// over the old file frees it), a new Task past the quota is refused as the disk limit with
/// nothing left behind, and deleting makes room again.
#[tokio::test(flavor = "multi_thread")]
async fn the_file_store_frees_what_it_replaces_and_deletes() {
    let tmp = tempfile::tempdir().unwrap();
    let store = WasmTaskStore::builder(ComponentSource::BuiltinFileStore)
        .dir(tmp.path())
        .disk_quota(256 << 10)
        .build()
        .unwrap();
    let big = |id: &str, n: u64| task(json!({"id": id, "n": n, "pad": "x".repeat(100 << 10)}));
    for n in 0..20 {
        store.save(&big("a", n)).await.unwrap();
    }
    store.save(&big("b", 0)).await.unwrap();
    let before = toolnexus_conformance::snapshot(tmp.path());
    let err = store.save(&big("c", 0)).await.unwrap_err();
    assert!(is_limit(&err, Limit::Disk(256 << 10)), "{err}");
    assert_eq!(
        toolnexus_conformance::snapshot(tmp.path()),
        before,
        "a refused save leaves the directory as it was"
    );
    assert_eq!(store.disk_used(), Some(held(tmp.path())));
    store.delete("b").await.unwrap();
    store.save(&big("c", 0)).await.unwrap();
    assert_eq!(store.get("a").await.unwrap(), Some(big("a", 19)));
    assert_eq!(store.get("c").await.unwrap(), Some(big("c", 0)));
}

#[test]
fn the_quota_option_takes_a_size() {
    let tmp = tempfile::tempdir().unwrap();
    let selector = format!("wasm:builtin?dir={}&quota=lots", tmp.path().display());
    let Err(err) = toolnexus::resolve_store(selector.as_str()) else {
        panic!("a bad quota was accepted");
    };
    assert!(
        matches!(err, StoreError::InvalidSelector { ref reason, .. } if reason.contains("\"quota\"")),
        "{err}"
    );
}

/// The hostile fixture over `dir` under [`QUOTA`], with two instances, for calls racing.
fn two_instances(dir: &Path) -> std::sync::Arc<WasmTaskStore> {
    std::sync::Arc::new(
        hostile_builder()
            .dir(dir)
            .timeout(Duration::from_secs(30))
            .disk_quota(QUOTA)
            .max_instances(2)
            .build()
            .unwrap(),
    )
}

/// Waits until `path` exists (a component's mark), for at most a minute.
async fn wait_for(path: &Path) {
    let started = std::time::Instant::now();
    while !path.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A file one instance holds open and another unlinks still takes its space: it is counted
/// until no instance of the pool holds it. Before, the unlinking instance was credited at once
/// (it held no file itself), and the directory could hold more than its quota.
#[tokio::test(flavor = "multi_thread")]
async fn a_file_another_instance_holds_is_counted_until_it_is_let_go() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("big.bin"), vec![0u8; 512 << 10]).unwrap();
    let store = two_instances(tmp.path());
    let full = store.disk_used().unwrap();
    let holder = {
        let store = std::sync::Arc::clone(&store);
        tokio::spawn(async move { store.get("hold-open:big.bin:gate").await })
    };
    wait_for(&tmp.path().join("gate.opened")).await;
    assert_eq!(store.get("unlink:big.bin").await.unwrap(), None);
    assert!(!tmp.path().join("big.bin").exists());
    assert!(
        store.disk_used().unwrap() >= full,
        "credited while another instance holds it: {} < {full}",
        store.disk_used().unwrap()
    );
    std::fs::write(tmp.path().join("gate"), b"").unwrap();
    assert_eq!(holder.await.unwrap().unwrap(), None);
    std::fs::remove_file(tmp.path().join("gate")).unwrap();
    // Let go: given back.
    assert_eq!(store.disk_used(), Some(held(tmp.path())));
}

/// Two instances writing and truncating one file at once are each charged for what they add
/// and credited for what they free, once: the count stays what the directory holds. Before,
/// both measured the same length and both were credited for it, and the count fell below what
/// the directory held.
#[tokio::test(flavor = "multi_thread")]
async fn instances_racing_to_truncate_one_file_are_credited_once() {
    let tmp = tempfile::tempdir().unwrap();
    let store = two_instances(tmp.path());
    let racers: Vec<_> = (0..2)
        .map(|_| {
            let store = std::sync::Arc::clone(&store);
            tokio::spawn(async move { store.get("truncate-race:shared.bin:2000").await })
        })
        .collect();
    for racer in racers {
        assert_eq!(racer.await.unwrap().unwrap(), None);
    }
    assert_eq!(store.disk_used(), Some(held(tmp.path())));
}

//! A component that hoards host resources cannot take the process's file descriptors: past
//! 1,024 at once its call fails with the handle limit, and its instance is dropped, closing
//! them.
//!
//! The hoarded handles are opens of a file in the component's own directory, so each test
//! counts only the descriptors that point into its own temp directory: tests running beside
//! it in this process, opening and closing descriptors of their own, do not change that count.

use std::path::Path;
use std::time::Duration;
use toolnexus::wasm::WasmTaskStore;
use toolnexus::{Limit, TaskStore};
use toolnexus_conformance::is_limit;

/// The hostile fixture over `dir`, one instance at a time.
fn hostile(dir: &Path) -> WasmTaskStore {
    toolnexus_conformance::hostile_builder()
        .dir(dir)
        .timeout(Duration::from_secs(10))
        .max_instances(1)
        .build()
        .unwrap()
}

/// How many of this process's descriptors are open on `dir` or on something in it.
fn descriptors_under(dir: &Path) -> usize {
    let dir = dir.canonicalize().unwrap();
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        // A descriptor closed between the listing and its `readlink` has no target: not ours.
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter(|target| target.starts_with(&dir))
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn hoarded_handles_are_bounded_and_closed_after_the_call() {
    let tmp = tempfile::tempdir().unwrap();
    let store = hostile(tmp.path());
    assert_eq!(store.get("nothing").await.unwrap(), None);
    let before = descriptors_under(tmp.path());

    let err = store.get("hoard").await.unwrap_err();
    assert!(is_limit(&err, Limit::Handles(1024)), "{err}");
    // The hoarding instance was dropped; the next call gets a fresh one (with its own
    // directory handle, as the pooled one had).
    assert_eq!(store.get("nothing").await.unwrap(), None);
    assert_eq!(
        descriptors_under(tmp.path()),
        before,
        "descriptors leaked past the call"
    );
}

/// Fewer than the limit, kept past the call: the call succeeds, but the instance is not pooled
/// with them.
#[tokio::test(flavor = "multi_thread")]
async fn handles_kept_past_a_call_are_closed_with_their_instance() {
    let tmp = tempfile::tempdir().unwrap();
    let store = hostile(tmp.path());
    assert_eq!(store.get("nothing").await.unwrap(), None);
    let before = descriptors_under(tmp.path());
    let report = store.get("hoard:200").await.unwrap().expect("a report");
    assert_eq!(report.get("opened").unwrap(), "200");
    assert_eq!(store.get("nothing").await.unwrap(), None);
    assert_eq!(
        descriptors_under(tmp.path()),
        before,
        "descriptors leaked past the call"
    );
}

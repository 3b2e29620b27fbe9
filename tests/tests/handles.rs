//! A component that hoards host resources cannot take the process's file descriptors: past
//! 1,024 at once its call fails with the handle limit, and its instance is dropped, closing
//! them. (Its own test binary, its tests one at a time: they count the process's
//! descriptors, which tests running beside them would change, and each runs on a runtime of
//! its own that is shut down, closing its own descriptors, before the next test starts.)

use std::time::Duration;
use toolnexus::wasm::WasmTaskStore;
use toolnexus::{Limit, TaskStore};
use toolnexus_conformance::is_limit;

/// The tests here count the process's descriptors: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `test` alone, on a runtime of its own that is shut down before the next test starts:
/// a runtime's own descriptors (its poller, its waker) still open while the next test takes
/// its first count would read as descriptors that test's call closed.
fn alone(test: impl std::future::Future<Output = ()>) {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(test);
    runtime.shutdown_timeout(Duration::from_secs(10));
}

/// The hostile fixture over `dir`, one instance at a time.
fn hostile(dir: &std::path::Path) -> WasmTaskStore {
    toolnexus_conformance::hostile_builder()
        .dir(dir)
        .timeout(Duration::from_secs(10))
        .max_instances(1)
        .build()
        .unwrap()
}

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn hoarded_handles_are_bounded_and_closed_after_the_call() {
    alone(async {
        let tmp = tempfile::tempdir().unwrap();
        let store = hostile(tmp.path());
        assert_eq!(store.get("nothing").await.unwrap(), None);
        let before = open_descriptors();

        let err = store.get("hoard").await.unwrap_err();
        assert!(is_limit(&err, Limit::Handles(1024)), "{err}");
        // The hoarding instance was dropped; the next call gets a fresh one (with its own
        // directory handle, as the pooled one had).
        assert_eq!(store.get("nothing").await.unwrap(), None);
        assert_eq!(
            open_descriptors(),
            before,
            "descriptors leaked past the call"
        );
    });
}

/// Fewer than the limit, kept past the call: the call succeeds, but the instance is not pooled
/// with them.
#[test]
fn handles_kept_past_a_call_are_closed_with_their_instance() {
    alone(async {
        let tmp = tempfile::tempdir().unwrap();
        let store = hostile(tmp.path());
        assert_eq!(store.get("nothing").await.unwrap(), None);
        let before = open_descriptors();
        let report = store.get("hoard:200").await.unwrap().expect("a report");
        assert_eq!(report.get("opened").unwrap(), "200");
        assert_eq!(store.get("nothing").await.unwrap(), None);
        assert_eq!(
            open_descriptors(),
            before,
            "descriptors leaked past the call"
        );
    });
}

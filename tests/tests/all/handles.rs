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
use toolnexus::wasm::{Sandboxed, SandboxedDir};
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

/// The soft and hard limit on open files of the processes the tests below run in.
const CHILD_LIMIT: u64 = 1024;

/// Set in a process started by [`under_a_low_limit`] to run its test's body.
const CHILD: &str = "TOOLNEXUS_TEST_DESCRIPTOR_CHILD";

/// Runs `body` with the process's limit on open files lowered to [`CHILD_LIMIT`], in a
/// process of its own: this test binary started again for the test `name` alone.
fn under_a_low_limit(name: &str, body: impl std::future::Future<Output = ()>) {
    if std::env::var_os(CHILD).is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        assert!(
            stdout.contains("1 passed"),
            "the child ran the test: {stdout}"
        );
        return;
    }
    let lowered = libc::rlimit {
        rlim_cur: CHILD_LIMIT as libc::rlim_t,
        rlim_max: CHILD_LIMIT as libc::rlim_t,
    };
    // SAFETY: a valid `rlimit`; this process runs this test alone.
    assert_eq!(
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lowered) },
        0,
        "{}",
        std::io::Error::last_os_error()
    );
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(body);
}

/// The count a hoard's report gives.
fn opened(report: &toolnexus::Task) -> usize {
    report
        .get("opened")
        .unwrap()
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// Under a limit of 1,024 open files (soft and hard, as on many hosts), a component that
/// hoards gets the components' share of the process's descriptors and no more: 768, leaving
/// 256 to the host (accept, PostgreSQL, other stores). Before, it took every descriptor the
/// process had left (its 1,024 handles ran into `EMFILE` first), and at that moment the host
/// could not open a file or accept a connection.
#[test]
fn a_component_leaves_the_host_its_reserve_of_descriptors() {
    under_a_low_limit(
        "handles::a_component_leaves_the_host_its_reserve_of_descriptors",
        async {
            let tmp = tempfile::tempdir().unwrap();
            let store = hostile(tmp.path());
            let opened = opened(&store.get("hoard").await.unwrap().expect("a report"));
            // The share is 768, of which the instance's directory is one.
            assert!(
                opened <= 767,
                "the component held {opened} descriptors at once"
            );
            assert!(opened >= 700, "it got its share: {opened}");
            // What the host opens meanwhile never fails for want of descriptors.
            assert_eq!(store.get("nothing").await.unwrap(), None);
        },
    );
}

/// While one component holds all the descriptors it can get, another component (the file
/// store, a pool of its own) still saves and reads Tasks: the hoarder gets the share less
/// the other pool's guarantee of 64. Before, the hoarder held the whole share, and every open
/// of the file store failed (`insufficient-memory`), so its saves failed.
#[test]
fn a_hoarding_component_leaves_other_components_their_descriptors() {
    under_a_low_limit(
        "handles::a_hoarding_component_leaves_other_components_their_descriptors",
        async {
            let hoarder_dir = tempfile::tempdir().unwrap();
            let files = tempfile::tempdir().unwrap();
            let hoarder = hostile(hoarder_dir.path());
            let store = WasmTaskStore::file_store(files.path()).unwrap();
            let hoard = tokio::spawn(async move { hoarder.get("hoard-until:gate").await });
            let mark = hoarder_dir.path().join("gate.opened");
            // The mark gets the count once the hoard is taken.
            while std::fs::read(&mark).map_or(true, |count| count.is_empty()) {
                assert!(
                    !hoard.is_finished(),
                    "the hoard ended early: {:?}",
                    hoard.await
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            for n in 0..8 {
                let task = toolnexus_conformance::task(serde_json::json!({
                    "id": format!("t{n}"),
                    "status": {"state": "working"},
                }));
                store.save(&task).await.unwrap();
                assert_eq!(store.get(&format!("t{n}")).await.unwrap(), Some(task));
            }
            std::fs::write(hoarder_dir.path().join("gate"), b"").unwrap();
            let report = hoard.await.unwrap().unwrap().expect("a report");
            let opened = opened(&report);
            // 768 less the file store's 64; the hoarder's directory and its mark are two.
            assert!(
                opened <= 702,
                "the hoarder held {opened} descriptors at once"
            );
            assert!(opened >= 650, "it got the rest: {opened}");
        },
    );
}

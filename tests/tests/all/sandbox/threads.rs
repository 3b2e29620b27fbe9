//! Threads: where calls run (the caller's thread or the blocking pool), that a stuck or
//! abandoned call holds only its own instance, and that clock waits need nothing from the
//! caller's runtime.

use super::*;
use toolnexus::wasm::{Sandboxed, SandboxedDir};

/// Callers that stop waiting (a timeout around the call, a client that went away) do not free
/// the instance slot while the guest still runs: with one instance allowed, a burst of
/// abandoned calls to a looping component starts guest code once, not once per caller.
#[tokio::test(flavor = "multi_thread")]
async fn abandoned_calls_keep_holding_their_instance_until_the_guest_returns() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(
        hostile()
            .dir(tmp.path())
            .timeout(Duration::from_secs(2))
            .max_instances(1)
            .build()
            .unwrap(),
    );
    for _ in 0..10 {
        let abandoned =
            tokio::time::timeout(Duration::from_millis(30), store.get("loop-mark")).await;
        assert!(
            abandoned.is_err(),
            "the looping call cannot finish in 30 ms"
        );
    }
    let started = fs::read_dir(tmp.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("started-")
        })
        .count();
    assert_eq!(
        started, 1,
        "guest calls running at once past max_instances=1"
    );
    // The looping call ends at its deadline and frees the slot.
    tokio::time::timeout(Duration::from_secs(10), still_serves(&store))
        .await
        .expect("the slot came back after the deadline");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stuck_call_does_not_hold_up_other_callers() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(
        hostile()
            .dir(tmp.path())
            .timeout(Duration::from_secs(5))
            .max_instances(2)
            .build()
            .unwrap(),
    );
    let stuck = {
        let store = Arc::clone(&store);
        tokio::spawn(async move { store.get("loop").await })
    };
    // While one instance spins, the other serves callers.
    for _ in 0..10 {
        assert_eq!(store.get("nothing").await.unwrap(), None);
    }
    assert!(
        !stuck.is_finished(),
        "the looping call is still running: the others did not wait for it"
    );
    let err = stuck.await.unwrap().unwrap_err();
    assert_timeout(&err);
}

/// A `get` runs on the caller's task, not on Tokio's blocking pool (no hand-off to another
/// thread and back, see `host/wasm/src/sandbox/inline.rs`): with the runtime's only blocking thread
/// held, a component `get` (and a native one of a cached file) still answers, a hit and a miss.
/// With the hand-off it would wait for that thread, here for ever.
#[test]
fn a_get_needs_no_blocking_thread() {
    let tmp = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(1)
        .build()
        .unwrap();
    let saved = task(json!({"id": "inline-1", "status": {"state": "working"}}));
    let stores: Vec<(&str, Arc<dyn TaskStore>)> = vec![
        (
            "component",
            Arc::new(WasmTaskStore::file_store(tmp.path().join("component")).unwrap()),
        ),
        (
            "native",
            Arc::new(toolnexus::FileTaskStore::new(tmp.path().join("native")).unwrap()),
        ),
    ];
    for (name, store) in stores {
        // The store's first call is a `get` (the component's one-time work is done when it is
        // instantiated, not here). A miss the kernel has not looked up yet waits for the
        // disk, and goes to the pool; once looked up, it is cached like a hit.
        assert_eq!(runtime.block_on(store.get("missing")).unwrap(), None);
        runtime.block_on(store.save(&saved)).unwrap();
        let got = with_the_pool_held(&runtime, || {
            runtime.block_on(async {
                tokio::time::timeout(Duration::from_secs(20), async {
                    (store.get("inline-1").await, store.get("missing").await)
                })
                .await
            })
        });
        let (found, missing) = got
            .unwrap_or_else(|_| panic!("{name}: the get waited for the runtime's blocking thread"));
        assert_eq!(found.unwrap(), Some(saved.clone()), "{name}");
        assert_eq!(missing.unwrap(), None, "{name}");
    }
}

/// A `get` that computes for ever, run on the caller's thread, gives that thread back to the
/// runtime at every epoch tick until its deadline: on a single-threaded runtime, another task
/// keeps running during the call.
#[tokio::test(flavor = "current_thread")]
async fn a_get_computing_for_ever_shares_the_callers_thread_until_its_deadline() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    let ticks = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let ticker = {
        let ticks = Arc::clone(&ticks);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(1)).await;
                ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        })
    };
    tokio::task::yield_now().await;
    let before = ticks.load(std::sync::atomic::Ordering::Relaxed);
    let err = store.get("loop").await.unwrap_err();
    let during = ticks.load(std::sync::atomic::Ordering::Relaxed) - before;
    ticker.abort();
    assert_timeout(&err);
    assert!(
        during >= 3,
        "another task ran {during} times during a 300 ms call on its thread"
    );
    still_serves(&store).await;
}

/// A `get` that writes cannot run on the caller's thread (a write may wait for the disk): it is
/// stopped before its first write and run again on a blocking thread, where it writes once and
/// answers.
#[tokio::test(flavor = "current_thread")]
async fn a_get_that_writes_is_run_again_on_a_blocking_thread() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    for _ in 0..2 {
        let text = store
            .get("hoard:3")
            .await
            .unwrap()
            .expect("an answer")
            .as_json()
            .to_owned();
        assert!(text.contains("\"opened\":\"3\""), "{text}");
    }
    assert_eq!(
        fs::read_to_string(tmp.path().join("hoard.txt")).unwrap(),
        "x"
    );
    still_serves(&store).await;
}

/// `f`'s answer, run while the runtime's only blocking thread (`max_blocking_threads(1)`) is
/// held, so that nothing handed to the blocking pool meanwhile can run.
fn with_the_pool_held<T>(runtime: &tokio::runtime::Runtime, f: impl FnOnce() -> T) -> T {
    let (started, holding) = std::sync::mpsc::channel();
    let (release, held) = std::sync::mpsc::channel::<()>();
    let blocker = runtime.spawn_blocking(move || {
        started.send(()).unwrap();
        let _ = held.recv();
    });
    holding.recv().unwrap();
    let answer = f();
    release.send(()).unwrap();
    runtime.block_on(blocker).unwrap();
    answer
}

/// Whether `store.get(id)` answers while the runtime's only blocking thread is held.
fn answers_without_the_pool(runtime: &tokio::runtime::Runtime, store: &WasmTaskStore) -> bool {
    with_the_pool_held(runtime, || {
        runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(1), store.get("nothing"))
                .await
                .is_ok()
        })
    })
}

/// A store whose `get`s keep asking for what is never done on the caller's thread (here, a
/// write) runs its `get`s on the blocking pool after three of them; until then they stay on
/// the caller's thread, so one-time work in a first call does not cost a component the path.
#[test]
fn gets_that_keep_writing_go_to_the_blocking_pool_after_three() {
    let tmp = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(1)
        .build()
        .unwrap();
    let store = open(tmp.path());
    for writes in 0..3 {
        assert!(
            answers_without_the_pool(&runtime, &store),
            "after {writes} writing gets, gets still run on the caller's thread"
        );
        runtime.block_on(store.get("hoard:1")).unwrap();
    }
    assert!(
        !answers_without_the_pool(&runtime, &store),
        "after three writing gets, gets run on the blocking pool"
    );
    runtime.block_on(still_serves(&store));
}

/// A caller that stops waiting for a `get` running on its own thread stops the guest with it:
/// the instance is dropped mid-call, its permit comes back at once, and the store keeps serving
/// (with one instance allowed, the next call does not wait for the abandoned one's deadline).
#[tokio::test(flavor = "current_thread")]
async fn a_get_abandoned_on_the_callers_thread_stops_and_frees_its_instance() {
    let tmp = tempfile::tempdir().unwrap();
    let store = hostile()
        .dir(tmp.path())
        .timeout(Duration::from_secs(60))
        .max_instances(1)
        .build()
        .unwrap();
    let abandoned = tokio::time::timeout(Duration::from_millis(50), store.get("loop")).await;
    assert!(
        abandoned.is_err(),
        "the looping call cannot finish in 50 ms"
    );
    tokio::time::timeout(Duration::from_secs(20), still_serves(&store))
        .await
        .expect("the abandoned guest stopped with its caller and freed its instance");
}

/// A `get` runs on its caller's runtime, whose timers its embedder may not have enabled (Tokio
/// panics at a timer there). A component's clock wait is timed by the host's own timer thread:
/// it sleeps and answers, inline and on the blocking pool, and a wait past the deadline is cut
/// at it, on a runtime without timers as on any other.
#[test]
fn a_clock_wait_needs_no_timers_from_the_callers_runtime() {
    let tmp = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = open(tmp.path());
        assert_eq!(store.get("sleep:10").await.unwrap(), None, "inline");
        assert_timeout(&store.get("sleep-forever").await.unwrap_err());
        // Gets that write: after three, the store's gets run on the blocking pool.
        for _ in 0..3 {
            store.get("fill:files:4096").await.unwrap();
        }
        assert_eq!(
            store.get("sleep:10").await.unwrap(),
            None,
            "on the blocking pool"
        );
        assert_timeout(&store.get("sleep-forever").await.unwrap_err());
    });
}

/// A write through an append stream kept from an earlier call, in a `get` running on an async
/// worker, stops the attempt before it writes: the call runs again on a blocking thread (on a
/// fresh instance, which has no such stream), and the file holds what the answered attempt
/// wrote, nothing of the abandoned one. Before, the abandoned attempt's `b` stayed in the file
/// while the answer said nothing was written.
#[tokio::test(flavor = "multi_thread")]
async fn a_kept_append_stream_does_not_write_from_an_abandoned_inline_attempt() {
    let tmp = tempfile::tempdir().unwrap();
    let store = toolnexus_conformance::hostile_builder()
        .dir(tmp.path())
        .timeout(Duration::from_secs(10))
        .max_instances(1)
        .build()
        .unwrap();
    assert_eq!(store.get("append-keep:kept.txt").await.unwrap(), None);
    assert_eq!(
        fs::read_to_string(tmp.path().join("kept.txt")).unwrap(),
        "a"
    );
    let report = store.get("append-kept").await.unwrap().expect("a report");
    let wrote = report.get("wrote").and_then(|w| w.as_str()).unwrap();
    let file = fs::read_to_string(tmp.path().join("kept.txt")).unwrap();
    let expected = if wrote == "true" { "ab" } else { "a" };
    assert_eq!(file, expected, "the answer says wrote={wrote}");
    still_serves(&store).await;
}

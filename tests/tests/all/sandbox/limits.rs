//! Time and memory: endless loops and clock waits end at their deadline, memory growth hits
//! the per-instance and all-instances limits, oversized tasks and answers are refused, and
//! selector options set those limits.

use super::*;
use toolnexus::wasm::{Sandboxed, SandboxedDir};

#[tokio::test(flavor = "multi_thread")]
async fn an_endless_loop_hits_the_deadline_and_the_store_recovers() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    let err = store.get("loop").await.unwrap_err();
    assert!(
        matches!(err, StoreError::LimitExceeded { limit: Limit::Timeout(d), .. } if d == Duration::from_millis(300)),
        "{err}"
    );
    assert!(err.to_string().contains("deadline"), "{err}");
    still_serves(&store).await;
}

/// A write stopped at its deadline may have taken effect before it was stopped (a file store
/// that renamed its file, then wedged): the caller is told the outcome is unknown, so it reads
/// again rather than retrying blindly. A read stopped the same way is a plain timeout.
#[tokio::test(flavor = "multi_thread")]
async fn a_save_stopped_at_its_deadline_has_an_unknown_outcome() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    let task = toolnexus::Task::from_json(r#"{"id":"loop"}"#).unwrap();
    let err = store.save(&task).await.unwrap_err();
    match &err {
        StoreError::OutcomeUnknown { reason, .. } => {
            assert!(reason.contains("the save of \"loop\""), "{err}");
            assert!(reason.contains("deadline of 300ms"), "{err}");
        }
        other => panic!("expected OutcomeUnknown, got {other:?}"),
    }
    assert_eq!(err.blame(), toolnexus::Blame::Environment);
    still_serves(&store).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unbounded_memory_growth_hits_the_memory_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let store = hostile()
        .dir(tmp.path())
        .memory_limit(32 << 20)
        .build()
        .unwrap();
    let err = store.get("grow").await.unwrap_err();
    assert!(
        matches!(err, StoreError::LimitExceeded { limit: Limit::Memory(m), .. } if m == 32 << 20),
        "{err}"
    );
    still_serves(&store).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn growth_past_the_memory_budget_of_all_instances_hits_that_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let store = hostile()
        .dir(tmp.path())
        .memory_limit(64 << 20)
        .memory_total_limit(24 << 20)
        .build()
        .unwrap();
    let err = store.get("grow").await.unwrap_err();
    assert!(
        matches!(err, StoreError::LimitExceeded { limit: Limit::MemoryTotal(m), .. } if m == 24 << 20),
        "{err}"
    );
    assert!(err.to_string().contains("all instances together"), "{err}");
    still_serves(&store).await;
}

/// Concurrent `gather:<calls>:<ms>:<MiB>` calls, each answering the most calls it saw running
/// at once.
async fn most_at_once(
    store: &Arc<WasmTaskStore>,
    calls: usize,
    wait_ms: u64,
    mib: u64,
) -> Vec<u64> {
    let id = format!("gather:{calls}:{wait_ms}:{mib}");
    let running: Vec<_> = (0..calls)
        .map(|_| {
            let store = Arc::clone(store);
            let id = id.clone();
            tokio::spawn(async move { store.get(&id).await })
        })
        .collect();
    let mut most = Vec::new();
    for call in running {
        let task = call
            .await
            .unwrap()
            .expect("no call fails")
            .expect("an answer");
        most.push(task.get("most").unwrap().as_str().unwrap().parse().unwrap());
    }
    most
}

/// Instances that hold much memory run fewer calls at once, within the budget of all instances
/// together, and the others wait for an instance instead of failing.
#[tokio::test(flavor = "multi_thread")]
async fn large_instances_run_fewer_calls_at_once_within_the_memory_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(
        hostile()
            .dir(tmp.path())
            .timeout(Duration::from_secs(10))
            .max_instances(16)
            .memory_limit(32 << 20)
            .memory_total_limit(100 << 20)
            .build()
            .unwrap(),
    );
    // One call to learn what a call's instance holds: 20 MiB and the component's own.
    store.get("gather:2:0:20").await.unwrap();
    let most = most_at_once(&store, 16, 300, 20).await;
    // 100 MiB holds four instances of 21–25 MiB, never five.
    assert!(most.iter().all(|n| *n <= 4), "{most:?}");
    assert!(
        most.iter().any(|n| *n >= 2),
        "calls still run side by side: {most:?}"
    );
    still_serves(&store).await;
}

/// Small instances run more calls at once than fit at the per-instance cap: by default, 32
/// calls of the hostile component (a few MiB each) all run together, where 8 did before.
#[tokio::test(flavor = "multi_thread")]
async fn small_instances_run_many_calls_at_once_by_default() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(
        hostile()
            .dir(tmp.path())
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap(),
    );
    store.get("gather:2:0:0").await.unwrap();
    let most = most_at_once(&store, 32, 15_000, 0).await;
    assert!(most.iter().all(|n| *n == 32), "{most:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_huge_answer_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = hostile()
        .dir(tmp.path())
        .max_task_size(1 << 20)
        .build()
        .unwrap();
    let err = store.get(&format!("huge:{}", 2 << 20)).await.unwrap_err();
    assert!(
        matches!(err, StoreError::LimitExceeded { limit: Limit::AnswerSize { max, .. }, .. } if max == 1 << 20),
        "{err}"
    );
    // Under the limit, the same kind of answer is fine.
    assert!(store.get("huge:1000").await.unwrap().is_some());
    still_serves(&store).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_huge_task_is_refused_before_it_reaches_the_component() {
    let tmp = tempfile::tempdir().unwrap();
    let store = hostile()
        .dir(tmp.path())
        .max_task_size(1024)
        .build()
        .unwrap();
    let err = store
        .save(&task(json!({"id": "big", "pad": "x".repeat(2000)})))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::TaskTooLarge { ref id, max: 1024, .. } if id == "big"),
        "{err}"
    );
    assert_eq!(err.blame(), toolnexus::Blame::Caller);
}

#[tokio::test(flavor = "multi_thread")]
async fn selector_options_set_the_limits() {
    let tmp = tempfile::tempdir().unwrap();
    let component = tmp.path().join("hostile.wasm");
    fs::write(&component, HOSTILE_COMPONENT).unwrap();
    let selector = format!(
        "wasm:{}?dir={}&memory=48MiB&memory-total=100MiB&timeout=250ms&max-task=2MiB&quota=3MiB&cache=off",
        component.display(),
        tmp.path().join("d").display()
    );
    let store = toolnexus::resolve_store(selector).unwrap();
    let wasm = (&*store as &dyn std::any::Any)
        .downcast_ref::<WasmTaskStore>()
        .unwrap();
    assert_eq!(
        wasm.limits(),
        toolnexus::wasm::Limits {
            memory_bytes: 48 << 20,
            memory_total_bytes: 100 << 20,
            timeout: Duration::from_millis(250),
            max_task_bytes: 2 << 20,
            disk_quota_bytes: 3 << 20,
        }
    );
    let err = store.get("loop").await.unwrap_err();
    assert_timeout(&err);
}

/// A guest blocked in the host (a clock wait: `std::thread::sleep`) runs no wasm code, so
/// epoch interruption alone never stops it; its waits are cut at the call's deadline, and the
/// call fails with the deadline as if it had looped. (The 10 s guards, with [`detached`], keep a
/// regression from hanging the suite; the sleeps are 20 s and forever.)
#[test]
fn a_call_blocked_in_a_clock_wait_ends_at_its_deadline() {
    detached(async {
        let tmp = tempfile::tempdir().unwrap();
        let store = open(tmp.path());
        for id in ["sleep:20000", "sleep-forever"] {
            let err = tokio::time::timeout(Duration::from_secs(10), store.get(id))
                .await
                .unwrap_or_else(|_| panic!("{id}: the call outlived its 300 ms deadline by 10 s"))
                .unwrap_err();
            assert_timeout(&err);
            still_serves(&store).await;
        }
        // A wait that ends within the deadline is just a wait.
        assert_eq!(store.get("sleep:10").await.unwrap(), None);
    })
}

/// As many blocked calls as there are instances do not stop the store from answering.
#[test]
fn blocked_calls_on_every_instance_do_not_starve_the_store() {
    detached(async {
        let tmp = tempfile::tempdir().unwrap();
        let store = Arc::new(
            hostile()
                .dir(tmp.path())
                .timeout(Duration::from_millis(300))
                .max_instances(8)
                .build()
                .unwrap(),
        );
        let sleepers: Vec<_> = (0..8)
            .map(|_| {
                let store = Arc::clone(&store);
                tokio::spawn(async move { store.get("sleep-forever").await })
            })
            .collect();
        tokio::time::timeout(Duration::from_secs(10), still_serves(&store))
            .await
            .expect("a well-behaved call got an instance once the sleepers hit their deadline");
        for sleeper in sleepers {
            assert_timeout(&sleeper.await.unwrap().unwrap_err());
        }
    })
}

/// `configure` runs under the call deadline too: a component that never returns from it is
/// refused when it is loaded, instead of hanging `resolve_store`.
#[test]
fn a_configure_that_never_returns_fails_the_load_at_its_deadline() {
    detached(async {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("sleep-in-configure"), "").unwrap();
        let dir = tmp.path().to_owned();
        let load = tokio::task::spawn_blocking(move || {
            hostile()
                .dir(dir)
                .timeout(Duration::from_millis(300))
                .build()
        });
        let err = tokio::time::timeout(Duration::from_secs(10), load)
            .await
            .expect("loading outlived the 300 ms deadline by 10 s")
            .unwrap()
            .unwrap_err();
        assert!(matches!(err, StoreError::Load { .. }), "{err}");
        assert!(err.to_string().contains("deadline"), "{err}");
    })
}

//! A store component you don't have to trust: the hostile fixture (`guest/hostile-fixture/`) attacks
//! the host in every way we know, and the host survives each with a typed error.

use serde_json::{Value, json};
use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use toolnexus::wasm::{ComponentSource, WasmTaskStore, WasmTaskStoreBuilder};
use toolnexus::{Limit, StoreError, TaskStore};
use toolnexus_conformance::{HOSTILE_COMPONENT, task};

fn hostile() -> WasmTaskStoreBuilder {
    toolnexus_conformance::hostile_builder()
}

fn open(dir: &Path) -> WasmTaskStore {
    hostile()
        .dir(dir)
        .timeout(Duration::from_millis(300))
        .build()
        .expect("the hostile component loads")
}

fn assert_timeout(err: &StoreError) {
    assert!(
        matches!(
            err,
            StoreError::LimitExceeded {
                limit: Limit::Timeout(_),
                ..
            }
        ),
        "expected the per-call deadline, got: {err}"
    );
}

/// Runs an async test on a runtime of its own, on a thread of its own, and waits for it at most
/// [`GUARD`] by the wall clock: if the host regresses and a guest call never returns, or the
/// guest wedges the runtime's own timers (a clock wait of `u64::MAX` nanoseconds handed to
/// Tokio does), the test fails here instead of hanging the suite. The runtime is never waited
/// for: its blocking threads are left behind.
fn detached<F>(test: F) -> F::Output
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (done, outcome) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runtime.block_on(test)));
        runtime.shutdown_background();
        let _ = done.send(result);
    });
    match outcome.recv_timeout(GUARD) {
        Ok(result) => result.unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        Err(_) => panic!("the test was still running after {GUARD:?}: a call never returned"),
    }
}

/// How long a [`detached`] test may run in all.
const GUARD: Duration = Duration::from_secs(60);

/// After any attack, the same store still answers.
async fn still_serves(store: &WasmTaskStore) {
    assert_eq!(
        store.get("nothing-here").await.unwrap(),
        None,
        "the store must keep serving"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cannot_read_or_write_outside_its_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    let granted = tmp.path().join("granted");
    fs::create_dir_all(&outside).unwrap();
    fs::create_dir_all(&granted).unwrap();
    fs::write(outside.join("secret.txt"), "top secret").unwrap();
    fs::write(tmp.path().join("secret.txt"), "also secret").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), granted.join("link-out")).unwrap();
    std::os::unix::fs::symlink(&outside, granted.join("linkdir")).unwrap();
    let before = snapshot(tmp.path());

    let store = open(&granted);
    let id = format!("escape:{}", outside.display());
    let report = store
        .get(&id)
        .await
        .unwrap()
        .expect("the component reports its attempts");
    let attempts = report
        .as_map()
        .iter()
        .filter(|(k, _)| *k != "id")
        .collect::<Vec<_>>();
    assert!(attempts.len() >= 12, "{report}");
    for (attempt, outcome) in attempts {
        let outcome = outcome.as_str().unwrap();
        assert!(
            outcome.starts_with("denied"),
            "{attempt} was allowed: {outcome}"
        );
    }
    assert_eq!(
        snapshot(tmp.path()),
        before,
        "nothing outside (or inside) changed"
    );
    still_serves(&store).await;
}

/// Every file under `dir` (not following symlinks) with its contents or link target.
fn snapshot(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let meta = fs::symlink_metadata(&path).unwrap();
        if meta.is_symlink() {
            out.push((
                path.display().to_string(),
                format!("-> {}", fs::read_link(&path).unwrap().display()),
            ));
        } else if meta.is_dir() {
            out.extend(snapshot(&path));
        } else {
            out.push((
                path.display().to_string(),
                fs::read_to_string(&path).unwrap(),
            ));
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn has_no_environment_arguments_stdin_or_network() {
    // A listener the component would reach if it had the network.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    // The host has an environment (PATH at least; nothing is set here: changing it while
    // other tests of this binary run would race them), and none of it reaches the component.
    assert!(
        std::env::vars_os().next().is_some(),
        "the host has variables"
    );
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    let report = store.get("ambient").await.unwrap().unwrap();
    let field = |k: &str| report.get(k).and_then(Value::as_str).unwrap().to_owned();
    assert_eq!(field("env"), "", "no environment variables");
    assert_eq!(field("args"), "", "no arguments");
    assert_eq!(field("stdin"), "Ok(0)", "stdin is empty");
    for net in ["tcp", "dns", "udp"] {
        assert!(field(net).starts_with("denied"), "{net}: {}", field(net));
    }
    assert!(listener.accept().is_err(), "nothing connected to the host");
}

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
async fn answers_that_are_not_the_task_asked_for_blame_the_component() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    for (id, want) in [
        ("other-id", "returned the Task with id \"someone-else\""),
        ("not-json", "not valid JSON"),
        ("not-object", "must be a JSON object"),
    ] {
        let err = store.get(id).await.unwrap_err();
        assert!(matches!(err, StoreError::Component { .. }), "{id}: {err}");
        assert!(err.to_string().contains(want), "{id}: {err}");
        assert!(
            err.to_string().contains("hostile.wasm"),
            "{id}: the error names the component: {err}"
        );
    }
    still_serves(&store).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trap_is_a_typed_error_and_the_instance_is_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    for _ in 0..3 {
        let err = store.get("trap").await.unwrap_err();
        assert!(matches!(err, StoreError::Component { .. }), "{err}");
        assert!(err.to_string().contains("trapped"), "{err}");
        still_serves(&store).await;
    }
    let err = store.save(&task(json!({"id": "trap"}))).await.unwrap_err();
    assert!(err.to_string().contains("trapped"), "{err}");
    store.save(&task(json!({"id": "fine"}))).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn attacks_from_many_callers_at_once_leave_the_store_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(
        hostile()
            .dir(tmp.path())
            .timeout(Duration::from_millis(200))
            .max_instances(4)
            .build()
            .unwrap(),
    );
    let mut calls = Vec::new();
    for i in 0..24 {
        let store = Arc::clone(&store);
        let id = ["loop", "trap", "other-id", "nothing"][i % 4];
        calls.push(tokio::spawn(async move { (id, store.get(id).await) }));
    }
    for call in calls {
        let (id, result) = call.await.unwrap();
        match id {
            "nothing" => assert_eq!(result.unwrap(), None),
            _ => assert!(result.is_err(), "{id} must fail"),
        }
    }
    still_serves(&store).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_directory_can_be_read_but_not_written() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("t.json"), r#"{"id":"t","v":1}"#).unwrap();
    let store = WasmTaskStore::builder(ComponentSource::BuiltinFileStore)
        .dir(tmp.path())
        .read_only(true)
        .build()
        .unwrap();
    assert_eq!(store.get("t").await.unwrap().unwrap().get("v").unwrap(), 1);
    let err = store
        .save(&task(json!({"id": "t", "v": 2})))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Io { .. }), "{err}");
    assert_eq!(
        fs::read_to_string(tmp.path().join("t.json")).unwrap(),
        r#"{"id":"t","v":1}"#
    );
    assert_eq!(
        fs::read_dir(tmp.path()).unwrap().count(),
        1,
        "no temp file was left"
    );
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

/// What a component says (its errors, the panic message in a trap) reaches logs, terminals and
/// A2A clients cut to a few KiB, with control characters escaped.
#[tokio::test(flavor = "multi_thread")]
async fn component_messages_are_cut_and_their_control_characters_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let store = hostile().dir(tmp.path()).build().unwrap();
    let huge = store
        .get("error-huge:10000000")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        huge.len() < 5 * 1024,
        "{} bytes reached the caller",
        huge.len()
    );
    assert!(
        huge.contains("more bytes cut"),
        "{}",
        &huge[huge.len() - 80..]
    );
    for id in ["error-ctrl", "panic-ctrl"] {
        let text = store.get(id).await.unwrap_err().to_string();
        assert!(
            !text.chars().any(char::is_control),
            "{id}: a control character reached the caller: {text:?}"
        );
        assert!(
            !text.contains('\u{202e}'),
            "{id}: a bidi override reached the caller"
        );
        // A trap carries the guest's backtrace (its function names are the guest's too), not
        // the panic message, which went to its stderr.
        let expected = if id == "panic-ctrl" {
            "trapped: "
        } else {
            "\\u{1b}[2J"
        };
        assert!(text.contains(expected), "{id}: {text}");
    }
    still_serves(&store).await;
}

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

#[tokio::test(flavor = "multi_thread")]
async fn list_and_delete_are_unsupported_without_the_catalog_interface() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    assert!(!store.supports_catalog());
    assert!(!store.supports_lean());
    let err = store
        .list(&toolnexus::ListQuery::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Unsupported {
                operation: "list",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("does not support list"), "{err}");
    let err = store.delete("x").await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Unsupported {
                operation: "delete",
                ..
            }
        ),
        "{err}"
    );
    let builtin = WasmTaskStore::file_store(tmp.path().join("b")).unwrap();
    assert!(builtin.supports_catalog());
    assert!(builtin.supports_lean());
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

/// A writer that does not wait finds no reader: nothing is still opening the FIFO.
#[cfg(unix)]
fn assert_no_reader(fifo: &std::path::Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let writer = fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(fifo);
    assert_eq!(
        writer.map(drop).map_err(|e| e.raw_os_error()),
        Err(Some(libc::ENXIO)),
        "no thread is left opening the FIFO"
    );
}

/// The open of a FIFO waits in the kernel for a writer, without bound and out of reach of any
/// deadline, holding a blocking thread all along. The host opens no FIFO, socket or device for
/// a component: the open fails at once with an error the component sees, and no thread is left
/// waiting on the FIFO's other end. (The file store never opens one; this is a component that
/// opens whatever it is told to, without looking first.)
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn a_component_opens_no_fifo() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    let fifo = tmp.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo");
    fs::write(tmp.path().join("plain"), "x").unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(5), store.get("open:fifo")).await;
    // A writer that does not wait finds no reader: nothing is still opening the FIFO. (Were
    // something stuck there, this open would let it go, so the test ends either way.)
    assert_no_reader(&fifo);
    let err = answer
        .expect("the get answers")
        .expect_err("the open fails");
    assert!(
        matches!(err, StoreError::Io { .. }) && err.to_string().contains("open fifo"),
        "the component's own error, not the deadline: {err}"
    );
    // The same for a name opened without following a link, as the file store opens (the host
    // looks at a single such name with one `stat`, not through a handle): refused as not
    // permitted, and nothing is left opening the FIFO.
    let answer = tokio::time::timeout(Duration::from_secs(5), store.get("read-once:fifo:1")).await;
    let err = answer
        .expect("the get answers")
        .expect_err("the open fails");
    assert!(
        matches!(err, StoreError::Io { .. })
            && err
                .to_string()
                .contains("open fifo: ErrorCode { code: 31, name: \"not-permitted\""),
        "refused by the host: {err}"
    );
    assert_no_reader(&fifo);
    // Regular files still open, and the store keeps answering.
    let opened = store.get("open:plain").await.unwrap().unwrap();
    assert_eq!(opened.get("opened").unwrap(), "plain");
}

/// A positional `read` answers at most 1 MiB, however much a component asks for: that bounds
/// what the host allocates for one call. Below that, it answers with everything asked for up
/// to the end of the file, and says when it reached the end, so a store reads a file in one call.
#[tokio::test(flavor = "multi_thread")]
async fn a_read_answers_at_most_a_mebibyte_and_says_where_the_file_ends() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("big"), vec![b'b'; 3 << 20]).unwrap();
    fs::write(tmp.path().join("small"), b"0123456789").unwrap();
    let store = open(tmp.path());
    for (name, len, got, end) in [
        ("big", u64::MAX, 1 << 20, false),
        ("big", 5000, 5000, false),
        ("small", 11, 10, true),
        ("small", 10, 10, false),
        ("small", 4, 4, false),
    ] {
        let read = store
            .get(&format!("read-once:{name}:{len}"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (read.get("got").unwrap(), read.get("end").unwrap()),
            (&json!(got.to_string()), &json!(end.to_string())),
            "{name}, {len} bytes asked for"
        );
    }
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

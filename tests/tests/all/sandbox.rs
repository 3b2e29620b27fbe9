//! A store component you don't have to trust: the hostile fixture (`guest/hostile-fixture/`) attacks
//! the host in every way we know, and the host survives each with a typed error.
//!
//! Shared here: opening the hostile fixture over a directory, the deadline and `still_serves`
//! checks; the attacks themselves are in the submodules, one subject each.

mod escapes;
mod lies;
mod limits;
mod threads;

use serde_json::{Value, json};
use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use toolnexus::wasm::{ComponentSource, WasmTaskStore, WasmTaskStoreBuilder};
use toolnexus::wasm::{Sandboxed, SandboxedDir};
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

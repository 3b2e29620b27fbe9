//! Clock waits never outlast the call's deadline.
//!
//! Epoch interruption stops a guest that runs wasm code past its deadline, but not one that is
//! blocked inside the host: in a `wasi:io/poll` on a clock subscription (`std::thread::sleep`,
//! `subscribe-duration(u64::MAX)`), the guest runs no wasm code, so no epoch check happens. The
//! clock subscriptions are the only host call a store component can block in for long: it has
//! no sockets, an empty stdin, sinks for stdout and stderr, and regular files. So the host
//! replaces `wasi:clocks/monotonic-clock`'s `subscribe-duration` and `subscribe-instant` with
//! versions that never wait past the call's deadline ([`subscribe_until`]). A subscription cut
//! short marks the call as having hit its deadline: whatever the guest does after waking, the
//! call fails with [`Limit::Timeout`](toolnexus_core::Limit::Timeout) and the instance is
//! dropped.
//!
//! The guest's monotonic clock is ours too ([`GuestClock`]), so a `subscribe-instant` on the
//! guest's clock maps exactly onto a host instant ([`guest_instant`]).
//!
//! A wait is timed by a Tokio runtime of the host's own ([`timers`]: one thread, made at the
//! first wait), not by the runtime of the call: a `get` runs on its caller's runtime, whose
//! timers its embedder may not have enabled, and Tokio panics at a timer there. A guest's
//! sleep would then have panicked its caller's task.

use crate::sandbox::deadline::{CallDeadline, GuestClock};
use std::time::{Duration, Instant};
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::p2::{DynPollable, Pollable, subscribe};

/// The host instant `nanos` nanoseconds from now (`None`: too far to represent), for
/// `subscribe-duration`.
pub(crate) fn after_duration(nanos: u64) -> Option<Instant> {
    Instant::now().checked_add(Duration::from_nanos(nanos))
}

/// The host instant of the guest's clock reading `when` (`None`: too far to represent), for
/// `subscribe-instant`.
pub(crate) fn guest_instant(clock: GuestClock, when: u64) -> Option<Instant> {
    clock.start.checked_add(Duration::from_nanos(when))
}

/// A subscription ready at `wanted` (`None`: too far to represent), or at the call's deadline
/// if that comes first, which marks the call as having hit it.
pub(crate) fn subscribe_until(
    deadline: &mut CallDeadline,
    table: &mut ResourceTable,
    wanted: Option<Instant>,
) -> wasmtime::Result<Resource<DynPollable>> {
    let at = match wanted {
        Some(wanted) if wanted <= deadline.at => wanted,
        _ => {
            deadline.hit = true;
            deadline.at
        }
    };
    let sleep = table.push(Sleep {
        at: tokio::time::Instant::from_std(at),
        timer: None,
    })?;
    subscribe(table, sleep)
}

/// A clock subscription: ready at a host instant, timed by [`timers`] once it is waited for.
struct Sleep {
    at: tokio::time::Instant,
    timer: Option<Timer>,
}

#[async_trait::async_trait]
impl Pollable for Sleep {
    async fn ready(&mut self) {
        if tokio::time::Instant::now() >= self.at {
            return;
        }
        let at = self.at;
        if self.timer.is_none() {
            self.timer = Timer::start(at);
        }
        // No timer thread could be made: ready now. A guest that waits again spins until its
        // deadline, where the epoch stops it.
        if let Some(timer) = &mut self.timer {
            timer.done().await;
        }
        self.timer = None;
    }
}

/// A wait on the host's timer thread, given up when dropped.
struct Timer(tokio::task::JoinHandle<()>);

impl Timer {
    /// A wait until `at`; `None` if the timer thread could not be started. The sleep is made
    /// inside the task, on the timer runtime: made by the caller, it would take the calling
    /// runtime's timers.
    fn start(at: tokio::time::Instant) -> Option<Timer> {
        let timers = timers()?;
        Some(Timer(
            timers.spawn(async move { tokio::time::sleep_until(at).await }),
        ))
    }

    /// Until the wait is over (or the timer runtime is gone, which wakes the waiter too).
    async fn done(&mut self) {
        let _ = (&mut self.0).await;
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The host's timer runtime: one thread that times every guest's clock waits, whatever
/// runtime the call runs on. `None` (logged once) if it could not be started.
fn timers() -> Option<&'static tokio::runtime::Runtime> {
    static TIMERS: std::sync::OnceLock<Option<tokio::runtime::Runtime>> =
        std::sync::OnceLock::new();
    TIMERS
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("toolnexus-timers")
                .enable_time()
                .build()
                .inspect_err(|e| {
                    tracing::error!("cannot start the timer thread for guests' clock waits: {e}")
                })
                .ok()
        })
        .as_ref()
}

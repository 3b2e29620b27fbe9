//! Deadlines that hold in wall-clock time, whatever the guest does.
//!
//! Epoch interruption stops a guest that runs wasm code past its deadline, but not one that is
//! blocked inside the host: in a `wasi:io/poll` on a clock subscription (`std::thread::sleep`,
//! `subscribe-duration(u64::MAX)`), the guest runs no wasm code, so no epoch check happens. The
//! clock subscriptions are the only host call a store component can block in for long: it has
//! no sockets, an empty stdin, sinks for stdout and stderr, and regular files. So the host
//! replaces `wasi:clocks/monotonic-clock`'s `subscribe-duration` and `subscribe-instant` with
//! versions that never wait past the call's deadline. A subscription cut short marks the call
//! as having hit its deadline: whatever the guest does after waking, the call fails with
//! [`Limit::Timeout`](toolnexus_core::Limit::Timeout) and the instance is dropped.
//!
//! The guest's monotonic clock is ours too ([`GuestClock`]), so a `subscribe-instant` on the
//! guest's clock maps exactly onto a host instant.
//!
//! A wait is timed by a Tokio runtime of the host's own ([`timers`]: one thread, made at the
//! first wait), not by the runtime of the call: a `get` runs on its caller's runtime, whose
//! timers its embedder may not have enabled, and Tokio panics at a timer there. A guest's
//! sleep would then have panicked its caller's task.
//!
//! The caller of a call handed to a blocking thread gives up at a backstop ([`backstop`]),
//! which the epoch thread fires at its ticks: every such call arms one, and a timer of its own
//! would wake another thread twice per call.

use crate::pool::Host;
use std::time::{Duration, Instant};
use wasmtime::StoreContextMut;
use wasmtime::component::Linker;
use wasmtime_wasi::p2::{DynPollable, Pollable, subscribe};

/// The interface whose subscriptions are replaced; wasmtime links every `0.2.x` import to it.
const MONOTONIC_CLOCK: &str = "wasi:clocks/monotonic-clock@0.2.12";

/// The deadline of the call in progress (or of instantiation), and whether the guest asked to
/// wait past it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallDeadline {
    pub(crate) at: Instant,
    pub(crate) hit: bool,
}

impl CallDeadline {
    pub(crate) fn after(timeout: Duration) -> Self {
        CallDeadline {
            at: Instant::now() + timeout,
            hit: false,
        }
    }
}

/// The guest's monotonic clock: nanoseconds since the instance was made.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GuestClock {
    pub(crate) start: Instant,
}

impl wasmtime_wasi::HostMonotonicClock for GuestClock {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
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

/// Callers waiting for an answer from a blocking thread, each with the instant it gives up
/// ([`backstop`]); checked at every epoch tick by the epoch thread ([`fire_backstops`]).
static BACKSTOPS: std::sync::Mutex<Vec<(Instant, tokio::sync::oneshot::Sender<()>)>> =
    std::sync::Mutex::new(Vec::new());

/// Ready once `duration` has passed (rounded up to the next epoch tick), from any runtime.
///
/// Timed by the epoch thread, which ticks anyway, not by a timer of its own: a call on the
/// blocking pool arms one of these every time, and a timer on [`timers`] costs a wake of that
/// thread to arm it and another to disarm it (measured: 60–110 µs of CPU time per call on
/// 2 cores, over a third of a relaxed save's; `docs/benchmarks.md`). Arming here is a push under a
/// lock; disarming is dropping the future, which the next tick sweeps out.
pub(crate) async fn backstop(duration: Duration) {
    let (fire, fired) = tokio::sync::oneshot::channel();
    let at = Instant::now().checked_add(duration);
    match at {
        Some(at) => BACKSTOPS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((at, fire)),
        // Too far to represent: never.
        None => drop(fire),
    }
    if at.is_none() || fired.await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Wakes the [`backstop`]s due by now and forgets those no one waits for any more. Run by the
/// epoch thread at every tick.
pub(crate) fn fire_backstops() {
    let due = {
        let mut waiting = BACKSTOPS.lock().unwrap_or_else(|e| e.into_inner());
        take_due(&mut waiting, Instant::now())
    };
    for fire in due {
        // A caller that stopped waiting meanwhile is simply not told.
        let _ = fire.send(());
    }
}

/// Takes out of `waiting` the backstops due by `now` and those whose caller stopped waiting.
fn take_due(
    waiting: &mut Vec<(Instant, tokio::sync::oneshot::Sender<()>)>,
    now: Instant,
) -> Vec<tokio::sync::oneshot::Sender<()>> {
    waiting
        .extract_if(.., |(at, fire)| *at <= now || fire.is_closed())
        .map(|(_, fire)| fire)
        .collect()
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

/// Replaces the monotonic clock's subscriptions in `linker` (after WASI was added to it).
pub(crate) fn bound_clock_subscriptions(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut clock = linker.instance(MONOTONIC_CLOCK)?;
    clock.func_wrap(
        "subscribe-duration",
        |mut store: StoreContextMut<'_, Host>, (nanos,): (u64,)| {
            let wanted = Instant::now().checked_add(Duration::from_nanos(nanos));
            Ok((sleep_until(store.data_mut(), wanted)?,))
        },
    )?;
    clock.func_wrap(
        "subscribe-instant",
        |mut store: StoreContextMut<'_, Host>, (when,): (u64,)| {
            let host = store.data_mut();
            let wanted = host.clock.start.checked_add(Duration::from_nanos(when));
            Ok((sleep_until(host, wanted)?,))
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// A subscription ready at `wanted` (`None`: too far to represent), or at the call's deadline
/// if that comes first, which marks the call as having hit it.
fn sleep_until(
    host: &mut Host,
    wanted: Option<Instant>,
) -> wasmtime::Result<wasmtime::component::Resource<DynPollable>> {
    let at = match wanted {
        Some(wanted) if wanted <= host.deadline.at => wanted,
        _ => {
            host.deadline.hit = true;
            host.deadline.at
        }
    };
    let sleep = host.table.push(Sleep {
        at: tokio::time::Instant::from_std(at),
        timer: None,
    })?;
    subscribe(&mut host.table, sleep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_and_abandoned_backstops_are_taken_out_and_the_rest_stay() {
        let now = Instant::now();
        let (due, mut due_rx) = tokio::sync::oneshot::channel();
        let (later, mut later_rx) = tokio::sync::oneshot::channel();
        let (abandoned, abandoned_rx) = tokio::sync::oneshot::channel::<()>();
        drop(abandoned_rx);
        let mut waiting = vec![
            (now, due),
            (now + Duration::from_secs(60), later),
            (now + Duration::from_secs(60), abandoned),
        ];
        let taken = take_due(&mut waiting, now);
        assert_eq!(taken.len(), 2);
        assert_eq!(waiting.len(), 1, "the one not yet due stays");
        for fire in taken {
            let _ = fire.send(());
        }
        assert_eq!(due_rx.try_recv(), Ok(()));
        assert!(later_rx.try_recv().is_err(), "not fired early");
        assert!(take_due(&mut waiting, now + Duration::from_secs(61)).len() == 1);
        assert!(waiting.is_empty());
    }

    #[tokio::test]
    async fn a_backstop_is_ready_once_its_time_has_passed() {
        // The epoch thread, which fires backstops, comes with the engine.
        crate::load::engine().expect("an engine");
        let started = Instant::now();
        tokio::time::timeout(Duration::from_secs(30), backstop(Duration::from_millis(30)))
            .await
            .expect("fired by the epoch thread");
        assert!(
            started.elapsed() >= Duration::from_millis(30),
            "not before its time"
        );
    }
}

//! Deadlines that hold in wall-clock time, whatever the guest does.
//!
//! Epoch interruption stops a guest that runs wasm code past its deadline: at every epoch tick
//! ([`EPOCH_TICK`]) the guest either yields to the executor or, past the deadline, traps
//! ([`CallDeadline::on_epoch_tick`]). It does not stop one that is blocked inside the host; the
//! clock policy (`policy::clock`) cuts the only such waits a store can make at the deadline.
//!
//! Every other wait inside the host (a stream that never drains, a poll on a request never
//! sent, a slow upstream, instantiation) is stopped by dropping the call's future a tick after
//! the deadline ([`bounded`]): wasmtime then unwinds the guest, and its instance is dropped.
//!
//! The caller of a call handed to a blocking thread gives up at a backstop ([`backstop`]),
//! which the epoch thread fires at its ticks: every such call arms one, and a timer of its own
//! would wake another thread twice per call.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wasmtime::UpdateDeadline;

/// How often the epoch advances; per-call deadlines are rounded up to this.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(10);

/// `call` (a call into an instance, or its instantiation), or `Err(())` if it has not finished
/// a tick after `at`: it was waiting inside a host call, where neither epoch interruption nor
/// the clock cut reaches. The future is dropped then, which unwinds the guest's stack; the
/// instance must not be used again. (A tick later than the deadline, so that a guest running
/// wasm code meets the epoch trap first, as before.) A system call that never returns is not
/// stopped by this: its thread is held until it does, and the caller's [`backstop`] answers.
///
/// Timed by a [`backstop`], so it needs no timer from the runtime it runs on (a blocking
/// thread's runtime may have none), and armed only once `call` has had to wait: a call that
/// answers at its first poll costs nothing more.
pub(crate) async fn bounded<F: std::future::Future>(at: Instant, call: F) -> Result<F::Output, ()> {
    use std::task::Poll;
    let mut call = std::pin::pin!(call);
    // An async fn does nothing until polled: the backstop is armed at its first poll.
    let mut stop = std::pin::pin!(backstop_at(at.checked_add(EPOCH_TICK).unwrap_or(at)));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(answer) = call.as_mut().poll(cx) {
            return Poll::Ready(Ok(answer));
        }
        stop.as_mut().poll(cx).map(|()| Err(()))
    })
    .await
}

/// The deadline of the call in progress (or of instantiation), whether the guest asked to wait
/// past it, the guest's monotonic clock, which a clock wait is measured against, and the
/// caller's signal to stop the call sooner.
#[derive(Debug, Clone)]
pub(crate) struct CallDeadline {
    pub(crate) at: Instant,
    pub(crate) hit: bool,
    pub(crate) guest_clock: GuestClock,
    /// Set by whoever started the call when its answer is no longer wanted (an agent's run
    /// whose Task was canceled): wasm code stops at the next epoch tick as if past its
    /// deadline. Clock waits still end at their time or the deadline. Only for this call.
    pub(crate) stop: Option<Arc<AtomicBool>>,
}

impl CallDeadline {
    /// A deadline `timeout` from now, for an instance whose clock is `guest_clock`.
    pub(crate) fn after(timeout: Duration, guest_clock: GuestClock) -> Self {
        CallDeadline {
            at: Instant::now() + timeout,
            hit: false,
            guest_clock,
            stop: None,
        }
    }

    /// Arms the deadline of a new call.
    pub(crate) fn start_call(&mut self, at: Instant) {
        self.at = at;
        self.hit = false;
        self.stop = None;
    }

    /// At every epoch tick while wasm code runs: past the call's deadline (or once told to
    /// stop), a trap ([`wasmtime::Trap::Interrupt`], reported as the timeout); before it, a
    /// yield to the executor and on. A call running on an async worker so shares its thread
    /// with other work at least once a tick, however long the guest computes.
    pub(crate) fn on_epoch_tick(&self) -> UpdateDeadline {
        let stopped = self
            .stop
            .as_ref()
            .is_some_and(|stop| stop.load(Ordering::Relaxed));
        if stopped || Instant::now() >= self.at {
            return UpdateDeadline::Interrupt;
        }
        UpdateDeadline::Yield(1)
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

/// Callers waiting for an answer from a blocking thread, each with the instant it gives up
/// ([`backstop`]); checked at every epoch tick by the epoch thread ([`fire_backstops`]).
static BACKSTOPS: std::sync::Mutex<Vec<(Instant, tokio::sync::oneshot::Sender<()>)>> =
    std::sync::Mutex::new(Vec::new());

/// Ready once `duration` has passed (rounded up to the next epoch tick), from any runtime.
///
/// Timed by the epoch thread, which ticks anyway, not by a timer of its own: a call on the
/// blocking pool arms one of these every time, and a timer of its own costs a wake of a timer
/// thread to arm it and another to disarm it, a large part of a small call's CPU time
/// (`docs/benchmarks/history.md`, "No thread woken per component call"). Arming here is a push
/// under a lock; disarming is dropping the future, which the next tick sweeps out.
pub(crate) async fn backstop(duration: Duration) {
    match Instant::now().checked_add(duration) {
        Some(at) => backstop_at(at).await,
        // Too far to represent: never.
        None => std::future::pending().await,
    }
}

/// Ready once `at` has passed (rounded up to the next epoch tick), from any runtime: a
/// [`backstop`] given its instant.
pub(crate) async fn backstop_at(at: Instant) {
    let (fire, fired) = tokio::sync::oneshot::channel();
    BACKSTOPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((at, fire));
    if fired.await.is_err() {
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
}

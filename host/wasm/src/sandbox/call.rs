//! Running one call of a component on a pooled instance: on the caller's task for
//! [`Run::Inline`] when an idle instance is ready (`sandbox::inline`), otherwise, or when the
//! inline attempt needs a blocking thread, on Tokio's blocking pool, with a backstop for a
//! call held in a system call.

use crate::sandbox::deadline;
use crate::sandbox::inline::{self, NeedsBlocking};
use crate::sandbox::policy::quota;
use crate::sandbox::pool::{Instance, InstancePool, World};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolnexus_core::{Limit, StoreError};

/// Where a call should run ([`InstancePool::call`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Run {
    /// On the caller's task, if it can (`sandbox::inline`): a `get`.
    Inline,
    /// On Tokio's blocking pool.
    Blocking,
}

pub(crate) type BoxFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// One call of the component on an instance (`A`: its world's functions), answering a trap
/// (outer `Err`) or the component's answer, whose `Err` is its own error (`E`); made again from
/// the start if its first attempt ran inline and needed a blocking thread.
pub(crate) type Op<A, T, E> = Box<
    dyn for<'a> Fn(&'a mut Instance<A>) -> BoxFuture<'a, wasmtime::Result<Result<T, E>>>
        + Send
        + Sync,
>;

/// How long a caller waits for a call on the blocking pool: its deadline (`timeout`) and as
/// much again for making an instance (setting up runs under a deadline of its own), and a
/// second more. The deadline stops guest code and clock waits, not a system call: a call held
/// in one (a hung disk, or a flush of all a component wrote) is answered as timed out here,
/// while its thread, and the instance permit it holds, wait for the kernel.
fn blocking_call_backstop(timeout: Duration) -> Duration {
    timeout
        .saturating_mul(2)
        .saturating_add(Duration::from_secs(1))
}

impl<W: World> InstancePool<W> {
    /// Performs `op` on an instance: for [`Run::Inline`], right here on the caller's task when
    /// an idle instance is ready; otherwise, or when the inline attempt needs a blocking
    /// thread, on Tokio's blocking pool.
    pub(crate) async fn call<T: Send + 'static>(
        self: &Arc<Self>,
        run: Run,
        op: Op<W::Api, T, W::Error>,
    ) -> Result<T, StoreError> {
        self.call_within(run, self.config.timeout, op).await
    }

    /// [`InstancePool::call`] with a deadline of its own instead of the pool's (a short one
    /// for a call that must not hold an instance long, such as an agent's `cancel`). Making a
    /// fresh instance for it still runs under the pool's.
    pub(crate) async fn call_within<T: Send + 'static>(
        self: &Arc<Self>,
        run: Run,
        timeout: Duration,
        op: Op<W::Api, T, W::Error>,
    ) -> Result<T, StoreError> {
        // The permit moves into the blocking work: if the caller gives up (a dropped future, a
        // timeout around this call), the guest may still be running, and its instance still
        // counts against `max_instances` until it returns. Inline, the guest stops with the
        // dropped future, and so does the permit's hold.
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let mut deadline = None;
        if run == Run::Inline
            && self.inline_gets.enabled()
            && let Some(instance) = self.take_idle()
        {
            let at = Instant::now() + timeout;
            match self.attempt(instance, &op, at, true).await {
                Ok(answer) => return answer,
                // Nothing was changed: run it again where it may block, by the same deadline.
                Err(needs) => {
                    tracing::debug!(component = %self.config.name, "{needs}");
                    self.inline_gets.count_stop(&needs);
                    deadline = Some(at);
                }
            }
        }
        // An idle instance, or room in the memory budget for a fresh one; else wait here, on
        // the caller's task, for one to come back.
        let slot = self.instance_or_reservation().await;
        let pool = Arc::clone(self);
        let work = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            wasmtime_wasi::runtime::in_tokio(async {
                let instance = match slot {
                    Ok(instance) => instance,
                    Err(reservation) => pool.instantiate(reservation).await?,
                };
                let at = deadline.unwrap_or_else(|| Instant::now() + timeout);
                pool.attempt(instance, &op, at, false)
                    .await
                    .unwrap_or_else(|needs| Err(pool.config.component_error(needs.to_string())))
            })
        });
        let wait = blocking_call_backstop(timeout);
        tokio::select! {
            joined = work => {
                joined.map_err(|e| self.config.component_error(format!("call aborted: {e}")))?
            }
            () = deadline::backstop(wait) => {
                tracing::warn!(
                    component = %self.config.name,
                    "no answer {wait:?} after a call with a deadline of {timeout:?} was handed \
                     to a thread: it is held in a system call (a slow or hung disk, or a flush \
                     of much data) and answered as timed out; its thread keeps its instance \
                     until the system call returns, and what the call was doing may still \
                     complete"
                );
                Err(self.config.limit_error(Limit::Timeout(timeout)))
            }
        }
    }

    /// `op` on `instance`, armed with `deadline`; `inline` if on an async worker. The instance
    /// goes back to the pool after an answer, and is dropped after a trap or a limit. `Err` if
    /// the attempt was stopped because it needs a blocking thread (the instance is dropped then
    /// too).
    async fn attempt<T>(
        &self,
        mut instance: Instance<W::Api>,
        op: &Op<W::Api, T, W::Error>,
        deadline: Instant,
        inline: bool,
    ) -> Result<Result<T, StoreError>, NeedsBlocking> {
        instance.start_call(deadline, inline);
        let config = &self.config;
        // Epoch interruption stops guest code and the clock cut stops clock waits; a wait
        // inside any other host call (a body stream that never drains, a poll on a request
        // never sent, a slow upstream) is stopped here: the call's future is dropped at the
        // deadline, which unwinds the guest, and the instance is dropped with it, so its
        // permit and memory reservation come back.
        let Ok(answer) = deadline::bounded(deadline, op(&mut instance)).await else {
            drop(instance);
            return Ok(Err(config.limit_error(Limit::Timeout(config.timeout))));
        };
        Ok(match answer {
            // It asked to wait past its deadline and was woken at it: whatever it answered after
            // that came too late.
            Ok(_) if instance.hit_deadline() => {
                Err(config.limit_error(Limit::Timeout(config.timeout)))
            }
            Ok(answer) => {
                let state = instance.store.data_mut();
                if let Some(quota) = &state.quota {
                    quota::settle(quota, &mut state.wasi.table);
                }
                let over_quota = instance.hit_quota();
                if !config.fresh_instances && !instance.leaks_handles(config.dir.is_some()) {
                    self.release(instance);
                }
                answer.map_err(|e| match (over_quota, &self.disk) {
                    // It failed after a write was refused for the quota: that is why.
                    (true, Some(disk)) => config.limit_error(Limit::Disk(disk.limit)),
                    _ => self.world.answer_error(config, e),
                })
            }
            // The instance may be in any state after a trap: drop it.
            Err(trap) => match inline::needs_blocking(&trap) {
                Some(needs) => return Err(needs),
                None => Err(self.trap_error(&instance, trap)),
            },
        })
    }
}

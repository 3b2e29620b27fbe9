//! [`WasmAgent`]: an agent component run in the sandbox's instance pool, behind the native
//! [`Agent`] trait. One run is one `handle` call on a pooled instance, on Tokio's blocking
//! pool, under the run's deadline; the run's [`Updater`] is reachable from the `task` import
//! for that call only.

use crate::agent::contract::{AgentApi, WitCanceledTask};
use crate::agent::convert::{outcome_from_wit, request_to_wit};
use crate::agent::world::AgentWorld;
use crate::sandbox::call::{BoxFuture, Op, Run};
use crate::sandbox::pool::{Instance, InstancePool};
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use toolnexus_a2a_protocol::{Agent, CanceledTask, Outcome, Work};
use toolnexus_core::{Limit, StoreError};

/// An agent component run by wasmtime, behind the [`Agent`] trait.
pub struct WasmAgent {
    pub(crate) pool: Arc<InstancePool<AgentWorld>>,
    pub(crate) name: String,
    pub(crate) cancel_timeout: Duration,
}

impl std::fmt::Debug for WasmAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmAgent")
            .field("name", &self.name)
            .field("timeout", &self.pool.config.timeout)
            .field("max_instances", &self.pool.config.max_instances)
            .finish_non_exhaustive()
    }
}

/// One call of an agent component ([`Op`]): its functions have no error of their own.
type AgentOp<T> = Op<AgentApi, T, Infallible>;

fn op<T: Send + 'static, F>(f: F) -> AgentOp<T>
where
    F: for<'a> Fn(&'a mut Instance<AgentApi>) -> BoxFuture<'a, wasmtime::Result<T>>
        + Send
        + Sync
        + 'static,
{
    Box::new(move |instance| {
        let call = f(instance);
        Box::pin(async move { call.await.map(Ok) })
    })
}

impl WasmAgent {
    /// The agent's name, as its failed Tasks' messages say it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The deadline of one run.
    pub fn timeout(&self) -> Duration {
        self.pool.config.timeout
    }

    /// What went wrong with a call, as the message of the Task it fails: the agent's fault
    /// named, nothing of the host's.
    fn failure(&self, err: StoreError) -> String {
        let what = match &err {
            StoreError::LimitExceeded {
                limit: Limit::Timeout(_),
                ..
            } => format!(
                "stopped at its deadline of {} per run",
                short_duration(self.pool.config.timeout)
            ),
            StoreError::LimitExceeded { limit, .. } => format!("stopped: over its {limit}"),
            StoreError::Component { reason, .. } => match reason.strip_prefix("trapped: ") {
                // The backtrace is for the log; the Task's message says what the trap was.
                Some(trap) => match trap.rsplit_once("wasm trap: ") {
                    Some((_, code)) => format!("trapped: {code}"),
                    None => format!("trapped: {}", trap.split("\\n").next().unwrap_or(trap)),
                },
                None => reason.clone(),
            },
            _ => "failed in the host".to_owned(),
        };
        tracing::warn!(agent = %self.name, error = %err, "an agent run failed");
        format!("agent {}: {what}", self.name)
    }
}

/// `d` as a short duration: whole minutes, seconds or milliseconds when it is one.
fn short_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms > 0 && ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else if ms > 0 && ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{d:?}")
    }
}

/// Aborts its task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[async_trait::async_trait]
impl Agent for WasmAgent {
    async fn run(&self, work: &mut Work) -> Result<Outcome, String> {
        let request = request_to_wit(work.request());
        let updater = work.updater();
        // A canceled Task's run is stopped at the next epoch tick while it computes: its
        // outcome would be ignored, and its instance serves other runs sooner.
        let stop = Arc::new(AtomicBool::new(false));
        // Ended with the run, even if the run's future is dropped: the cancel signal of a
        // finished run never fires, and the watcher would wait for good.
        let _stop_on_cancel = AbortOnDrop(tokio::spawn({
            let mut updater = updater.clone();
            let stop = Arc::clone(&stop);
            async move {
                updater.canceled().await;
                stop.store(true, Ordering::Relaxed);
            }
        }));
        let canceled = updater.clone();
        let handle = op(move |instance| {
            let request = request.clone();
            let updater = updater.clone();
            let stop = Arc::clone(&stop);
            Box::pin(async move {
                // The `task` import of this instance acts on this run until the call returns;
                // an instance that traps is dropped with it, and the next call starts without.
                let state = instance.store.data_mut();
                state.call_context = Some(Box::new(updater));
                state.deadline.stop = Some(stop);
                let outcome = instance
                    .api
                    .agent
                    .call_handle(&mut instance.store, &request)
                    .await;
                instance.store.data_mut().call_context = None;
                outcome
            })
        });
        let outcome = self.pool.call(Run::Blocking, handle).await;
        let outcome = outcome.map_err(|e| {
            if canceled.is_canceled() {
                // What the run answers now is ignored: the Task stays canceled.
                format!("agent {}: stopped: the task was canceled", self.name)
            } else {
                self.failure(e)
            }
        })?;
        outcome_from_wit(outcome).map_err(|e| format!("agent {}: {e}", self.name))
    }

    async fn cancel(&self, task: &CanceledTask) {
        let task = WitCanceledTask {
            task_id: task.task_id.clone(),
            context_id: task.context_id.clone(),
            owner: task.owner.clone(),
            tenant: task.tenant.clone(),
        };
        let cancel = op(move |instance| {
            let task = task.clone();
            Box::pin(async move {
                let api = &instance.api;
                match &api.scoped_cancel {
                    Some(scoped) => scoped.call_cancel(&mut instance.store, &task).await,
                    None => {
                        api.agent
                            .call_cancel(&mut instance.store, &task.task_id, &task.context_id)
                            .await
                    }
                }
            })
        });
        let call = self
            .pool
            .call_within(Run::Blocking, self.cancel_timeout, cancel);
        // Waiting for an instance counts too: with every instance busy, the cancel is given up
        // rather than queued for as long as a run may take. The Task stays canceled anyway.
        let wait = self.cancel_timeout.saturating_mul(2);
        match tokio::time::timeout(wait, call).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::debug!(agent = %self.name, error = %e, "the agent's cancel failed");
            }
            Err(_) => {
                tracing::debug!(agent = %self.name, "the agent's cancel got no instance in time");
            }
        }
    }
}

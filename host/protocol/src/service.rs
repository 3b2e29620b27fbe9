//! The A2A operations over the store: [`Service::call`] takes one parsed request and answers
//! a value or a [`Subscription`]; every Task read and write goes through the store of the
//! request's namespace.
//!
//! The operations are split by job, one module each: sending and the agents' runs, the
//! subscription and its event stream, listing, canceling; every change of a Task goes through
//! one guarded transition.

use crate::background_work::CountingSpawn;
use crate::call::Call;
use crate::error::{A2aError, ErrorKind};
use crate::scope::At;
use crate::service_state::ServiceState;
use crate::task_count::TaskCount;
use crate::task_json::task_answer;
use crate::wire::{self, Version};
use serde_json::json;
use std::sync::Arc;

pub use crate::answer::Answer;
pub use crate::scope::{MemoryStores, Scope, SingleStore, Stores};
pub use crate::service_config::{ServiceConfig, Spawn};
pub use crate::subscription::Subscription;
pub use crate::task_json::{new_id, now, with_status};

/// The A2A operations.
pub struct Service {
    pub(crate) inner: Arc<ServiceState>,
    /// What it handed to the host's executor and is not over yet.
    background: Arc<TaskCount>,
}

impl Clone for Service {
    fn clone(&self) -> Self {
        Service {
            inner: Arc::clone(&self.inner),
            background: Arc::clone(&self.background),
        }
    }
}

impl Service {
    /// The service over `stores`; its background work (the agents' runs) goes to `spawn`.
    pub fn new(stores: Arc<dyn Stores>, config: ServiceConfig, spawn: Arc<dyn Spawn>) -> Self {
        let background = Arc::new(TaskCount::default());
        let spawn = Arc::new(CountingSpawn {
            host: spawn,
            work: Arc::clone(&background),
        });
        Service {
            inner: Arc::new(ServiceState::new(stores, config, spawn)),
            background,
        }
    }

    /// For a host that stops: from now on `SendMessage` is refused
    /// ([`codes::SERVER_BUSY`](crate::codes::SERVER_BUSY), retry later; nothing saved), and
    /// every agent run in this process, and any whose send was taken just before, ends at
    /// once: the agent's run is dropped, and its Task saved `failed` with
    /// [`RUN_STOPPED_MESSAGE`](crate::RUN_STOPPED_MESSAGE) unless it is terminal already (its
    /// subscribers get that as their final event). Returns at once; [`Service::background_idle`]
    /// tells when the runs are over. To let runs finish first, wait for that before calling this.
    pub fn stop_runs(&self) {
        self.inner.stop_runs();
    }

    /// Resolves once none of this service's background work is in progress: every agent run
    /// started so far has saved its outcome (its saves, and the push notifier's part of them,
    /// done), and every cancel hook has returned. A send being handled may start another.
    pub async fn background_idle(&self) {
        self.background.idle().await;
    }

    /// How many of this service's background futures (agent runs, cancel hooks) are in
    /// progress.
    pub fn background_running(&self) -> usize {
        self.background.running()
    }

    pub fn config(&self) -> &ServiceConfig {
        &self.inner.config
    }

    /// Whether push notifications are offered: [`ServiceConfig::push`] is set and the root
    /// store keeps push configs. The card's `capabilities.pushNotifications` says this.
    pub async fn push_offered(&self) -> bool {
        self.inner.push_offered().await
    }

    /// Handles one call for `scope`, answering in `version`.
    pub async fn call(
        &self,
        scope: &Scope,
        call: Call,
        version: Version,
    ) -> Result<Answer, A2aError> {
        if let Some(tenant) = &scope.tenant
            && !self.inner.config.tenants.contains(tenant)
        {
            return Err(A2aError::invalid(format!(
                "unknown tenant: {:?}",
                wire::truncate(tenant, 64)
            )));
        }
        let ns = scope.namespace();
        let store = self.inner.stores.store(ns.as_deref()).await?;
        let at = At {
            store,
            ns: ns.unwrap_or_default(),
        };
        let inner = &self.inner;
        match call {
            Call::Send(params) => inner.send(&at, scope, params, version).await,
            Call::Get { id, history_length } => {
                let task = at
                    .store
                    .get(&id)
                    .await?
                    .ok_or_else(|| A2aError::not_found(&id))?;
                Ok(Answer::Value(task_answer(
                    task.into_value(),
                    history_length,
                    version,
                )))
            }
            Call::List(params) => inner.list(&at, params, version).await.map(Answer::Value),
            Call::Cancel { id } => inner
                .cancel(&at, scope, &id, version)
                .await
                .map(Answer::Value),
            Call::Subscribe { id } => inner.subscribe(&at, &id, version).await.map(Answer::Stream),
            Call::Delete { id } => {
                if at.store.delete(&id).await? {
                    Ok(Answer::Value(json!({"id": id, "deleted": true})))
                } else {
                    Err(A2aError::not_found(&id))
                }
            }
            Call::PushConfig(push) => {
                let notifier = inner.push_notifier(&at).await?;
                inner
                    .push_config(&at, &*notifier, push, version)
                    .await
                    .map(Answer::Value)
            }
            // The card declares `extendedAgentCard: false`: then 1.0 says UnsupportedOperation
            // (ExtendedAgentCardNotConfigured is for an agent that declares one it lacks).
            Call::ExtendedCard => Err(A2aError::new(
                ErrorKind::UnsupportedOperation,
                "this agent has no extended agent card",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::EchoAgent;
    use crate::call::SendParams;
    use futures_util::future::BoxFuture;
    use std::collections::HashSet;
    use std::time::Duration;
    use toolnexus_core::{InMemoryTaskStore, TaskStore};

    struct NoSpawn;
    impl Spawn for NoSpawn {
        fn spawn(&self, _future: BoxFuture<'static, ()>) {}
    }

    fn service() -> Service {
        let store: Arc<dyn TaskStore> = Arc::new(InMemoryTaskStore::new());
        Service::new(
            Arc::new(SingleStore(store)),
            ServiceConfig {
                agent: Arc::new(EchoAgent::default()),
                max_background_tasks: 8,
                max_list_bytes: 1 << 20,
                tenants: HashSet::new(),
                poll_interval: Duration::from_millis(10),
                output_modes: vec!["text/plain".into()],
                agent_limits: Default::default(),
                finish_read_to_write_delay: Duration::ZERO,
                push: None,
                owner_limits: Default::default(),
            },
            Arc::new(NoSpawn),
        )
    }

    #[tokio::test]
    async fn listeners_leave_nothing_behind() {
        let service = service();
        let scope = Scope::default();
        for i in 0..1000 {
            let call = Call::Subscribe {
                id: format!("no-such-task-{i}"),
            };
            let refused = service.call(&scope, call, Version::V1_0).await;
            assert_eq!(refused.err().map(|e| e.code()), Some(-32001));
        }
        assert_eq!(service.inner.save_listeners.lock().unwrap().len(), 0);
        // A stream that is dropped before its Task changes leaves nothing either.
        let sent = service
            .call(
                &scope,
                Call::Send(SendParams {
                    message: json!({"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "x"}]}),
                    streaming: true,
                    return_immediately: false,
                    history_length: None,
                    accepted_output_modes: Vec::new(),
                    push_config: None,
                    metadata: None,
                    extensions: Vec::new(),
                }),
                Version::V1_0,
            )
            .await;
        let Ok(Answer::Stream(mut stream)) = sent else {
            panic!("a stream")
        };
        assert!(stream.next().await.is_some());
        assert_eq!(service.inner.save_listeners.lock().unwrap().len(), 1);
        drop(stream);
        assert_eq!(service.inner.save_listeners.lock().unwrap().len(), 0);
    }
}

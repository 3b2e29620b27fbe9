//! The A2A operations over the store: [`Service::call`] takes one parsed request and answers
//! a value or a [`Subscription`]; every Task read and write goes through the store of the
//! request's namespace.
//!
//! The operations are split by job, one module each: sending and the agents' runs, the
//! subscription and its event stream, listing, canceling; every change of a Task goes through
//! one guarded transition.

use crate::call::Call;
use crate::error::{A2aError, ErrorKind};
use crate::scope::At;
use crate::service_state::ServiceState;
use crate::task_json::task_answer;
use crate::wire::{self, Version};
use serde_json::json;
use std::sync::Arc;

pub use crate::answer::Answer;
pub use crate::scope::{Scope, SingleStore, Stores};
pub use crate::service_config::{ServiceConfig, Spawn};
pub use crate::subscription::Subscription;
pub use crate::task_json::{new_id, now, with_status};

/// The A2A operations.
pub struct Service {
    pub(crate) inner: Arc<ServiceState>,
}

impl Clone for Service {
    fn clone(&self) -> Self {
        Service {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl Service {
    pub fn new(stores: Arc<dyn Stores>, config: ServiceConfig, spawn: Arc<dyn Spawn>) -> Self {
        Service {
            inner: Arc::new(ServiceState::new(stores, config, spawn)),
        }
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
            Call::Cancel { id } => inner.cancel(&at, &id, version).await.map(Answer::Value),
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

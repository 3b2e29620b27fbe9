//! The push-notification config methods over the store of the request's namespace: set, get,
//! list, delete, and the config a `SendMessage` carries, each checked against the Task (it must
//! exist in the caller's namespace), the notifier's URL rules and the size and count limits, and
//! kept sealed ([`PushNotifier::seal`], for the namespace and Task it is kept under) in the
//! version-neutral shape of [`crate::push`].

use crate::error::{A2aError, ErrorKind};
use crate::push::{MAX_CONFIGS_PER_TASK, PushNotifier};
use crate::push_call::{PushCall, PushConfigInput};
use crate::push_wire::{config_out, stored};
use crate::scope::At;
use crate::service_state::ServiceState;
use crate::task_json::new_id;
use crate::wire::Version;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};
use toolnexus_core::PushConfig;

impl ServiceState {
    /// One push-config method, answered in `version`'s shape.
    pub(crate) async fn push_config(
        &self,
        at: &At,
        notifier: &dyn PushNotifier,
        call: PushCall,
        version: Version,
    ) -> Result<Value, A2aError> {
        match call {
            PushCall::Refused(error) => Err(error),
            PushCall::Set { task_id, config } => {
                self.check_task(at, &task_id).await?;
                let (sealed, shown) = self.checked_config(at, notifier, &task_id, &config)?;
                self.save_counted(at, &task_id, &sealed).await?;
                Ok(config_out(&shown, version))
            }
            PushCall::Get { task_id, config_id } => {
                self.check_task(at, &task_id).await?;
                let found = match &config_id {
                    Some(config_id) => at.store.get_push_config(&task_id, config_id).await?,
                    // 0.3 without a config id: the config named after the Task, else the first
                    // (what the 0.3 SDKs answer).
                    None => {
                        let mut configs = at.store.list_push_configs(&task_id).await?;
                        match configs.iter().position(|c| c.id() == task_id) {
                            Some(at) => Some(configs.swap_remove(at)),
                            None => configs.into_iter().next(),
                        }
                    }
                };
                let config = found.ok_or_else(|| {
                    A2aError::new(
                        ErrorKind::TaskNotFound,
                        format!(
                            "push notification config not found: {} of task {task_id}",
                            config_id.as_deref().unwrap_or("(any)")
                        ),
                    )
                })?;
                let opened = notifier
                    .open(at.namespace(), &task_id, config.to_map())
                    .map_err(|e| {
                        A2aError::internal(format!(
                            "opening push config {} of task {task_id}: {e}",
                            config.id()
                        ))
                    })?;
                Ok(config_out(&opened, version))
            }
            PushCall::List {
                task_id,
                page_size,
                page_token,
            } => {
                self.check_task(at, &task_id).await?;
                let after = page_token.as_deref().map(decode_token).transpose()?;
                let configs = at.store.list_push_configs(&task_id).await?;
                let mut page = Vec::new();
                let mut next_page_token = None;
                for config in configs.iter().filter(|c| {
                    after
                        .as_ref()
                        .is_none_or(|a| c.id().as_bytes() > a.as_bytes())
                }) {
                    if page_size.is_some_and(|size| page.len() >= size) {
                        next_page_token = page
                            .last()
                            .map(|(id, _): &(String, Value)| URL_SAFE_NO_PAD.encode(id.as_bytes()));
                        break;
                    }
                    match notifier.open(at.namespace(), &task_id, config.to_map()) {
                        Ok(opened) => {
                            page.push((config.id().to_owned(), config_out(&opened, version)))
                        }
                        // One config this notifier cannot open must not hide the others.
                        Err(e) => tracing::warn!(target: "toolnexus::server", task_id = %task_id,
                            config_id = %config.id(), error = %e,
                            "a stored push config cannot be opened; left out of the list"),
                    }
                }
                let configs: Vec<Value> = page.into_iter().map(|(_, c)| c).collect();
                Ok(match version {
                    Version::V1_0 => {
                        let mut answer = json!({"configs": configs});
                        if let Some(token) = next_page_token {
                            answer["nextPageToken"] = json!(token);
                        }
                        answer
                    }
                    Version::V0_3 => Value::Array(configs),
                })
            }
            PushCall::Delete { task_id, config_id } => {
                self.check_task(at, &task_id).await?;
                // Deleting what is not there is done already.
                at.store.delete_push_config(&task_id, &config_id).await?;
                Ok(match version {
                    Version::V1_0 => json!({}),
                    Version::V0_3 => Value::Null,
                })
            }
        }
    }

    /// The config a `SendMessage` carries, checked like a set's and saved for Task `task_id`
    /// (which exists, or is about to be created with this id).
    pub(crate) async fn save_send_config(
        &self,
        at: &At,
        notifier: &dyn PushNotifier,
        task_id: &str,
        config: &PushConfigInput,
    ) -> Result<(), A2aError> {
        let (sealed, _) = self.checked_config(at, notifier, task_id, config)?;
        self.save_counted(at, task_id, &sealed).await
    }

    /// The Task must exist in the caller's namespace.
    pub(crate) async fn check_task(&self, at: &At, task_id: &str) -> Result<(), A2aError> {
        match at.store.get(task_id).await? {
            Some(_) => Ok(()),
            None => Err(A2aError::not_found(task_id)),
        }
    }

    /// `config` as it is to be stored (sealed for the namespace and Task of `at` and
    /// `task_id`) and as it is answered (unsealed), once its URL and size pass.
    fn checked_config(
        &self,
        at: &At,
        notifier: &dyn PushNotifier,
        task_id: &str,
        config: &PushConfigInput,
    ) -> Result<(PushConfig, Map<String, Value>), A2aError> {
        notifier.check_url(&config.url).map_err(|reason| {
            A2aError::invalid_field(&config.url_field, &format!("is refused: {reason}"))
        })?;
        let id = config.id.clone().unwrap_or_else(new_id);
        let shown = stored(config, &id, task_id);
        // The size as stored (sealed secrets may be longer) is what the limit bounds.
        let sealed = notifier
            .seal(at.namespace(), task_id, shown.clone())
            .map_err(|e| A2aError::internal(format!("sealing a push config: {e}")))?;
        Ok((PushConfig::from_map(sealed)?, shown))
    }

    /// Saves `config` for Task `task_id` unless that would make the Task's configs more than
    /// [`MAX_CONFIGS_PER_TASK`] (replacing one of the same id always passes).
    ///
    /// Count and save happen under the Task's lock ([`ServiceState::guard`], which every
    /// transition of the Task takes too), so creates racing in this process count one after
    /// the other and the cap holds whatever their number. The guard always locks here: push
    /// configs are only handled where a notifier is told of saves, and then every store's
    /// transitions take it. Replicas over one store do not share the lock: see
    /// `docs/push-notifications.md` for what holds across them.
    async fn save_counted(
        &self,
        at: &At,
        task_id: &str,
        config: &PushConfig,
    ) -> Result<(), A2aError> {
        let guard = self.guard(at, task_id).await;
        let saved = async {
            let existing = at.store.list_push_configs(task_id).await?;
            let replaces = existing.iter().any(|c| c.id() == config.id());
            if existing.len() >= MAX_CONFIGS_PER_TASK && !replaces {
                return Err(A2aError::invalid(format!(
                    "task {task_id} has {} push notification configs, the most a task may \
                     have ({MAX_CONFIGS_PER_TASK}); delete one or replace one by its id",
                    existing.len()
                )));
            }
            at.store.save_push_config(task_id, config).await?;
            Ok(())
        }
        .await;
        drop(guard);
        // The lock's entry goes once nobody holds or waits for it, as after a transition.
        self.forget_lock(at, task_id);
        saved
    }
}

/// The config id a `nextPageToken` continues after.
fn decode_token(token: &str) -> Result<String, A2aError> {
    URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| A2aError::invalid_field("pageToken", "is not a token this server made"))
}

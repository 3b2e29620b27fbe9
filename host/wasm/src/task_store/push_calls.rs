//! The push-config methods of a [`WasmTaskStore`] (the contract's `push-configs`): each runs one
//! call of the component on the sandbox's pool, under the same deadline and limits as every
//! other call, and checks its answer before it is believed. A component's answer is hostile:
//! `get` must answer the config asked for, `list` a bounded list of configs sorted by id with
//! no id twice, each a JSON object with a non-empty string `id`; anything else is a
//! [`StoreError::Component`].

use crate::message::sanitize;
use crate::sandbox::call::Run;
use crate::task_store::store::WasmTaskStore;
use crate::task_store::store_op::op;
use toolnexus_core::{
    MAX_PUSH_CONFIGS_PER_TASK, PushConfig, StoreError, check_config_id, check_id,
};

/// The most configs a `list` answer may hold. The A2A layer keeps a Task at
/// [`MAX_PUSH_CONFIGS_PER_TASK`], but creates racing in several replicas can each pass that
/// check, so a store may hold a few more; a component answering far more is broken or lying.
pub(crate) const MAX_LISTED_PUSH_CONFIGS: usize = 4 * MAX_PUSH_CONFIGS_PER_TASK;

/// The most bytes of config text a `list` answer may hold together: room for
/// [`MAX_PUSH_CONFIGS_PER_TASK`] configs of the largest size with some to spare, so one answer
/// cannot make the host hold much more than a Task page.
pub(crate) const MAX_LISTED_PUSH_CONFIG_BYTES: usize = 16 << 20;

/// How much of an id a component made up is shown in an error.
const SHOWN_ID_CHARS: usize = 64;

impl WasmTaskStore {
    pub(super) async fn set_push_config_checked(
        &self,
        task_id: &str,
        config: &PushConfig,
    ) -> Result<(), StoreError> {
        self.require_push_configs()?;
        check_id(task_id)?;
        let what = format!("the push config change of task {task_id:?}");
        let task_id = task_id.to_owned();
        let config = config.clone();
        self.pool
            .call(
                Run::Blocking,
                op(move |i| {
                    let (task_id, config) = (task_id.clone(), config.clone());
                    Box::pin(async move {
                        let api = i.api.push_configs()?;
                        api.set(&mut i.store, &task_id, config.as_json()).await
                    })
                }),
            )
            .await
            .map_err(|e| self.write_error(&what, e))
    }

    /// `get`, its answer checked: a config whose id is `config_id`.
    pub(super) async fn get_push_config_checked(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<PushConfig>, StoreError> {
        self.require_push_configs()?;
        check_id(task_id)?;
        check_config_id(config_id)?;
        let (task_id, config_id) = (task_id.to_owned(), config_id.to_owned());
        let (tid, cid) = (task_id.clone(), config_id.clone());
        let found = self
            .pool
            .call(
                Run::Blocking,
                op(move |i| {
                    let (task_id, config_id) = (tid.clone(), cid.clone());
                    Box::pin(async move {
                        let api = i.api.push_configs()?;
                        api.get(&mut i.store, &task_id, &config_id).await
                    })
                }),
            )
            .await?;
        let Some(text) = found else {
            return Ok(None);
        };
        let call = || format!("get of push config {config_id:?} of Task {task_id:?}");
        let config = self.checked_config(&text, &call)?;
        if config.id() != config_id {
            return Err(self.component_error(format!(
                "{} returned the config with id {}",
                call(),
                shown(config.id())
            )));
        }
        Ok(Some(config))
    }

    /// `list`, its answer checked: bounded in count and bytes, each a config, sorted by id
    /// (byte order, ascending) with no id twice.
    pub(super) async fn list_push_configs_checked(
        &self,
        task_id: &str,
    ) -> Result<Vec<PushConfig>, StoreError> {
        self.require_push_configs()?;
        check_id(task_id)?;
        let task_id = task_id.to_owned();
        let tid = task_id.clone();
        let texts = self
            .pool
            .call(
                Run::Blocking,
                op(move |i| {
                    let task_id = tid.clone();
                    Box::pin(async move {
                        let api = i.api.push_configs()?;
                        api.list(&mut i.store, &task_id).await
                    })
                }),
            )
            .await?;
        let call = || format!("list of the push configs of Task {task_id:?}");
        if texts.len() > MAX_LISTED_PUSH_CONFIGS {
            return Err(self.component_error(format!(
                "{} returned {} configs, over the most a Task may have here \
                 ({MAX_LISTED_PUSH_CONFIGS})",
                call(),
                texts.len()
            )));
        }
        let bytes: usize = texts.iter().map(String::len).sum();
        if bytes > MAX_LISTED_PUSH_CONFIG_BYTES {
            return Err(self.component_error(format!(
                "{} returned {bytes} bytes of configs, over the limit of \
                 {MAX_LISTED_PUSH_CONFIG_BYTES}",
                call()
            )));
        }
        let mut configs: Vec<PushConfig> = Vec::with_capacity(texts.len());
        for text in &texts {
            let config = self.checked_config(text, &call)?;
            if let Some(before) = configs.last()
                && before.id().as_bytes() >= config.id().as_bytes()
            {
                return Err(self.component_error(format!(
                    "{} returned config {} after {}: not sorted by id with each id once",
                    call(),
                    shown(config.id()),
                    shown(before.id())
                )));
            }
            configs.push(config);
        }
        Ok(configs)
    }

    pub(super) async fn delete_push_config_checked(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<bool, StoreError> {
        self.require_push_configs()?;
        check_id(task_id)?;
        check_config_id(config_id)?;
        let what = format!("the push config delete of task {task_id:?}");
        let (task_id, config_id) = (task_id.to_owned(), config_id.to_owned());
        self.pool
            .call(
                Run::Blocking,
                op(move |i| {
                    let (task_id, config_id) = (task_id.clone(), config_id.clone());
                    Box::pin(async move {
                        let api = i.api.push_configs()?;
                        api.delete(&mut i.store, &task_id, &config_id).await
                    })
                }),
            )
            .await
            .map_err(|e| self.write_error(&what, e))
    }

    /// A config the component answered, checked as the caller's are: JSON text of an object
    /// with a non-empty string `id`, no larger than a config may be.
    fn checked_config(
        &self,
        text: &str,
        call: &dyn Fn() -> String,
    ) -> Result<PushConfig, StoreError> {
        PushConfig::from_json(text).map_err(|e| {
            let reason = match e {
                StoreError::InvalidPushConfig { reason } => reason,
                other => other.to_string(),
            };
            self.component_error(format!(
                "{} returned something that is not a push config: {}",
                call(),
                sanitize(&reason)
            ))
        })
    }
}

/// An id a component made up, for an error: quoted, escaped, and cut short.
fn shown(id: &str) -> String {
    let mut cut: String = id.chars().take(SHOWN_ID_CHARS).collect();
    if cut.len() < id.len() {
        cut.push('…');
    }
    sanitize(&format!("{cut:?}"))
}

//! [`InMemoryTaskStore`]: the default store, for the lifetime of the process.

use crate::error::StoreError;
use crate::push::{PushConfig, check_config_id};
use crate::store::{Expect, ListQuery, StoreUsage, TaskPage, TaskStore, check_id};
use crate::task::Task;
use std::collections::{BTreeMap, HashMap};
use std::sync::RwLock;
use toolnexus_format::query::{PageCollector, SortKey};

/// Tasks in a map, lost when the process exits. The default store; fine for development and for
/// anything ephemeral. Versions and compare-and-set are exact: one lock orders every save.
/// Push-notification configs are kept too, per Task, in a map of their own.
#[derive(Debug, Default)]
pub struct InMemoryTaskStore {
    tasks: RwLock<HashMap<String, (Task, u64)>>,
    /// Per Task id, its configs by config id. A `BTreeMap` of `String` keys iterates in byte
    /// order, the order a listing promises.
    push_configs: RwLock<HashMap<String, BTreeMap<String, PushConfig>>>,
}

impl InMemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many Tasks the store holds.
    pub fn len(&self) -> usize {
        self.tasks.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether the store holds no Task.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait::async_trait]
impl TaskStore for InMemoryTaskStore {
    async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
        Ok(self.get_versioned(id).await?.map(|(task, _)| task))
    }

    fn supports_versions(&self) -> bool {
        true
    }

    async fn get_versioned(&self, id: &str) -> Result<Option<(Task, u64)>, StoreError> {
        check_id(id)?;
        // A poisoned lock only means another caller panicked mid-clone; the map is intact.
        Ok(self
            .tasks
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned())
    }

    async fn save(&self, task: &Task) -> Result<(), StoreError> {
        self.save_versioned(task, Expect::Any).await.map(|_| ())
    }

    async fn save_versioned(&self, task: &Task, expect: Expect) -> Result<u64, StoreError> {
        let mut tasks = self.tasks.write().unwrap_or_else(|e| e.into_inner());
        let current = tasks.get(task.id()).map(|(_, v)| *v);
        if !expect.holds(current) {
            return Err(StoreError::Conflict {
                id: task.id().to_owned(),
                expected: expect,
                current,
            });
        }
        let version = current.map_or(1, |v| v.saturating_add(1));
        tasks.insert(task.id().to_owned(), (task.clone(), version));
        Ok(version)
    }

    async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
        let mut page = PageCollector::new(query).map_err(|e| StoreError::InvalidQuery {
            reason: e.to_string(),
        })?;
        let tasks = self.tasks.read().unwrap_or_else(|e| e.into_inner());
        for (id, (task, _)) in tasks.iter() {
            let key = SortKey::of(id.as_str(), task.as_map());
            if query.matches_with(task.as_map(), key.timestamp) {
                page.push(key, task.clone());
            }
        }
        drop(tasks);
        let cut = page.finish();
        Ok(TaskPage {
            tasks: cut.items.into_iter().map(|(_, task)| task).collect(),
            next_page_token: cut.next_page_token,
            total_size: Some(cut.total_size),
        })
    }

    async fn usage(&self) -> Result<Option<StoreUsage>, StoreError> {
        let tasks = self.tasks.read().unwrap_or_else(|e| e.into_inner());
        let bytes = tasks
            .values()
            .map(|(task, _)| task.as_json().len() as u64)
            .sum();
        Ok(Some(StoreUsage {
            tasks: tasks.len() as u64,
            bytes,
        }))
    }

    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        check_id(id)?;
        let existed = self
            .tasks
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id)
            .is_some();
        self.push_configs
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        Ok(existed)
    }

    fn supports_push_configs(&self) -> bool {
        true
    }

    async fn save_push_config(&self, task_id: &str, config: &PushConfig) -> Result<(), StoreError> {
        check_id(task_id)?;
        self.push_configs
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .entry(task_id.to_owned())
            .or_default()
            .insert(config.id().to_owned(), config.clone());
        Ok(())
    }

    async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<PushConfig>, StoreError> {
        check_id(task_id)?;
        check_config_id(config_id)?;
        let configs = self.push_configs.read().unwrap_or_else(|e| e.into_inner());
        Ok(configs
            .get(task_id)
            .and_then(|of_task| of_task.get(config_id))
            .cloned())
    }

    async fn list_push_configs(&self, task_id: &str) -> Result<Vec<PushConfig>, StoreError> {
        check_id(task_id)?;
        let configs = self.push_configs.read().unwrap_or_else(|e| e.into_inner());
        Ok(configs
            .get(task_id)
            .map(|of_task| of_task.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<bool, StoreError> {
        check_id(task_id)?;
        check_config_id(config_id)?;
        let mut configs = self.push_configs.write().unwrap_or_else(|e| e.into_inner());
        let Some(of_task) = configs.get_mut(task_id) else {
            return Ok(false);
        };
        let existed = of_task.remove(config_id).is_some();
        if of_task.is_empty() {
            configs.remove(task_id);
        }
        Ok(existed)
    }

    fn describe(&self) -> String {
        "memory".into()
    }
}

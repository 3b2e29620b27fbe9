//! [`InMemoryTaskStore`]: the default store, for the lifetime of the process.

use crate::error::StoreError;
use crate::store::{Expect, ListQuery, TaskPage, TaskStore, check_id};
use crate::task::Task;
use std::collections::HashMap;
use std::sync::RwLock;
use toolnexus_format::query::{PageCollector, SortKey};

/// Tasks in a map, lost when the process exits. The default store; fine for development and for
/// anything ephemeral. Versions and compare-and-set are exact: one lock orders every save.
#[derive(Debug, Default)]
pub struct InMemoryTaskStore {
    tasks: RwLock<HashMap<String, (Task, u64)>>,
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

    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        check_id(id)?;
        Ok(self
            .tasks
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id)
            .is_some())
    }

    fn describe(&self) -> String {
        "memory".into()
    }
}

//! [`InMemoryTaskStore`]: the default store, for the lifetime of the process.

use crate::error::StoreError;
use crate::store::{ListQuery, TaskPage, TaskStore, check_expected, check_id};
use crate::task::Task;
use std::collections::HashMap;
use std::sync::RwLock;

/// Tasks in a map, lost when the process exits. The default store; fine for development and for
/// anything ephemeral.
#[derive(Debug, Default)]
pub struct InMemoryTaskStore {
    tasks: RwLock<HashMap<String, Task>>,
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
        let task = task.clone();
        let mut tasks = self.tasks.write().unwrap_or_else(|e| e.into_inner());
        tasks.insert(task.id().to_owned(), task);
        Ok(())
    }

    async fn save_if(&self, task: &Task, expected: Option<&Task>) -> Result<bool, StoreError> {
        check_expected(task, expected)?;
        let mut tasks = self.tasks.write().unwrap_or_else(|e| e.into_inner());
        if tasks.get(task.id()) != expected {
            return Ok(false);
        }
        tasks.insert(task.id().to_owned(), task.clone());
        Ok(true)
    }

    async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
        let tasks = self.tasks.read().unwrap_or_else(|e| e.into_inner());
        let matching = tasks
            .iter()
            .filter(|(id, task)| query.after_token(id) && query.matches(task.as_map()))
            .map(|(id, task)| (id.clone(), task.clone()))
            .collect();
        let (tasks, next_page_token) = toolnexus_format::query::paginate(matching, query);
        Ok(TaskPage {
            tasks,
            next_page_token,
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

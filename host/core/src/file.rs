//! [`FileTaskStore`]: one JSON file per Task in a directory, written atomically.

use crate::error::StoreError;
use crate::push::{PushConfig, check_config_id};
use crate::store::{Expect, ListQuery, StoreUsage, TaskPage, TaskStore, check_id};
use crate::task::Task;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolnexus_format::dir::STALE_TEMP_AGE;
use toolnexus_format::{DirStore, Durability};

/// Tasks as `<encoded-id>.json` files in one directory: they survive a restart, and a fresh
/// store over the same directory (in this process or another) sees the latest save. A Task's
/// push-notification configs are files too, in `.push/<encoded-id>/` under the directory.
///
/// Writes go to a unique temp file that is flushed and then renamed over the Task's file, so a
/// concurrent reader sees the old Task or the new one, never half of one. The format, shared
/// byte for byte with the file-store component, is specified in `docs/on-disk-format.md`.
#[derive(Debug, Clone)]
pub struct FileTaskStore {
    dir: Arc<DirStore>,
}

impl FileTaskStore {
    /// A store over `dir`, created if missing, with full durability. Temp files left by
    /// writers that crashed (older than an hour) are removed.
    pub fn new(dir: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::with_durability(dir, Durability::Full)
    }

    /// Like [`FileTaskStore::new`], choosing how hard saves work to survive power loss.
    pub fn with_durability(
        dir: impl AsRef<Path>,
        durability: Durability,
    ) -> Result<Self, StoreError> {
        Self::with_options(dir, durability, toolnexus_format::dir::DEFAULT_LOCK_LEASE)
    }

    /// Like [`FileTaskStore::with_durability`], also choosing the lease of a Task's lock: how
    /// long a writer that crashed in the middle of a save keeps that Task from being saved
    /// (see `docs/on-disk-format.md`). Every writer of one directory must use the same lease.
    pub fn with_options(
        dir: impl AsRef<Path>,
        durability: Durability,
        lock_lease: std::time::Duration,
    ) -> Result<Self, StoreError> {
        let dir = dir.as_ref();
        toolnexus_format::dir::create_private_dir(dir)
            .map_err(|e| StoreError::io(format!("cannot create directory {}", dir.display()), e))?;
        let store = DirStore::new(dir, durability).with_lock_lease(lock_lease);
        store.check_case_sensitive()?;
        store.sweep_temp_files(STALE_TEMP_AGE)?;
        Ok(FileTaskStore {
            dir: Arc::new(store),
        })
    }

    /// The directory holding the Task files.
    pub fn dir(&self) -> &Path {
        self.dir.root()
    }

    /// The file that holds (or would hold) the Task with this id.
    pub fn path_of(&self, id: &str) -> Result<PathBuf, StoreError> {
        check_id(id)?;
        Ok(self.dir.path_of(id)?)
    }

    async fn blocking<T: Send + 'static>(
        &self,
        op: impl FnOnce(&DirStore) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let dir = Arc::clone(&self.dir);
        tokio::task::spawn_blocking(move || op(&dir))
            .await
            .map_err(|e| StoreError::io("file store worker stopped", std::io::Error::other(e)))?
    }
}

#[async_trait::async_trait]
impl TaskStore for FileTaskStore {
    async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
        check_id(id)?;
        // A small Task whose name and bytes are in the page cache is read right here: that
        // never waits for the disk, and costs less than handing it to a blocking thread.
        #[cfg(target_os = "linux")]
        if let Some(found) = self.dir.try_get_text_cached(id) {
            return Ok(found?.map(|text| Task::from_checked_text(id.to_owned(), text)));
        }
        let id = id.to_owned();
        // No version asked for: the version record is not read.
        self.blocking(move |dir| {
            let text = dir.get_text(&id)?;
            Ok(text.map(|text| Task::from_checked_text(id, text)))
        })
        .await
    }

    fn supports_versions(&self) -> bool {
        true
    }

    async fn get_versioned(&self, id: &str) -> Result<Option<(Task, u64)>, StoreError> {
        check_id(id)?;
        let id = id.to_owned();
        self.blocking(move |dir| {
            let found = dir.get_versioned(&id)?;
            Ok(found.map(|(text, version)| (Task::from_checked_text(id, text), version)))
        })
        .await
    }

    async fn save(&self, task: &Task) -> Result<(), StoreError> {
        self.save_versioned(task, Expect::Any).await.map(|_| ())
    }

    async fn save_versioned(&self, task: &Task, expect: Expect) -> Result<u64, StoreError> {
        let task = task.clone();
        self.blocking(move |dir| Ok(dir.save_checked_if(task.id(), task.as_json(), expect)?))
            .await
    }

    async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
        let query = query.clone();
        self.blocking(move |dir| {
            let page = dir.list_texts(&query)?;
            let tasks = page
                .tasks
                .into_iter()
                .map(|(id, text)| Task::from_checked_text(id, text))
                .collect();
            Ok(TaskPage {
                tasks,
                next_page_token: page.next_page_token,
                total_size: Some(page.total_size),
            })
        })
        .await
    }

    async fn usage(&self) -> Result<Option<StoreUsage>, StoreError> {
        self.blocking(move |dir| {
            let (tasks, bytes) = dir.usage()?;
            Ok(Some(StoreUsage { tasks, bytes }))
        })
        .await
    }

    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        check_id(id)?;
        let id = id.to_owned();
        self.blocking(move |dir| Ok(dir.delete(&id)?)).await
    }

    fn supports_push_configs(&self) -> bool {
        true
    }

    async fn save_push_config(&self, task_id: &str, config: &PushConfig) -> Result<(), StoreError> {
        check_id(task_id)?;
        let (task_id, config) = (task_id.to_owned(), config.clone());
        self.blocking(move |dir| {
            Ok(dir.save_push_config(&task_id, config.id(), config.as_json())?)
        })
        .await
    }

    async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<PushConfig>, StoreError> {
        check_id(task_id)?;
        check_config_id(config_id)?;
        let (task_id, config_id) = (task_id.to_owned(), config_id.to_owned());
        self.blocking(move |dir| {
            let text = dir.get_push_config(&task_id, &config_id)?;
            Ok(text.map(|text| PushConfig::from_checked_text(config_id, text)))
        })
        .await
    }

    async fn list_push_configs(&self, task_id: &str) -> Result<Vec<PushConfig>, StoreError> {
        check_id(task_id)?;
        let task_id = task_id.to_owned();
        self.blocking(move |dir| {
            let configs = dir.list_push_config_entries(&task_id)?;
            Ok(configs
                .into_iter()
                .map(|(id, text)| PushConfig::from_checked_text(id, text))
                .collect())
        })
        .await
    }

    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<bool, StoreError> {
        check_id(task_id)?;
        check_config_id(config_id)?;
        let (task_id, config_id) = (task_id.to_owned(), config_id.to_owned());
        self.blocking(move |dir| Ok(dir.delete_push_config(&task_id, &config_id)?))
            .await
    }

    fn describe(&self) -> String {
        format!("file:{}", self.dir().display())
    }
}

//! [`WasmTaskStore`]: a store component run in the sandbox's instance pool, and what it
//! tells about itself. Its [`TaskStore`] methods are in `task_store::calls`.
//!
//! [`TaskStore`]: toolnexus_core::TaskStore

use crate::load::ComponentSource;
use crate::sandbox::pool::InstancePool;
use crate::sandbox_spec::SandboxedDir;
use crate::task_store::limits::Limits;
use crate::task_store::version::{CATALOG_INTERFACE, PUSH_CONFIGS_INTERFACE};
use crate::task_store::world::TaskStoreWorld;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolnexus_core::{Limit, StoreError};

/// A store component run by wasmtime, behind the [`TaskStore`](toolnexus_core::TaskStore)
/// trait.
#[derive(Clone)]
pub struct WasmTaskStore {
    pub(super) pool: Arc<InstancePool<TaskStoreWorld>>,
    pub(super) limits: Limits,
    /// Whether this is the built-in file store, whose Task files the host can name: a `get`
    /// answer that is not the Task asked for is then reported as that file's corruption.
    pub(super) names_task_files: bool,
}

impl std::fmt::Debug for WasmTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmTaskStore")
            .field("component", &self.pool.config.name)
            .field("dir", &self.pool.world.dir)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl WasmTaskStore {
    /// The built-in file-store component over `dir`.
    pub fn file_store(dir: impl Into<PathBuf>) -> Result<Self, StoreError> {
        Self::builder(ComponentSource::BuiltinFileStore)
            .dir(dir)
            .build()
    }

    /// The component in the file at `path`, granted `dir`.
    pub fn from_file(
        path: impl Into<PathBuf>,
        dir: impl Into<PathBuf>,
    ) -> Result<Self, StoreError> {
        Self::builder(ComponentSource::File(path.into()))
            .dir(dir)
            .build()
    }

    /// The directory granted to the component.
    pub fn dir(&self) -> &Path {
        &self.pool.world.dir
    }

    /// What the component was loaded from.
    pub fn component_name(&self) -> &str {
        &self.pool.config.name
    }

    /// Whether the component exports the optional `catalog` interface (`list`, `delete`).
    pub fn supports_catalog(&self) -> bool {
        self.pool.world.exports.has_catalog()
    }

    /// Whether the component exports the optional `lean` interface (a save told its id, a
    /// get without the version), which this host then uses for [`TaskStore::save`],
    /// [`TaskStore::save_versioned`] and [`TaskStore::get`].
    ///
    /// [`TaskStore::save`]: toolnexus_core::TaskStore::save
    /// [`TaskStore::save_versioned`]: toolnexus_core::TaskStore::save_versioned
    /// [`TaskStore::get`]: toolnexus_core::TaskStore::get
    pub fn supports_lean(&self) -> bool {
        self.pool.world.exports.has_lean()
    }

    /// Whether the component keeps push-notification configs: it exports the optional
    /// `push-configs` interface.
    pub fn supports_push_configs(&self) -> bool {
        self.pool.world.exports.has_push_configs()
    }

    pub(super) fn require_catalog(&self, operation: &'static str) -> Result<(), StoreError> {
        if self.supports_catalog() {
            return Ok(());
        }
        Err(StoreError::Unsupported {
            store: format!(
                "store component {} (it does not export {CATALOG_INTERFACE})",
                self.pool.config.name,
            ),
            operation,
        })
    }

    /// The component exports `push-configs`; else [`StoreError::Unsupported`], with the
    /// operation name of the trait's defaults (callers match on it).
    pub(super) fn require_push_configs(&self) -> Result<(), StoreError> {
        if self.supports_push_configs() {
            return Ok(());
        }
        Err(StoreError::Unsupported {
            store: format!(
                "store component {} (it does not export {PUSH_CONFIGS_INTERFACE})",
                self.pool.config.name
            ),
            operation: "push notification configs",
        })
    }

    /// What the component's directory holds, as the disk quota counts it (file lengths plus
    /// [`ENTRY_BYTES`](crate::ENTRY_BYTES) per entry); `None` for a read-only store.
    pub fn disk_used(&self) -> Option<u64> {
        self.pool.disk.as_ref().map(|disk| disk.used())
    }

    /// The limits the component runs under.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    pub(super) fn component_error(&self, reason: String) -> StoreError {
        self.pool.config.component_error(reason)
    }

    pub(super) fn limit_error(&self, limit: Limit) -> StoreError {
        self.pool.config.limit_error(limit)
    }

    /// The error of a write call (`what`: a save, a delete, a push-config change) as its caller
    /// should see it: a call stopped at its deadline may have renamed or removed its file
    /// before it was stopped, so the host cannot say whether it took effect
    /// ([`StoreError::OutcomeUnknown`], which tells the caller to read again); every other
    /// failure is kept as it is.
    pub(super) fn write_error(&self, what: &str, err: StoreError) -> StoreError {
        match err {
            StoreError::LimitExceeded {
                limit: Limit::Timeout(after),
                ..
            } => StoreError::OutcomeUnknown {
                store: format!("store component {}", self.pool.config.name),
                reason: format!(
                    "{what} was stopped at its deadline of {after:?}, possibly after it took \
                     effect: read again before retrying"
                ),
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_os = "linux")]
    use crate::sandbox::inline::MAX_INLINE_STOPS;
    use crate::task_store::limits::{DEFAULT_MAX_INSTANCES, DEFAULT_MEMORY_TOTAL};
    use toolnexus_core::{Task, TaskStore};

    /// The default instance count is only worth having if the file store's instances fit the
    /// default budget that many times over: else its calls would run fewer at once.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_file_stores_instances_fit_the_default_budget_at_the_default_count() {
        let tmp = tempfile::tempdir().unwrap();
        let store = WasmTaskStore::file_store(tmp.path()).unwrap();
        let task = Task::from_json(r#"{"id":"t-1","status":{"state":"submitted"}}"#).unwrap();
        store.save(&task).await.unwrap();
        assert!(store.get("t-1").await.unwrap().is_some());
        let largest = store.pool.budget.largest();
        assert!(largest > 0, "a call came back and was measured");
        eprintln!("file-store instance after a save and a get: {largest} bytes");
        assert!(
            largest * DEFAULT_MAX_INSTANCES <= DEFAULT_MEMORY_TOTAL,
            "{largest} bytes per instance"
        );
    }

    /// On a file system that cannot read without waiting (tmpfs has no `RWF_NOWAIT`), every
    /// `get` tried inline would stop and cost its instance; such stops count, so after a few
    /// the store's `get`s run on the blocking pool directly, on instances kept between calls.
    #[cfg(target_os = "linux")]
    #[tokio::test(flavor = "multi_thread")]
    async fn gets_where_reads_cannot_skip_waiting_go_to_the_blocking_pool_for_good() {
        let Ok(tmp) = tempfile::tempdir_in("/dev/shm") else {
            eprintln!("no /dev/shm here: nothing to check");
            return;
        };
        let probe = tmp.path().join("probe");
        std::fs::write(&probe, b"x").unwrap();
        let file = std::fs::File::open(&probe).unwrap();
        let mut buf = [0u8; 1];
        let nowait = rustix::io::preadv2(
            &file,
            &mut [std::io::IoSliceMut::new(&mut buf)],
            0,
            rustix::io::ReadWriteFlags::NOWAIT,
        );
        if nowait.is_ok() {
            eprintln!("/dev/shm reads without waiting here: nothing to check");
            return;
        }
        let store = WasmTaskStore::file_store(tmp.path().join("tasks")).unwrap();
        let task = Task::from_json(r#"{"id":"t-1","status":{"state":"working"}}"#).unwrap();
        store.save(&task).await.unwrap();
        for _ in 0..=MAX_INLINE_STOPS {
            assert_eq!(store.get("t-1").await.unwrap().unwrap().id(), "t-1");
        }
        assert!(
            !store.pool.inline_gets.enabled(),
            "gets still tried inline after {} stops",
            MAX_INLINE_STOPS + 1
        );
    }
}

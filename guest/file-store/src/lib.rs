//! The toolnexus file store as a WebAssembly component (world
//! `toolnexus:task-store/push-task-store@0.4.0`: every interface of the contract, push configs
//! included).
//!
//! Build with `cargo build -p toolnexus-file-store-component --target wasm32-wasip2 --release`.
//! It stores one JSON file per Task in the only directory the host preopens for it (guest path
//! `/`), with exactly the native `FileTaskStore`'s format: both are [`toolnexus_format::DirStore`].
//! Push-notification configs are files under `/.push/`, as the native store keeps them. It
//! cannot see anything else on the host.

wit_bindgen::generate!({
    path: "../../wit",
    world: "push-task-store",
});

use exports::toolnexus::task_store::catalog::{Guest as Catalog, ListQuery, TaskPage};
use exports::toolnexus::task_store::config::Guest as Config;
use exports::toolnexus::task_store::lean::Guest as Lean;
use exports::toolnexus::task_store::push_configs::Guest as PushConfigs;
use exports::toolnexus::task_store::store::{
    Condition, Guest, StoreError, StoredTask, VersionConflict,
};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use toolnexus_format::dir::DEFAULT_LOCK_LEASE;
use toolnexus_format::query::Timestamp;
#[cfg(all(target_os = "wasi", target_env = "p2"))]
use toolnexus_format::wasi_fs::set_host_refuses_special_files;
use toolnexus_format::{DirError, DirStore, Durability, Expect};

/// A native build (clippy, `cargo test --workspace`) only type-checks the component: there is no
/// host to refuse anything.
#[cfg(not(all(target_os = "wasi", target_env = "p2")))]
fn set_host_refuses_special_files(_refuses: bool) {}

/// The granted directory, as the guest sees it.
const ROOT: &str = "/";

struct FileStore;

/// Set by `configure(durability=relaxed)`; full durability until then.
static RELAXED: AtomicBool = AtomicBool::new(false);
/// Set by `configure(lock-lease-ms=…)`.
static LEASE_MS: AtomicU64 = AtomicU64::new(DEFAULT_LOCK_LEASE.as_millis() as u64);
/// Set by `configure(answers-checked=true)`: the host checks every `get` answer in full, so
/// `get` passes a Task file's text through without scanning it a first time.
static ANSWERS_CHECKED: AtomicBool = AtomicBool::new(false);

fn store() -> Result<DirStore, StoreError> {
    // Once per instance: refuse a directory that folds case. In `configure` (at instantiation)
    // where the host calls it, else in the first call; a refusal stands for every call. Temp
    // files left by writers that crashed mid-save are cleared by listings (which walk the
    // directory anyway), never here: an instance may serve a single request (the composed
    // server makes one per request), and a sweep per instance would walk the whole directory
    // each time.
    static OPENED: OnceLock<Result<(), String>> = OnceLock::new();
    let durability = if RELAXED.load(Ordering::Relaxed) {
        Durability::Relaxed
    } else {
        Durability::Full
    };
    let mut store = DirStore::new(ROOT, durability)
        .with_lock_lease(Duration::from_millis(LEASE_MS.load(Ordering::Relaxed)));
    if ANSWERS_CHECKED.load(Ordering::Relaxed) {
        store = store.with_gets_checked_by_caller();
    }
    let opened = OPENED.get_or_init(|| {
        store.check_case_sensitive().map_err(|e| e.to_string())
    });
    match opened {
        Ok(()) => Ok(store),
        Err(reason) => Err(StoreError::Io(reason.clone())),
    }
}

fn to_wit(err: DirError) -> StoreError {
    let msg = err.to_string();
    match err {
        DirError::InvalidId(_) | DirError::InvalidTask(_) => StoreError::InvalidInput(msg),
        DirError::Corrupt { .. } => StoreError::Corrupt(msg),
        DirError::Io { .. } => StoreError::Io(msg),
        DirError::AfterRename { .. } | DirError::LateRename { .. } => {
            StoreError::OutcomeUnknown(msg)
        }
        DirError::Conflict { current, .. } => StoreError::Conflict(VersionConflict {
            current,
            message: msg,
        }),
        DirError::InvalidQuery(_) => StoreError::InvalidInput(msg),
    }
}

impl Guest for FileStore {
    fn get(id: String) -> Result<Option<StoredTask>, StoreError> {
        let found = store()?.get_versioned(&id).map_err(to_wit)?;
        Ok(found.map(|(task, version)| StoredTask { task, version }))
    }

    fn save(task: String, condition: Condition) -> Result<u64, StoreError> {
        let id = toolnexus_format::task::check_task_text(&task)
            .map_err(|e| StoreError::InvalidInput(e.to_string()))?;
        store()?
            .save_checked_if(&id, &task, expect(condition))
            .map_err(to_wit)
    }
}

fn expect(condition: Condition) -> Expect {
    match condition {
        Condition::Any => Expect::Any,
        Condition::Absent => Expect::Absent,
        Condition::Version(v) => Expect::Version(v),
    }
}

impl Lean for FileStore {
    /// The host checked `task` and says its id: written as given, without a scan (the one that
    /// `save` needs to find the id is most of a large save's time in WebAssembly).
    fn save(id: String, task: String, condition: Condition) -> Result<u64, StoreError> {
        store()?
            .save_checked_if(&id, &task, expect(condition))
            .map_err(to_wit)
    }

    /// The Task file alone: its version record is not read.
    fn get_text(id: String) -> Result<Option<String>, StoreError> {
        store()?.get_text(&id).map_err(to_wit)
    }
}

impl Catalog for FileStore {
    fn list(query: ListQuery) -> Result<TaskPage, StoreError> {
        let status_timestamp_after = query
            .status_timestamp_after
            .as_deref()
            .map(Timestamp::parse)
            .transpose()
            .map_err(|e| StoreError::InvalidInput(e.to_string()))?;
        let query = toolnexus_format::ListQuery {
            context_id: query.context_id,
            state: query.state,
            status_timestamp_after,
            page_size: query.page_size as usize,
            page_token: query.page_token,
        };
        let page = store()?.list_texts(&query).map_err(to_wit)?;
        Ok(TaskPage {
            tasks: page.tasks.into_iter().map(|(_, text)| text).collect(),
            next_page_token: page.next_page_token,
            total_size: page.total_size,
        })
    }

    fn delete(id: String) -> Result<bool, StoreError> {
        store()?.delete(&id).map_err(to_wit)
    }
}

impl PushConfigs for FileStore {
    /// `config` is the caller's: checked here (a host that checked it already pays one scan of
    /// a small text), then written exactly as given.
    fn set(task_id: String, config: String) -> Result<(), StoreError> {
        if task_id.is_empty() {
            return Err(StoreError::InvalidInput("task id is empty".into()));
        }
        let config_id = toolnexus_format::check_push_config_text(&config)
            .map_err(|e| StoreError::InvalidInput(e.to_string()))?;
        store()?
            .save_push_config(&task_id, &config_id, &config)
            .map_err(to_wit)
    }

    fn get(task_id: String, config_id: String) -> Result<Option<String>, StoreError> {
        store()?
            .get_push_config(&task_id, &config_id)
            .map_err(to_wit)
    }

    fn list(task_id: String) -> Result<Vec<String>, StoreError> {
        store()?.list_push_configs(&task_id).map_err(to_wit)
    }

    fn delete(task_id: String, config_id: String) -> Result<bool, StoreError> {
        store()?
            .delete_push_config(&task_id, &config_id)
            .map_err(to_wit)
    }
}

/// A setting that is `true` or `false`.
fn flag(name: &str, value: &str) -> Result<bool, String> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(format!("{name} must be true or false, not {other:?}")),
    }
}

impl Config for FileStore {
    fn configure(settings: Vec<(String, String)>) -> Result<(), String> {
        for (name, value) in settings {
            match name.as_str() {
                "lock-lease-ms" => match value.parse::<u64>() {
                    Ok(ms) if (10..=3_600_000).contains(&ms) => {
                        LEASE_MS.store(ms, Ordering::Relaxed)
                    }
                    _ => {
                        return Err(format!(
                            "lock-lease-ms must be a whole number of milliseconds from 10 to 3600000, not {value:?}"
                        ));
                    }
                },
                "durability" => match value.as_str() {
                    "full" => RELAXED.store(false, Ordering::Relaxed),
                    "relaxed" => RELAXED.store(true, Ordering::Relaxed),
                    other => {
                        return Err(format!("durability must be full or relaxed, not {other:?}"));
                    }
                },
                "answers-checked" => ANSWERS_CHECKED.store(flag(&name, &value)?, Ordering::Relaxed),
                "special-files-refused" => set_host_refuses_special_files(flag(&name, &value)?),
                _ => {}
            }
        }
        // Open now, at instantiation, rather than in the first call, which may be a `get` run
        // on the host's async worker, where a directory listing is never done. A directory
        // that folds case is refused here, before any call.
        if let Err(StoreError::Io(reason)) = store() {
            return Err(reason);
        }
        Ok(())
    }
}

// Only a wasm build exports the component ABI; a native build (clippy, `cargo test --workspace`)
// just type-checks the code, since export names like `toolnexus:task-store/...` are not valid
// native linker symbols.
#[cfg(target_family = "wasm")]
export!(FileStore);

//! The toolnexus file store as a WebAssembly component (world `toolnexus:task-store/task-store`).
//!
//! Build with `cargo build -p toolnexus-file-store-component --target wasm32-wasip2 --release`.
//! It stores one JSON file per Task in the only directory the host preopens for it (guest path
//! `/`), with exactly the native `FileTaskStore`'s format: both are [`toolnexus_format::DirStore`].
//! It cannot see anything else on the host.

wit_bindgen::generate!({
    path: "../../wit",
    world: "full-task-store",
});

use exports::toolnexus::task_store::catalog::{Guest as Catalog, ListQuery, TaskPage};
use exports::toolnexus::task_store::config::Guest as Config;
use exports::toolnexus::task_store::store::{Guest, StoreError};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};
use toolnexus_format::dir::STALE_TEMP_AGE;
use toolnexus_format::{DirError, DirStore, Durability};

/// The granted directory, as the guest sees it.
const ROOT: &str = "/";

struct FileStore;

/// Set by `configure(durability=relaxed)`; full durability until then.
static RELAXED: AtomicBool = AtomicBool::new(false);

fn store() -> DirStore {
    static SWEEP: Once = Once::new();
    let durability = if RELAXED.load(Ordering::Relaxed) {
        Durability::Relaxed
    } else {
        Durability::Full
    };
    let store = DirStore::new(ROOT, durability);
    // Once per instance: clear temp files left by writers that crashed mid-save.
    SWEEP.call_once(|| {
        let _ = store.sweep_temp_files(STALE_TEMP_AGE);
    });
    store
}

fn to_wit(err: DirError) -> StoreError {
    let msg = err.to_string();
    match err {
        DirError::InvalidId(_) | DirError::InvalidTask(_) => StoreError::InvalidInput(msg),
        DirError::Corrupt { .. } => StoreError::Corrupt(msg),
        DirError::Io { .. } => StoreError::Io(msg),
    }
}

impl Guest for FileStore {
    fn get(id: String) -> Result<Option<String>, StoreError> {
        store().get_text(&id).map_err(to_wit)
    }

    fn save(task: String) -> Result<(), StoreError> {
        store().save_text(&task).map_err(to_wit)
    }
}

impl Catalog for FileStore {
    fn list(query: ListQuery) -> Result<TaskPage, StoreError> {
        let query = toolnexus_format::ListQuery {
            context_id: query.context_id,
            state: query.state,
            page_size: query.page_size as usize,
            page_token: query.page_token,
        };
        let (tasks, next_page_token) = store().list_texts(&query).map_err(to_wit)?;
        Ok(TaskPage {
            tasks: tasks.into_iter().map(|(_, text)| text).collect(),
            next_page_token,
        })
    }

    fn delete(id: String) -> Result<bool, StoreError> {
        store().delete(&id).map_err(to_wit)
    }
}

impl Config for FileStore {
    fn configure(settings: Vec<(String, String)>) -> Result<(), String> {
        for (name, value) in settings {
            if name == "durability" {
                match value.as_str() {
                    "full" => RELAXED.store(false, Ordering::Relaxed),
                    "relaxed" => RELAXED.store(true, Ordering::Relaxed),
                    other => {
                        return Err(format!("durability must be full or relaxed, not {other:?}"));
                    }
                }
            }
        }
        Ok(())
    }
}

// Only a wasm build exports the component ABI; a native build (clippy, `cargo test --workspace`)
// just type-checks the code, since export names like `toolnexus:task-store/...` are not valid
// native linker symbols.
#[cfg(target_family = "wasm")]
export!(FileStore);

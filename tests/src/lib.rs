//! The suites every toolnexus task store must pass, and the helpers they share.
//!
//! The `tests/all/` test binary runs [`suite`] against the memory, native file and component
//! stores (`conformance.rs`), and on PostgreSQL (`postgres.rs`); its other modules cover what
//! only some stores have (files on disk, processes, selectors).
//! A store supplied by a host can reuse the suite: implement [`StoreFactory`] and call the
//! functions in [`suite`].

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolnexus::wasm::Sandboxed;
use toolnexus::{Task, TaskStore};

pub mod a2a_client;
pub mod agent_suite;
pub mod component_harness;
pub mod interchange;
pub mod node;
pub mod pg;
pub mod python_store;
pub mod suite;

/// The hostile test component built from `guest/hostile-fixture/` (see its crate docs for what each
/// id makes it do).
pub static HOSTILE_COMPONENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/hostile.wasm"));

/// A builder for the hostile component, compiled in this process only (no disk cache).
pub fn hostile_builder() -> toolnexus::wasm::WasmTaskStoreBuilder {
    // Its hoards are sized for the share of a raised limit, as `tnstore` raises it.
    let _ = toolnexus::wasm::raise_descriptor_limit();
    toolnexus::wasm::WasmTaskStore::builder(toolnexus::wasm::ComponentSource::Bytes {
        name: "hostile.wasm".into(),
        bytes: HOSTILE_COMPONENT.into(),
    })
    .cache(toolnexus::wasm::CacheDir::Off)
}

/// Whether `err` is a limit error for exactly `limit`.
pub fn is_limit(err: &toolnexus::StoreError, limit: toolnexus::Limit) -> bool {
    matches!(err, toolnexus::StoreError::LimitExceeded { limit: l, .. } if *l == limit)
}

/// The lifecycle-guard middleware (`guest/lifecycle-guard/`), alone: it imports the
/// task-store interfaces, so it cannot be loaded as a store by itself.
pub static LIFECYCLE_GUARD_COMPONENT: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/lifecycle-guard.wasm"));

/// The lifecycle guard composed over the file store at build time (see `build.rs`): one
/// component that loads with `wasm:` like any store.
pub static GUARDED_FILE_STORE_COMPONENT: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/guarded-file-store.wasm"));

/// Calls `$callback!(case, case, …)` with the name of every behaviour in [`suite`], so each
/// store's test module instantiates the whole suite from this one list and a new behaviour runs
/// against every store:
///
/// ```text
/// macro_rules! my_store { ($($case:ident),*) => { $( #[tokio::test] async fn $case() { … } )* } }
/// toolnexus_conformance::for_each_case!(my_store);
/// ```
#[macro_export]
macro_rules! for_each_case {
    ($callback:ident) => {
        $callback!(
            save_then_get_round_trips,
            miss_is_none,
            empty_id_is_an_error,
            lifecycle_latest_write_wins,
            vectors_round_trip,
            odd_ids_round_trip_and_stay_distinct,
            concurrent_saves_all_land,
            readers_never_see_a_partial_task,
            store_is_shareable_across_threads,
            list_pages_and_filters,
            delete_removes_a_task,
            usage_counts_what_is_stored,
            save_if_is_a_compare_and_set,
            versions_count_every_save,
            conditional_saves_race_with_one_winner
        );
    };
}

/// Opens stores of one kind, over a directory where the kind uses one.
pub trait StoreFactory: Send + Sync {
    /// A store over `dir`. Opening twice over the same `dir` must give stores that see each
    /// other's saves if [`StoreFactory::durable`] is true.
    fn open(&self, dir: &Path) -> Arc<dyn TaskStore>;
    /// Whether saves survive a fresh store over the same directory.
    fn durable(&self) -> bool;
}

/// The test vectors every implementation must round-trip: `tests/vectors/tasks` in this
/// repository (see its README).
pub fn vectors_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors/tasks");
    assert!(
        dir.is_dir(),
        "the test vectors are missing: expected them at {}",
        dir.display()
    );
    dir
}

/// Every vector as (file name, Task).
pub fn vectors() -> Vec<(String, Task)> {
    let mut out: Vec<_> = std::fs::read_dir(vectors_dir())
        .expect("vectors directory is readable")
        .map(|e| e.expect("vectors directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("vector is readable");
            let task = Task::from_json(&text)
                .unwrap_or_else(|e| panic!("vector {} is not a Task: {e}", p.display()));
            (p.file_name().unwrap().to_string_lossy().into_owned(), task)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(
        out.len() >= 8,
        "expected at least 8 vectors, found {}",
        out.len()
    );
    out
}

/// One vector by file name.
pub fn vector(name: &str) -> Task {
    vectors()
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no vector named {name}"))
        .1
}

/// One of each store that can list, over fresh folders under `dir`: memory, the native file
/// store, and the file-store component (`"wasm"`).
pub fn listing_stores(dir: &Path) -> Vec<(&'static str, Arc<dyn TaskStore>)> {
    vec![
        ("memory", Arc::new(toolnexus::InMemoryTaskStore::new())),
        (
            "file",
            Arc::new(toolnexus::FileTaskStore::new(dir.join("file")).unwrap()),
        ),
        (
            "wasm",
            Arc::new(toolnexus::wasm::WasmTaskStore::file_store(dir.join("wasm")).unwrap()),
        ),
    ]
}

/// Builds a Task from a `json!` value, panicking on a test's own mistake.
pub fn task(value: Value) -> Task {
    Task::try_from(value).expect("test task is valid")
}

/// The state of a Task (`status.state`), for assertions.
pub fn state(task: &Task) -> &str {
    task.get("status")
        .and_then(|s| s["state"].as_str())
        .unwrap_or("<none>")
}

/// The files directly in `dir` as sorted (name, contents) pairs: "nothing was written" is this
/// staying equal, and two stores wrote byte-identical directories when theirs are equal.
pub fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    collect_files(dir, "", &mut files);
    files.sort();
    files
}

/// Every file under `dir`, named by its path below the snapshot's root (`.push/<task>/<c>.json`
/// for a push config), with [`comparable`] bytes.
fn collect_files(dir: &Path, prefix: &str, files: &mut Vec<(String, Vec<u8>)>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let relative = format!("{prefix}{name}");
        if path.is_dir() {
            collect_files(&path, &format!("{relative}/"), files);
            continue;
        }
        let bytes =
            std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let bytes = comparable(&name, bytes);
        files.push((relative, bytes));
    }
}

/// A file's bytes as two directories written the same way must share them: a version record
/// (`.~<stem>.v`) names its Task file's modification time, which differs between any two
/// writes, and carries a check over it, so those two values are blanked (`"mtime_ns":_`,
/// `"check":"_"`); everything else stays as written, the record's padding included.
pub fn comparable(name: &str, bytes: Vec<u8>) -> Vec<u8> {
    if !(name.starts_with(".~") && name.ends_with(".v")) {
        return bytes;
    }
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if let Some(start) = text.find("\"mtime_ns\":") {
        let value = start + "\"mtime_ns\":".len();
        let end = text[value..]
            .find(|c: char| c != '-' && !c.is_ascii_digit())
            .map_or(text.len(), |n| value + n);
        text.replace_range(value..end, "_");
    }
    if let Some(start) = text.find("\"check\":\"") {
        let value = start + "\"check\":\"".len();
        let end = text[value..].find('"').map_or(text.len(), |n| value + n);
        text.replace_range(value..end, "_");
    }
    text.into_bytes()
}

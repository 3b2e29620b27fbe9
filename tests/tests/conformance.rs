//! The conformance suite, run against every store this repository ships.

use std::path::Path;
use std::sync::Arc;
use toolnexus::{
    ComponentSource, Durability, FileTaskStore, InMemoryTaskStore, TaskStore, WasmTaskStore,
};
use toolnexus_conformance::{StoreFactory, suite};

struct Memory(Arc<InMemoryTaskStore>);
impl StoreFactory for Memory {
    fn open(&self, _dir: &Path) -> Arc<dyn TaskStore> {
        // One store per test: "reopening" an in-memory store is the same store.
        Arc::clone(&self.0) as Arc<dyn TaskStore>
    }
    fn durable(&self) -> bool {
        false
    }
}

struct File;
impl StoreFactory for File {
    fn open(&self, dir: &Path) -> Arc<dyn TaskStore> {
        Arc::new(FileTaskStore::new(dir).expect("file store opens"))
    }
    fn durable(&self) -> bool {
        true
    }
}

struct FileRelaxed;
impl StoreFactory for FileRelaxed {
    fn open(&self, dir: &Path) -> Arc<dyn TaskStore> {
        Arc::new(
            FileTaskStore::with_durability(dir, Durability::Relaxed).expect("file store opens"),
        )
    }
    fn durable(&self) -> bool {
        true
    }
}

struct Wasm(Durability);
impl StoreFactory for Wasm {
    fn open(&self, dir: &Path) -> Arc<dyn TaskStore> {
        let store = WasmTaskStore::builder(ComponentSource::BuiltinFileStore)
            .dir(dir)
            .durability(self.0)
            .build()
            .expect("component store opens");
        Arc::new(store)
    }
    fn durable(&self) -> bool {
        true
    }
}

macro_rules! conformance {
    ($store:ident, $factory:expr, [$($case:ident),* $(,)?]) => {
        mod $store {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    let dir = tempfile::tempdir().unwrap();
                    let factory = $factory;
                    suite::$case(&factory, dir.path()).await;
                }
            )*
        }
    };
}

macro_rules! all_stores {
    ($($case:ident),* $(,)?) => {
        conformance!(memory, Memory(Arc::new(InMemoryTaskStore::new())), [$($case),*]);
        conformance!(file, File, [$($case),*]);
        conformance!(file_relaxed, FileRelaxed, [$($case),*]);
        conformance!(wasm, Wasm(Durability::Full), [$($case),*]);
        conformance!(wasm_relaxed, Wasm(Durability::Relaxed), [$($case),*]);
    };
}

all_stores!(
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
);

//! The conformance suite, run against every store this repository ships.

use std::path::Path;
use std::sync::Arc;
use toolnexus::wasm::SandboxedDir;
use toolnexus::wasm::{ComponentSource, WasmTaskStore};
use toolnexus::{Durability, FileTaskStore, InMemoryTaskStore, TaskStore};
use toolnexus_conformance::{GUARDED_FILE_STORE_COMPONENT, StoreFactory, suite};

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

/// The lifecycle guard composed over the file store at build time: one component, loaded from
/// bytes like any third-party store.
struct Guarded;
impl StoreFactory for Guarded {
    fn open(&self, dir: &Path) -> Arc<dyn TaskStore> {
        let source = ComponentSource::Bytes {
            name: "guarded-file-store.wasm".into(),
            bytes: GUARDED_FILE_STORE_COMPONENT.into(),
        };
        let store = WasmTaskStore::builder(source)
            .dir(dir)
            .build()
            .expect("composed component store opens");
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
        conformance!(guarded, Guarded, [$($case),*]);
    };
}

toolnexus_conformance::for_each_case!(all_stores);
// The push-notification config cases, in a module of their own (the callback names its modules).
mod push_cases {
    use super::*;
    toolnexus_conformance::for_each_push_case!(all_stores);
}

//! Embedding in a wasmtime-based runtime: a store component on the runtime's own engine (and
//! engines that lack what the sandbox needs refused, naming the setting), and the runtime's own
//! component (`guest/store-user/`) importing a task store that the host serves from memory, a
//! directory, PostgreSQL, or a store component, each case of the contract checked through the
//! imports.

use std::sync::Arc;
use std::time::Duration;
use toolnexus_core::{FileTaskStore, InMemoryTaskStore, Limit, StoreError, Task, TaskStore};
use toolnexus_wasm::embed::{EngineError, HasTaskStore, add_task_store_to_linker, check_engine};
use toolnexus_wasm::{CacheDir, ComponentSource, WasmTaskStore, WasmTaskStoreBuilder};
use toolnexus_wasm::{Sandboxed, SandboxedDir};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The `store-user` component (`guest/store-user/`), built by `build.rs`.
static STORE_USER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/store_user.wasm"));

/// The cases `store-user` checks (its `CASES`).
const CASES: [&str; 7] = [
    "miss",
    "round-trip",
    "upsert",
    "versions",
    "list",
    "delete",
    "invalid",
];

/// An engine as a runtime would make it for the sandbox.
fn runtime_engine() -> Engine {
    let mut config = Config::new();
    config.epoch_interruption(true);
    Engine::new(&config).expect("an engine")
}

fn file_store_on(engine: &Engine) -> Result<WasmTaskStoreBuilder, EngineError> {
    WasmTaskStore::builder(ComponentSource::BuiltinFileStore)
        .cache(CacheDir::Off)
        .engine(engine.clone())
}

#[test]
fn an_engine_without_epoch_interruption_is_refused_naming_it() {
    let engine = Engine::new(&Config::new()).unwrap();
    assert_eq!(
        check_engine(&engine),
        Err(EngineError::EpochInterruptionOff)
    );
    let err = file_store_on(&engine).unwrap_err();
    assert_eq!(err, EngineError::EpochInterruptionOff);
    let err = StoreError::from(err);
    assert!(
        err.to_string().contains("Config::epoch_interruption(true)"),
        "{err}"
    );
}

#[test]
fn an_engine_without_the_component_model_is_refused_naming_it() {
    let mut config = Config::new();
    config.epoch_interruption(true).wasm_component_model(false);
    let engine = Engine::new(&config).unwrap();
    assert_eq!(
        file_store_on(&engine).unwrap_err(),
        EngineError::ComponentModelOff
    );
}

#[test]
fn an_engine_that_consumes_fuel_is_refused_naming_it() {
    let mut config = Config::new();
    config.epoch_interruption(true).consume_fuel(true);
    let engine = Engine::new(&config).unwrap();
    let err = file_store_on(&engine).unwrap_err();
    assert_eq!(err, EngineError::FuelConsumptionOn);
    assert!(err.to_string().contains("Config::consume_fuel"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_component_runs_on_the_runtimes_engine() {
    let engine = runtime_engine();
    let tmp = tempfile::tempdir().unwrap();
    let builder = file_store_on(&engine).unwrap().dir(tmp.path());
    let store = tokio::task::spawn_blocking(move || builder.build())
        .await
        .unwrap()
        .unwrap();
    let task = Task::from_json(r#"{"id":"on-their-engine","status":{"state":"working"}}"#).unwrap();
    store.save(&task).await.unwrap();
    assert_eq!(store.get("on-their-engine").await.unwrap(), Some(task));
}

/// A store of the current contract whose calls compute forever.
fn endless_store() -> Vec<u8> {
    let store_interface = toolnexus_wasm::STORE_INTERFACE;
    let text = format!(
        r#"(component
  (core module $m
    (memory (export "memory") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024))
    (func (export "get") (param i32 i32) (result i32) (loop $forever (br $forever)) (i32.const 0))
    (func (export "save") (param i32 i32 i32 i64) (result i32) (loop $forever (br $forever)) (i32.const 0)))
  (core instance $i (instantiate $m))
  (type $version-conflict (record (field "current" (option u64)) (field "message" string)))
  (type $store-error (variant (case "invalid-input" string) (case "corrupt" string) (case "io" string) (case "conflict" $version-conflict) (case "outcome-unknown" string) (case "other" string)))
  (type $stored-task (record (field "task" string) (field "version" u64)))
  (type $condition (variant (case "any") (case "absent") (case "version" u64)))
  (func $get (param "id" string) (result (result (option $stored-task) (error $store-error)))
    (canon lift (core func $i "get") (memory (core memory $i "memory")) (realloc (core func $i "realloc"))))
  (func $save (param "task" string) (param "condition" $condition) (result (result u64 (error $store-error)))
    (canon lift (core func $i "save") (memory (core memory $i "memory")) (realloc (core func $i "realloc"))))
  (instance $store
    (export "version-conflict" (type $version-conflict))
    (export "store-error" (type $store-error))
    (export "stored-task" (type $stored-task))
    (export "condition" (type $condition))
    (export "get" (func $get))
    (export "save" (func $save)))
  (export "{store_interface}" (instance $store)))"#
    );
    wat::parse_str(text).expect("the fixture is valid WAT")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_deadline_holds_on_the_runtimes_engine() {
    // The epoch of an engine this crate did not make is advanced by its epoch thread: a call
    // that computes forever ends at its deadline.
    let engine = runtime_engine();
    let tmp = tempfile::tempdir().unwrap();
    let timeout = Duration::from_millis(200);
    let builder = WasmTaskStore::builder(ComponentSource::Bytes {
        name: "endless".into(),
        bytes: endless_store().into(),
    })
    .cache(CacheDir::Off)
    .dir(tmp.path())
    .timeout(timeout)
    .engine(engine)
    .unwrap();
    let store = tokio::task::spawn_blocking(move || builder.build())
        .await
        .unwrap()
        .unwrap();
    let err = tokio::time::timeout(Duration::from_secs(60), store.get("t"))
        .await
        .expect("the deadline ended the call")
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::LimitExceeded {
                limit: Limit::Timeout(t),
                ..
            } if t == timeout
        ),
        "{err}"
    );
}

/// The runtime's store data: WASI for its component, and the task store its imports use.
struct RuntimeState {
    wasi: WasiCtx,
    table: ResourceTable,
    tasks: Arc<dyn TaskStore>,
}

impl WasiView for RuntimeState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl HasTaskStore for RuntimeState {
    fn task_store(&mut self) -> &Arc<dyn TaskStore> {
        &self.tasks
    }
}

/// Runs every case of `store-user` against `tasks`, on `engine`, in one instance.
/// The store-user component instantiated over `tasks`, and its `run`.
async fn store_user(
    engine: &Engine,
    tasks: Arc<dyn TaskStore>,
) -> (
    Store<RuntimeState>,
    wasmtime::component::TypedFunc<(String,), (Result<(), String>,)>,
) {
    let mut linker = Linker::<RuntimeState>::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).unwrap();
    add_task_store_to_linker(&mut linker).unwrap();
    let component = Component::new(engine, STORE_USER).unwrap();
    let state = RuntimeState {
        wasi: WasiCtx::builder().build(),
        table: ResourceTable::new(),
        tasks,
    };
    let mut store = Store::new(engine, state);
    store.epoch_deadline_async_yield_and_update(1);
    let instance = linker
        .instantiate_async(&mut store, &component)
        .await
        .unwrap();
    let run = instance
        .get_typed_func::<(String,), (Result<(), String>,)>(&mut store, "run")
        .unwrap();
    (store, run)
}

async fn run_cases(engine: &Engine, tasks: Arc<dyn TaskStore>) {
    let (mut store, run) = store_user(engine, tasks).await;
    let mut failed = Vec::new();
    for case in CASES {
        let (answer,) = run
            .call_async(&mut store, (case.to_owned(),))
            .await
            .unwrap();
        if let Err(why) = answer {
            failed.push(format!("{case}: {why}"));
        }
    }
    let (unknown,) = run
        .call_async(&mut store, ("no-such-case".into(),))
        .await
        .unwrap();
    assert!(unknown.is_err(), "the component refuses a case it lacks");
    assert!(failed.is_empty(), "cases failed:\n{}", failed.join("\n"));
    // What the component saved is in the backend itself.
    let tasks = &store.data().tasks;
    let (saved, version) = tasks
        .get_versioned("upsert-1")
        .await
        .unwrap()
        .expect("saved through the imports");
    assert_eq!(version, 2);
    assert_eq!(
        saved.get("marker").and_then(|marker| marker.as_str()),
        Some("second")
    );
}

/// A Task over 16 MiB passed to `save` is refused before it is parsed, and a page whose Tasks
/// pass 16 MiB is asked again smaller (the store-user's `limits` case). Before, both went
/// through whole.
#[tokio::test(flavor = "multi_thread")]
async fn the_imports_cap_task_and_page_sizes() {
    let (mut store, run) = store_user(&runtime_engine(), Arc::new(InMemoryTaskStore::new())).await;
    let (answer,) = run
        .call_async(&mut store, ("limits".to_owned(),))
        .await
        .unwrap();
    assert_eq!(answer, Ok(()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_imports_a_memory_store() {
    run_cases(&runtime_engine(), Arc::new(InMemoryTaskStore::new())).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_imports_a_file_store() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = FileTaskStore::new(tmp.path()).unwrap();
    run_cases(&runtime_engine(), Arc::new(tasks)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_imports_the_file_store_component_on_the_same_engine() {
    let engine = runtime_engine();
    let tmp = tempfile::tempdir().unwrap();
    let builder = file_store_on(&engine).unwrap().dir(tmp.path());
    let tasks = tokio::task::spawn_blocking(move || builder.build())
        .await
        .unwrap()
        .unwrap();
    run_cases(&engine, Arc::new(tasks)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_imports_a_postgres_store() {
    let Some(server) = toolnexus_pg_cluster::server() else {
        return;
    };
    let table = toolnexus_pg_cluster::unique_table("embedding");
    let _drop_table = DropTable {
        url: server.is_external().then(|| server.url().to_owned()),
        table: table.clone(),
    };
    let tasks = toolnexus_postgres::PostgresTaskStore::builder(server.url())
        .table(&table)
        .connect()
        .await
        .unwrap();
    run_cases(&runtime_engine(), Arc::new(tasks)).await;
}

/// Drops a test's table at the end, on a server that outlives the test.
struct DropTable {
    url: Option<String>,
    table: String,
}

impl Drop for DropTable {
    fn drop(&mut self) {
        if let Some(url) = &self.url {
            let _ = toolnexus_pg_cluster::execute(
                url,
                &format!(
                    "DROP TABLE IF EXISTS \"{0}\", \"{0}_push_configs\"",
                    self.table
                ),
            );
        }
    }
}

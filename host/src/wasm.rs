//! [`WasmTaskStore`]: any component of the `toolnexus:task-store` world, run sandboxed by
//! wasmtime and adapted to [`TaskStore`].
//!
//! The component gets exactly one preopened directory (at guest path `/`), clocks and random,
//! and nothing else: no environment variables, arguments, stdio or network. Every call runs on
//! Tokio's blocking pool, on an instance taken from a small pool, so async worker threads never
//! run guest code or wait on its file I/O, and concurrent callers do not queue on one instance.
//! An instance that traps is dropped, never reused.

use crate::error::{StoreError, display_path};
use crate::store::{TaskStore, check_id};
use crate::task::Task;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::Semaphore;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "task-store",
    });
}

use bindings::exports::toolnexus::task_store::store::StoreError as WitError;

/// The file-store component built from `guest/`, embedded at compile time.
pub static FILE_STORE_COMPONENT: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/file_store.wasm"));

/// The name of the exported interface every store component must provide.
pub const STORE_INTERFACE: &str = "toolnexus:task-store/store@0.1.0";

/// Where a component comes from.
#[derive(Debug, Clone)]
pub enum ComponentSource {
    /// The file store built from this repository's `guest/` ([`FILE_STORE_COMPONENT`]).
    BuiltinFileStore,
    /// A component file on disk.
    File(PathBuf),
    /// Component bytes already in memory; the string names it in errors.
    Bytes { name: String, bytes: Arc<[u8]> },
}

impl ComponentSource {
    fn name(&self) -> String {
        match self {
            ComponentSource::BuiltinFileStore => "builtin file-store".into(),
            ComponentSource::File(path) => display_path(path),
            ComponentSource::Bytes { name, .. } => name.clone(),
        }
    }
}

/// Builds a [`WasmTaskStore`]: which component, which directory it may use.
#[derive(Debug, Clone)]
pub struct WasmTaskStoreBuilder {
    source: ComponentSource,
    dir: Option<PathBuf>,
    max_instances: usize,
}

impl WasmTaskStoreBuilder {
    /// The directory granted to the component, created if missing. Default:
    /// [`crate::DEFAULT_DATA_DIR`] under the current directory.
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// At most this many instances exist at once, and so at most this many calls run in
    /// parallel; more callers wait their turn. Default: 8. Values below 1 count as 1.
    pub fn max_instances(mut self, n: usize) -> Self {
        self.max_instances = n.max(1);
        self
    }

    /// Loads, compiles and checks the component and instantiates it once, so that every
    /// problem with it is reported here rather than at the first call. Compiling can take a
    /// second or more: from async code, call this inside `spawn_blocking`.
    pub fn build(self) -> Result<WasmTaskStore, StoreError> {
        let name = self.source.name();
        let load_err = |reason: String| StoreError::Load {
            component: name.clone(),
            reason,
        };
        let dir = self
            .dir
            .unwrap_or_else(|| PathBuf::from(crate::DEFAULT_DATA_DIR));
        std::fs::create_dir_all(&dir).map_err(|e| {
            StoreError::io(format!("cannot create directory {}", display_path(&dir)), e)
        })?;
        let dir = dir.canonicalize().map_err(|e| {
            StoreError::io(
                format!("cannot resolve directory {}", display_path(&dir)),
                e,
            )
        })?;

        let engine = engine().map_err(|e| load_err(e.clone()))?;
        let component = compile(engine, &self.source).map_err(load_err)?;
        let mut linker = Linker::<Host>::new(engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .map_err(|e| load_err(format!("{e:#}")))?;
        let pre = linker.instantiate_pre(&component).map_err(|e| {
            load_err(format!(
                "it needs imports this host does not grant (only WASI is granted): {e:#}"
            ))
        })?;
        let pre = bindings::TaskStorePre::new(pre).map_err(|e| {
            load_err(format!("not a component of the toolnexus:task-store world (it must export {STORE_INTERFACE}): {e:#}"))
        })?;
        let inner = Inner {
            name: name.clone(),
            dir,
            pre,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(self.max_instances),
        };
        // Instantiate once now: a component whose start-up traps is refused here.
        let first = inner.instantiate().map_err(|e| load_err(format!("{e}")))?;
        inner.release(first);
        Ok(WasmTaskStore {
            inner: Arc::new(inner),
        })
    }
}

/// A store component run by wasmtime, behind the [`TaskStore`] trait.
#[derive(Clone)]
pub struct WasmTaskStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for WasmTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmTaskStore")
            .field("component", &self.inner.name)
            .field("dir", &self.inner.dir)
            .finish_non_exhaustive()
    }
}

impl WasmTaskStore {
    /// A builder for a component from any source.
    pub fn builder(source: ComponentSource) -> WasmTaskStoreBuilder {
        WasmTaskStoreBuilder {
            source,
            dir: None,
            max_instances: 8,
        }
    }

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
        &self.inner.dir
    }

    /// What the component was loaded from.
    pub fn component_name(&self) -> &str {
        &self.inner.name
    }

    async fn call<T: Send + 'static>(
        &self,
        op: impl FnOnce(&mut Instance) -> wasmtime::Result<Result<T, WitError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        let _permit = self
            .inner
            .permits
            .acquire()
            .await
            .expect("the semaphore is never closed");
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let mut instance = match inner.take_idle() {
                Some(instance) => instance,
                None => inner.instantiate()?,
            };
            match op(&mut instance) {
                Ok(answer) => {
                    inner.release(instance);
                    answer.map_err(|e| inner.wit_error(e))
                }
                // The instance may be in any state after a trap: drop it.
                Err(trap) => Err(inner.component_error(format!("trapped: {trap:#}"))),
            }
        })
        .await
        .map_err(|e| self.inner.component_error(format!("call aborted: {e}")))?
    }
}

#[async_trait::async_trait]
impl TaskStore for WasmTaskStore {
    async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
        check_id(id)?;
        let id_owned = id.to_owned();
        let text = self
            .call(move |i| {
                i.api
                    .toolnexus_task_store_store()
                    .call_get(&mut i.store, &id_owned)
            })
            .await?;
        let Some(text) = text else { return Ok(None) };
        let task = Task::from_json(&text).map_err(|e| {
            self.inner.component_error(format!(
                "get({id:?}) returned something that is not a Task: {e}"
            ))
        })?;
        if task.id() != id {
            return Err(self.inner.component_error(format!(
                "get({id:?}) returned the Task with id {:?}",
                task.id()
            )));
        }
        Ok(Some(task))
    }

    async fn save(&self, task: &Task) -> Result<(), StoreError> {
        let text = task.to_json();
        self.call(move |i| {
            i.api
                .toolnexus_task_store_store()
                .call_save(&mut i.store, &text)
        })
        .await
    }

    fn describe(&self) -> String {
        format!(
            "wasm:{}?dir={}",
            self.inner.name,
            display_path(&self.inner.dir)
        )
    }
}

struct Inner {
    name: String,
    dir: PathBuf,
    pre: bindings::TaskStorePre<Host>,
    idle: Mutex<Vec<Instance>>,
    permits: Semaphore,
}

struct Instance {
    store: Store<Host>,
    api: bindings::TaskStore,
}

/// Per-instance host state: the WASI context with its single preopen.
struct Host {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for Host {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl Inner {
    fn instantiate(&self) -> Result<Instance, StoreError> {
        let mut wasi = WasiCtxBuilder::new();
        // Calls already run on a blocking thread: let file I/O happen right there instead of
        // bouncing every syscall through another thread.
        wasi.allow_blocking_current_thread(true);
        wasi.preopened_dir(&self.dir, "/", FsPerms::ReadWrite)
            .map_err(|e| {
                StoreError::io(
                    format!(
                        "cannot open directory {} for {}",
                        display_path(&self.dir),
                        self.name
                    ),
                    std::io::Error::other(format!("{e:#}")),
                )
            })?;
        let host = Host {
            wasi: wasi.build(),
            table: ResourceTable::new(),
        };
        let mut store = Store::new(self.pre.engine(), host);
        let api = self
            .pre
            .instantiate(&mut store)
            .map_err(|e| self.component_error(format!("instantiation failed: {e:#}")))?;
        Ok(Instance { store, api })
    }

    fn take_idle(&self) -> Option<Instance> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop()
    }

    fn release(&self, instance: Instance) {
        self.idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(instance);
    }

    fn component_error(&self, reason: String) -> StoreError {
        StoreError::Component {
            component: self.name.clone(),
            reason,
        }
    }

    fn wit_error(&self, err: WitError) -> StoreError {
        match err {
            WitError::InvalidInput(msg) => {
                self.component_error(format!("rejected the input: {msg}"))
            }
            WitError::Corrupt(msg) => StoreError::Corrupt {
                location: format!(
                    "{} (store component {})",
                    display_path(&self.dir),
                    self.name
                ),
                reason: msg,
            },
            WitError::Io(msg) => StoreError::io(
                format!(
                    "store component {} over {}",
                    self.name,
                    display_path(&self.dir)
                ),
                std::io::Error::other(msg),
            ),
            WitError::Other(msg) => self.component_error(msg),
        }
    }
}

/// The process-wide engine. One engine lets every store share compiled code.
fn engine() -> Result<&'static Engine, &'static String> {
    static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let mut config = Config::new();
            config.wasm_component_model(true);
            Engine::new(&config).map_err(|e| format!("cannot create the wasmtime engine: {e:#}"))
        })
        .as_ref()
}

/// Compiles a component, once per distinct content per process.
fn compile(engine: &Engine, source: &ComponentSource) -> Result<Component, String> {
    static COMPILED: OnceLock<Mutex<HashMap<[u8; 32], Component>>> = OnceLock::new();
    let owned;
    let bytes: &[u8] = match source {
        ComponentSource::BuiltinFileStore => FILE_STORE_COMPONENT,
        ComponentSource::File(path) => {
            owned = std::fs::read(path).map_err(|e| format!("cannot read the file: {e}"))?;
            &owned
        }
        ComponentSource::Bytes { bytes, .. } => bytes,
    };
    check_header(bytes)?;
    let key: [u8; 32] = Sha256::digest(bytes).into();
    let cache = COMPILED.get_or_init(Default::default);
    if let Some(component) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(component.clone());
    }
    let component =
        Component::new(engine, bytes).map_err(|e| format!("invalid component: {e:#}"))?;
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, component.clone());
    Ok(component)
}

/// Says what a file is when it is not a component, before the parser's less friendly message.
fn check_header(bytes: &[u8]) -> Result<(), String> {
    const MAGIC: &[u8] = b"\0asm";
    if bytes.len() < 8 || &bytes[..4] != MAGIC {
        return Err("not a WebAssembly file (no \\0asm header)".into());
    }
    match bytes[4..8] {
        [0x0d, 0x00, 0x01, 0x00] => Ok(()),
        [0x01, 0x00, 0x00, 0x00] => Err(
            "a core WebAssembly module, not a component (wrap it with `wasm-tools component new`)"
                .into(),
        ),
        _ => Err(format!(
            "an unsupported WebAssembly version or layer {:02x?}",
            &bytes[4..8]
        )),
    }
}

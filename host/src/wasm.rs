//! [`WasmTaskStore`]: any component of the `toolnexus:task-store` world, run sandboxed by
//! wasmtime and adapted to [`TaskStore`].
//!
//! # What a store component can and cannot do
//!
//! The host grants a component exactly what its builder (or selector) grants, and nothing else:
//!
//! - **one directory**, preopened at guest path `/`, read-write or read-only; paths cannot leave
//!   it (`..`, absolute paths and symlinks that point outside all fail inside wasmtime-wasi);
//! - wall and monotonic clocks and random bytes;
//! - no environment variables, no arguments, empty stdin, stdout discarded, stderr discarded
//!   unless [`WasmTaskStoreBuilder::forward_stderr`] sends it to the host's `tracing` log;
//! - no network: TCP, UDP and name lookup are all denied;
//! - bounded resources: a cap on each linear memory, a deadline per call (epoch interruption),
//!   and a maximum Task size in both directions ([`Limits`]).
//!
//! What the host promises in return: a component that exceeds a limit, traps, or answers with
//! something that is not the Task asked for gets a typed error for that call
//! ([`StoreError::LimitExceeded`], [`StoreError::Component`]); the instance is discarded, never
//! reused; the store keeps serving with fresh instances. Calls run on Tokio's blocking pool on
//! one of at most `max_instances` pooled instances, so async worker threads never run guest code
//! or wait on its file I/O.

use crate::cache::{self, CacheOutcome};
use crate::error::{Limit, StoreError, display_path};
use crate::store::{ListQuery, TaskPage, TaskStore, check_id};
use crate::task::Task;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::Semaphore;
use toolnexus_format::Durability;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, ResourceLimiter, Store, Trap};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "task-store",
    });
}

/// Only for the optional `config` and `catalog` exports, each looked up when present.
mod optional {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "full-task-store",
    });
}

use optional::exports::toolnexus::task_store::catalog::{
    Guest as CatalogApi, GuestIndices as CatalogIndices, ListQuery as WitListQuery,
    StoreError as CatalogWitError,
};
use optional::exports::toolnexus::task_store::config::GuestIndices as ConfigIndices;

mod stderr_log;

use bindings::exports::toolnexus::task_store::store::StoreError as WitError;

/// The file-store component built from `guest/`, embedded at compile time.
pub static FILE_STORE_COMPONENT: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/file_store.wasm"));

/// The package every store component must target.
pub const STORE_PACKAGE: &str = "toolnexus:task-store";
/// The exported interface every store component must provide, with the version this host speaks.
pub const STORE_INTERFACE: &str = "toolnexus:task-store/store@0.1.0";
/// The optional settings interface a store component may export.
pub const CONFIG_INTERFACE: &str = "toolnexus:task-store/config@0.1.0";
/// The optional listing-and-deleting interface a store component may export.
pub const CATALOG_INTERFACE: &str = "toolnexus:task-store/catalog@0.1.0";

/// How often the epoch advances; per-call deadlines are rounded up to this.
const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Resource limits for a store component. Each applies per call (time) or per instance (memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most any one linear memory of an instance may grow to, in bytes. Default 64 MiB.
    pub memory_bytes: usize,
    /// How long one call may run before it is interrupted. Default 5 s.
    pub timeout: Duration,
    /// The largest Task, as JSON text, accepted by `save` or from `get`. Default 16 MiB.
    pub max_task_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 64 << 20,
            timeout: Duration::from_secs(5),
            max_task_bytes: 16 << 20,
        }
    }
}

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

/// Where the compiled form of a component is cached across processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheDir {
    /// [`default_cache_dir`](crate::default_cache_dir): `$TOOLNEXUS_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/toolnexus/components`, else `~/.cache/toolnexus/components`.
    Default,
    /// This directory.
    At(PathBuf),
    /// No disk cache: every process compiles again.
    Off,
}

/// Builds a [`WasmTaskStore`]: which component, what it may use, and its limits.
#[derive(Debug, Clone)]
pub struct WasmTaskStoreBuilder {
    source: ComponentSource,
    dir: Option<PathBuf>,
    read_only: bool,
    forward_stderr: bool,
    max_instances: usize,
    limits: Limits,
    cache: CacheDir,
    memoize: bool,
    durability: Durability,
}

/// Timings and outcome of loading a component, for diagnostics and benchmarks.
#[derive(Debug, Clone, Copy)]
pub struct LoadReport {
    /// Where the compiled component came from.
    pub outcome: CacheOutcome,
    /// Time to obtain the compiled component (compile, or load from cache).
    pub load: Duration,
    /// Time to create the first instance.
    pub instantiate: Duration,
}

impl WasmTaskStoreBuilder {
    /// The directory granted to the component, created if missing. Default:
    /// [`crate::DEFAULT_DATA_DIR`] under the current directory.
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// Grant the directory read-only: the component can read Tasks but every write fails.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Forward the component's stderr, line by line, to the host's `tracing` log (target
    /// `toolnexus::component`, level INFO). Off by default: a debugging aid.
    pub fn forward_stderr(mut self, forward: bool) -> Self {
        self.forward_stderr = forward;
        self
    }

    /// At most this many instances exist at once, and so at most this many calls run in
    /// parallel; more callers wait their turn. Default: 8. Values below 1 count as 1.
    pub fn max_instances(mut self, n: usize) -> Self {
        self.max_instances = n.max(1);
        self
    }

    /// All limits at once.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The cap on each linear memory, in bytes.
    pub fn memory_limit(mut self, bytes: usize) -> Self {
        self.limits.memory_bytes = bytes;
        self
    }

    /// The deadline for each call.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.limits.timeout = timeout;
        self
    }

    /// The largest Task (JSON bytes) accepted in either direction.
    pub fn max_task_size(mut self, bytes: usize) -> Self {
        self.limits.max_task_bytes = bytes;
        self
    }

    /// Where compiled components are cached across processes.
    pub fn cache(mut self, cache: CacheDir) -> Self {
        self.cache = cache;
        self
    }

    /// How hard the component's saves work to survive power loss, passed to components that
    /// export the optional `config` interface (the built-in file store does); others keep their
    /// own behaviour. Default [`Durability::Full`].
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Whether to reuse a component this process already compiled (default `true`). Turn it
    /// off only to measure or test compiling and the disk cache.
    pub fn memoize(mut self, memoize: bool) -> Self {
        self.memoize = memoize;
        self
    }

    /// Loads, compiles (or fetches from the cache) and checks the component, and instantiates
    /// it once, so every problem with it is reported here rather than at the first call.
    /// Compiling can take a second: from async code, call this inside `spawn_blocking`.
    pub fn build(self) -> Result<WasmTaskStore, StoreError> {
        self.build_with_report().map(|(store, _)| store)
    }

    /// [`build`](Self::build), also saying how long loading and instantiating took.
    pub fn build_with_report(self) -> Result<(WasmTaskStore, LoadReport), StoreError> {
        let name = self.source.name();
        let load_err = |reason: String| StoreError::Load {
            component: name.clone(),
            reason,
        };
        let dir = self
            .dir
            .clone()
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
        let started = std::time::Instant::now();
        let cache_dir = match &self.cache {
            CacheDir::Default => cache::default_cache_dir(),
            CacheDir::At(dir) => Some(dir.clone()),
            CacheDir::Off => None,
        };
        let (component, outcome) =
            compile(engine, &self.source, cache_dir.as_deref(), self.memoize).map_err(&load_err)?;
        let load = started.elapsed();
        check_world(engine, &component).map_err(&load_err)?;

        let mut linker = Linker::<Host>::new(engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .map_err(|e| load_err(format!("{e:#}")))?;
        let pre = linker.instantiate_pre(&component).map_err(|e| {
            load_err(format!(
                "it needs imports this host does not grant (only WASI is granted): {e:#}"
            ))
        })?;
        let pre = bindings::TaskStorePre::new(pre).map_err(|e| {
            load_err(format!(
                "not a component of the {STORE_PACKAGE} world: its exports do not match {STORE_INTERFACE}: {e:#}"
            ))
        })?;
        // The optional `config` export: present or not, never an error by itself.
        let config = ConfigIndices::new(pre.instance_pre()).ok();
        let catalog = CatalogIndices::new(pre.instance_pre()).ok();
        let settings = vec![(
            "durability".to_owned(),
            match self.durability {
                Durability::Full => "full",
                Durability::Relaxed => "relaxed",
            }
            .to_owned(),
        )];
        let inner = Inner {
            name: name.clone(),
            dir,
            pre,
            config,
            catalog,
            settings,
            read_only: self.read_only,
            forward_stderr: self.forward_stderr,
            limits: self.limits,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(self.max_instances),
        };
        // Instantiate once now: a component whose start-up traps or loops is refused here.
        let started = std::time::Instant::now();
        let first = inner.instantiate().map_err(|e| load_err(format!("{e}")))?;
        let instantiate = started.elapsed();
        inner.release(first);
        Ok((
            WasmTaskStore {
                inner: Arc::new(inner),
            },
            LoadReport {
                outcome,
                load,
                instantiate,
            },
        ))
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
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

impl WasmTaskStore {
    /// A builder for a component from any source.
    pub fn builder(source: ComponentSource) -> WasmTaskStoreBuilder {
        WasmTaskStoreBuilder {
            source,
            dir: None,
            read_only: false,
            forward_stderr: false,
            max_instances: 8,
            limits: Limits::default(),
            cache: CacheDir::Default,
            memoize: true,
            durability: Durability::Full,
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

    /// Whether the component exports the optional `catalog` interface (`list`, `delete`).
    pub fn supports_catalog(&self) -> bool {
        self.inner.catalog.is_some()
    }

    fn require_catalog(&self, operation: &'static str) -> Result<(), StoreError> {
        if self.supports_catalog() {
            return Ok(());
        }
        Err(StoreError::Unsupported {
            store: format!(
                "store component {} (it does not export {CATALOG_INTERFACE})",
                self.inner.name
            ),
            operation,
        })
    }

    /// The limits the component runs under.
    pub fn limits(&self) -> Limits {
        self.inner.limits
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
            instance.arm(&inner.limits);
            match op(&mut instance) {
                Ok(answer) => {
                    inner.release(instance);
                    answer.map_err(|e| inner.wit_error(e))
                }
                // The instance may be in any state after a trap: drop it.
                Err(trap) => Err(inner.trap_error(&instance, trap)),
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
        let max = self.inner.limits.max_task_bytes;
        if text.len() > max {
            return Err(self.inner.limit_error(Limit::AnswerSize {
                size: text.len(),
                max,
            }));
        }
        // Checked in full (syntax, object, id) without building the document.
        let stored_id = toolnexus_format::task::check_task_text(&text).map_err(|e| {
            self.inner.component_error(format!(
                "get({id:?}) returned something that is not a Task: invalid task: {e}"
            ))
        })?;
        if stored_id != id {
            return Err(self.inner.component_error(format!(
                "get({id:?}) returned the Task with id {stored_id:?}"
            )));
        }
        Ok(Some(Task::from_checked_text(stored_id, text)))
    }

    async fn save(&self, task: &Task) -> Result<(), StoreError> {
        let size = task.as_json().len();
        let max = self.inner.limits.max_task_bytes;
        if size > max {
            return Err(StoreError::TaskTooLarge {
                id: task.id().to_owned(),
                size,
                max,
            });
        }
        let task = task.clone(); // shares the document; no copy
        self.call(move |i| {
            i.api
                .toolnexus_task_store_store()
                .call_save(&mut i.store, task.as_json())
        })
        .await
    }

    async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
        self.require_catalog("list")?;
        let wit_query = WitListQuery {
            context_id: query.context_id.clone(),
            state: query.state.clone(),
            page_size: u32::try_from(query.limit()).unwrap_or(u32::MAX),
            page_token: query.page_token.clone(),
        };
        let page = self
            .call(move |i| {
                let catalog = i.catalog.as_ref().expect("checked by require_catalog");
                Ok(catalog
                    .call_list(&mut i.store, &wit_query)?
                    .map_err(catalog_error))
            })
            .await?;
        let limits = self.inner.limits;
        if page.tasks.len() > query.limit() {
            return Err(self.inner.component_error(format!(
                "list returned {} Tasks for a page of {}",
                page.tasks.len(),
                query.limit()
            )));
        }
        let mut tasks = Vec::with_capacity(page.tasks.len());
        for text in page.tasks {
            if text.len() > limits.max_task_bytes {
                return Err(self.inner.limit_error(Limit::AnswerSize {
                    size: text.len(),
                    max: limits.max_task_bytes,
                }));
            }
            let id = toolnexus_format::task::check_task_text(&text).map_err(|e| {
                self.inner.component_error(format!(
                    "list returned something that is not a Task: invalid task: {e}"
                ))
            })?;
            tasks.push(Task::from_checked_text(id, text));
        }
        Ok(TaskPage {
            tasks,
            next_page_token: page.next_page_token,
        })
    }

    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        check_id(id)?;
        self.require_catalog("delete")?;
        let id = id.to_owned();
        self.call(move |i| {
            let catalog = i.catalog.as_ref().expect("checked by require_catalog");
            Ok(catalog
                .call_delete(&mut i.store, &id)?
                .map_err(catalog_error))
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
    config: Option<ConfigIndices>,
    catalog: Option<CatalogIndices>,
    settings: Vec<(String, String)>,
    read_only: bool,
    forward_stderr: bool,
    limits: Limits,
    idle: Mutex<Vec<Instance>>,
    permits: Semaphore,
}

struct Instance {
    store: Store<Host>,
    api: bindings::TaskStore,
    catalog: Option<CatalogApi>,
}

impl Instance {
    /// Resets the per-call deadline and the memory-limit flag before a call.
    fn arm(&mut self, limits: &Limits) {
        self.store.data_mut().limiter.hit = false;
        self.store
            .set_epoch_deadline(deadline_ticks(limits.timeout));
    }
}

/// Per-instance host state: the WASI context with its single preopen, and the memory limiter.
struct Host {
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: MemoryLimiter,
}

impl WasiView for Host {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Refuses memory growth past the cap and remembers that it did, so a trap that follows can be
/// reported as the limit it is.
struct MemoryLimiter {
    memory_bytes: usize,
    hit: bool,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes {
            self.hit = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1 << 20)
    }
}

fn deadline_ticks(timeout: Duration) -> u64 {
    (timeout.as_nanos().div_ceil(EPOCH_TICK.as_nanos()) as u64).max(1) + 1
}

impl Inner {
    fn instantiate(&self) -> Result<Instance, StoreError> {
        let mut wasi = WasiCtxBuilder::new();
        // Calls already run on a blocking thread: let file I/O happen right there instead of
        // bouncing every syscall through another thread. Must precede `preopened_dir`.
        wasi.allow_blocking_current_thread(true);
        wasi.allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        if self.forward_stderr {
            wasi.stderr(stderr_log::LogStderr::new(&self.name));
        }
        let perms = if self.read_only {
            FsPerms::ReadOnly
        } else {
            FsPerms::ReadWrite
        };
        wasi.preopened_dir(&self.dir, "/", perms).map_err(|e| {
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
            limiter: MemoryLimiter {
                memory_bytes: self.limits.memory_bytes,
                hit: false,
            },
        };
        let mut store = Store::new(self.pre.engine(), host);
        store.limiter(|host| &mut host.limiter);
        store.set_epoch_deadline(deadline_ticks(self.limits.timeout));
        match self.setup(&mut store) {
            Ok(Ok((api, catalog))) => Ok(Instance {
                store,
                api,
                catalog,
            }),
            Ok(Err(refused)) => {
                Err(self.component_error(format!("refused its settings: {refused}")))
            }
            Err(e) => {
                let limit = self.classify_trap(&store, &e);
                Err(limit.unwrap_or_else(|| {
                    self.component_error(format!("instantiation failed: {e:#}"))
                }))
            }
        }
    }

    /// Instantiates and, if the component exports `config`, configures it. The inner `Err` is
    /// the component refusing its settings.
    fn setup(
        &self,
        store: &mut Store<Host>,
    ) -> wasmtime::Result<Result<(bindings::TaskStore, Option<CatalogApi>), String>> {
        let instance = self.pre.instance_pre().instantiate(&mut *store)?;
        let api = bindings::TaskStore::new(&mut *store, &instance)?;
        if let Some(config) = &self.config {
            let config = config.load(&mut *store, &instance)?;
            if let Err(refused) = config.call_configure(&mut *store, &self.settings)? {
                return Ok(Err(refused));
            }
        }
        let catalog = match &self.catalog {
            Some(indices) => Some(indices.load(&mut *store, &instance)?),
            None => None,
        };
        Ok(Ok((api, catalog)))
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

    fn limit_error(&self, limit: Limit) -> StoreError {
        StoreError::LimitExceeded {
            component: self.name.clone(),
            limit,
        }
    }

    /// A trap caused by a limit, as that limit.
    fn classify_trap(&self, store: &Store<Host>, err: &wasmtime::Error) -> Option<StoreError> {
        if err.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
            return Some(self.limit_error(Limit::Timeout(self.limits.timeout)));
        }
        if store.data().limiter.hit {
            return Some(self.limit_error(Limit::Memory(self.limits.memory_bytes)));
        }
        None
    }

    fn trap_error(&self, instance: &Instance, err: wasmtime::Error) -> StoreError {
        self.classify_trap(&instance.store, &err)
            .unwrap_or_else(|| self.component_error(format!("trapped: {err:#}")))
    }

    fn wit_error(&self, err: WitError) -> StoreError {
        match err {
            // The host checked the input before the call, so a refusal is the component's own
            // rule (a policy such as lifecycle-guard's), not malformed input.
            WitError::InvalidInput(msg) => StoreError::Rejected {
                store: format!("store component {}", self.name),
                reason: msg,
            },
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

/// The catalog interface has its own copy of the error type; it means the same.
fn catalog_error(err: CatalogWitError) -> WitError {
    match err {
        CatalogWitError::InvalidInput(m) => WitError::InvalidInput(m),
        CatalogWitError::Corrupt(m) => WitError::Corrupt(m),
        CatalogWitError::Io(m) => WitError::Io(m),
        CatalogWitError::Other(m) => WitError::Other(m),
    }
}

/// The process-wide engine: one engine lets every store share compiled code, and one thread
/// advances its epoch for every per-call deadline.
fn engine() -> Result<&'static Engine, &'static String> {
    static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let mut config = Config::new();
            config.wasm_component_model(true);
            config.epoch_interruption(true);
            let engine = Engine::new(&config)
                .map_err(|e| format!("cannot create the wasmtime engine: {e:#}"))?;
            let weak = engine.weak();
            std::thread::Builder::new()
                .name("toolnexus-epoch".into())
                .spawn(move || {
                    while let Some(engine) = weak.upgrade() {
                        engine.increment_epoch();
                        drop(engine);
                        std::thread::sleep(EPOCH_TICK);
                    }
                })
                .map_err(|e| format!("cannot start the epoch thread: {e}"))?;
            Ok(engine)
        })
        .as_ref()
}

/// Compiles a component, or loads its compiled form: once per distinct content per process, and
/// across processes through the disk cache.
fn compile(
    engine: &Engine,
    source: &ComponentSource,
    cache_dir: Option<&Path>,
    memoize: bool,
) -> Result<(Component, CacheOutcome), String> {
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
    let digest: [u8; 32] = Sha256::digest(bytes).into();
    let memo = COMPILED.get_or_init(Default::default);
    if memoize && let Some(component) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(&digest)
    {
        return Ok((component.clone(), CacheOutcome::Memory));
    }
    let entry = cache::entry_name(engine, &digest);
    let (component, outcome) = match cache_dir.and_then(|dir| cache::load(engine, dir, &entry)) {
        Some(component) => (component, CacheOutcome::Disk),
        None => {
            let component =
                Component::new(engine, bytes).map_err(|e| format!("invalid component: {e:#}"))?;
            if let Some(dir) = cache_dir {
                cache::store(dir, &entry, &component);
            }
            (component, CacheOutcome::Compiled)
        }
    };
    memo.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(digest, component.clone());
    Ok((component, outcome))
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

/// Refuses components that export our interface at a version this host does not speak, with a
/// message that says so (rather than a generic "missing export").
fn check_world(engine: &Engine, component: &Component) -> Result<(), String> {
    let ty = component.component_type();
    let exports: Vec<String> = ty
        .exports(engine)
        .map(|(name, _)| name.to_owned())
        .collect();
    if exports.iter().any(|name| name == STORE_INTERFACE) {
        return Ok(());
    }
    let prefix = format!("{STORE_PACKAGE}/store@");
    if let Some(other) = exports.iter().find(|name| name.starts_with(&prefix)) {
        // wasmtime accepts semver-compatible versions (0.1.x for 0.1.0); anything else is not ours.
        let ours = semver_compatible(
            other.trim_start_matches(&prefix),
            STORE_INTERFACE.trim_start_matches(&prefix),
        );
        if !ours {
            return Err(format!(
                "it exports {other}, a version of the {STORE_PACKAGE} contract incompatible with {STORE_INTERFACE} that this host speaks"
            ));
        }
        return Ok(());
    }
    let shown = if exports.is_empty() {
        "nothing".to_owned()
    } else {
        exports.join(", ")
    };
    Err(format!(
        "not a component of the {STORE_PACKAGE} world: it must export {STORE_INTERFACE}, but exports {shown}"
    ))
}

/// `0.1.3` is compatible with `0.1.0`; `0.2.0` and `1.0.0` are not (semver for 0.x versions).
fn semver_compatible(theirs: &str, ours: &str) -> bool {
    let parts = |v: &str| {
        v.split('.')
            .map(|p| p.parse::<u64>().ok())
            .collect::<Vec<_>>()
    };
    match (parts(theirs).as_slice(), parts(ours).as_slice()) {
        ([Some(0), Some(a), ..], [Some(0), Some(b), ..]) => a == b,
        ([Some(a), ..], [Some(b), ..]) => a == b && *a != 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semver_rules_for_the_contract() {
        assert!(semver_compatible("0.1.0", "0.1.0"));
        assert!(semver_compatible("0.1.7", "0.1.0"));
        assert!(!semver_compatible("0.2.0", "0.1.0"));
        assert!(!semver_compatible("1.0.0", "0.1.0"));
        assert!(!semver_compatible("garbage", "0.1.0"));
    }

    #[test]
    fn deadlines_round_up_to_whole_ticks() {
        assert_eq!(deadline_ticks(Duration::from_millis(1)), 2);
        assert_eq!(deadline_ticks(Duration::from_millis(10)), 2);
        assert_eq!(deadline_ticks(Duration::from_millis(11)), 3);
        assert_eq!(deadline_ticks(Duration::from_secs(5)), 501);
    }
}

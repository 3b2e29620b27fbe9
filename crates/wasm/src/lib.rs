//! [`WasmTaskStore`]: any component of the `toolnexus:task-store` world, run sandboxed by
//! wasmtime and adapted to [`TaskStore`].
//!
//! # What a store component can and cannot do
//!
//! The host grants a component exactly what its builder (or selector) grants, and nothing else:
//!
//! - **one directory**, preopened at guest path `/`, read-write or read-only; paths cannot leave
//!   it (`..`, absolute paths and symlinks that point outside all fail inside wasmtime-wasi),
//!   and it cannot create links;
//! - wall and monotonic clocks and random bytes;
//! - no environment variables, no arguments, empty stdin, stdout discarded, stderr discarded
//!   unless [`WasmTaskStoreBuilder::forward_stderr`] sends it to the host's `tracing` log;
//! - no network: TCP, UDP and name lookup are all denied;
//! - bounded resources: a cap on all linear memories of an instance together, a deadline per
//!   call that holds in wall-clock time (epoch interruption, and clock waits cut at it), at most
//!   1,024 host resources (open files, streams) per instance, a disk quota on a read-write
//!   directory, and a maximum Task size in both directions ([`Limits`]);
//! - files it creates are 0600, and the directory, when the host creates it, 0700.
//!
//! What the host promises in return: a component that exceeds a limit, traps, or answers with
//! something that is not the Task asked for gets a typed error for that call
//! ([`StoreError::LimitExceeded`], [`StoreError::Component`]); the instance is discarded, never
//! reused; the store keeps serving with fresh instances. Calls run on Tokio's blocking pool on
//! one of at most `max_instances` pooled instances, so async worker threads never run guest code
//! or wait on its file I/O.
//!
//! This crate is the sandbox host only: the trait, `Task` and the errors come from
//! `toolnexus-core`, and `toolnexus::resolve_store` hands it every `wasm:` selector
//! ([`builder_from_selector`]). Where to look: the instance pool and its limits in
//! `pool.rs`, loading and checks in `load.rs`, the compiled cache in `cache.rs`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
use toolnexus_core::{
    DEFAULT_DATA_DIR, Durability, Limit, ListQuery, StoreError, Task, TaskPage, TaskStore, check_id,
};
use wasmtime::component::Linker;

/// The contract's bindings, generated once for the world with every interface. Only `store`
/// is required of a component; `config` and `catalog` are each looked up on their own and used
/// when present.
mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "full-task-store",
    });
}

use bindings::exports::toolnexus::task_store::catalog::{
    GuestIndices as CatalogIndices, ListQuery as WitListQuery,
};
use bindings::exports::toolnexus::task_store::config::GuestIndices as ConfigIndices;
use bindings::exports::toolnexus::task_store::store::{
    GuestIndices as StoreIndices, StoreError as WitError,
};

mod cache;
mod clock;
mod links;
mod load;
pub mod message;
mod pool;
mod quota;
mod selector;
mod stderr_log;

use load::{check_world, compile, engine};
use pool::{Host, Inner, Instance};

pub use cache::{CacheOutcome, default_cache_dir};
pub use quota::{DEFAULT_DISK_QUOTA, ENTRY_BYTES};
pub use selector::{BUILTIN_COMPONENT, WASM_OPTIONS, builder_from_selector};

/// The file-store component built from `components/file-store/`, embedded at compile time.
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

/// The largest component compiled unless [`WasmTaskStoreBuilder::max_component_size`] says
/// otherwise: 32 MiB, over twice the largest store we know of (a JavaScript engine, 12 MiB),
/// and at most about a minute and 3 GiB of compiling for the worst shape we found (see
/// `docs/security.md`).
pub const DEFAULT_MAX_COMPONENT_BYTES: u64 = 32 << 20;

/// How often the epoch advances; per-call deadlines are rounded up to this.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Resource limits for a store component. Each applies per call (time) or per instance (memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most all linear memories of an instance may hold together, in bytes. Default
    /// 64 MiB.
    pub memory_bytes: usize,
    /// How long one call may run before it is interrupted. Default 5 s.
    pub timeout: Duration,
    /// The largest Task, as JSON text, accepted by `save` or from `get`. Default 16 MiB.
    pub max_task_bytes: usize,
    /// The most a read-write directory may hold, counted as file lengths plus 4 KiB per entry
    /// (see the `quota` module docs). Default [`DEFAULT_DISK_QUOTA`] (1 GiB); unused for
    /// read-only stores.
    pub disk_quota_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 64 << 20,
            timeout: Duration::from_secs(5),
            max_task_bytes: 16 << 20,
            disk_quota_bytes: DEFAULT_DISK_QUOTA,
        }
    }
}

/// Where a component comes from.
#[derive(Debug, Clone)]
pub enum ComponentSource {
    /// The file store built from this repository's `components/file-store/` ([`FILE_STORE_COMPONENT`]).
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
            ComponentSource::File(path) => path.display().to_string(),
            ComponentSource::Bytes { name, .. } => name.clone(),
        }
    }
}

/// Where the compiled form of a component is cached across processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheDir {
    /// [`default_cache_dir`]: `$TOOLNEXUS_CACHE_DIR`, else
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
    max_component_bytes: u64,
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
    /// [`DEFAULT_DATA_DIR`] under the current directory.
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

    /// The cap on all linear memories of an instance together, in bytes.
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

    /// The most the component's directory may hold (file lengths plus [`ENTRY_BYTES`] per
    /// entry); writes past it fail inside the guest and the call with
    /// [`Limit::Disk`](toolnexus_core::Limit::Disk).
    pub fn disk_quota(mut self, bytes: u64) -> Self {
        self.limits.disk_quota_bytes = bytes;
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

    /// The largest component file this builder compiles (default
    /// [`DEFAULT_MAX_COMPONENT_BYTES`], 32 MiB): compiling costs time and memory in proportion
    /// to a component's size (see `docs/security.md` for the figures), so a huge one is refused
    /// before it is read whole or compiled.
    pub fn max_component_size(mut self, bytes: u64) -> Self {
        self.max_component_bytes = bytes;
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
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
        toolnexus_format::dir::create_private_dir(&dir)
            .map_err(|e| StoreError::io(format!("cannot create directory {}", dir.display()), e))?;
        let dir = dir.canonicalize().map_err(|e| {
            StoreError::io(format!("cannot resolve directory {}", dir.display()), e)
        })?;

        let engine = engine().map_err(|e| load_err(e.clone()))?;
        let started = std::time::Instant::now();
        let cache_dir = match &self.cache {
            CacheDir::Default => cache::default_cache_dir(),
            CacheDir::At(dir) => Some(dir.clone()),
            CacheDir::Off => None,
        };
        let (component, outcome) = compile(
            engine,
            &self.source,
            cache_dir.as_deref(),
            self.memoize,
            self.max_component_bytes,
        )
        .map_err(&load_err)?;
        let load = started.elapsed();
        check_world(engine, &component).map_err(&load_err)?;

        let mut linker = Linker::<Host>::new(engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .and_then(|()| clock::bound_clock_subscriptions(&mut linker))
            .and_then(|()| links::refuse_links(&mut linker))
            .and_then(|()| quota::count_disk_use(&mut linker))
            .map_err(|e| load_err(format!("{e:#}")))?;
        let pre = linker.instantiate_pre(&component).map_err(|e| {
            load_err(format!(
                "it needs imports this host does not grant (only WASI is granted): {e:#}"
            ))
        })?;
        let store_api = StoreIndices::new(&pre).map_err(|e| {
            load_err(format!(
                "not a component of the {STORE_PACKAGE} world: its exports do not match {STORE_INTERFACE}: {e:#}"
            ))
        })?;
        // The optional exports: present or not, never an error by themselves.
        let config = ConfigIndices::new(&pre).ok();
        let catalog = CatalogIndices::new(&pre).ok();
        let settings = vec![(
            "durability".to_owned(),
            match self.durability {
                Durability::Full => "full",
                Durability::Relaxed => "relaxed",
            }
            .to_owned(),
        )];
        // What the directory holds now, the start of the quota's count.
        let disk = if self.read_only {
            None
        } else {
            let quota =
                quota::DiskQuota::measure(&dir, self.limits.disk_quota_bytes).map_err(|e| {
                    StoreError::io(format!("cannot measure directory {}", dir.display()), e)
                })?;
            Some(Arc::new(quota))
        };
        let inner = Inner {
            name: name.clone(),
            dir,
            disk,
            pre,
            store_api,
            config,
            catalog,
            settings,
            read_only: self.read_only,
            forward_stderr: self.forward_stderr,
            limits: self.limits,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(self.max_instances)),
            max_idle: self.max_instances,
        };
        // Instantiate once now: a component whose start-up traps or loops is refused here. On a
        // thread of its own: `configure` may do WASI I/O, which blocks on a Tokio runtime, and
        // the caller may be on an async worker thread, where blocking would panic.
        let started = std::time::Instant::now();
        let first = std::thread::scope(|scope| scope.spawn(|| inner.instantiate()).join())
            .map_err(|_| load_err("instantiating it panicked the host thread".into()))?
            .map_err(|e| load_err(format!("{e}")))?;
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
            max_component_bytes: DEFAULT_MAX_COMPONENT_BYTES,
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

    /// What the component's directory holds, as the disk quota counts it (file lengths plus
    /// [`ENTRY_BYTES`] per entry); `None` for a read-only store.
    pub fn disk_used(&self) -> Option<u64> {
        self.inner.disk.as_ref().map(|disk| disk.used())
    }

    /// The limits the component runs under.
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    async fn call<T: Send + 'static>(
        &self,
        op: impl FnOnce(&mut Instance) -> wasmtime::Result<Result<T, WitError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        // The permit moves into the blocking work: if the caller gives up (a dropped future, a
        // timeout around this call), the guest may still be running, and its instance still
        // counts against `max_instances` until it returns.
        let permit = Arc::clone(&self.inner.permits)
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let mut instance = match inner.take_idle() {
                Some(instance) => instance,
                None => inner.instantiate()?,
            };
            instance.arm(&inner.limits);
            match op(&mut instance) {
                // It asked to wait past its deadline and was woken at it: whatever it answered
                // after that came too late.
                Ok(_) if instance.hit_deadline() => {
                    Err(inner.limit_error(Limit::Timeout(inner.limits.timeout)))
                }
                Ok(answer) => {
                    quota::settle(instance.store.data_mut());
                    let over_quota = instance.hit_quota();
                    if !instance.leaks_handles() {
                        inner.release(instance);
                    }
                    answer.map_err(|e| match (over_quota, &inner.disk) {
                        // It failed after a write was refused for the quota: that is why.
                        (true, Some(disk)) => inner.limit_error(Limit::Disk(disk.limit)),
                        _ => inner.wit_error(e),
                    })
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
            .call(move |i| i.api.call_get(&mut i.store, &id_owned))
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
        let task = Task::from_json_text(text).map_err(|e| {
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
        self.call(move |i| i.api.call_save(&mut i.store, task.as_json()))
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
                catalog.call_list(&mut i.store, &wit_query)
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
            let task = Task::from_json_text(text).map_err(|e| {
                self.inner
                    .component_error(format!("list returned something that is not a Task: {e}"))
            })?;
            tasks.push(task);
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
            catalog.call_delete(&mut i.store, &id)
        })
        .await
    }

    fn describe(&self) -> String {
        format!("wasm:{}?dir={}", self.inner.name, self.inner.dir.display())
    }
}

//! [`WasmTaskStore`]: any component of the `toolnexus:task-store` world, run sandboxed by
//! wasmtime and adapted to [`TaskStore`].
//!
//! # Contract versions, and Task versions
//!
//! The host speaks two versions of the contract (`wit/` in the repository; each version's doc
//! comments are its spec) and finds at load which one a component targets, from the `store`
//! interface it exports ([`ContractVersion`]; semver-compatible patch versions count, a
//! component exporting both is used as 0.2, and anything else is refused with a message naming
//! both versions):
//!
//! - **0.2.0** ([`STORE_INTERFACE`], current): every stored Task has a **version**, 1 after its
//!   first save and one more with each later save, forgotten by `delete`. `get` returns it
//!   ([`TaskStore::get_versioned`]), and `save` takes a condition (any, absent, or exactly
//!   version *n*) and returns the new version ([`TaskStore::save_versioned`]); a condition that
//!   does not hold is [`StoreError::Conflict`] with the version stored. `list` is newest status
//!   timestamp first (ties by id), filters by `status_timestamp_after` (passed as RFC 3339
//!   text), reports [`TaskPage::total_size`], and a query the component calls invalid (a page
//!   token it did not make) is [`StoreError::InvalidQuery`]. The host checks the answers: a
//!   version 0, a conflict the condition rules out, or a new version that is not the one the
//!   condition implies (1 on absent, *n* + 1 on version *n*) is [`StoreError::Component`].
//! - **0.1.0** ([`STORE_INTERFACE_0_1`], still loaded): `get`, `save`, `list`, `delete` as
//!   before, and nothing is faked: versions ([`TaskStore::get_versioned`],
//!   [`TaskStore::save_versioned`], and so [`TaskStore::save_if`]) and a `list` with
//!   `status_timestamp_after` are [`StoreError::Unsupported`]; `list` reports no total size
//!   (`None`), and 0.1 components list in id order, not newest first.
//!
//! Settings go to components that export the optional `config` interface: `durability`
//! ([`WasmTaskStoreBuilder::durability`], always passed) and `lock-lease-ms`
//! ([`WasmTaskStoreBuilder::lock_lease`], passed only when set).
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
//!   1,024 host resources (open files, streams) per instance (8,192 shared out when there are
//!   more than 8 instances, at least 128 each), 512 MiB of memory for all instances together
//!   (a call starts only with room for its instance to grow as large as the largest), a disk
//!   quota on a read-write
//!   directory, and a maximum Task size in both directions ([`Limits`]);
//! - files it creates are 0600, and the directory, when the host creates it, 0700.
//!
//! What the host promises in return: a component that exceeds a limit, traps, or answers with
//! something that is not the Task asked for gets a typed error for that call
//! ([`StoreError::LimitExceeded`], [`StoreError::Component`]); the instance is discarded, never
//! reused; the store keeps serving with fresh instances. Calls run on one of at most
//! `max_instances` pooled instances (64 by default, within the memory budget), on Tokio's
//! blocking pool, except a `get` (on Linux), which
//! runs on the caller's async worker as long as it only computes (yielding every epoch tick) or
//! reads what the kernel has cached, and is moved to the pool before anything that would wait:
//! guest code never holds a worker, and a worker never waits on its file I/O (`inline.rs`).
//!
//! This crate is the sandbox host only: the trait, `Task` and the errors come from
//! `toolnexus-core`, and `toolnexus::resolve_store` hands it every `wasm:` selector
//! ([`builder_from_selector`]). Where to look: the two contract versions' bindings and calls in
//! `contract.rs`, the instance pool and its limits in `pool.rs`, calls on the caller's thread in
//! `inline.rs`, loading and checks in `load.rs`, the compiled cache in `cache.rs`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use toolnexus_core::{
    DEFAULT_DATA_DIR, Durability, Expect, Limit, ListQuery, StoreError, Task, TaskPage, TaskStore,
    Timestamp, check_id,
};
use wasmtime::component::Linker;

mod cache;
mod clock;
mod contract;
#[cfg(target_os = "linux")]
mod dir_sync;
mod inline;
mod links;
mod load;
pub mod message;
mod pool;
mod quota;
mod selector;
mod stderr_log;

use contract::{Exports, ListArgs, VersionConflict, WitError};
use load::{check_world, compile, engine};
use message::sanitize;
use pool::{Host, Inner, Instance};

pub use cache::{CacheOutcome, default_cache_dir};
pub use quota::{DEFAULT_DISK_QUOTA, ENTRY_BYTES};
pub use selector::{BUILTIN_COMPONENT, WASM_OPTIONS, builder_from_selector};

/// The file-store component built from `guest/file-store/`, embedded at compile time.
pub static FILE_STORE_COMPONENT: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/file_store.wasm"));

/// The package every store component must target.
pub const STORE_PACKAGE: &str = "toolnexus:task-store";
/// The exported interface every store component must provide, at the current version of the
/// contract (0.2.0). Components that export [`STORE_INTERFACE_0_1`] instead load too
/// ([`ContractVersion`]).
pub const STORE_INTERFACE: &str = "toolnexus:task-store/store@0.2.0";
/// The optional settings interface a store component may export, at the current version.
pub const CONFIG_INTERFACE: &str = "toolnexus:task-store/config@0.2.0";
/// The optional listing-and-deleting interface a store component may export, at the current
/// version.
pub const CATALOG_INTERFACE: &str = "toolnexus:task-store/catalog@0.2.0";
/// [`STORE_INTERFACE`] at the earlier version of the contract, 0.1.0, which this host still
/// loads (without versions; see [`ContractVersion::V0_1`]).
pub const STORE_INTERFACE_0_1: &str = "toolnexus:task-store/store@0.1.0";
/// [`CONFIG_INTERFACE`] at contract 0.1.0.
pub const CONFIG_INTERFACE_0_1: &str = "toolnexus:task-store/config@0.1.0";
/// [`CATALOG_INTERFACE`] at contract 0.1.0.
pub const CATALOG_INTERFACE_0_1: &str = "toolnexus:task-store/catalog@0.1.0";

/// The version of the `toolnexus:task-store` contract a component targets, found when it is
/// loaded from the `store` interface it exports (any semver-compatible patch version counts:
/// `0.2.x` is 0.2, `0.1.x` is 0.1). A component that exports both is used as 0.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ContractVersion {
    /// `toolnexus:task-store@0.1.0`: `get`, `save`, and the optional `config` and `catalog`.
    /// No versions: [`TaskStore::get_versioned`], [`TaskStore::save_versioned`] (and so
    /// [`TaskStore::save_if`]) answer [`StoreError::Unsupported`], `list` cannot filter by
    /// status timestamp (also unsupported) and reports no total size, and its components list
    /// in id order, not newest first.
    V0_1,
    /// `toolnexus:task-store@0.2.0`, the current contract: everything [`TaskStore`] has.
    V0_2,
}

impl ContractVersion {
    /// Every version this host speaks, newest first.
    pub const ALL: [ContractVersion; 2] = [ContractVersion::V0_2, ContractVersion::V0_1];

    /// The contract's semver version, such as `0.2.0`.
    pub fn version(self) -> &'static str {
        match self {
            ContractVersion::V0_1 => "0.1.0",
            ContractVersion::V0_2 => "0.2.0",
        }
    }

    /// The `store` interface of this version, such as [`STORE_INTERFACE`].
    pub fn store_interface(self) -> &'static str {
        match self {
            ContractVersion::V0_1 => STORE_INTERFACE_0_1,
            ContractVersion::V0_2 => STORE_INTERFACE,
        }
    }

    /// The `catalog` interface of this version, such as [`CATALOG_INTERFACE`].
    pub fn catalog_interface(self) -> &'static str {
        match self {
            ContractVersion::V0_1 => CATALOG_INTERFACE_0_1,
            ContractVersion::V0_2 => CATALOG_INTERFACE,
        }
    }

    /// Whether components of this version keep versions (compare-and-set).
    pub fn has_versions(self) -> bool {
        self == ContractVersion::V0_2
    }
}

impl std::fmt::Display for ContractVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{STORE_PACKAGE}@{}", self.version())
    }
}

/// The largest component compiled unless [`WasmTaskStoreBuilder::max_component_size`] says
/// otherwise: 32 MiB, over twice the largest store we know of (a JavaScript engine, 12 MiB),
/// and at most about a minute and 3 GiB of compiling for the worst shape we found (see
/// `docs/security.md`).
pub const DEFAULT_MAX_COMPONENT_BYTES: u64 = 32 << 20;

/// The default budget for the linear memories of all of a store's instances together
/// ([`Limits::memory_total_bytes`]): 512 MiB.
pub const DEFAULT_MEMORY_TOTAL: usize = 512 << 20;

/// The default for [`WasmTaskStoreBuilder::max_instances`]: calls a store runs at once.
pub const DEFAULT_MAX_INSTANCES: usize = 64;

/// How often the epoch advances; per-call deadlines are rounded up to this.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Resource limits for a store component. Each applies per call (time), per instance (memory)
/// or to the store's instances together (the memory budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most all linear memories of an instance may hold together, in bytes. Default
    /// 64 MiB.
    pub memory_bytes: usize,
    /// The most the linear memories of all the store's instances may hold together, in bytes.
    /// Default [`DEFAULT_MEMORY_TOTAL`] (512 MiB: 8 instances at the default per-instance
    /// cap). A call starts only while this has room for its instance to grow as large as the
    /// largest so far, so small instances run many calls at once and large ones fewer, the
    /// others waiting for an instance; a growth that does not fit fails the call like one
    /// past `memory_bytes` ([`Limit::MemoryTotal`]).
    pub memory_total_bytes: usize,
    /// How long one call may run before it is interrupted. Default 5 s. A call held past it
    /// in a system call (a hung disk), where interruption cannot reach, is answered as timed
    /// out at twice this and a second.
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
            memory_total_bytes: DEFAULT_MEMORY_TOTAL,
            timeout: Duration::from_secs(5),
            max_task_bytes: 16 << 20,
            disk_quota_bytes: DEFAULT_DISK_QUOTA,
        }
    }
}

/// Where a component comes from.
#[derive(Debug, Clone)]
pub enum ComponentSource {
    /// The file store built from this repository's `guest/file-store/` ([`FILE_STORE_COMPONENT`]).
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
    lock_lease: Option<Duration>,
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
    /// parallel; more callers wait their turn. Default: [`DEFAULT_MAX_INSTANCES`] (64), within
    /// the memory budget ([`Limits::memory_total_bytes`]), which admits fewer when instances
    /// are large. Values below 1 count as 1. The host resources an instance may hold are
    /// 8,192 shared out among them: 1,024 each up to 8 instances, 128 each from 64 on.
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

    /// The cap on the linear memories of all instances together, in bytes
    /// ([`Limits::memory_total_bytes`]).
    pub fn memory_total_limit(mut self, bytes: usize) -> Self {
        self.limits.memory_total_bytes = bytes;
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
    /// [`Limit::Disk`].
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

    /// For stores that lock a Task while saving it (the built-in file store does): how long a
    /// lock left by a crashed writer stands before it is broken. Passed as the `lock-lease-ms`
    /// setting (whole milliseconds, rounded down) to components that export the optional
    /// `config` interface; others keep their own behaviour. Default: not passed, so the
    /// component's own default applies (4 s for the built-in file store, which accepts 10 ms
    /// to 1 h and refuses anything else, and then [`build`](Self::build) fails).
    pub fn lock_lease(mut self, lease: Duration) -> Self {
        self.lock_lease = Some(lease);
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
        let version = check_world(engine, &component).map_err(&load_err)?;

        let mut linker = Linker::<Host>::new(engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .and_then(|()| clock::bound_clock_subscriptions(&mut linker))
            .and_then(|()| links::refuse_links(&mut linker))
            .and_then(|()| quota::count_disk_use(&mut linker))
            .and_then(|()| inline::guard_waits(&mut linker))
            .map_err(|e| load_err(format!("{e:#}")))?;
        let pre = linker.instantiate_pre(&component).map_err(|e| {
            load_err(format!(
                "it needs imports this host does not grant (only WASI is granted): {e:#}"
            ))
        })?;
        let exports = Exports::new(version, &pre).map_err(|e| {
            load_err(format!(
                "not a component of the {STORE_PACKAGE} world: its exports do not match {}: {e:#}",
                version.store_interface()
            ))
        })?;
        let mut settings = vec![(
            "durability".to_owned(),
            match self.durability {
                Durability::Full => "full",
                Durability::Relaxed => "relaxed",
            }
            .to_owned(),
        )];
        if let Some(lease) = self.lock_lease {
            let millis = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX);
            settings.push(("lock-lease-ms".to_owned(), millis.to_string()));
        }
        if version == ContractVersion::V0_2 {
            // This host checks every `get` answer in full ([`WasmTaskStore::get_checked`]):
            // a store need not scan what it returns a first time.
            settings.push(("answers-checked".to_owned(), "true".to_owned()));
            // `open-at` of a FIFO, socket or device answers `not-permitted` (`quota.rs`,
            // `look`, Linux): a store need not look at a name before opening it.
            #[cfg(target_os = "linux")]
            settings.push(("special-files-refused".to_owned(), "true".to_owned()));
        }
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
            exports,
            settings,
            read_only: self.read_only,
            forward_stderr: self.forward_stderr,
            names_task_files: matches!(self.source, ComponentSource::BuiltinFileStore),
            limits: self.limits,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(self.max_instances)),
            max_idle: self.max_instances,
            budget: Arc::new(pool::MemoryBudget::new(
                self.limits.memory_total_bytes,
                self.limits.memory_bytes,
            )),
            max_handles: pool::handles_per_instance(self.max_instances),
            // Inline calls need `RESOLVE_CACHED` and `RWF_NOWAIT` to never wait.
            inline_gets: AtomicBool::new(cfg!(target_os = "linux")),
            inline_stops: AtomicU32::new(0),
        };
        // Instantiate once now: a component whose start-up traps or loops is refused here. On a
        // thread of its own: `configure` may do WASI I/O, which blocks on a Tokio runtime, and
        // the caller may be on an async worker thread, where blocking would panic.
        let started = std::time::Instant::now();
        let first = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    wasmtime_wasi::runtime::in_tokio(
                        inner.instantiate(pool::Share::none(&inner.budget)),
                    )
                })
                .join()
        })
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
            max_instances: DEFAULT_MAX_INSTANCES,
            limits: Limits::default(),
            cache: CacheDir::Default,
            memoize: true,
            durability: Durability::Full,
            lock_lease: None,
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
        self.inner.exports.has_catalog()
    }

    /// Whether the component exports the optional `lean` interface (a save told its id, a
    /// get without the version), which this host then uses for [`TaskStore::save`],
    /// [`TaskStore::save_versioned`] and [`TaskStore::get`].
    pub fn supports_lean(&self) -> bool {
        self.inner.exports.has_lean()
    }

    /// The version of the contract the component targets.
    pub fn contract_version(&self) -> ContractVersion {
        self.inner.exports.version()
    }

    /// Whether the component keeps versions ([`TaskStore::get_versioned`],
    /// [`TaskStore::save_versioned`]): contract 0.2 components do, 0.1 ones do not.
    pub fn supports_versions(&self) -> bool {
        self.contract_version().has_versions()
    }

    fn require_catalog(&self, operation: &'static str) -> Result<(), StoreError> {
        if self.supports_catalog() {
            return Ok(());
        }
        Err(StoreError::Unsupported {
            store: format!(
                "store component {} (it does not export {})",
                self.inner.name,
                self.contract_version().catalog_interface()
            ),
            operation,
        })
    }

    /// `operation` is something only contract 0.2 components can do.
    fn require_0_2(&self, operation: &'static str) -> Result<(), StoreError> {
        match self.contract_version() {
            ContractVersion::V0_2 => Ok(()),
            old => Err(StoreError::Unsupported {
                store: format!(
                    "store component {} (it targets {old}, without {operation}, which came in {})",
                    self.inner.name,
                    ContractVersion::V0_2
                ),
                operation,
            }),
        }
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

    /// Performs `op` on an instance: for [`Run::Inline`], right here on the caller's task when an
    /// idle instance is ready ([`crate::inline`]); otherwise, or when the inline attempt needs
    /// a blocking thread, on Tokio's blocking pool.
    async fn call<T: Send + 'static>(&self, run: Run, op: Op<T>) -> Result<T, StoreError> {
        // The permit moves into the blocking work: if the caller gives up (a dropped future, a
        // timeout around this call), the guest may still be running, and its instance still
        // counts against `max_instances` until it returns. Inline, the guest stops with the
        // dropped future, and so does the permit's hold.
        let permit = Arc::clone(&self.inner.permits)
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let mut deadline = None;
        if run == Run::Inline
            && self.inner.inline_gets.load(Ordering::Relaxed)
            && let Some(instance) = self.inner.take_idle()
        {
            let at = Instant::now() + self.inner.limits.timeout;
            match attempt(&self.inner, instance, &op, at, true).await {
                Ok(answer) => return answer,
                // Nothing was changed: run it again where it may block, by the same deadline.
                Err(needs) => {
                    tracing::debug!(component = %self.inner.name, "{needs}");
                    if needs.counts
                        && self.inner.inline_stops.fetch_add(1, Ordering::Relaxed) + 1
                            >= pool::MAX_INLINE_STOPS
                    {
                        self.inner.inline_gets.store(false, Ordering::Relaxed);
                    }
                    deadline = Some(at);
                }
            }
        }
        // An idle instance, or room in the memory budget for a fresh one; else wait here, on
        // the caller's task, for one to come back.
        let slot = self.inner.instance_or_share().await;
        let inner = Arc::clone(&self.inner);
        let work = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            wasmtime_wasi::runtime::in_tokio(async {
                let instance = match slot {
                    Ok(instance) => instance,
                    Err(share) => inner.instantiate(share).await?,
                };
                let at = deadline.unwrap_or_else(|| Instant::now() + inner.limits.timeout);
                attempt(&inner, instance, &op, at, false)
                    .await
                    .unwrap_or_else(|needs| Err(inner.component_error(needs.to_string())))
            })
        });
        let timeout = self.inner.limits.timeout;
        let wait = backstop(timeout);
        tokio::select! {
            joined = work => {
                joined.map_err(|e| self.inner.component_error(format!("call aborted: {e}")))?
            }
            () = clock::backstop(wait) => {
                tracing::warn!(
                    component = %self.inner.name,
                    "no answer {wait:?} after a call with a deadline of {timeout:?} was handed \
                     to a thread: it is held in a system call (a slow or hung disk, or a flush \
                     of much data) and answered as timed out; its thread keeps its instance \
                     until the system call returns, and what the call was doing may still \
                     complete"
                );
                Err(self.inner.limit_error(Limit::Timeout(timeout)))
            }
        }
    }
}

/// How long a caller waits for a call on the blocking pool: its deadline (`timeout`) and as
/// much again for making an instance (`configure` runs under a deadline of its own), and a
/// second more. The deadline stops guest code and clock waits, not a system call: a call held
/// in one (a hung disk, or a flush of all a component wrote) is answered as timed out here,
/// while its thread, and the instance permit it holds, wait for the kernel.
fn backstop(timeout: Duration) -> Duration {
    timeout
        .saturating_mul(2)
        .saturating_add(Duration::from_secs(1))
}

/// Where a call should run ([`WasmTaskStore::call`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    /// On the caller's task, if it can ([`crate::inline`]): `get`.
    Inline,
    /// On Tokio's blocking pool.
    Blocking,
}

type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// One call of the component on an instance; made again from the start if its first attempt ran
/// inline and needed a blocking thread.
type Op<T> =
    Box<dyn for<'a> Fn(&'a mut Instance) -> BoxFuture<'a, contract::Answer<T>> + Send + Sync>;

fn op<T, F>(f: F) -> Op<T>
where
    F: for<'a> Fn(&'a mut Instance) -> BoxFuture<'a, contract::Answer<T>> + Send + Sync + 'static,
{
    Box::new(f)
}

/// `op` on `instance`, armed with `deadline`; `inline` if on an async worker. The instance goes
/// back to the pool after an answer, and is dropped after a trap or a limit. `Err` if the
/// attempt was stopped because it needs a blocking thread (the instance is dropped then too).
async fn attempt<T>(
    inner: &Inner,
    mut instance: Instance,
    op: &Op<T>,
    deadline: Instant,
    inline: bool,
) -> Result<Result<T, StoreError>, inline::NeedsBlocking> {
    instance.arm(deadline, inline);
    Ok(match op(&mut instance).await {
        // It asked to wait past its deadline and was woken at it: whatever it answered after
        // that came too late.
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
        Err(trap) => match inline::needs_blocking(&trap) {
            Some(needs) => return Err(needs),
            None => Err(inner.trap_error(&instance, trap)),
        },
    })
}

impl WasmTaskStore {
    /// `get`, its answer checked: the Task asked for, no larger than the limit, and from a 0.2
    /// component its version (never 0); `None` as the version from a 0.1 component.
    async fn get_checked(
        &self,
        id: &str,
        version_wanted: bool,
    ) -> Result<Option<(Task, Option<u64>)>, StoreError> {
        check_id(id)?;
        let id_owned = id.to_owned();
        let found = self
            .call(
                Run::Inline,
                op(move |i| {
                    let id = id_owned.clone();
                    Box::pin(async move { i.api.get(&mut i.store, &id, version_wanted).await })
                }),
            )
            .await?;
        let Some((text, version)) = found else {
            return Ok(None);
        };
        let max = self.inner.limits.max_task_bytes;
        if text.len() > max {
            return Err(self.inner.limit_error(Limit::AnswerSize {
                size: text.len(),
                max,
            }));
        }
        // Checked in full (syntax, object, id) without building the document: the only scan
        // of these bytes, since the component was told so (`answers-checked`). The built-in
        // file store passes its Task file through unread, so what fails here is that file's
        // content, named as the native store names it; any other component's answer is its own.
        let not_the_task = |file_reason: String, answer: String| {
            if self.inner.names_task_files {
                let name = toolnexus_format::id::encode_id(id).unwrap_or_default();
                StoreError::Corrupt {
                    location: self.inner.dir.join(name).display().to_string(),
                    reason: file_reason,
                }
            } else {
                self.inner
                    .component_error(format!("get({id:?}) returned {answer}"))
            }
        };
        let task = Task::from_json_text(text).map_err(|e| {
            not_the_task(e.to_string(), format!("something that is not a Task: {e}"))
        })?;
        if task.id() != id {
            return Err(not_the_task(
                format!("holds task {:?}, not {id:?}", task.id()),
                format!("the Task with id {:?}", task.id()),
            ));
        }
        if version == Some(0) {
            return Err(self.inner.component_error(format!(
                "get({id:?}) returned version 0 (versions start at 1)"
            )));
        }
        Ok(Some((task, version)))
    }

    /// `save` on the condition `expect` (only [`Expect::Any`] for a 0.1 component), its answer
    /// checked: the new version from a 0.2 component (`None` from a 0.1 one), or
    /// [`StoreError::Conflict`].
    async fn save_checked(&self, task: &Task, expect: Expect) -> Result<Option<u64>, StoreError> {
        let id = task.id().to_owned();
        let size = task.as_json().len();
        let max = self.inner.limits.max_task_bytes;
        if size > max {
            return Err(StoreError::TaskTooLarge { id, size, max });
        }
        let task = task.clone(); // shares the document; no copy
        // A conflict is an answer, not a failure: it comes back apart from the errors.
        let answer = self
            .call(
                Run::Blocking,
                op(move |i| {
                    let task = task.clone();
                    Box::pin(async move {
                        Ok(
                            match i
                                .api
                                .save(&mut i.store, task.id(), task.as_json(), expect)
                                .await?
                            {
                                Ok(version) => Ok(Ok(version)),
                                Err(WitError::Conflict(conflict)) => Ok(Err(conflict)),
                                Err(e) => Err(e),
                            },
                        )
                    })
                }),
            )
            .await?;
        let version = match answer {
            Ok(version) => version,
            Err(conflict) => return Err(self.conflict_error(id, expect, conflict)),
        };
        if let Some(version) = version {
            let expected = match expect {
                Expect::Any => (1..=u64::MAX).contains(&version),
                Expect::Absent => version == 1,
                Expect::Version(v) => version == v.saturating_add(1),
            };
            if !expected {
                return Err(self.inner.component_error(format!(
                    "save of {id:?} expecting {expect} returned version {version} \
                     (a first save is version 1, each later one the version before plus one)"
                )));
            }
        }
        Ok(version)
    }

    /// A `conflict` answer to a save expecting `expected`, as [`StoreError::Conflict`]; a
    /// conflict the condition rules out (none can arise for [`Expect::Any`], or the version it
    /// reports is the one expected) is a component error.
    fn conflict_error(
        &self,
        id: String,
        expected: Expect,
        conflict: VersionConflict,
    ) -> StoreError {
        let current = conflict.current;
        // A plain save cannot conflict; a conditional one only with what it did not expect.
        let possible = current != Some(0) && expected != Expect::Any && !expected.holds(current);
        if !possible {
            let stored = match current {
                Some(v) => format!("version {v}"),
                None => "no task".to_owned(),
            };
            return self.inner.component_error(format!(
                "save of {id:?} expecting {expected} answered a conflict with {stored} stored, \
                 which that condition cannot conflict with: {}",
                sanitize(&conflict.message)
            ));
        }
        StoreError::Conflict {
            id,
            expected,
            current,
        }
    }
}

/// A status timestamp as RFC 3339 text for a component.
fn rfc3339(at: Timestamp) -> Result<String, StoreError> {
    time::OffsetDateTime::from_unix_timestamp_nanos(at.unix_nanos())
        .map_err(|e| e.to_string())
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .map_err(|e| e.to_string())
        })
        .map_err(|e| StoreError::InvalidQuery {
            reason: format!("status-timestamp-after cannot be written as RFC 3339: {e}"),
        })
}

#[async_trait::async_trait]
impl TaskStore for WasmTaskStore {
    async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
        Ok(self.get_checked(id, false).await?.map(|(task, _)| task))
    }

    async fn save(&self, task: &Task) -> Result<(), StoreError> {
        self.save_checked(task, Expect::Any).await.map(|_| ())
    }

    /// From a contract 0.2 component; a 0.1 component has no versions, and this answers
    /// [`StoreError::Unsupported`] (operation `versions`).
    async fn get_versioned(&self, id: &str) -> Result<Option<(Task, u64)>, StoreError> {
        self.require_0_2("versions")?;
        match self.get_checked(id, true).await? {
            None => Ok(None),
            Some((task, Some(version))) => Ok(Some((task, version))),
            Some((_, None)) => unreachable!("a contract 0.2 component's get answers a version"),
        }
    }

    /// By a contract 0.2 component's conditional `save`; a 0.1 component has no versions, and
    /// this answers [`StoreError::Unsupported`] (operation `versions`).
    async fn save_versioned(&self, task: &Task, expect: Expect) -> Result<u64, StoreError> {
        self.require_0_2("versions")?;
        match self.save_checked(task, expect).await? {
            Some(version) => Ok(version),
            None => unreachable!("a contract 0.2 component's save answers a version"),
        }
    }

    /// A contract 0.2 component lists newest status timestamp first and reports the total
    /// size; a 0.1 component lists in id order, reports no total size (`None`), and answers
    /// [`StoreError::Unsupported`] for a query with `status_timestamp_after`.
    async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
        self.require_catalog("list")?;
        let version = self.contract_version();
        let status_timestamp_after = match query.status_timestamp_after {
            None => None,
            Some(at) => {
                self.require_0_2("list filter status-timestamp-after")?;
                Some(rfc3339(at)?)
            }
        };
        let args = ListArgs {
            context_id: query.context_id.clone(),
            state: query.state.clone(),
            status_timestamp_after,
            page_size: u32::try_from(query.limit()).unwrap_or(u32::MAX),
            page_token: query.page_token.clone(),
        };
        // From 0.2 on, `invalid-input` to `list` is the query's fault (a page token the store
        // did not make): it comes back apart from the other errors.
        let answer = self
            .call(
                Run::Blocking,
                op(move |i| {
                    let args = args.clone();
                    Box::pin(async move {
                        Ok(match i.api.list(&mut i.store, args).await? {
                            Ok(page) => Ok(Ok(page)),
                            Err(WitError::InvalidInput(reason))
                                if version == ContractVersion::V0_2 =>
                            {
                                Ok(Err(reason))
                            }
                            Err(e) => Err(e),
                        })
                    })
                }),
            )
            .await?;
        let page = answer.map_err(|reason| StoreError::InvalidQuery {
            reason: sanitize(&reason),
        })?;
        let limits = self.inner.limits;
        if page.tasks.len() > query.limit() {
            return Err(self.inner.component_error(format!(
                "list returned {} Tasks for a page of {}",
                page.tasks.len(),
                query.limit()
            )));
        }
        if let Some(total) = page.total_size
            && total < page.tasks.len() as u64
        {
            return Err(self.inner.component_error(format!(
                "list returned {} Tasks and a total size of {total}",
                page.tasks.len()
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
            total_size: page.total_size,
        })
    }

    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        check_id(id)?;
        self.require_catalog("delete")?;
        let id = id.to_owned();
        self.call(
            Run::Blocking,
            op(move |i| {
                let id = id.clone();
                Box::pin(async move { i.api.delete(&mut i.store, &id).await })
            }),
        )
        .await
    }

    fn describe(&self) -> String {
        format!("wasm:{}?dir={}", self.inner.name, self.inner.dir.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default instance count is only worth having if the file store's instances fit the
    /// default budget that many times over: else its calls would run fewer at once.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_file_stores_instances_fit_the_default_budget_at_the_default_count() {
        let tmp = tempfile::tempdir().unwrap();
        let store = WasmTaskStore::file_store(tmp.path()).unwrap();
        let task = Task::from_json(r#"{"id":"t-1","status":{"state":"submitted"}}"#).unwrap();
        store.save(&task).await.unwrap();
        assert!(store.get("t-1").await.unwrap().is_some());
        let largest = store.inner.budget.largest();
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
        for _ in 0..=pool::MAX_INLINE_STOPS {
            assert_eq!(store.get("t-1").await.unwrap().unwrap().id(), "t-1");
        }
        assert!(
            !store.inner.inline_gets.load(Ordering::Relaxed),
            "gets still tried inline after {} stops",
            pool::MAX_INLINE_STOPS + 1
        );
    }
}

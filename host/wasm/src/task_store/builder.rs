//! Building a [`WasmTaskStore`]: which component, what it may use, and its limits
//! ([`WasmTaskStoreBuilder`]).

use crate::cache::{self, CacheOutcome};
use crate::load::{ComponentSource, compile, engine};
use crate::sandbox::memory::MemoryReservation;
use crate::sandbox::policy::quota::DiskQuota;
use crate::sandbox::pool::{InstancePool, SandboxConfig};
use crate::sandbox::state::InstanceState;
use crate::sandbox::wasi_overrides;
use crate::task_store::contract::Exports;
use crate::task_store::limits::{DEFAULT_MAX_COMPONENT_BYTES, DEFAULT_MAX_INSTANCES, Limits};
use crate::task_store::store::WasmTaskStore;
use crate::task_store::version::{STORE_INTERFACE, STORE_PACKAGE, check_world};
use crate::task_store::world::TaskStoreWorld;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use toolnexus_core::{DEFAULT_DATA_DIR, Durability, StoreError};
use wasmtime::component::Linker;

/// Where the compiled form of a component is cached across processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheDir {
    /// [`default_cache_dir`](cache::default_cache_dir): `$TOOLNEXUS_CACHE_DIR`, else
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
    pub(crate) source: ComponentSource,
    pub(crate) dir: Option<PathBuf>,
    pub(crate) read_only: bool,
    pub(crate) forward_stderr: bool,
    pub(crate) max_instances: usize,
    pub(crate) limits: Limits,
    pub(crate) cache: CacheDir,
    pub(crate) memoize: bool,
    pub(crate) durability: Durability,
    pub(crate) lock_lease: Option<Duration>,
    pub(crate) max_component_bytes: u64,
    /// The embedder's engine (`crate::embed`), checked when it was given; `None`: the
    /// process-wide one.
    pub(crate) engine: Option<wasmtime::Engine>,
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

    /// The most the component's directory may hold (file lengths plus [`ENTRY_BYTES`](crate::ENTRY_BYTES) per
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

        let engine = match &self.engine {
            Some(engine) => engine,
            None => engine().map_err(|e| load_err(e.clone()))?,
        };
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

        let mut linker = Linker::<InstanceState>::new(engine);
        wasi_overrides::add_to_linker(&mut linker).map_err(|e| load_err(format!("{e:#}")))?;
        let pre = linker.instantiate_pre(&component).map_err(|e| {
            load_err(format!(
                "it needs imports this host does not grant (only WASI is granted): {e:#}"
            ))
        })?;
        let exports = Exports::new(&pre).map_err(|e| {
            load_err(format!(
                "not a component of the {STORE_PACKAGE} world: its exports do not match \
                 {STORE_INTERFACE}: {e:#}"
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
        // This host checks every `get` answer in full ([`WasmTaskStore::get_checked`]): a
        // store need not scan what it returns a first time.
        settings.push(("answers-checked".to_owned(), "true".to_owned()));
        // `open-at` of a FIFO, socket or device answers `not-permitted`
        // (`sandbox::policy::special_files`, Linux): a store need not look at a name before
        // opening it.
        #[cfg(target_os = "linux")]
        settings.push(("special-files-refused".to_owned(), "true".to_owned()));
        // What the directory holds now, the start of the quota's count.
        let disk = if self.read_only {
            None
        } else {
            let quota = DiskQuota::measure(&dir, self.limits.disk_quota_bytes).map_err(|e| {
                StoreError::io(format!("cannot measure directory {}", dir.display()), e)
            })?;
            Some(Arc::new(quota))
        };
        let config = SandboxConfig {
            name: name.clone(),
            dir: Some(dir.clone()),
            read_only: self.read_only,
            forward_stderr: self.forward_stderr,
            memory_bytes: self.limits.memory_bytes,
            memory_total_bytes: self.limits.memory_total_bytes,
            timeout: self.limits.timeout,
            max_instances: self.max_instances,
            // A store gets no network: `wasi:http` is not even linked.
            outgoing_http: Default::default(),
            fresh_instances: false,
        };
        let world = TaskStoreWorld {
            exports,
            settings,
            dir,
        };
        let pool = InstancePool::new(config, pre, world, disk);
        // Instantiate once now: a component whose start-up traps or loops is refused here. On a
        // thread of its own: `configure` may do WASI I/O, which blocks on a Tokio runtime, and
        // the caller may be on an async worker thread, where blocking would panic.
        let started = std::time::Instant::now();
        let first = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    wasmtime_wasi::runtime::in_tokio(
                        pool.instantiate(MemoryReservation::none(&pool.budget)),
                    )
                })
                .join()
        })
        .map_err(|_| load_err("instantiating it panicked the host thread".into()))?
        .map_err(|e| load_err(format!("{e}")))?;
        let instantiate = started.elapsed();
        pool.release(first);
        Ok((
            WasmTaskStore {
                pool: Arc::new(pool),
                limits: self.limits,
                names_task_files: matches!(self.source, ComponentSource::BuiltinFileStore),
            },
            LoadReport {
                outcome,
                load,
                instantiate,
            },
        ))
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
            engine: None,
        }
    }
}

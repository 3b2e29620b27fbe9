//! Building a [`WasmTaskStore`]: which component, what it may use, and its limits
//! ([`WasmTaskStoreBuilder`]).

use crate::cache::CacheOutcome;
use crate::load::{ComponentSource, engine};
use crate::sandbox::policy::quota::DiskQuota;
use crate::sandbox::pool::InstancePool;
use crate::sandbox::state::InstanceState;
use crate::sandbox::wasi_overrides;
use crate::sandbox_spec::{SandboxSpec, Sandboxed, SandboxedDir};
use crate::task_store::contract::Exports;
use crate::task_store::limits::{DEFAULT_MAX_INSTANCES, Limits};
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
    /// [`default_cache_dir`](crate::default_cache_dir): `$TOOLNEXUS_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/toolnexus/components`, else `~/.cache/toolnexus/components`.
    Default,
    /// This directory.
    At(PathBuf),
    /// No disk cache: every process compiles again.
    Off,
}

/// Builds a [`WasmTaskStore`]: which component, what it may use ([`SandboxSpec`], set through
/// [`Sandboxed`] and [`SandboxedDir`]), its limits and its settings.
#[derive(Debug, Clone)]
pub struct WasmTaskStoreBuilder {
    pub(crate) source: ComponentSource,
    pub(crate) spec: SandboxSpec,
    pub(crate) max_task_bytes: usize,
    pub(crate) memoize: bool,
    pub(crate) durability: Durability,
    pub(crate) lock_lease: Option<Duration>,
    /// The embedder's engine (`crate::embed`), checked when it was given; `None`: the
    /// process-wide one.
    pub(crate) engine: Option<wasmtime::Engine>,
}

/// A store's sandbox. Its defaults: the directory [`DEFAULT_DATA_DIR`] under the current
/// directory, read-write; 64 MiB per instance, [`DEFAULT_MEMORY_TOTAL`] for all; at most
/// [`DEFAULT_MAX_INSTANCES`] (64) instances, within the memory budget, which admits fewer when
/// instances are large (the host resources an instance may hold are 8,192 shared out among
/// them: 1,024 each up to 8 instances, 128 each from 64 on); a deadline of 5 s per call.
impl Sandboxed for WasmTaskStoreBuilder {
    fn sandbox_spec(&mut self) -> &mut SandboxSpec {
        &mut self.spec
    }
}

impl SandboxedDir for WasmTaskStoreBuilder {}

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
    /// All limits at once.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.spec.memory_bytes = limits.memory_bytes;
        self.spec.memory_total_bytes = limits.memory_total_bytes;
        self.spec.timeout = limits.timeout;
        self.spec.disk_quota_bytes = limits.disk_quota_bytes;
        self.max_task_bytes = limits.max_task_bytes;
        self
    }

    /// The limits this builder holds now.
    pub fn current_limits(&self) -> Limits {
        Limits {
            memory_bytes: self.spec.memory_bytes,
            memory_total_bytes: self.spec.memory_total_bytes,
            timeout: self.spec.timeout,
            max_task_bytes: self.max_task_bytes,
            disk_quota_bytes: self.spec.disk_quota_bytes,
        }
    }

    /// The largest Task (JSON bytes) accepted in either direction.
    pub fn max_task_size(mut self, bytes: usize) -> Self {
        self.max_task_bytes = bytes;
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
            .spec
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
        let (component, outcome) = self
            .spec
            .compile(engine, &self.source, self.memoize)
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
        let disk = if self.spec.read_only {
            None
        } else {
            let quota = DiskQuota::measure(&dir, self.spec.disk_quota_bytes).map_err(|e| {
                StoreError::io(format!("cannot measure directory {}", dir.display()), e)
            })?;
            Some(Arc::new(quota))
        };
        // A store gets no network: `wasi:http` is not even linked (its selector refuses
        // `allow-hosts`, and its builder has no setter for it).
        let config = self.spec.config(name.clone(), Some(dir.clone()), false);
        let world = TaskStoreWorld {
            exports,
            settings,
            dir,
        };
        let pool = InstancePool::new(config, pre, world, disk);
        let started = std::time::Instant::now();
        let first = pool.first_instance().map_err(&load_err)?;
        let instantiate = started.elapsed();
        pool.release(first);
        Ok((
            WasmTaskStore {
                pool: Arc::new(pool),
                limits: self.current_limits(),
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
        let defaults = Limits::default();
        WasmTaskStoreBuilder {
            source,
            spec: SandboxSpec::with_limits(
                defaults.memory_bytes,
                defaults.memory_total_bytes,
                DEFAULT_MAX_INSTANCES,
                defaults.timeout,
            ),
            max_task_bytes: defaults.max_task_bytes,
            memoize: true,
            durability: Durability::Full,
            lock_lease: None,
            engine: None,
        }
    }
}

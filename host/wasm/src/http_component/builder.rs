//! Building an [`HttpComponent`]: which component, what it may use, and its limits
//! ([`HttpComponentBuilder`]); building compiles it (through the compiled-component cache),
//! checks that it exports `wasi:http/incoming-handler`, links the sandbox's WASI and outgoing
//! HTTP, and instantiates it once, so every problem with it is reported before serving.

use crate::http_component::handler::HttpComponent;
use crate::http_component::world::{HttpWorld, INCOMING_HANDLER};
use crate::load::{ComponentSource, compile, engine};
use crate::sandbox::memory::MemoryReservation;
use crate::sandbox::policy::outgoing_http::{self, OutgoingHttpPolicy};
use crate::sandbox::policy::quota::{DEFAULT_DISK_QUOTA, DiskQuota};
use crate::sandbox::pool::{InstancePool, SandboxConfig};
use crate::sandbox::state::InstanceState;
use crate::sandbox::wasi_overrides;
use crate::task_store::{CacheDir, DEFAULT_MAX_COMPONENT_BYTES};
use crate::{cache, http_component::world};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use toolnexus_core::StoreError;
use wasmtime::component::Linker;

/// The default deadline of one request's handler run, including what the component does after
/// it has sent the response: 10 minutes, since streams and background work live in it.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// The default longest wait of a request for a free instance before it is answered 503.
pub const DEFAULT_QUEUE_TIMEOUT: Duration = Duration::from_secs(10);
/// The default cap on one instance's linear memories together: 128 MiB.
pub const DEFAULT_HTTP_MEMORY: usize = 128 << 20;
/// The default budget for the linear memories of all instances together: 1 GiB.
pub const DEFAULT_HTTP_MEMORY_TOTAL: usize = 1 << 30;
/// The default number of instances, and so of requests handled at once: 64.
pub const DEFAULT_HTTP_INSTANCES: usize = 64;

/// Builds an [`HttpComponent`]: which component, what it may use, and its limits.
#[derive(Debug, Clone)]
pub struct HttpComponentBuilder {
    pub(crate) source: ComponentSource,
    pub(crate) name: String,
    pub(crate) dir: Option<PathBuf>,
    pub(crate) read_only: bool,
    pub(crate) disk_quota: u64,
    pub(crate) memory_bytes: usize,
    pub(crate) memory_total_bytes: usize,
    pub(crate) max_instances: usize,
    pub(crate) request_timeout: Duration,
    pub(crate) queue_timeout: Duration,
    pub(crate) forward_stderr: bool,
    pub(crate) cache: CacheDir,
    pub(crate) max_component_bytes: u64,
    pub(crate) outgoing_http: OutgoingHttpPolicy,
}

impl HttpComponentBuilder {
    /// A builder for a component from any source, with the defaults.
    pub fn new(source: ComponentSource) -> Self {
        let name = match &source {
            ComponentSource::File(path) => path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "component".into()),
            other => other.name(),
        };
        HttpComponentBuilder {
            source,
            name,
            dir: None,
            read_only: false,
            disk_quota: DEFAULT_DISK_QUOTA,
            memory_bytes: DEFAULT_HTTP_MEMORY,
            memory_total_bytes: DEFAULT_HTTP_MEMORY_TOTAL,
            max_instances: DEFAULT_HTTP_INSTANCES,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            queue_timeout: DEFAULT_QUEUE_TIMEOUT,
            forward_stderr: false,
            cache: CacheDir::Default,
            max_component_bytes: DEFAULT_MAX_COMPONENT_BYTES,
            outgoing_http: OutgoingHttpPolicy::default(),
        }
    }

    /// The name of the component in logs. Default: its file name (never its directory).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The one directory granted, preopened at guest path `/` (created 0700 if missing), with
    /// the store sandbox's file policies. Default: none, no file system at all.
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// Grant the directory read-only.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// The most a read-write directory may hold (file lengths and 4 KiB per entry); a write
    /// past it fails inside the component with `insufficient-space`. Default 1 GiB.
    pub fn disk_quota(mut self, bytes: u64) -> Self {
        self.disk_quota = bytes;
        self
    }

    /// The cap on all linear memories of one instance together. Default
    /// [`DEFAULT_HTTP_MEMORY`].
    pub fn memory_limit(mut self, bytes: usize) -> Self {
        self.memory_bytes = bytes;
        self
    }

    /// The budget for the linear memories of all instances together. Default
    /// [`DEFAULT_HTTP_MEMORY_TOTAL`]: a request starts only with room for its instance to grow
    /// as large as the largest so far; others wait, as for the instances.
    pub fn memory_total_limit(mut self, bytes: usize) -> Self {
        self.memory_total_bytes = bytes;
        self
    }

    /// The most requests handled at once (one fresh instance each). Default
    /// [`DEFAULT_HTTP_INSTANCES`]; values below 1 count as 1.
    pub fn max_instances(mut self, n: usize) -> Self {
        self.max_instances = n.max(1);
        self
    }

    /// The deadline of one request's handler run, from when it has its instance to when the
    /// component returns, including work after the response. Default
    /// [`DEFAULT_REQUEST_TIMEOUT`].
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long a request waits for an instance (and room in the memory budget) before it is
    /// answered 503; zero answers 503 at once. Default [`DEFAULT_QUEUE_TIMEOUT`].
    pub fn queue_timeout(mut self, timeout: Duration) -> Self {
        self.queue_timeout = timeout;
        self
    }

    /// Forward the component's stderr, line by line, to the host's `tracing` log. Off by
    /// default.
    pub fn forward_stderr(mut self, forward: bool) -> Self {
        self.forward_stderr = forward;
        self
    }

    /// Where the component's own `wasi:http` requests may go (`docs/outgoing-http.md`).
    /// Default: nowhere.
    pub fn outgoing_http(mut self, policy: OutgoingHttpPolicy) -> Self {
        self.outgoing_http = policy;
        self
    }

    /// Where compiled components are cached across processes.
    pub fn cache(mut self, cache: CacheDir) -> Self {
        self.cache = cache;
        self
    }

    /// The largest component file this builder compiles (default 32 MiB).
    pub fn max_component_size(mut self, bytes: u64) -> Self {
        self.max_component_bytes = bytes;
        self
    }

    /// Loads, compiles (or fetches from the cache) and checks the component, and instantiates
    /// it once, so a component that is not a `wasi:http` handler, needs imports this host does
    /// not grant, or traps at start is refused here. Compiling can take a second: from async
    /// code, call this inside `spawn_blocking`.
    pub fn build(self) -> Result<HttpComponent, StoreError> {
        let load_err = |reason: String| StoreError::Load {
            component: self.source.name(),
            reason,
        };
        let dir = match &self.dir {
            Some(dir) => {
                toolnexus_format::dir::create_private_dir(dir).map_err(|e| {
                    StoreError::io(format!("cannot create directory {}", dir.display()), e)
                })?;
                Some(dir.canonicalize().map_err(|e| {
                    StoreError::io(format!("cannot resolve directory {}", dir.display()), e)
                })?)
            }
            None => None,
        };
        let engine = engine().map_err(|e| load_err(e.clone()))?;
        let cache_dir = match &self.cache {
            CacheDir::Default => cache::default_cache_dir(),
            CacheDir::At(dir) => Some(dir.clone()),
            CacheDir::Off => None,
        };
        let (component, _) = compile(
            engine,
            &self.source,
            cache_dir.as_deref(),
            true,
            self.max_component_bytes,
        )
        .map_err(&load_err)?;
        // The export first: a component that is not a handler at all is told so, whatever it
        // imports.
        world::check_exports(engine, &component).map_err(&load_err)?;
        let mut linker = Linker::<InstanceState>::new(engine);
        wasi_overrides::add_to_linker(&mut linker).map_err(|e| load_err(format!("{e:#}")))?;
        outgoing_http::add_to_linker(&mut linker).map_err(|e| load_err(format!("{e:#}")))?;
        let pre = linker.instantiate_pre(&component).map_err(|e| {
            load_err(format!(
                "it needs imports this host does not grant (WASI and wasi:http, as in the \
                 wasi:http/proxy world): {e:#}"
            ))
        })?;
        let world = HttpWorld::new(&pre).map_err(|e| {
            load_err(format!(
                "its {INCOMING_HANDLER} export is not the one this host calls: {e:#}"
            ))
        })?;
        let disk = match (&dir, self.read_only) {
            (Some(dir), false) => {
                Some(Arc::new(DiskQuota::measure(dir, self.disk_quota).map_err(
                    |e| StoreError::io(format!("cannot measure directory {}", dir.display()), e),
                )?))
            }
            _ => None,
        };
        let config = SandboxConfig {
            name: self.name.clone(),
            dir,
            read_only: self.read_only,
            forward_stderr: self.forward_stderr,
            memory_bytes: self.memory_bytes,
            memory_total_bytes: self.memory_total_bytes,
            // Instantiating runs under the request's deadline too (the pool's own deadline
            // for making an instance).
            timeout: self.request_timeout,
            max_instances: self.max_instances,
            outgoing_http: Arc::new(self.outgoing_http),
            fresh_instances: true,
        };
        let pool = InstancePool::new(config, pre, world, disk);
        // Instantiate once now and drop it: a component whose start-up traps or loops is
        // refused here, not at the first request. On a thread of its own: the caller may be on
        // an async worker, where blocking would panic.
        std::thread::scope(|scope| {
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
        Ok(HttpComponent::new(
            pool,
            self.request_timeout,
            self.queue_timeout,
        ))
    }
}

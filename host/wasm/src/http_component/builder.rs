//! Building an [`HttpComponent`]: which component, what it may use, and its limits
//! ([`HttpComponentBuilder`]); building compiles it (through the compiled-component cache),
//! checks that it exports `wasi:http/incoming-handler`, links the sandbox's WASI and outgoing
//! HTTP, and instantiates it once, so every problem with it is reported before serving.

use crate::http_component::handler::HttpComponent;
use crate::http_component::world;
use crate::http_component::world::{HttpWorld, INCOMING_HANDLER};
use crate::load::{ComponentSource, engine};
use crate::sandbox::policy::outgoing_http;
use crate::sandbox::policy::quota::DiskQuota;
use crate::sandbox::pool::InstancePool;
use crate::sandbox::state::InstanceState;
use crate::sandbox::wasi_overrides;
use crate::sandbox_spec::{SandboxSpec, Sandboxed, SandboxedDir, SandboxedNetwork};
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

/// Builds an [`HttpComponent`]: which component, what it may use ([`SandboxSpec`], set
/// through [`Sandboxed`], [`SandboxedDir`] and [`SandboxedNetwork`]), and its limits.
#[derive(Debug, Clone)]
pub struct HttpComponentBuilder {
    pub(crate) source: ComponentSource,
    pub(crate) name: String,
    pub(crate) spec: SandboxSpec,
    pub(crate) queue_timeout: Duration,
}

/// An HTTP component's sandbox. Its defaults: no directory (a directory given is created 0700
/// and gets the store sandbox's file policies); [`DEFAULT_HTTP_MEMORY`] per instance and
/// [`DEFAULT_HTTP_MEMORY_TOTAL`] for all (a request starts only with room for its instance to
/// grow as large as the largest so far; others wait, as for the instances); at most
/// [`DEFAULT_HTTP_INSTANCES`] requests handled at once, a fresh instance each; a deadline of
/// [`DEFAULT_REQUEST_TIMEOUT`] per request, from when it has its instance to when the
/// component returns, including work after the response; no network.
impl Sandboxed for HttpComponentBuilder {
    fn sandbox_spec(&mut self) -> &mut SandboxSpec {
        &mut self.spec
    }
}

impl SandboxedDir for HttpComponentBuilder {}

impl SandboxedNetwork for HttpComponentBuilder {}

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
            spec: SandboxSpec::with_limits(
                DEFAULT_HTTP_MEMORY,
                DEFAULT_HTTP_MEMORY_TOTAL,
                DEFAULT_HTTP_INSTANCES,
                DEFAULT_REQUEST_TIMEOUT,
            ),
            queue_timeout: DEFAULT_QUEUE_TIMEOUT,
        }
    }

    /// The name of the component in logs. Default: its file name (never its directory).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How long a request waits for an instance (and room in the memory budget) before it is
    /// answered 503; zero answers 503 at once. Default [`DEFAULT_QUEUE_TIMEOUT`].
    pub fn queue_timeout(mut self, timeout: Duration) -> Self {
        self.queue_timeout = timeout;
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
        let dir = match &self.spec.dir {
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
        let (component, _) = self
            .spec
            .compile(engine, &self.source, true)
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
        let disk = match (&dir, self.spec.read_only) {
            (Some(dir), false) => Some(Arc::new(
                DiskQuota::measure(dir, self.spec.disk_quota_bytes).map_err(|e| {
                    StoreError::io(format!("cannot measure directory {}", dir.display()), e)
                })?,
            )),
            _ => None,
        };
        // Instantiating runs under the request's deadline too (the pool's own deadline for
        // making an instance).
        let config = self.spec.config(self.name.clone(), dir, true);
        let pool = InstancePool::new(config, pre, world, disk);
        // Made once now and dropped: every request gets a fresh instance.
        pool.first_instance().map_err(&load_err)?;
        Ok(HttpComponent::new(
            pool,
            self.spec.timeout,
            self.queue_timeout,
        ))
    }
}

//! What a component is granted and its limits, in one place for every kind of component: the
//! [`SandboxSpec`] each builder holds (stores, agents, HTTP components), the one set of setters
//! over it ([`Sandboxed`], and [`SandboxedDir`] and [`SandboxedNetwork`] for the builders whose
//! components may have a directory or a network), and how a selector's parsed option
//! (`sandbox_options`) lands in it. A new sandbox limit gets a field, a setter and an option
//! here, and every kind of component has it.

use crate::cache::{self, CacheOutcome};
use crate::load::{ComponentSource, compile};
use crate::sandbox::policy::outgoing_http::OutgoingHttpPolicy;
use crate::sandbox::policy::quota::DEFAULT_DISK_QUOTA;
use crate::sandbox::pool::SandboxConfig;
use crate::sandbox_options::SandboxOption;
use crate::task_store::{CacheDir, DEFAULT_MAX_COMPONENT_BYTES};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::Component;

/// What a component is granted and its limits. Each builder starts from its own defaults (a
/// store's deadline is 5 s, an agent's 10 minutes; see the builder) and changes them through
/// [`Sandboxed`] and its siblings.
#[derive(Debug, Clone)]
pub struct SandboxSpec {
    /// The one directory granted, preopened at guest path `/` (stores, HTTP components).
    pub dir: Option<PathBuf>,
    /// Whether the directory is granted read-only.
    pub read_only: bool,
    /// The most a read-write directory may hold: file lengths plus
    /// [`ENTRY_BYTES`](crate::ENTRY_BYTES) per entry.
    pub disk_quota_bytes: u64,
    /// The cap on all linear memories (and tables) of one instance together, in bytes.
    pub memory_bytes: usize,
    /// The budget for the linear memories (and tables) of all instances together, in bytes.
    pub memory_total_bytes: usize,
    /// The most instances that exist at once, and so calls at once (at least 1).
    pub max_instances: usize,
    /// The deadline of one call (a store call, an agent run, an HTTP request's handler run).
    pub timeout: Duration,
    /// Whether the component's stderr goes, line by line, to the host's `tracing` log.
    pub forward_stderr: bool,
    /// Where the component's `wasi:http` requests may go (agents, HTTP components).
    pub outgoing_http: OutgoingHttpPolicy,
    /// Where compiled components are cached across processes.
    pub cache: CacheDir,
    /// The largest component file compiled.
    pub max_component_bytes: u64,
}

impl SandboxSpec {
    /// A spec with these limits, no directory, no network, stderr discarded, the default disk
    /// quota, cache and component size cap.
    pub(crate) fn with_limits(
        memory_bytes: usize,
        memory_total_bytes: usize,
        max_instances: usize,
        timeout: Duration,
    ) -> Self {
        SandboxSpec {
            dir: None,
            read_only: false,
            disk_quota_bytes: DEFAULT_DISK_QUOTA,
            memory_bytes,
            memory_total_bytes,
            max_instances,
            timeout,
            forward_stderr: false,
            outgoing_http: OutgoingHttpPolicy::default(),
            cache: CacheDir::Default,
            max_component_bytes: DEFAULT_MAX_COMPONENT_BYTES,
        }
    }

    /// Sets what a selector's option says. The selector has refused beforehand the options
    /// its kind of component does not take, in its own words.
    pub(crate) fn apply(&mut self, option: SandboxOption) {
        match option {
            SandboxOption::Dir(dir) => self.dir = Some(dir),
            SandboxOption::ReadOnly(read_only) => self.read_only = read_only,
            SandboxOption::Quota(bytes) => self.disk_quota_bytes = bytes,
            SandboxOption::Memory(bytes) => self.memory_bytes = bytes,
            SandboxOption::MemoryTotal(bytes) => self.memory_total_bytes = bytes,
            SandboxOption::Instances(n) => self.max_instances = n.max(1),
            SandboxOption::Timeout(timeout) => self.timeout = timeout,
            SandboxOption::Stderr(forward) => self.forward_stderr = forward,
            SandboxOption::Cache(cache) => self.cache = cache,
            SandboxOption::MaxComponent(bytes) => self.max_component_bytes = bytes,
            SandboxOption::AllowHosts(policy) => self.outgoing_http = policy,
        }
    }

    /// Compiles `source` (or fetches it from the cache this spec names), refusing one larger
    /// than the cap; `memoize` reuses what this process already compiled.
    pub(crate) fn compile(
        &self,
        engine: &wasmtime::Engine,
        source: &ComponentSource,
        memoize: bool,
    ) -> Result<(Component, CacheOutcome), String> {
        let cache_dir = match &self.cache {
            CacheDir::Default => cache::default_cache_dir(),
            CacheDir::At(dir) => Some(dir.clone()),
            CacheDir::Off => None,
        };
        compile(
            engine,
            source,
            cache_dir.as_deref(),
            memoize,
            self.max_component_bytes,
        )
    }

    /// What the pool's instances get: this spec, for the component `name`, over `dir` (the
    /// directory resolved, or none), with fresh instances per call or not.
    pub(crate) fn config(
        &self,
        name: String,
        dir: Option<PathBuf>,
        fresh_instances: bool,
    ) -> SandboxConfig {
        SandboxConfig {
            name,
            dir,
            read_only: self.read_only,
            forward_stderr: self.forward_stderr,
            memory_bytes: self.memory_bytes,
            memory_total_bytes: self.memory_total_bytes,
            timeout: self.timeout,
            max_instances: self.max_instances.max(1),
            outgoing_http: Arc::new(self.outgoing_http.clone()),
            fresh_instances,
        }
    }
}

/// The setters every builder of a sandboxed component has, over its [`SandboxSpec`].
pub trait Sandboxed: Sized {
    /// The builder's spec.
    fn sandbox_spec(&mut self) -> &mut SandboxSpec;

    /// The cap on all linear memories (and tables) of one instance together, in bytes; a
    /// growth past it fails the call with [`Limit::Memory`](toolnexus_core::Limit::Memory).
    fn memory_limit(mut self, bytes: usize) -> Self {
        self.sandbox_spec().memory_bytes = bytes;
        self
    }

    /// The budget for the linear memories (and tables) of all instances together, in bytes. A
    /// call starts only while it has room for its instance to grow as large as the largest so
    /// far; others wait for an instance.
    fn memory_total_limit(mut self, bytes: usize) -> Self {
        self.sandbox_spec().memory_total_bytes = bytes;
        self
    }

    /// At most this many instances exist at once, and so at most this many calls run at once;
    /// more wait their turn. Values below 1 count as 1.
    fn max_instances(mut self, n: usize) -> Self {
        self.sandbox_spec().max_instances = n.max(1);
        self
    }

    /// The deadline of one call: a store call, an agent run, an HTTP request's handler run
    /// (including what the component does after it has sent the response).
    fn timeout(mut self, timeout: Duration) -> Self {
        self.sandbox_spec().timeout = timeout;
        self
    }

    /// Forward the component's stderr, line by line, to the host's `tracing` log (target
    /// `toolnexus::component`, level INFO). Off by default: a debugging aid.
    fn forward_stderr(mut self, forward: bool) -> Self {
        self.sandbox_spec().forward_stderr = forward;
        self
    }

    /// Where compiled components are cached across processes.
    fn cache(mut self, cache: CacheDir) -> Self {
        self.sandbox_spec().cache = cache;
        self
    }

    /// The largest component file compiled (default [`DEFAULT_MAX_COMPONENT_BYTES`], 32 MiB):
    /// compiling costs time and memory in proportion to a component's size (see
    /// `docs/security.md` for the figures), so a huge one is refused before it is read whole or
    /// compiled.
    fn max_component_size(mut self, bytes: u64) -> Self {
        self.sandbox_spec().max_component_bytes = bytes;
        self
    }
}

/// The setters of builders whose components may be granted a directory (stores, HTTP
/// components).
pub trait SandboxedDir: Sandboxed {
    /// The one directory granted, preopened at guest path `/`, created (0700) if missing.
    fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.sandbox_spec().dir = Some(dir.into());
        self
    }

    /// Grant the directory read-only: the component can read but every write fails.
    fn read_only(mut self, read_only: bool) -> Self {
        self.sandbox_spec().read_only = read_only;
        self
    }

    /// The most a read-write directory may hold (file lengths plus
    /// [`ENTRY_BYTES`](crate::ENTRY_BYTES) per entry); a write past it fails inside the
    /// component (`insufficient-space`), and a store's call with
    /// [`Limit::Disk`](toolnexus_core::Limit::Disk). Default
    /// [`DEFAULT_DISK_QUOTA`](crate::DEFAULT_DISK_QUOTA) (1 GiB).
    fn disk_quota(mut self, bytes: u64) -> Self {
        self.sandbox_spec().disk_quota_bytes = bytes;
        self
    }
}

/// The setter of builders whose components may reach the network (agents, HTTP components).
pub trait SandboxedNetwork: Sandboxed {
    /// Where the component's `wasi:http` requests may go (`docs/outgoing-http.md`). Default:
    /// nowhere.
    fn outgoing_http(mut self, policy: OutgoingHttpPolicy) -> Self {
        self.sandbox_spec().outgoing_http = policy;
        self
    }
}

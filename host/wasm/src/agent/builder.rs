//! Building a [`WasmAgent`]: which component, its limits and its settings
//! ([`WasmAgentBuilder`]).

use crate::agent::contract::{AGENT_CONFIG_INTERFACE, AGENT_INTERFACE, AgentExports};
use crate::agent::task_import;
use crate::agent::wasm_agent::WasmAgent;
use crate::agent::world::AgentWorld;
use crate::cache;
use crate::load::{ComponentSource, compile, engine};
use crate::sandbox::memory::MemoryReservation;
use crate::sandbox::policy::outgoing_http::{self, OutgoingHttpPolicy};
use crate::sandbox::pool::{InstancePool, SandboxConfig};
use crate::sandbox::state::InstanceState;
use crate::sandbox::wasi_overrides;
use crate::task_store::{CacheDir, DEFAULT_MAX_COMPONENT_BYTES};
use std::sync::Arc;
use std::time::Duration;
use toolnexus_core::StoreError;
use wasmtime::component::Linker;

/// The default deadline of one run ([`WasmAgentBuilder::timeout`]): 10 minutes.
pub const DEFAULT_AGENT_TIMEOUT: Duration = Duration::from_secs(600);
/// The default cap on one agent instance's linear memories together: 128 MiB.
pub const DEFAULT_AGENT_MEMORY: usize = 128 << 20;
/// The default budget for the linear memories of all of an agent's instances together: 1 GiB.
pub const DEFAULT_AGENT_MEMORY_TOTAL: usize = 1 << 30;
/// The default number of an agent's instances, and so of runs at once: 16.
pub const DEFAULT_AGENT_INSTANCES: usize = 16;
/// The deadline of the component's `cancel` (it should only release what it holds).
pub const AGENT_CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

/// Builds a [`WasmAgent`]: which component, its limits and its settings.
#[derive(Debug, Clone)]
pub struct WasmAgentBuilder {
    pub(crate) source: ComponentSource,
    pub(crate) name: String,
    pub(crate) memory_bytes: usize,
    pub(crate) memory_total_bytes: usize,
    pub(crate) max_instances: usize,
    pub(crate) timeout: Duration,
    pub(crate) forward_stderr: bool,
    pub(crate) settings: Vec<(String, String)>,
    pub(crate) cache: CacheDir,
    pub(crate) max_component_bytes: u64,
    pub(crate) outgoing_http: OutgoingHttpPolicy,
    pub(crate) fresh_instances: bool,
}

impl WasmAgentBuilder {
    /// The name of the agent in the messages of the Tasks it fails (`agent <name>: …`) and in
    /// logs. Default: the component's file name (never its directory, which clients must not
    /// see), or the name given with its bytes.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Whether every run (and every `cancel`) gets a fresh instance, dropped after it: nothing
    /// one run leaves in the instance's linear memory (another owner's or tenant's data, a
    /// cache the agent keeps) reaches the next, at the cost of an instantiation per run.
    /// Default `false`: instances are reused, as they are for stores, which is faster; an
    /// agent that serves several owners or tenants and keeps anything in memory between runs
    /// should be run with `true`.
    pub fn fresh_instances(mut self, fresh: bool) -> Self {
        self.fresh_instances = fresh;
        self
    }

    /// The cap on all linear memories of one instance together, in bytes. Default
    /// [`DEFAULT_AGENT_MEMORY`].
    pub fn memory_limit(mut self, bytes: usize) -> Self {
        self.memory_bytes = bytes;
        self
    }

    /// The budget for the linear memories of all instances together, in bytes. Default
    /// [`DEFAULT_AGENT_MEMORY_TOTAL`]. A run starts only while it has room for its instance to
    /// grow as large as the largest so far; others wait for an instance.
    pub fn memory_total_limit(mut self, bytes: usize) -> Self {
        self.memory_total_bytes = bytes;
        self
    }

    /// At most this many instances exist at once, and so at most this many runs (and
    /// cancels) at once; more wait their turn. Default [`DEFAULT_AGENT_INSTANCES`]; values
    /// below 1 count as 1.
    pub fn max_instances(mut self, n: usize) -> Self {
        self.max_instances = n.max(1);
        self
    }

    /// The deadline of one run (`handle`): past it the run stops and its Task is failed.
    /// Default [`DEFAULT_AGENT_TIMEOUT`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Forward the component's stderr, line by line, to the host's `tracing` log (target
    /// `toolnexus::component`, level INFO). Off by default.
    pub fn forward_stderr(mut self, forward: bool) -> Self {
        self.forward_stderr = forward;
        self
    }

    /// A setting passed to the component's `config.configure` (in the order given). A
    /// component that does not export `config` takes no settings: building it with any fails.
    /// Where the agent's `wasi:http` requests may go (`docs/outgoing-http.md`). Default:
    /// nowhere.
    pub fn outgoing_http(mut self, policy: OutgoingHttpPolicy) -> Self {
        self.outgoing_http = policy;
        self
    }

    pub fn setting(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.push((name.into(), value.into()));
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
    /// it once (passing its settings), so every problem with it is reported here rather than at
    /// the first run. Compiling can take a second: from async code, call this inside
    /// `spawn_blocking`.
    pub fn build(self) -> Result<WasmAgent, StoreError> {
        let load_err = |reason: String| StoreError::Load {
            component: self.source.name(),
            reason,
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

        let mut linker = Linker::<InstanceState>::new(engine);
        wasi_overrides::add_to_linker(&mut linker).map_err(|e| load_err(format!("{e:#}")))?;
        task_import::add_to_linker(&mut linker).map_err(|e| load_err(format!("{e:#}")))?;
        // Outgoing HTTP, under the operator's allow-list (none by default: every request is
        // refused with `HTTP-request-denied`).
        outgoing_http::add_to_linker(&mut linker).map_err(|e| load_err(format!("{e:#}")))?;
        let pre = linker.instantiate_pre(&component).map_err(|e| {
            load_err(format!(
                "it needs imports this host does not grant to agents (WASI and \
                 toolnexus:a2a/task): {e:#}"
            ))
        })?;
        let exports = AgentExports::new(&pre).map_err(|e| {
            load_err(format!(
                "not an agent component: it does not export {AGENT_INTERFACE} as the contract \
                 says: {e:#}"
            ))
        })?;
        if !exports.has_config() && !self.settings.is_empty() {
            let names: Vec<&str> = self.settings.iter().map(|(n, _)| n.as_str()).collect();
            return Err(load_err(format!(
                "it takes no settings (it does not export {AGENT_CONFIG_INTERFACE}), but was \
                 given {}",
                names.join(", ")
            )));
        }
        let config = SandboxConfig {
            name: self.name.clone(),
            dir: None,
            read_only: true,
            forward_stderr: self.forward_stderr,
            memory_bytes: self.memory_bytes,
            memory_total_bytes: self.memory_total_bytes,
            timeout: self.timeout,
            max_instances: self.max_instances,
            outgoing_http: Arc::new(self.outgoing_http),
            fresh_instances: self.fresh_instances,
        };
        let world = AgentWorld {
            exports,
            settings: self.settings.clone(),
        };
        let pool = InstancePool::new(config, pre, world, None);
        // Instantiate once now: a component whose start-up traps, loops or refuses its settings
        // is refused here. On a thread of its own, as the store's builder does: the caller may
        // be on an async worker, where blocking would panic.
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
        pool.release(first);
        Ok(WasmAgent {
            pool: Arc::new(pool),
            name: self.name,
            cancel_timeout: AGENT_CANCEL_TIMEOUT,
        })
    }
}

impl WasmAgent {
    /// A builder for an agent component from any source.
    pub fn builder(source: ComponentSource) -> WasmAgentBuilder {
        let name = match &source {
            ComponentSource::File(path) => path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "component".into()),
            other => other.name(),
        };
        WasmAgentBuilder {
            source,
            name,
            memory_bytes: DEFAULT_AGENT_MEMORY,
            memory_total_bytes: DEFAULT_AGENT_MEMORY_TOTAL,
            max_instances: DEFAULT_AGENT_INSTANCES,
            timeout: DEFAULT_AGENT_TIMEOUT,
            forward_stderr: false,
            settings: Vec::new(),
            outgoing_http: OutgoingHttpPolicy::default(),
            fresh_instances: false,
            cache: CacheDir::Default,
            max_component_bytes: DEFAULT_MAX_COMPONENT_BYTES,
        }
    }
}

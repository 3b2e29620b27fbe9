//! Building a [`WasmAgent`]: which component, its limits and its settings
//! ([`WasmAgentBuilder`]).

use crate::agent::contract::{AGENT_CONFIG_INTERFACE, AGENT_INTERFACE, AgentExports};
use crate::agent::task_import;
use crate::agent::wasm_agent::WasmAgent;
use crate::agent::world::AgentWorld;
use crate::load::{ComponentSource, engine};
use crate::sandbox::policy::outgoing_http;
use crate::sandbox::pool::InstancePool;
use crate::sandbox::state::InstanceState;
use crate::sandbox::wasi_overrides;
use crate::sandbox_spec::{SandboxSpec, Sandboxed, SandboxedNetwork};
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

/// Builds a [`WasmAgent`]: which component, what it may use ([`SandboxSpec`], set through
/// [`Sandboxed`] and [`SandboxedNetwork`]; an agent gets no directory), its limits and its
/// settings.
#[derive(Debug, Clone)]
pub struct WasmAgentBuilder {
    pub(crate) source: ComponentSource,
    pub(crate) name: String,
    pub(crate) spec: SandboxSpec,
    pub(crate) settings: Vec<(String, String)>,
    pub(crate) fresh_instances: bool,
}

/// An agent's sandbox. Its defaults: [`DEFAULT_AGENT_MEMORY`] per instance,
/// [`DEFAULT_AGENT_MEMORY_TOTAL`] for all, at most [`DEFAULT_AGENT_INSTANCES`] instances (and
/// so runs and cancels at once), a deadline of [`DEFAULT_AGENT_TIMEOUT`] per run (past it the
/// run stops and its Task is failed), no network.
impl Sandboxed for WasmAgentBuilder {
    fn sandbox_spec(&mut self) -> &mut SandboxSpec {
        &mut self.spec
    }
}

impl SandboxedNetwork for WasmAgentBuilder {}

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

    /// A setting passed to the component's `config.configure` (in the order given). A
    /// component that does not export `config` takes no settings: building it with any fails.
    pub fn setting(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.push((name.into(), value.into()));
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
        let (component, _) = self
            .spec
            .compile(engine, &self.source, true)
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
        let config = self
            .spec
            .config(self.name.clone(), None, self.fresh_instances);
        let world = AgentWorld {
            exports,
            settings: self.settings.clone(),
        };
        let pool = InstancePool::new(config, pre, world, None);
        let first = pool.first_instance().map_err(&load_err)?;
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
            spec: SandboxSpec::with_limits(
                DEFAULT_AGENT_MEMORY,
                DEFAULT_AGENT_MEMORY_TOTAL,
                DEFAULT_AGENT_INSTANCES,
                DEFAULT_AGENT_TIMEOUT,
            ),
            settings: Vec::new(),
            fresh_instances: false,
        }
    }
}

//! The bindings of the agent contract, `toolnexus:a2a@0.1.0` (`wit/a2a/agent.wit`, world
//! `configurable-agent`): the WIT types, the `task` import the host serves (`agent::task_import`)
//! and where a component's exports are ([`AgentExports`], found once at load), loaded per
//! instance as [`AgentApi`].

use crate::sandbox::state::InstanceState;
use wasmtime::Store;
use wasmtime::component::{Instance as ComponentInstance, InstancePre};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit/a2a",
        world: "configurable-agent",
        imports: { default: async },
        exports: { default: async },
    });
}

use bindings::exports::toolnexus::a2a::{agent, config};
pub(crate) use bindings::toolnexus::a2a::task;
pub(crate) use bindings::toolnexus::a2a::types as wit;

/// The interface every agent component exports.
pub const AGENT_INTERFACE: &str = "toolnexus:a2a/agent@0.1.0";
/// The optional settings interface of an agent component.
pub const AGENT_CONFIG_INTERFACE: &str = "toolnexus:a2a/config@0.1.0";

/// Where a component's exports are: `agent` (required) and `config` (optional).
pub(crate) struct AgentExports {
    agent: agent::GuestIndices,
    config: Option<config::GuestIndices>,
}

/// The functions of one ready instance.
pub(crate) struct AgentApi {
    pub(crate) agent: agent::Guest,
}

impl AgentExports {
    /// The exports of a linked component; `Err` if it does not export [`AGENT_INTERFACE`] as
    /// the contract says.
    pub(crate) fn new(pre: &InstancePre<InstanceState>) -> wasmtime::Result<Self> {
        Ok(AgentExports {
            agent: agent::GuestIndices::new(pre)?,
            config: config::GuestIndices::new(pre).ok(),
        })
    }

    /// Whether the component exports [`AGENT_CONFIG_INTERFACE`].
    pub(crate) fn has_config(&self) -> bool {
        self.config.is_some()
    }

    /// Loads the functions of a fresh instance and, if the component exports `config`, passes
    /// it `settings`. The inner `Err` is the component refusing its settings.
    pub(crate) async fn setup(
        &self,
        store: &mut Store<InstanceState>,
        instance: &ComponentInstance,
        settings: &[(String, String)],
    ) -> wasmtime::Result<Result<AgentApi, String>> {
        let agent = self.agent.load(&mut *store, instance)?;
        if let Some(config) = &self.config {
            let config = config.load(&mut *store, instance)?;
            if let Err(refused) = config.call_configure(&mut *store, settings).await? {
                return Ok(Err(refused));
            }
        }
        Ok(Ok(AgentApi { agent }))
    }
}

//! The bindings of the agent contract, `toolnexus:a2a@0.1.0` (`wit/a2a/agent.wit`, world
//! `any-agent`: every export an agent may have): the WIT types, the `task` import the host serves (`agent::task_import`)
//! and where a component's exports are ([`AgentExports`], found once at load), loaded per
//! instance as [`AgentApi`].

use crate::sandbox::state::InstanceState;
use wasmtime::Store;
use wasmtime::component::{Instance as ComponentInstance, InstancePre};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit/a2a",
        world: "any-agent",
        imports: { default: async },
        exports: { default: async },
    });
}

use bindings::exports::toolnexus::a2a::{agent, config, scoped_cancel};
pub(crate) use bindings::toolnexus::a2a::task;
pub(crate) use bindings::toolnexus::a2a::types as wit;
pub(crate) use scoped_cancel::CanceledTask as WitCanceledTask;

/// The interface every agent component exports.
pub const AGENT_INTERFACE: &str = "toolnexus:a2a/agent@0.1.0";
/// The optional settings interface of an agent component.
pub const AGENT_CONFIG_INTERFACE: &str = "toolnexus:a2a/config@0.1.0";
/// Where a component's exports are: `agent` (required), `config` and `scoped-cancel`
/// (optional).
pub(crate) struct AgentExports {
    agent: agent::GuestIndices,
    config: Option<config::GuestIndices>,
    scoped_cancel: Option<scoped_cancel::GuestIndices>,
}

/// The functions of one ready instance.
pub(crate) struct AgentApi {
    pub(crate) agent: agent::Guest,
    /// `toolnexus:a2a/scoped-cancel`, when the component exports it: called instead of
    /// `agent.cancel`.
    pub(crate) scoped_cancel: Option<scoped_cancel::Guest>,
}

impl AgentExports {
    /// The exports of a linked component; `Err` if it does not export [`AGENT_INTERFACE`] as
    /// the contract says.
    pub(crate) fn new(pre: &InstancePre<InstanceState>) -> wasmtime::Result<Self> {
        Ok(AgentExports {
            agent: agent::GuestIndices::new(pre)?,
            config: config::GuestIndices::new(pre).ok(),
            scoped_cancel: scoped_cancel::GuestIndices::new(pre).ok(),
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
        let scoped_cancel = match &self.scoped_cancel {
            Some(indices) => Some(indices.load(&mut *store, instance)?),
            None => None,
        };
        if let Some(config) = &self.config {
            let config = config.load(&mut *store, instance)?;
            if let Err(refused) = config.call_configure(&mut *store, settings).await? {
                return Ok(Err(refused));
            }
        }
        Ok(Ok(AgentApi {
            agent,
            scoped_cancel,
        }))
    }
}

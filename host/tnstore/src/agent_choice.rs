//! `tnstore serve --agent`: which agent works on the Tasks, and `tnstore agent --out`, which
//! writes an embedded agent component out.
//!
//! - `echo` (the default): the echo agent component (`guest/agent-echo`), embedded, with
//!   `--echo-delay-ms` as its `delay-ms` setting;
//! - `tck`: the agent the public A2A TCK drives (`guest/agent-tck`), embedded;
//! - `native-echo`: the same echo behaviour as native code, without the sandbox (for
//!   comparison, and where no component may run);
//! - `wasm:<component>[?option=value&…]`: any agent component (`wit/a2a/agent.wit`), with
//!   the options of `docs/wasm-options.md`; `wasm:echo` and `wasm:tck` are the embedded ones.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use toolnexus::wasm::agent::agent_builder_from_selector;
use toolnexus_a2a::{Agent, EchoAgent};

/// The embedded agents `tnstore agent --name` writes out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EmbeddedAgent {
    /// The echo agent.
    Echo,
    /// The agent the public A2A TCK drives.
    Tck,
}

impl EmbeddedAgent {
    fn bytes(self) -> &'static [u8] {
        match self {
            EmbeddedAgent::Echo => toolnexus::wasm::ECHO_AGENT_COMPONENT,
            EmbeddedAgent::Tck => toolnexus::wasm::TCK_AGENT_COMPONENT,
        }
    }
}

/// Writes the embedded agent component `agent` to `out`.
pub fn write_agent(agent: EmbeddedAgent, out: &Path) -> Result<(), String> {
    let bytes = agent.bytes();
    if bytes.is_empty() {
        return Err(format!(
            "the {agent:?} agent is not embedded in this build of tnstore"
        ));
    }
    std::fs::write(out, bytes).map_err(|e| format!("cannot write {}: {e}", out.display()))
}

/// The agent `--agent` names, loaded (compiling a component can take a second: call from a
/// blocking context). `echo_delay` is the echo agent's delay.
pub fn resolve_agent(choice: &str, echo_delay: Duration) -> Result<Arc<dyn Agent>, String> {
    let delay_ms = echo_delay.as_millis().to_string();
    let selector = match choice {
        "native-echo" => return Ok(Arc::new(EchoAgent { delay: echo_delay })),
        "echo" => format!("wasm:echo?delay-ms={delay_ms}"),
        "tck" => format!("wasm:tck?delay-ms={delay_ms}"),
        other if other.starts_with("wasm:") => other.to_owned(),
        other => {
            return Err(format!(
                "unknown agent {other:?}: use echo, tck, native-echo or wasm:<component>[?…]"
            ));
        }
    };
    let agent = agent_builder_from_selector(&selector)
        .and_then(|builder| builder.build())
        .map_err(|e| format!("--agent {choice}: {e}"))?;
    Ok(Arc::new(agent))
}

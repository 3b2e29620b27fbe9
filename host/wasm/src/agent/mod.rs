//! Agent components (`toolnexus:a2a@0.1.0`, `wit/a2a/agent.wit`) on top of the sandbox: the
//! bindings ([`contract`]), the world as the pool runs it ([`world`]), the `task` import the
//! host serves ([`task_import`]), the records to and from the native model ([`convert`]), the
//! builder ([`builder`]), [`WasmAgent`] with its [`Agent`](toolnexus_a2a_protocol::Agent)
//! methods ([`wasm_agent`]) and the `wasm:` agent selector ([`selector`]).
//!
//! An agent gets what a store gets minus the directory: clocks and random, a bounded stderr
//! log, bounded memory, a deadline per run (10 minutes by default), no files, no environment,
//! no network (outgoing HTTP comes with an operator's allow-list). A trap, the deadline or a
//! memory limit fails the run's Task with a message naming the agent; the instance is dropped
//! and other runs go on with others.

mod builder;
mod contract;
mod convert;
mod selector;
mod task_import;
mod wasm_agent;
mod world;

pub use builder::{
    AGENT_CANCEL_TIMEOUT, DEFAULT_AGENT_INSTANCES, DEFAULT_AGENT_MEMORY,
    DEFAULT_AGENT_MEMORY_TOTAL, DEFAULT_AGENT_TIMEOUT, WasmAgentBuilder,
};
pub use contract::{AGENT_CONFIG_INTERFACE, AGENT_INTERFACE};
pub use selector::{AGENT_OPTIONS, agent_builder_from_selector, agent_from_selector};
pub use wasm_agent::WasmAgent;

//! The agent model to and from the `toolnexus:a2a` types of this component's bindings: the
//! protocol crate's conversions, the same rules as the host's for agent components (an agent's
//! answers are hostile: one that breaks a rule is an error naming it, never a panic).

use crate::bindings::toolnexus::a2a::types as wit;

toolnexus_a2a_protocol::agent_wit_conversions!(wit);

//! The A2A server over real HTTP and TCP, in one test binary: both protocol versions and
//! bindings, streaming, tenants and owners, the server's own limits, and the operator's agent
//! card (public URL, tenants' interfaces, HTTPS), push-notification configs.

mod agent_card;
mod limits;
mod protocol;
mod push;
mod slow_reader;
mod spec_1_0_1;

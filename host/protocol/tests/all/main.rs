//! The protocol crate's integration tests: a real `Service` over an in-memory store, with
//! agents written against the public agent API.

mod agent_events;
mod agent_outcomes;
mod harness;
mod list_total;
mod owner_bounds;
mod push;
mod push_config_checks;
mod run_lifecycle;
mod store_calls;

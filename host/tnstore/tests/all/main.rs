//! `tnstore` as a real process, in one test binary: the command line, `tnstore serve` (restart
//! recovery, owners and tenants, retention, replicas over one store), the system-call order of
//! a durable save, the official A2A Python SDK as a client, and the operator's agent card
//! (`--card`, `--public-url`, tenants' interfaces, HTTPS), and push notifications to a real
//! webhook receiver.

mod agent_card;
mod cli;
mod common;
mod component_serve;
mod composed_server;
mod durability_order;
mod owners;
mod push;
mod push_support;
mod python_sdk;
mod recovery;
mod replicas;
mod retention;
mod serve;
mod shutdown;

//! The integration tests of `toolnexus-wasm`, in one test binary.

mod agents;
mod contracts;
mod embedding;
mod http_component;
mod outgoing_http;
mod push_configs;

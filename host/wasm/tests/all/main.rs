//! The integration tests of `toolnexus-wasm`, in one test binary.

mod agents;
mod contracts;
mod embedding;
mod outgoing_http;
mod push_configs;

//! The integration tests of toolnexus, in one test binary: the conformance suite against every
//! store (memory, native files, the file-store component, the composed lifecycle guard, the
//! JavaScript and Python stores, PostgreSQL), what only some stores have (files on disk, real
//! processes, namespaces, selectors, the compiled-component cache), the sandbox's limits against
//! the hostile component, and the A2A server over real HTTP.
//!
//! Every test here runs in one process, beside the others, in parallel threads: a test that
//! looks at the process (its descriptors, its `tracing` subscriber) looks only at what is its
//! own.

mod cache;
mod composed;
mod conformance;
mod files;
mod handles;
mod hostile_json;
mod js_agent;
mod js_store;
mod layout;
mod memories;
mod namespaces;
mod postgres;
mod processes;
mod push_files;
mod python_store;
mod quota;
mod sandbox;
mod selectors;
mod server;
mod stalls;
mod state_spellings;
mod stderr_log;

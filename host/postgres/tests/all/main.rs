//! The PostgreSQL store against real servers, in one test binary: versions, conditional saves
//! raced across pools, listing, schema migration, and TLS. (The conformance suite runs on
//! PostgreSQL in the `toolnexus-conformance` tests.)

mod support;
mod tls;
mod versions;

//! The PostgreSQL store against real servers, in one test binary: versions, conditional saves
//! raced across pools, listing, schema migration, push-notification configs, and TLS. (The
//! conformance suite runs on PostgreSQL in the `toolnexus-conformance` tests.)

mod push;
mod support;
mod tls;
mod versions;

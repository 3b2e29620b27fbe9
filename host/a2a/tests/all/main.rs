//! The A2A server over real HTTP and TCP, in one test binary: both protocol versions and
//! bindings, streaming, tenants and owners, and the server's own limits.

mod limits;
mod protocol;

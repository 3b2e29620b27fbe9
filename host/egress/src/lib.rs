//! Where the host may send HTTP on anyone's behalf (SSRF rules), for components' outgoing HTTP
//! (`toolnexus_wasm::outgoing_http`, which adds `wasi:http` on top) and push deliveries
//! (`toolnexus_push`): one policy for the whole host, in a crate of its own so that push needs
//! no WebAssembly runtime. The rules are in the repository's `docs/outgoing-http.md`.
//!
//! - [`address`]: what class an IP address is (public, loopback, private, metadata, …);
//! - [`allow_list`]: the operator's `allow-hosts` grammar and what each entry may reach;
//! - [`destination`]: a request's scheme, host and port;
//! - [`check`]: a destination checked against the list, its name resolved once and every
//!   address checked;
//! - [`tls`]: the TLS client configuration, with the operator's roots or the system's.

pub mod address;
pub mod allow_list;
pub mod check;
pub mod destination;
pub mod tls;

pub use tls::system_tls_config;

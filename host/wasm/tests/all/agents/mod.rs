//! Agent components run by the host (`toolnexus_wasm::agent`), through a real A2A `Service`
//! over an in-memory store: the fixture agent (`guest/agent-fixture/`), whose behaviour the
//! message's text picks, and the embedded ones.

mod harness;
mod hostile;
mod outgoing;
mod runs;
mod selector;

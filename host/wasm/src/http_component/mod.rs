//! Serving a `wasi:http` component over HTTP, like `wasmtime serve`, but in the sandbox that
//! store and agent components run in.
//!
//! A component of the `wasi:http/proxy` world (it exports `wasi:http/incoming-handler@0.2.x`),
//! plus the file system of one preopened directory, is compiled once (through the
//! compiled-component cache), checked, and instantiated fresh for every request
//! ([`HttpComponent`]); [`serve`] puts it behind an HTTP/1.1 server. What each instance gets
//! and may use is what a store or agent gets: one directory at `/` with the store's file
//! policies (disk quota, private files, no special files or links), clocks and random, a
//! bounded stderr log, outgoing HTTP only to the operator's `allow-hosts`, no sockets, no
//! environment. The limits: memory per instance and for all together, a number of instances
//! (requests handled at once; more wait up to the queue timeout, then get 503), and a
//! deadline for the whole handler run, including what the component does after it has sent
//! its response.
//!
//! - [`options`]: the selector, `<component.wasm>?dir=…&…`, and its options;
//! - [`builder`]: [`HttpComponentBuilder`], compiling, checking and linking;
//! - [`world`]: the `wasi:http/proxy` world as the sandbox's pool runs it;
//! - [`admission`]: an instance's permit and room in the memory budget, within the queue
//!   timeout;
//! - [`handler`]: one request, its handler run, and the response streamed as it is written;
//! - [`body`]: the guard on the component's response body;
//! - [`request_body`]: the request body, held to the server's body timeout;
//! - [`server`]: the accept loop, connection limits and the graceful stop;

mod admission;
mod body;
mod builder;
mod handler;
mod options;
mod request_body;
mod server;
mod world;

pub use body::{BoxError, ResponseBody};
pub use builder::{
    DEFAULT_HTTP_INSTANCES, DEFAULT_HTTP_MEMORY, DEFAULT_HTTP_MEMORY_TOTAL, DEFAULT_QUEUE_TIMEOUT,
    DEFAULT_REQUEST_TIMEOUT, HttpComponentBuilder,
};
pub use handler::HttpComponent;
pub use options::{HTTP_COMPONENT_OPTIONS, http_component_from_selector};
pub use server::{ServerLimits, serve};

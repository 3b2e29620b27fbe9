//! # `toolnexus-a2a-server`: the A2A server as a component
//!
//! `tnstore serve`'s HTTP layer and protocol (`toolnexus-a2a`'s router, built without its
//! network side, over `toolnexus-a2a-protocol`) compiled to `wasm32-wasip2`: it exports
//! `wasi:http/incoming-handler` and imports, from the components it is composed with
//! (world `toolnexus:a2a-server/server`, `wit/a2a-server/server.wit`):
//!
//! - `toolnexus:task-store/store` and `catalog` 0.4.0, the store ([`store`]);
//! - `toolnexus:a2a/agent` 0.1.0, the agent ([`agent`]);
//! - `toolnexus:a2a-server/run`, the run bridge that holds the agent's updates while it runs
//!   (`guest/a2a-run-bridge`).
//!
//! `tn-compose a2a` plugs the four into one component that any `wasi:http` host serves
//! (`wasmtime serve`, `tnstore serve --component`). What the component does differently from
//! the native server, and why: `docs/composed-server.md`.
//!
//! ```text
//! cargo build -p toolnexus-a2a-server --target wasm32-wasip2 --release
//! ```

#[cfg(target_arch = "wasm32")]
mod agent;
#[cfg(target_arch = "wasm32")]
mod app;
#[cfg(target_arch = "wasm32")]
mod convert;
#[cfg(target_arch = "wasm32")]
mod handler;
#[cfg(target_arch = "wasm32")]
mod store;

#[cfg(target_arch = "wasm32")]
mod bindings {
    wit_bindgen::generate!({
        path: ["../../wit/task-store.wit", "../../wit/a2a", "../../wit/a2a-server"],
        world: "toolnexus:a2a-server/server",
        generate_all,
    });
}

#[cfg(target_arch = "wasm32")]
struct Server;

#[cfg(target_arch = "wasm32")]
impl wasi::exports::http::incoming_handler::Guest for Server {
    fn handle(
        request: wasi::http::types::IncomingRequest,
        response_out: wasi::http::types::ResponseOutparam,
    ) {
        handler::handle(request, response_out);
    }
}

#[cfg(target_arch = "wasm32")]
wasi::http::proxy::export!(Server);

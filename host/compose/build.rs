//! Embeds the components `tn-compose a2a` composes by name (`src/embedded.rs`): the A2A server
//! and the run bridge, the file store, the lifecycle guard, and the echo and tck agents, each
//! built for `wasm32-wasip2` from its folder under `guest/` by `toolnexus-build-support`. Set the
//! variable beside each one to a prebuilt component to embed that instead. A folder missing from
//! the workspace (and no prebuilt file named) embeds an empty file, which the library reports as
//! not embedded.
//!
//! The server is compiled from host crates too (the protocol, the HTTP layer, the core), so its
//! build re-runs when those change, not only `guest/` and `wit/`.

use std::path::{Path, PathBuf};

/// (folder under guest/, package, file in OUT_DIR, override variable, extra inputs)
const PARTS: [(&str, &str, &str, &str, &[&str]); 6] = [
    (
        "a2a-server",
        "toolnexus-a2a-server",
        "a2a_server.wasm",
        "TOOLNEXUS_A2A_SERVER_WASM",
        &["host/protocol", "host/a2a", "host/core"],
    ),
    (
        "a2a-run-bridge",
        "toolnexus-a2a-run-bridge",
        "a2a_run_bridge.wasm",
        "TOOLNEXUS_A2A_RUN_BRIDGE_WASM",
        &[],
    ),
    (
        "file-store",
        "toolnexus-file-store-component",
        "file_store.wasm",
        "TOOLNEXUS_FILE_STORE_WASM",
        &[],
    ),
    (
        "lifecycle-guard",
        "toolnexus-lifecycle-guard",
        "lifecycle_guard.wasm",
        "TOOLNEXUS_LIFECYCLE_GUARD_WASM",
        &[],
    ),
    (
        "agent-echo",
        "toolnexus-agent-echo",
        "agent_echo.wasm",
        "TOOLNEXUS_AGENT_ECHO_WASM",
        &[],
    ),
    (
        "agent-tck",
        "toolnexus-agent-tck",
        "agent_tck.wasm",
        "TOOLNEXUS_AGENT_TCK_WASM",
        &[],
    ),
];

fn main() {
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for (folder, package, out_name, override_var, extra) in PARTS {
        let dir = Path::new("../../guest").join(folder);
        println!("cargo::rerun-if-changed={}", dir.display());
        println!("cargo::rerun-if-env-changed={override_var}");
        if dir.join("Cargo.toml").exists() || std::env::var_os(override_var).is_some() {
            toolnexus_build_support::build_component_watching(
                package,
                out_name,
                override_var,
                extra,
            );
        } else {
            std::fs::write(out_dir.join(out_name), b"").expect("cannot write to OUT_DIR");
        }
    }
}

//! Builds the file-store component (`guest/file-store/`) for `wasm32-wasip2` and embeds it in this crate,
//! so `WasmTaskStore::file_store`, the `wasm:builtin` selector and `tnstore component` work
//! without a separate build step. Set `TOOLNEXUS_FILE_STORE_WASM=<path>` to embed a prebuilt
//! component instead.
//!
//! In the repository it also builds the `store-user` test component (`guest/store-user/`), which
//! the embedding tests run (`TOOLNEXUS_STORE_USER_WASM=<path>` to use a prebuilt one); a
//! packaged copy of this crate has no guest folders and builds only the file store.
//!
//! The agent components `guest/agent-echo/` and `guest/agent-tck/` are embedded the same way
//! when their folders exist (`TOOLNEXUS_AGENT_ECHO_WASM`, `TOOLNEXUS_AGENT_TCK_WASM` for
//! prebuilt ones); without them an empty file stands in and `wasm:echo` / `wasm:tck` say they
//! are not embedded. The `agent-fixture` test component (`guest/agent-fixture/`) is built like
//! `store-user`.

fn main() {
    toolnexus_build_support::build_component(
        "toolnexus-file-store-component",
        "file_store.wasm",
        "TOOLNEXUS_FILE_STORE_WASM",
    );
    for (folder, package, out_name, override_var) in [
        (
            "store-user",
            "toolnexus-store-user",
            "store_user.wasm",
            "TOOLNEXUS_STORE_USER_WASM",
        ),
        (
            "agent-fixture",
            "toolnexus-agent-fixture",
            "agent_fixture.wasm",
            "TOOLNEXUS_AGENT_FIXTURE_WASM",
        ),
        (
            "http-caller",
            "toolnexus-http-caller",
            "http_caller.wasm",
            "TOOLNEXUS_HTTP_CALLER_WASM",
        ),
        (
            "proxy-fixture",
            "toolnexus-proxy-fixture",
            "proxy_fixture.wasm",
            "TOOLNEXUS_PROXY_FIXTURE_WASM",
        ),
    ] {
        build_if_present(folder, package, out_name, override_var);
    }
    for (folder, package, out_name, override_var) in [
        (
            "agent-echo",
            "toolnexus-agent-echo",
            "agent_echo.wasm",
            "TOOLNEXUS_AGENT_ECHO_WASM",
        ),
        (
            "agent-tck",
            "toolnexus-agent-tck",
            "agent_tck.wasm",
            "TOOLNEXUS_AGENT_TCK_WASM",
        ),
    ] {
        if !build_if_present(folder, package, out_name, override_var) {
            let out_dir = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
            std::fs::write(out_dir.join(out_name), b"").expect("cannot write to OUT_DIR");
        }
    }
}

/// Builds `guest/<folder>` if this is the repository (its `Cargo.toml` is there) or a prebuilt
/// component is named; whether it did.
fn build_if_present(folder: &str, package: &str, out_name: &str, override_var: &str) -> bool {
    let dir = std::path::Path::new("../../guest").join(folder);
    println!("cargo::rerun-if-changed={}", dir.display());
    if !dir.join("Cargo.toml").exists() && std::env::var_os(override_var).is_none() {
        return false;
    }
    toolnexus_build_support::build_component(package, out_name, override_var);
    true
}

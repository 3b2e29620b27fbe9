//! Builds the file-store component (`guest/file-store/`) for `wasm32-wasip2` and embeds it in this crate,
//! so `WasmTaskStore::file_store`, the `wasm:builtin` selector and `tnstore component` work
//! without a separate build step. Set `TOOLNEXUS_FILE_STORE_WASM=<path>` to embed a prebuilt
//! component instead.
//!
//! In the repository it also builds the `store-user` test component (`guest/store-user/`), which
//! the embedding tests run (`TOOLNEXUS_STORE_USER_WASM=<path>` to use a prebuilt one); a
//! packaged copy of this crate has no guest folders and builds only the file store.

fn main() {
    toolnexus_build_support::build_component(
        "toolnexus-file-store-component",
        "file_store.wasm",
        "TOOLNEXUS_FILE_STORE_WASM",
    );
    let store_user = std::path::Path::new("../../guest/store-user");
    if store_user.join("Cargo.toml").exists() {
        println!("cargo::rerun-if-changed={}", store_user.display());
        toolnexus_build_support::build_component(
            "toolnexus-store-user",
            "store_user.wasm",
            "TOOLNEXUS_STORE_USER_WASM",
        );
    }
}

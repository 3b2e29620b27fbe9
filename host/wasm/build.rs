//! Builds the file-store component (`guest/file-store/`) for `wasm32-wasip2` and embeds it in this crate,
//! so `WasmTaskStore::file_store`, the `wasm:builtin` selector and `tnstore component` work
//! without a separate build step. Set `TOOLNEXUS_FILE_STORE_WASM=<path>` to embed a prebuilt
//! component instead.

fn main() {
    toolnexus_build_support::build_component(
        "toolnexus-file-store-component",
        "file_store.wasm",
        "TOOLNEXUS_FILE_STORE_WASM",
    );
}

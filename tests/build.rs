//! Builds the test components and embeds them in the test library:
//!
//! - the hostile component (`guest/hostile-fixture/`);
//! - the lifecycle-guard middleware (`guest/lifecycle-guard/`), and that guard composed at
//!   build time over the file store (`guest/file-store/`) into one component, the way `tn-compose` does.

use toolnexus_build_support::build_component;

fn main() {
    build_component(
        "toolnexus-hostile-component",
        "hostile.wasm",
        "TOOLNEXUS_HOSTILE_WASM",
    );
    let guard = build_component(
        "toolnexus-lifecycle-guard",
        "lifecycle-guard.wasm",
        "TOOLNEXUS_LIFECYCLE_GUARD_WASM",
    );
    let file_store = build_component(
        "toolnexus-file-store-component",
        "file-store.wasm",
        "TOOLNEXUS_FILE_STORE_WASM",
    );
    let read = |path: &std::path::Path| {
        std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
    };
    let composed = toolnexus_compose::compose(&read(&guard), &read(&file_store))
        .unwrap_or_else(|e| panic!("cannot compose lifecycle-guard over the file store: {e}"));
    let out = guard.with_file_name("guarded-file-store.wasm");
    std::fs::write(&out, composed)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}

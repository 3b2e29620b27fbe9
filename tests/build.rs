//! Builds the hostile test component (`tests/hostile/`) and embeds it in the test library.

fn main() {
    toolnexus_build_support::build_component(
        "toolnexus-hostile-component",
        "hostile.wasm",
        "TOOLNEXUS_HOSTILE_WASM",
    );
}

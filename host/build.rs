//! Builds the file-store component (`guest/`) for `wasm32-wasip2` and embeds it in this crate,
//! so `WasmTaskStore::file_store`, the `wasm:builtin` selector and `tnstore component` work
//! without a separate build step.
//!
//! Set `TOOLNEXUS_FILE_STORE_WASM=<path>` to embed a prebuilt component instead (no nested
//! build, no `wasm32-wasip2` target needed).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const GUEST_PACKAGE: &str = "toolnexus-file-store-component";
const GUEST_ARTIFACT: &str = "toolnexus_file_store_component.wasm";

fn main() {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let embedded = out_dir.join("file_store.wasm");

    println!("cargo::rerun-if-env-changed=TOOLNEXUS_FILE_STORE_WASM");
    if let Some(prebuilt) = env::var_os("TOOLNEXUS_FILE_STORE_WASM") {
        println!("cargo::rerun-if-changed={}", Path::new(&prebuilt).display());
        copy(Path::new(&prebuilt), &embedded);
        return;
    }

    let workspace = manifest_dir
        .parent()
        .expect("host/ sits in the workspace root");
    for input in [
        "guest/src",
        "guest/Cargo.toml",
        "format/src",
        "format/Cargo.toml",
        "wit",
        "Cargo.lock",
    ] {
        println!(
            "cargo::rerun-if-changed={}",
            workspace.join(input).display()
        );
    }

    // A target directory of its own: the outer build holds the lock on the usual one.
    // OUT_DIR is <target>/<profile>/build/<pkg>-<hash>/out.
    let target_dir = out_dir
        .ancestors()
        .nth(4)
        .map(|target| target.join("guest"))
        .unwrap_or_else(|| out_dir.join("guest-target"));
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace)
        .args([
            "build",
            "--release",
            "--locked",
            "--target",
            "wasm32-wasip2",
            "-p",
            GUEST_PACKAGE,
        ])
        .arg("--target-dir")
        .arg(&target_dir);
    // Settings meant for the outer build (clippy's wrapper, host rustflags) must not leak in.
    for var in [
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "CARGO_PRIMARY_PACKAGE",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo to build the guest: {e}"));
    if !status.success() {
        panic!(
            "building the file-store component failed ({status}).\n\
             It needs the wasm32-wasip2 target: `rustup target add wasm32-wasip2`.\n\
             Or set TOOLNEXUS_FILE_STORE_WASM to a prebuilt component."
        );
    }
    copy(
        &target_dir
            .join("wasm32-wasip2/release")
            .join(GUEST_ARTIFACT),
        &embedded,
    );
}

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to)
        .unwrap_or_else(|e| panic!("cannot copy {} to {}: {e}", from.display(), to.display()));
}

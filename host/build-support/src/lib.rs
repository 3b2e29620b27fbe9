//! Build-script helper: compile a crate of this workspace to a `wasm32-wasip2` component and
//! copy it into the calling crate's `OUT_DIR`, so the component can be embedded with
//! `include_bytes!`.
//!
//! The nested `cargo build` uses a target directory of its own (`<target>/wasm-components`),
//! because the outer build holds the lock on the usual one, and it drops settings meant for the
//! outer build (clippy's wrapper, host rustflags).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds `package` (a cdylib in this workspace) for `wasm32-wasip2` in release mode and copies
/// its `.wasm` to `$OUT_DIR/<out_name>`. Returns that path.
///
/// If the environment variable `override_var` names a file, that prebuilt component is copied
/// instead and nothing is compiled.
pub fn build_component(package: &str, out_name: &str, override_var: &str) -> PathBuf {
    build_component_watching(package, out_name, override_var, &[])
}

/// [`build_component`] for a component built from more of the workspace than `guest/`, `shared/` and
/// `wit/`: the build script re-runs when anything under `extra_inputs` (paths relative to the
/// workspace root, such as `host/protocol`) changes too. Cargo reruns a build script only for
/// the inputs it names, so a component compiled from host crates (the A2A server component is
/// built from `host/protocol`, `host/a2a` and `host/core`) would otherwise be embedded stale.
pub fn build_component_watching(
    package: &str,
    out_name: &str,
    override_var: &str,
    extra_inputs: &[&str],
) -> PathBuf {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out = out_dir.join(out_name);

    println!("cargo::rerun-if-env-changed={override_var}");
    if let Some(prebuilt) = env::var_os(override_var) {
        println!("cargo::rerun-if-changed={}", Path::new(&prebuilt).display());
        copy(Path::new(&prebuilt), &out);
        return out;
    }

    let workspace = workspace_root(&manifest_dir);
    for input in ["guest", "shared", "wit", "Cargo.lock", "Cargo.toml"]
        .iter()
        .chain(extra_inputs)
    {
        let path = workspace.join(input);
        if path.exists() {
            println!("cargo::rerun-if-changed={}", path.display());
        }
    }

    // OUT_DIR is <target>/<profile>/build/<pkg>-<hash>/out.
    let target_dir = out_dir
        .ancestors()
        .nth(4)
        .map(|target| target.join("wasm-components"))
        .unwrap_or_else(|| out_dir.join("wasm-components"));
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&workspace)
        .args([
            "build",
            "--release",
            "--locked",
            "--target",
            "wasm32-wasip2",
            "-p",
            package,
        ])
        .arg("--target-dir")
        .arg(&target_dir);
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
        .unwrap_or_else(|e| panic!("cannot run cargo to build {package}: {e}"));
    if !status.success() {
        panic!(
            "building the component {package} failed ({status}).\n\
             It needs the wasm32-wasip2 target: `rustup target add wasm32-wasip2`.\n\
             Or set {override_var} to a prebuilt component."
        );
    }
    let artifact = format!("{}.wasm", package.replace('-', "_"));
    copy(
        &target_dir.join("wasm32-wasip2/release").join(artifact),
        &out,
    );
    out
}

/// The directory holding the workspace's `Cargo.lock`, at or above `start`.
fn workspace_root(start: &Path) -> PathBuf {
    start
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .unwrap_or_else(|| panic!("no Cargo.lock at or above {}", start.display()))
        .to_path_buf()
}

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to)
        .unwrap_or_else(|e| panic!("cannot copy {} to {}: {e}", from.display(), to.display()));
}

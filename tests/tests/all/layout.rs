//! The workspace's seams hold: each crate's dependency graph (normal and build dependencies,
//! transitively, as cargo resolves them) leaves out what that crate must not pull in, so a
//! runtime that wants only the trait and the in-process stores never compiles a sandbox, a
//! database driver or an HTTP stack.

use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::process::Command;

/// `cargo metadata` for this workspace, resolved from the lockfile.
fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--locked",
            "--manifest-path",
        ])
        .arg(manifest)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

/// The names of every package `root` needs to build (not its dev-dependencies), itself
/// excluded.
fn needs(meta: &Value, root: &str) -> BTreeSet<String> {
    let name_of: HashMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let nodes: HashMap<&str, &Value> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap(), n))
        .collect();
    let start = name_of
        .iter()
        .find(|(_, name)| **name == root)
        .map(|(id, _)| *id)
        .unwrap_or_else(|| panic!("no package {root} in the workspace"));
    let mut seen = BTreeSet::new();
    let mut stack = vec![start];
    while let Some(id) = stack.pop() {
        for dep in nodes[id]["deps"].as_array().unwrap() {
            let not_dev_only = dep["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["kind"].as_str() != Some("dev"));
            let dep_id = dep["pkg"].as_str().unwrap();
            if not_dev_only && seen.insert(name_of[dep_id].to_owned()) {
                stack.push(dep_id);
            }
        }
    }
    seen
}

fn assert_lacks(meta: &Value, krate: &str, forbidden: &[&str]) {
    let needs = needs(meta, krate);
    let found: Vec<&&str> = forbidden.iter().filter(|f| needs.contains(**f)).collect();
    assert!(found.is_empty(), "{krate} depends on {found:?}");
}

#[test]
fn each_crate_leaves_out_what_it_must_not_depend_on() {
    let meta = metadata();
    let host_stacks = [
        "wasmtime",
        "cranelift-codegen",
        "axum",
        "hyper",
        "clap",
        "tokio-postgres",
        "toolnexus-build-support",
    ];
    assert_lacks(&meta, "toolnexus-core", &host_stacks);
    assert_lacks(&meta, "toolnexus-format", &["tokio"]);
    assert_lacks(&meta, "toolnexus-wasm", &["axum", "clap", "tokio-postgres"]);
    assert_lacks(&meta, "toolnexus-postgres", &["wasmtime", "axum"]);
    assert_lacks(&meta, "toolnexus-a2a", &["wasmtime", "tokio-postgres"]);
    // The test-cluster harness stands alone, and nothing shipped depends on it.
    assert_lacks(
        &meta,
        "toolnexus-pg-cluster",
        &["toolnexus-core", "toolnexus-postgres", "wasmtime"],
    );
    for shipped in ["toolnexus", "toolnexus-postgres", "tnstore"] {
        assert_lacks(&meta, shipped, &["toolnexus-pg-cluster"]);
    }
    // And the check can fail: the facade does pull in both backends.
    let facade = needs(&meta, "toolnexus");
    assert!(facade.contains("wasmtime") && facade.contains("tokio-postgres"));
}

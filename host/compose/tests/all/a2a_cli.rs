//! `tn-compose a2a` as a user runs it: embedded parts by name, files by path, one component out;
//! parts that do not fit exit 2 naming them and write nothing.

use std::path::Path;
use toolnexus_compose::embedded::{ECHO_AGENT, SERVER};
use toolnexus_conformance::{HOSTILE_COMPONENT, LIFECYCLE_GUARD_COMPONENT};

use crate::cli::{assert_each_exits_2_writing_nothing, run, stderr};

/// Whether `path` holds a component exporting the HTTP handler (read back with wac).
fn exports_the_handler(path: &Path) -> bool {
    let bytes = std::fs::read(path).unwrap();
    let mut types = wac_graph::types::Types::default();
    let package = wac_graph::types::Package::from_bytes("out", None, bytes, &mut types).unwrap();
    types[package.ty()]
        .exports
        .keys()
        .any(|name| name.starts_with("wasi:http/incoming-handler@0.2."))
}

#[test]
fn embedded_parts_by_name_need_no_other_file() {
    let work = tempfile::tempdir().unwrap();
    for (args, out) in [
        (
            &[
                "a2a",
                "--agent",
                "echo",
                "--store",
                "file",
                "-o",
                "echo.wasm",
            ][..],
            "echo.wasm",
        ),
        (
            &[
                "a2a", "--agent", "tck", "--store", "guarded", "--out", "tck.wasm",
            ][..],
            "tck.wasm",
        ),
        // The defaults: the echo agent over the file store.
        (&["a2a", "-o", "default.wasm"][..], "default.wasm"),
    ] {
        let done = run(work.path(), args);
        assert!(done.status.success(), "{args:?}: {}", stderr(&done));
        let said = String::from_utf8_lossy(&done.stdout);
        assert!(
            said.contains(out) && said.contains("wasmtime serve"),
            "{said}"
        );
        assert!(exports_the_handler(&work.path().join(out)), "{args:?}");
        assert!(!work.path().join(format!("{out}.tmp")).exists());
    }
}

#[test]
fn files_replace_embedded_parts() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("agent.wasm"), ECHO_AGENT).unwrap();
    std::fs::write(work.path().join("server.wasm"), SERVER).unwrap();
    std::fs::write(work.path().join("guard.wasm"), LIFECYCLE_GUARD_COMPONENT).unwrap();
    let args = [
        "a2a",
        "--agent",
        "./agent.wasm",
        "--server",
        "server.wasm",
        "--middleware",
        "guard.wasm",
        "--middleware",
        "guard.wasm",
        "-o",
        "out.wasm",
    ];
    let done = run(work.path(), &args);
    assert!(done.status.success(), "{}", stderr(&done));
    assert!(String::from_utf8_lossy(&done.stdout).contains("under 2 middleware(s)"));
    assert!(exports_the_handler(&work.path().join("out.wasm")));
}

#[test]
fn parts_that_do_not_fit_exit_2_and_write_nothing() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("hostile.wasm"), HOSTILE_COMPONENT).unwrap();
    std::fs::write(work.path().join("junk.wasm"), b"not a component").unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["a2a", "--store", "hostile.wasm", "-o", "out.wasm"],
            "the store does not export `toolnexus:task-store/catalog@0.4.0`",
        ),
        (
            &["a2a", "--agent", "hostile.wasm", "-o", "out.wasm"],
            "the agent does not export `toolnexus:a2a/agent@0.1.0`: it is not an agent component",
        ),
        (
            &["a2a", "--server", "junk.wasm", "-o", "out.wasm"],
            "the server is not a valid WebAssembly component",
        ),
        (
            &["a2a", "--agent", "missing.wasm", "-o", "out.wasm"],
            "cannot read missing.wasm",
        ),
        (
            &["a2a", "--middleware", "hostile.wasm", "-o", "out.wasm"],
            "imports no toolnexus:task-store interface",
        ),
    ];
    assert_each_exits_2_writing_nothing(work.path(), &cases);
}

#[test]
fn the_middleware_form_and_a2a_do_not_mix() {
    let work = tempfile::tempdir().unwrap();
    let out = run(
        work.path(),
        &["--middleware", "g.wasm", "a2a", "-o", "out.wasm"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!work.path().join("out.wasm").exists());
}

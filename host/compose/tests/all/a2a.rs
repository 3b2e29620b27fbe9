//! `compose_a2a`: the whole A2A stack into one `wasi:http` component, and the typed errors that
//! name the part and the interface that does not fit. Serving the composition is tested by
//! `host/tnstore/tests/all/composed_server.rs` (wasmtime serve and tnstore serve --component).

use toolnexus_compose::a2a::{AGENT_INTERFACE, HTTP_HANDLER, STORE_INTERFACE, TASK_INTERFACE};
use toolnexus_compose::embedded::{self, BRIDGE, ECHO_AGENT, FILE_STORE, SERVER, TCK_AGENT};
use toolnexus_compose::{A2aParts, ComposeError, Role, compose_a2a};
use toolnexus_conformance::{HOSTILE_COMPONENT, LIFECYCLE_GUARD_COMPONENT};
use wac_graph::types::{ItemKind, Package, Type, Types};

fn parts<'a>() -> A2aParts<'a> {
    A2aParts {
        server: SERVER,
        bridge: BRIDGE,
        agent: ECHO_AGENT,
        store: FILE_STORE,
        middlewares: &[],
    }
}

/// The composed component's imports and exports, by name, and whether each import carries only
/// types (nothing a host must provide).
fn interface_of(component: &[u8]) -> (Vec<(String, bool)>, Vec<String>) {
    let mut types = Types::default();
    let package = Package::from_bytes("composed", None, component.to_vec(), &mut types)
        .expect("the composition is a component");
    let world = &types[package.ty()];
    let types_only = |kind: &ItemKind| match kind {
        ItemKind::Instance(id) => types[*id]
            .exports
            .values()
            .all(|item| matches!(item, ItemKind::Type(t) if !matches!(t, Type::Resource(_)))),
        _ => false,
    };
    let imports = world
        .imports
        .iter()
        .map(|(name, kind)| (name.clone(), types_only(kind)))
        .collect();
    (imports, world.exports.keys().cloned().collect())
}

fn assert_serves_http_and_needs_only_wasi(composed: &[u8]) {
    let (imports, exports) = interface_of(composed);
    assert_eq!(exports.len(), 1, "{exports:?}");
    assert!(
        exports[0].starts_with(&format!("{HTTP_HANDLER}.")),
        "{exports:?}"
    );
    for (name, types_only) in &imports {
        assert!(
            name.starts_with("wasi:") || *types_only,
            "the composition imports {name}, which a wasi:http host does not provide"
        );
    }
    assert!(
        imports
            .iter()
            .any(|(name, _)| name.starts_with("wasi:filesystem/preopens@")),
        "the store's directory comes from the host: {imports:?}"
    );
}

#[test]
fn the_echo_agent_server_and_file_store_make_one_http_component() {
    let composed = compose_a2a(&parts()).unwrap();
    assert_serves_http_and_needs_only_wasi(&composed);
    // Bigger than its parts together would be without sharing nothing: all four are in it.
    assert!(composed.len() > SERVER.len() + FILE_STORE.len());
}

#[test]
fn the_tck_agent_and_a_guarded_store_compose_too() {
    let guarded = embedded::guarded_file_store().unwrap();
    let composed = compose_a2a(&A2aParts {
        agent: TCK_AGENT,
        store: &guarded,
        ..parts()
    })
    .unwrap();
    assert_serves_http_and_needs_only_wasi(&composed);
    // The same guard given as a middleware over the file store.
    let composed = compose_a2a(&A2aParts {
        middlewares: &[LIFECYCLE_GUARD_COMPONENT],
        ..parts()
    })
    .unwrap();
    assert_serves_http_and_needs_only_wasi(&composed);
}

/// The file store re-exporting only its `store` interface, under the name `as_name`: a real
/// store without `catalog` (world `task-store`), made with wac from the file store itself.
fn store_only_exported_as(as_name: &str) -> Vec<u8> {
    use wac_graph::{CompositionGraph, EncodeOptions};
    let mut graph = CompositionGraph::new();
    let package =
        Package::from_bytes("file-store", None, FILE_STORE.to_vec(), graph.types_mut()).unwrap();
    let package = graph.register_package(package).unwrap();
    let instance = graph.instantiate(package);
    let store = graph
        .alias_instance_export(instance, STORE_INTERFACE)
        .unwrap();
    graph.export(store, as_name).unwrap();
    graph.encode(EncodeOptions::default()).unwrap()
}

#[test]
fn a_store_without_catalog_is_named() {
    let store = store_only_exported_as(STORE_INTERFACE);
    let err = compose_a2a(&A2aParts {
        store: &store,
        ..parts()
    })
    .unwrap_err();
    match &err {
        ComposeError::Unmet {
            provider: Role::Store,
            consumer: Role::Server,
            interface,
        } => assert!(
            interface.starts_with("toolnexus:task-store/catalog@0.4"),
            "{err}"
        ),
        other => panic!("unexpected error: {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.starts_with("the store does not export `toolnexus:task-store/catalog@0.4"),
        "{text}"
    );
    assert!(text.ends_with("which the server imports"), "{text}");
}

#[test]
fn a_store_of_an_older_contract_is_named() {
    // The file store's `store` under the name of contract 0.3.0, which this release does not
    // speak.
    let store = store_only_exported_as("toolnexus:task-store/store@0.3.0");
    let err = compose_a2a(&A2aParts {
        store: &store,
        ..parts()
    })
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the store does not export `toolnexus:task-store/store@0.4.0`: it is not a task store of \
         contract 0.4 (wit/task-store.wit)"
    );
}

#[test]
fn a_component_in_the_wrong_place_is_named_for_its_place() {
    let cases: [(A2aParts, Role, &str); 5] = [
        // A store given as the agent.
        (
            A2aParts {
                agent: FILE_STORE,
                ..parts()
            },
            Role::Agent,
            AGENT_INTERFACE,
        ),
        // The server given as the agent.
        (
            A2aParts {
                agent: SERVER,
                ..parts()
            },
            Role::Agent,
            AGENT_INTERFACE,
        ),
        // An agent given as the server.
        (
            A2aParts {
                server: ECHO_AGENT,
                ..parts()
            },
            Role::Server,
            HTTP_HANDLER,
        ),
        // The server given as the bridge.
        (
            A2aParts {
                bridge: SERVER,
                ..parts()
            },
            Role::Bridge,
            TASK_INTERFACE,
        ),
        // An agent given as the store.
        (
            A2aParts {
                store: ECHO_AGENT,
                ..parts()
            },
            Role::Store,
            STORE_INTERFACE,
        ),
    ];
    for (parts, role, interface) in cases {
        let err = compose_a2a(&parts).unwrap_err();
        assert!(
            matches!(&err, ComposeError::NotA { role: r, interface: i } if *r == role && *i == interface),
            "{role}: {err:?}"
        );
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("{role} does not export `{interface}`: it is not ")),
            "{text}"
        );
    }
}

#[test]
fn a_file_that_is_not_a_component_is_named() {
    // A core module (the magic and version of a module, not a component) and plain junk.
    let core_module: &[u8] = b"\0asm\x01\0\0\0";
    for (bytes, what) in [(core_module, "a core module"), (b"not wasm", "junk")] {
        for role in [Role::Agent, Role::Server, Role::Bridge, Role::Store] {
            let mut parts = parts();
            match role {
                Role::Agent => parts.agent = bytes,
                Role::Server => parts.server = bytes,
                Role::Bridge => parts.bridge = bytes,
                _ => parts.store = bytes,
            }
            let err = compose_a2a(&parts).unwrap_err();
            assert!(
                matches!(&err, ComposeError::NotAComponent { role: r, .. } if *r == role),
                "{what} as {role}: {err:?}"
            );
            assert!(
                err.to_string()
                    .starts_with(&format!("{role} is not a valid WebAssembly component")),
                "{err}"
            );
        }
    }
}

#[test]
fn a_middleware_that_does_not_fit_is_named() {
    // The hostile fixture is a store, not a middleware: it imports no task-store interface.
    let err = compose_a2a(&A2aParts {
        middlewares: &[HOSTILE_COMPONENT],
        ..parts()
    })
    .unwrap_err();
    assert!(matches!(err, ComposeError::NotAMiddleware), "{err:?}");
}

//! The whole A2A stack as one component: a store (possibly under middlewares), the run bridge,
//! an agent and the A2A server, wired as `wit/a2a-server/server.wit` lays out.
//!
//! ```text
//!            ┌─────────────────────────── one composed component ───────────────────────────┐
//!  host ─wasi:http/incoming-handler─▶ [ server ] ─agent─▶ [ agent ] ─task─▶ [ bridge ] ─store─▶ [ store ]
//!            │                           │ └────────────run──────────────────▶   ▲             ▲  │
//!            │                           └─────────────store, catalog──────────────────────────┘  │
//!            └──────────────────────────────────────────────────────────────────────────────────┘
//! ```
//!
//! The graph has no cycle: the server imports the agent's `agent`, the agent imports the
//! bridge's `task`, the bridge imports the store's `store`; the server also takes `run` from
//! the bridge and `store` + `catalog` from the store. The store is instantiated once, so the
//! bridge's `is-canceled` and the server's saves see the same Tasks. WASI imports of every part
//! stay imports of the composition (the host grants them once, shared), and so do interfaces
//! that carry only types (`toolnexus:a2a/types`, which `task` and `agent` use): a host needs
//! nothing for them. Any other import that no part provides is an error: a host such as
//! `wasmtime serve` provides WASI and nothing else.

use crate::{ComposeError, Role, compose_chain, register, same_interface};
use wac_graph::types::{ItemKind, SubtypeChecker};
use wac_graph::{CompositionGraph, EncodeOptions, NodeId, PackageId};

/// The interface the server exports and the composition re-exports, without its patch version:
/// whichever `0.2.x` the server component was built with is the one a host sees.
pub const HTTP_HANDLER: &str = "wasi:http/incoming-handler@0.2";
/// What makes a component an agent.
pub const AGENT_INTERFACE: &str = "toolnexus:a2a/agent@0.1.0";
/// What the bridge exports to the agent.
pub const TASK_INTERFACE: &str = "toolnexus:a2a/task@0.1.0";
/// What the bridge exports to the server.
pub const RUN_INTERFACE: &str = "toolnexus:a2a-server/run@0.1.0";
/// What the store exports to the bridge and the server.
pub const STORE_INTERFACE: &str = "toolnexus:task-store/store@0.4.0";

/// The four parts of an A2A composition, as component binaries.
#[derive(Debug, Clone, Copy)]
pub struct A2aParts<'a> {
    /// The A2A server component (`guest/a2a-server`).
    pub server: &'a [u8],
    /// The run bridge (`guest/a2a-run-bridge`).
    pub bridge: &'a [u8],
    /// An agent component (world `toolnexus:a2a/agent-component` or `configurable-agent`).
    pub agent: &'a [u8],
    /// A store component exporting `store` and `catalog` of `toolnexus:task-store@0.4`.
    pub store: &'a [u8],
    /// Middleware components over the store, the first outermost (as [`compose_chain`]).
    pub middlewares: &'a [&'a [u8]],
}

/// Composes `parts` into one component exporting the server's `wasi:http/incoming-handler`.
pub fn compose_a2a(parts: &A2aParts<'_>) -> Result<Vec<u8>, ComposeError> {
    let store_bytes = compose_chain(parts.middlewares, parts.store)?;
    let mut graph = CompositionGraph::new();
    let store = register(&mut graph, "toolnexus:store", Role::Store, &store_bytes)?;
    let bridge = register(
        &mut graph,
        "toolnexus:run-bridge",
        Role::Bridge,
        parts.bridge,
    )?;
    let agent = register(&mut graph, "toolnexus:agent", Role::Agent, parts.agent)?;
    let server = register(&mut graph, "toolnexus:server", Role::Server, parts.server)?;

    // Each part must be what it is given as before anything is wired, so that a wrong file is
    // named as such rather than as some import it fails to meet.
    let handler = find_export(&graph, server, HTTP_HANDLER).ok_or(ComposeError::NotA {
        role: Role::Server,
        interface: HTTP_HANDLER,
    })?;
    for (package, role, interface) in [
        (agent, Role::Agent, AGENT_INTERFACE),
        (bridge, Role::Bridge, TASK_INTERFACE),
        (bridge, Role::Bridge, RUN_INTERFACE),
        (store, Role::Store, STORE_INTERFACE),
    ] {
        if find_export(&graph, package, interface).is_none() {
            return Err(ComposeError::NotA { role, interface });
        }
    }

    let parts = Instances {
        store: Part::new(&mut graph, store, Role::Store),
        bridge: Part::new(&mut graph, bridge, Role::Bridge),
        agent: Part::new(&mut graph, agent, Role::Agent),
        server: Part::new(&mut graph, server, Role::Server),
    };
    plug(
        &mut graph,
        parts.bridge,
        &[("toolnexus:task-store/", parts.store)],
    )?;
    plug(&mut graph, parts.agent, &[("toolnexus:a2a/", parts.bridge)])?;
    plug(
        &mut graph,
        parts.server,
        &[
            ("toolnexus:task-store/", parts.store),
            ("toolnexus:a2a/", parts.agent),
            ("toolnexus:a2a-server/", parts.bridge),
        ],
    )?;

    let node = graph
        .alias_instance_export(parts.server.instance, &handler)
        .map_err(|e| ComposeError::Graph(e.to_string()))?;
    graph
        .export(node, &handler)
        .map_err(|e| ComposeError::Graph(e.to_string()))?;
    graph
        .encode(EncodeOptions::default())
        .map_err(|e| ComposeError::Graph(format!("{e:#}")))
}

/// A registered part and its one instance in the graph.
#[derive(Clone, Copy)]
struct Part {
    package: PackageId,
    instance: NodeId,
    role: Role,
}

impl Part {
    fn new(graph: &mut CompositionGraph, package: PackageId, role: Role) -> Part {
        let instance = graph.instantiate(package);
        Part {
            package,
            instance,
            role,
        }
    }
}

struct Instances {
    store: Part,
    bridge: Part,
    agent: Part,
    server: Part,
}

/// The full name of `package`'s export of `interface` (any compatible version), if it has one.
fn find_export(graph: &CompositionGraph, package: PackageId, interface: &str) -> Option<String> {
    let world = graph[package].ty();
    graph.types()[world]
        .exports
        .keys()
        .find(|name| same_interface(name, interface))
        .cloned()
}

/// WASI stays with the host, whatever part imports it.
fn left_to_host(name: &str) -> bool {
    name.starts_with("wasi:")
}

/// An interface of types only (no function, no resource): nothing to provide, so a host meets
/// it whether or not it knows the interface.
fn types_only(graph: &CompositionGraph, kind: ItemKind) -> bool {
    use wac_graph::types::Type;
    let ItemKind::Instance(id) = kind else {
        return false;
    };
    graph.types()[id].exports.values().all(|item| match item {
        ItemKind::Type(Type::Resource(_)) => false,
        ItemKind::Type(_) => true,
        _ => false,
    })
}

/// Wires every import of `consumer` that is not left to the host to the export of the same
/// interface of the provider its package belongs to (`providers`: package prefix → part).
fn plug(
    graph: &mut CompositionGraph,
    consumer: Part,
    providers: &[(&str, Part)],
) -> Result<(), ComposeError> {
    let world = graph[consumer.package].ty();
    let imports: Vec<(String, ItemKind)> = graph.types()[world]
        .imports
        .iter()
        .filter(|(name, _)| !left_to_host(name))
        .map(|(name, kind)| (name.clone(), *kind))
        .collect();
    for (import, import_kind) in imports {
        let provider = providers
            .iter()
            .find(|(prefix, _)| import.starts_with(prefix))
            .map(|(_, part)| *part);
        let export = provider.and_then(|part| {
            let world = graph[part.package].ty();
            graph.types()[world]
                .exports
                .iter()
                .find(|(export, _)| same_interface(export, &import))
                .map(|(name, kind)| (part, name.clone(), *kind))
        });
        let Some((provider, export, export_kind)) = export else {
            if types_only(graph, import_kind) {
                continue;
            }
            return Err(match provider {
                Some(provider) => ComposeError::Unmet {
                    provider: provider.role,
                    consumer: consumer.role,
                    interface: import,
                },
                None => ComposeError::Foreign {
                    role: consumer.role,
                    interface: import,
                },
            });
        };
        let mut cache = Default::default();
        SubtypeChecker::new(&mut cache)
            .is_subtype(export_kind, graph.types(), import_kind, graph.types())
            .map_err(|e| ComposeError::Misfit {
                provider: provider.role,
                consumer: consumer.role,
                interface: import.clone(),
                message: format!("{e:#}"),
            })?;
        let node = graph
            .alias_instance_export(provider.instance, &export)
            .map_err(|e| ComposeError::Graph(e.to_string()))?;
        graph
            .set_instantiation_argument(consumer.instance, &import, node)
            .map_err(|e| ComposeError::Graph(format!("{e:#}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handler_export_is_found_at_any_patch_version() {
        assert!(same_interface(
            "wasi:http/incoming-handler@0.2.6",
            HTTP_HANDLER
        ));
        assert!(same_interface(
            "wasi:http/incoming-handler@0.2.0",
            HTTP_HANDLER
        ));
        assert!(!same_interface(
            "wasi:http/incoming-handler@0.20.0",
            HTTP_HANDLER
        ));
        assert!(!same_interface(
            "wasi:http/incoming-handler@0.3.0",
            HTTP_HANDLER
        ));
        assert!(!same_interface("wasi:http/incoming-handler", HTTP_HANDLER));
    }

    #[test]
    fn only_wasi_is_left_to_the_host() {
        assert!(left_to_host("wasi:filesystem/types@0.2.4"));
        assert!(!left_to_host("toolnexus:task-store/store@0.4.0"));
        assert!(!left_to_host("wasix:foo/bar"));
    }
}

//! Composes toolnexus store components: a **middleware** (world `task-store-middleware`, which
//! imports the task-store interfaces and exports them) over a **store** (a component exporting
//! them), into one component that imports nothing but WASI and loads like any other store.
//!
//! ```text
//!   host ──store/config/catalog/push-configs──▶ [ middleware ] ──(the same)──▶ [ store ] ──WASI──▶ dir
//!        └──────────────────────── one composed component ──────────────────────────┘
//! ```
//!
//! Every `toolnexus:task-store/*` import of the middleware must be met by an export of the
//! store of the same interface (same name; a semver-compatible version also matches) and a
//! compatible type; anything else is a [`ComposeError`] naming the interface (so a contract
//! 0.4.0 middleware, which imports `push-configs`, needs a store that exports it: a 0.4.0 store
//! of the `full-push-task-store` world, such as the file store). The middleware's
//! other imports (WASI) and the store's stay imports of the composition, shared by both: the
//! host grants them once. Middlewares stack: [`compose_chain`] puts several in front of one
//! store, the first one outermost.
//!
//! The composition is done with [`wac_graph`]; the output is validated before it is returned.
//!
//! [`compose_a2a`] composes the whole A2A stack (a store, possibly under middlewares, the run
//! bridge, an agent and the A2A server) into one `wasi:http` component (module [`a2a`]);
//! [`embedded`] holds the parts this crate was built with.

pub mod a2a;
pub mod embedded;

pub use a2a::{A2aParts, compose_a2a};

use wac_graph::types::{ItemKind, Package, SubtypeChecker};
use wac_graph::{CompositionGraph, EncodeOptions, PackageId};

/// The WIT package whose interfaces a middleware imports from the store under it.
pub const CONTRACT_PACKAGE: &str = "toolnexus:task-store";

/// Why two components could not be composed. Nothing is written on error.
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    /// An input is not a WebAssembly component (or not a valid one).
    #[error("{role} is not a valid WebAssembly component: {message}")]
    NotAComponent { role: Role, message: String },
    /// The middleware imports no task-store interface: it has nothing to sit in front of.
    #[error(
        "the middleware imports no {CONTRACT_PACKAGE} interface, so it cannot sit in front of a store \
         (it must target the task-store-middleware world)"
    )]
    NotAMiddleware,
    /// The middleware imports an interface the store does not export.
    #[error("the store does not export `{interface}`, which the middleware imports")]
    MissingExport { interface: String },
    /// The store exports the interface, but with a type the middleware cannot use.
    #[error("the store's `{interface}` does not match what the middleware imports: {message}")]
    Mismatch { interface: String, message: String },
    /// A part of an A2A composition does not export what makes it that part.
    #[error("{role} does not export `{interface}`: it is not {}", role.what())]
    NotA { role: Role, interface: &'static str },
    /// A part imports an interface that the part meant to provide it does not export.
    #[error("{provider} does not export `{interface}`, which {consumer} imports")]
    Unmet {
        provider: Role,
        consumer: Role,
        interface: String,
    },
    /// A part exports the interface another imports, with a type that one cannot use.
    #[error("{provider}'s `{interface}` does not match what {consumer} imports: {message}")]
    Misfit {
        provider: Role,
        consumer: Role,
        interface: String,
        message: String,
    },
    /// A part imports an interface no part provides and the host does not either.
    #[error(
        "{role} imports `{interface}`, which no part of the composition provides \
         (only WASI imports are left to the host)"
    )]
    Foreign { role: Role, interface: String },
    /// An embedded part is missing from this build (its folder was not in the workspace).
    #[error("{0} is not embedded in this build of tn-compose; name a file instead")]
    NotEmbedded(&'static str),
    /// The composition graph refused the wiring or the result failed validation.
    #[error("composition failed: {0}")]
    Graph(String),
}

/// Which input a [`ComposeError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Middleware,
    Store,
    /// The A2A server component of [`compose_a2a`].
    Server,
    /// The run bridge of [`compose_a2a`].
    Bridge,
    /// The agent of [`compose_a2a`].
    Agent,
}

impl Role {
    /// What a component in this role is, for [`ComposeError::NotA`].
    fn what(self) -> &'static str {
        match self {
            Role::Middleware => "a task-store middleware (world task-store-middleware)",
            Role::Store => "a task store of contract 0.4 (wit/task-store.wit)",
            Role::Server => "the A2A server component (guest/a2a-server)",
            Role::Bridge => "the run bridge (guest/a2a-run-bridge)",
            Role::Agent => "an agent component (wit/a2a/agent.wit)",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Middleware => "the middleware",
            Role::Store => "the store",
            Role::Server => "the server",
            Role::Bridge => "the run bridge",
            Role::Agent => "the agent",
        })
    }
}

/// `toolnexus:task-store/store@0.1.0` → `Some("toolnexus:task-store/store")`.
fn contract_interface(name: &str) -> Option<&str> {
    let unversioned = name.split('@').next().unwrap_or(name);
    unversioned
        .strip_prefix(CONTRACT_PACKAGE)
        .filter(|rest| rest.starts_with('/'))
        .map(|_| unversioned)
}

/// `a@0.1.0` and `a@0.1.2` name the same interface for linking; so do two unversioned names.
pub(crate) fn same_interface(export: &str, import: &str) -> bool {
    fn split(name: &str) -> (&str, Option<&str>) {
        match name.split_once('@') {
            Some((base, version)) => (base, Some(version)),
            None => (name, None),
        }
    }
    let ((eb, ev), (ib, iv)) = (split(export), split(import));
    if eb != ib {
        return false;
    }
    match (ev, iv) {
        (None, None) => true,
        (Some(e), Some(i)) => compatible_versions(e, i),
        _ => false,
    }
}

/// Semver compatibility as component linking uses it: same major, or for `0.x` the same minor.
fn compatible_versions(a: &str, b: &str) -> bool {
    let parse = |v: &str| -> Option<(u64, u64)> {
        let mut parts = v.split(['.', '-', '+']);
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    };
    match (parse(a), parse(b)) {
        (Some((0, a_minor)), Some((0, b_minor))) => a_minor == b_minor,
        (Some((a_major, _)), Some((b_major, _))) => a_major == b_major,
        _ => a == b,
    }
}

pub(crate) fn register(
    graph: &mut CompositionGraph,
    name: &str,
    role: Role,
    bytes: &[u8],
) -> Result<PackageId, ComposeError> {
    let not_a_component = |message: String| ComposeError::NotAComponent { role, message };
    let package = Package::from_bytes(name, None, bytes.to_vec(), graph.types_mut())
        .map_err(|e| not_a_component(format!("{e:#}")))?;
    graph
        .register_package(package)
        .map_err(|e| not_a_component(e.to_string()))
}

/// Composes `middleware` over `store` (both component binaries) into one component binary.
pub fn compose(middleware: &[u8], store: &[u8]) -> Result<Vec<u8>, ComposeError> {
    let mut graph = CompositionGraph::new();
    let socket = register(
        &mut graph,
        "toolnexus:middleware",
        Role::Middleware,
        middleware,
    )?;
    let plug = register(&mut graph, "toolnexus:store", Role::Store, store)?;

    let socket_world = graph[socket].ty();
    let plug_world = graph[plug].ty();
    let wanted: Vec<(String, ItemKind)> = graph.types()[socket_world]
        .imports
        .iter()
        .filter(|(name, _)| contract_interface(name).is_some())
        .map(|(name, kind)| (name.clone(), *kind))
        .collect();
    if wanted.is_empty() {
        return Err(ComposeError::NotAMiddleware);
    }

    let socket_instance = graph.instantiate(socket);
    let plug_instance = graph.instantiate(plug);
    for (import, import_kind) in wanted {
        let interface = contract_interface(&import).unwrap_or(&import).to_owned();
        let (export, export_kind) = graph.types()[plug_world]
            .exports
            .iter()
            .find(|(export, _)| same_interface(export, &import))
            .map(|(name, kind)| (name.clone(), *kind))
            .ok_or_else(|| ComposeError::MissingExport {
                interface: interface.clone(),
            })?;
        let mut cache = Default::default();
        let mut checker = SubtypeChecker::new(&mut cache);
        checker
            .is_subtype(export_kind, graph.types(), import_kind, graph.types())
            .map_err(|e| ComposeError::Mismatch {
                interface: interface.clone(),
                message: format!("{e:#}"),
            })?;
        let node = graph
            .alias_instance_export(plug_instance, &export)
            .map_err(|e| ComposeError::Graph(e.to_string()))?;
        graph
            .set_instantiation_argument(socket_instance, &import, node)
            .map_err(|e| ComposeError::Graph(format!("{e:#}")))?;
    }

    let exports: Vec<String> = graph.types()[socket_world]
        .exports
        .keys()
        .cloned()
        .collect();
    for name in exports {
        let node = graph
            .alias_instance_export(socket_instance, &name)
            .map_err(|e| ComposeError::Graph(e.to_string()))?;
        graph
            .export(node, &name)
            .map_err(|e| ComposeError::Graph(e.to_string()))?;
    }

    graph
        .encode(EncodeOptions::default())
        .map_err(|e| ComposeError::Graph(format!("{e:#}")))
}

/// Puts `middlewares` in front of `store`, the first one outermost: the host calls
/// `middlewares[0]`, which calls `middlewares[1]`, …, which calls `store`.
pub fn compose_chain(middlewares: &[&[u8]], store: &[u8]) -> Result<Vec<u8>, ComposeError> {
    let mut composed = store.to_vec();
    for middleware in middlewares.iter().rev() {
        composed = compose(middleware, &composed)?;
    }
    Ok(composed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_interfaces_are_recognized_with_or_without_version() {
        assert_eq!(
            contract_interface("toolnexus:task-store/store@0.1.0"),
            Some("toolnexus:task-store/store")
        );
        assert_eq!(
            contract_interface("toolnexus:task-store/catalog"),
            Some("toolnexus:task-store/catalog")
        );
        assert_eq!(contract_interface("toolnexus:task-storex/store"), None);
        assert_eq!(contract_interface("wasi:filesystem/types@0.2.6"), None);
    }

    #[test]
    fn interface_versions_match_as_linking_does() {
        assert!(same_interface("a:b/c@0.1.0", "a:b/c@0.1.0"));
        assert!(same_interface("a:b/c@0.1.3", "a:b/c@0.1.0"));
        assert!(!same_interface("a:b/c@0.2.0", "a:b/c@0.1.0"));
        assert!(same_interface("a:b/c@1.2.0", "a:b/c@1.0.0"));
        assert!(!same_interface("a:b/c@2.0.0", "a:b/c@1.0.0"));
        assert!(!same_interface("a:b/d@0.1.0", "a:b/c@0.1.0"));
        assert!(same_interface("a:b/c", "a:b/c"));
        assert!(!same_interface("a:b/c", "a:b/c@0.1.0"));
    }

    #[test]
    fn garbage_is_not_a_component() {
        let err = compose(b"not wasm", b"\0asm").unwrap_err();
        assert!(
            matches!(
                err,
                ComposeError::NotAComponent {
                    role: Role::Middleware,
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string().starts_with("the middleware is not"),
            "{err}"
        );
    }
}

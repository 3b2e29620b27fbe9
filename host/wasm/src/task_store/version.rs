//! The version of the `toolnexus:task-store` contract this host speaks, and whether a
//! component targets it ([`check_world`]).

use wasmtime::Engine;
use wasmtime::component::Component;

/// The package every store component must target.
pub const STORE_PACKAGE: &str = "toolnexus:task-store";
/// The version of the contract this host speaks, the one in `wit/`.
pub const CONTRACT_VERSION: &str = "0.4.0";
/// The exported interface every store component must provide.
pub const STORE_INTERFACE: &str = "toolnexus:task-store/store@0.4.0";
/// The optional settings interface a store component may export.
pub const CONFIG_INTERFACE: &str = "toolnexus:task-store/config@0.4.0";
/// The optional listing-and-deleting interface a store component may export.
pub const CATALOG_INTERFACE: &str = "toolnexus:task-store/catalog@0.4.0";
/// The optional push-notification configs interface a store component may export.
pub const PUSH_CONFIGS_INTERFACE: &str = "toolnexus:task-store/push-configs@0.4.0";

/// Whether the component targets the contract this host speaks, from the `store` interface
/// it exports: [`STORE_INTERFACE`] or a semver-compatible patch version of it (`0.4.x`). A
/// component that exports our interface only at other versions is refused with a message
/// naming its version and ours (rather than a generic "missing export"), and one that does not
/// export it at all with a message naming what it exports.
pub(crate) fn check_world(engine: &Engine, component: &Component) -> Result<(), String> {
    let ty = component.component_type();
    let exports: Vec<String> = ty
        .exports(engine)
        .map(|(name, _)| name.to_owned())
        .collect();
    let prefix = format!("{STORE_PACKAGE}/store@");
    let theirs: Vec<&str> = exports
        .iter()
        .filter_map(|name| name.strip_prefix(&prefix))
        .collect();
    // wasmtime links semver-compatible versions (0.4.x for 0.4.0); anything else is not ours.
    if theirs
        .iter()
        .any(|theirs| semver_compatible(theirs, CONTRACT_VERSION))
    {
        return Ok(());
    }
    if !theirs.is_empty() {
        let other: Vec<String> = theirs.iter().map(|v| format!("{prefix}{v}")).collect();
        return Err(format!(
            "it exports {}, a version of the {STORE_PACKAGE} contract this host does not speak: \
             it speaks {STORE_INTERFACE} only (rebuild the component against this release's wit/)",
            other.join(", "),
        ));
    }
    let shown = if exports.is_empty() {
        "nothing".to_owned()
    } else {
        exports.join(", ")
    };
    Err(format!(
        "not a component of the {STORE_PACKAGE} world: it must export {STORE_INTERFACE}, but \
         exports {shown}"
    ))
}

/// Whether a component exporting the contract at version `theirs` is on the same semver track
/// as the version this host speaks, `ours`: the same major version, or for `0.x` the same
/// minor one (`0.1.3` and `0.1.0` are; `0.2.0` and `1.0.0` are not). That is the rule
/// wasmtime links by.
pub(crate) fn semver_compatible(theirs: &str, ours: &str) -> bool {
    let (Ok(theirs), Ok(ours)) = (semver::Version::parse(theirs), semver::Version::parse(ours))
    else {
        return false;
    };
    match (theirs.major, ours.major) {
        (0, 0) => theirs.minor == ours.minor,
        (a, b) => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semver_rules_for_the_contract() {
        assert!(semver_compatible("0.1.0", "0.1.0"));
        assert!(semver_compatible("0.1.7", "0.1.0"));
        assert!(!semver_compatible("0.2.0", "0.1.0"));
        assert!(!semver_compatible("0.3.0", "0.2.0"));
        assert!(semver_compatible("0.3.1", "0.3.0"));
        assert!(!semver_compatible("1.0.0", "0.1.0"));
        assert!(!semver_compatible("garbage", "0.1.0"));
        assert!(!semver_compatible("0.0.9", "0.1.0"));
        assert!(semver_compatible("1.2.0", "1.0.0"));
        assert!(!semver_compatible("2.0.0", "1.0.0"));
    }
}

//! The versions of the `toolnexus:task-store` contract this host speaks, and which one a
//! component targets ([`check_world`]).

use wasmtime::Engine;
use wasmtime::component::Component;

/// The package every store component must target.
pub const STORE_PACKAGE: &str = "toolnexus:task-store";
/// The exported interface every store component must provide, at the current version of the
/// contract (0.3.0). Components that export [`STORE_INTERFACE_0_2`] or [`STORE_INTERFACE_0_1`]
/// instead load too ([`ContractVersion`]).
pub const STORE_INTERFACE: &str = "toolnexus:task-store/store@0.3.0";
/// The optional settings interface a store component may export, at the current version.
pub const CONFIG_INTERFACE: &str = "toolnexus:task-store/config@0.3.0";
/// The optional listing-and-deleting interface a store component may export, at the current
/// version.
pub const CATALOG_INTERFACE: &str = "toolnexus:task-store/catalog@0.3.0";
/// The optional push-notification configs interface a store component may export (0.3.0 on).
pub const PUSH_CONFIGS_INTERFACE: &str = "toolnexus:task-store/push-configs@0.3.0";
/// [`STORE_INTERFACE`] at contract 0.2.0, which this host still loads (without push configs;
/// see [`ContractVersion::V0_2`]).
pub const STORE_INTERFACE_0_2: &str = "toolnexus:task-store/store@0.2.0";
/// [`CONFIG_INTERFACE`] at contract 0.2.0.
pub const CONFIG_INTERFACE_0_2: &str = "toolnexus:task-store/config@0.2.0";
/// [`CATALOG_INTERFACE`] at contract 0.2.0.
pub const CATALOG_INTERFACE_0_2: &str = "toolnexus:task-store/catalog@0.2.0";
/// [`STORE_INTERFACE`] at contract 0.1.0, which this host still loads (without versions; see
/// [`ContractVersion::V0_1`]).
pub const STORE_INTERFACE_0_1: &str = "toolnexus:task-store/store@0.1.0";
/// [`CONFIG_INTERFACE`] at contract 0.1.0.
pub const CONFIG_INTERFACE_0_1: &str = "toolnexus:task-store/config@0.1.0";
/// [`CATALOG_INTERFACE`] at contract 0.1.0.
pub const CATALOG_INTERFACE_0_1: &str = "toolnexus:task-store/catalog@0.1.0";

/// The version of the `toolnexus:task-store` contract a component targets, found when it is
/// loaded from the `store` interface it exports (any semver-compatible patch version counts:
/// `0.3.x` is 0.3, `0.2.x` is 0.2, `0.1.x` is 0.1). A component that exports several is used
/// as the newest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ContractVersion {
    /// `toolnexus:task-store@0.1.0`: `get`, `save`, and the optional `config` and `catalog`.
    /// No versions: [`TaskStore::get_versioned`], [`TaskStore::save_versioned`] (and so
    /// [`TaskStore::save_if`]) answer [`StoreError::Unsupported`], `list` cannot filter by
    /// status timestamp (also unsupported) and reports no total size, and its components list
    /// in id order, not newest first. No push configs either (as for 0.2).
    ///
    /// [`TaskStore::get_versioned`]: toolnexus_core::TaskStore::get_versioned
    /// [`TaskStore::save_versioned`]: toolnexus_core::TaskStore::save_versioned
    /// [`TaskStore::save_if`]: toolnexus_core::TaskStore::save_if
    /// [`StoreError::Unsupported`]: toolnexus_core::StoreError::Unsupported
    V0_1,
    /// `toolnexus:task-store@0.2.0`: versions, conditions and the full `list`, but no push
    /// configs: [`TaskStore::supports_push_configs`] is `false` and the push-config methods
    /// answer [`StoreError::Unsupported`].
    ///
    /// [`TaskStore::supports_push_configs`]: toolnexus_core::TaskStore::supports_push_configs
    /// [`StoreError::Unsupported`]: toolnexus_core::StoreError::Unsupported
    V0_2,
    /// `toolnexus:task-store@0.3.0`, the current contract: 0.2 and the optional `push-configs`
    /// interface, so everything [`TaskStore`](toolnexus_core::TaskStore) has.
    V0_3,
}

impl ContractVersion {
    /// Every version this host speaks, newest first.
    pub const ALL: [ContractVersion; 3] = [
        ContractVersion::V0_3,
        ContractVersion::V0_2,
        ContractVersion::V0_1,
    ];

    /// The contract's semver version, such as `0.3.0`.
    pub fn version(self) -> &'static str {
        match self {
            ContractVersion::V0_1 => "0.1.0",
            ContractVersion::V0_2 => "0.2.0",
            ContractVersion::V0_3 => "0.3.0",
        }
    }

    /// The `store` interface of this version, such as [`STORE_INTERFACE`].
    pub fn store_interface(self) -> &'static str {
        match self {
            ContractVersion::V0_1 => STORE_INTERFACE_0_1,
            ContractVersion::V0_2 => STORE_INTERFACE_0_2,
            ContractVersion::V0_3 => STORE_INTERFACE,
        }
    }

    /// The `catalog` interface of this version, such as [`CATALOG_INTERFACE`].
    pub fn catalog_interface(self) -> &'static str {
        match self {
            ContractVersion::V0_1 => CATALOG_INTERFACE_0_1,
            ContractVersion::V0_2 => CATALOG_INTERFACE_0_2,
            ContractVersion::V0_3 => CATALOG_INTERFACE,
        }
    }

    /// Whether components of this version keep versions (compare-and-set): 0.2 on.
    pub fn has_versions(self) -> bool {
        self != ContractVersion::V0_1
    }

    /// Whether components of this version may export `push-configs`: 0.3 on.
    pub fn has_push_configs(self) -> bool {
        self == ContractVersion::V0_3
    }
}

impl std::fmt::Display for ContractVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{STORE_PACKAGE}@{}", self.version())
    }
}

/// Which version of the contract the component targets ([`ContractVersion`]), from the `store`
/// interface it exports: one semver-compatible with a version this host speaks (the newest
/// when it exports several). Refuses components that export our interface only at versions
/// this host does not speak, with a message that says so and names the versions it speaks
/// (rather than a generic "missing export").
pub(crate) fn check_world(
    engine: &Engine,
    component: &Component,
) -> Result<ContractVersion, String> {
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
    // wasmtime links semver-compatible versions (0.3.x for 0.3.0); anything else is not ours.
    for version in ContractVersion::ALL {
        if theirs
            .iter()
            .any(|theirs| semver_compatible(theirs, version.version()))
        {
            return Ok(version);
        }
    }
    let spoken = |conjunction: &str| {
        ContractVersion::ALL
            .map(ContractVersion::store_interface)
            .join(conjunction)
    };
    if !theirs.is_empty() {
        let other: Vec<String> = theirs.iter().map(|v| format!("{prefix}{v}")).collect();
        return Err(format!(
            "it exports {}, a version of the {STORE_PACKAGE} contract incompatible with every one this host speaks ({})",
            other.join(", "),
            spoken(", ")
        ));
    }
    let shown = if exports.is_empty() {
        "nothing".to_owned()
    } else {
        exports.join(", ")
    };
    Err(format!(
        "not a component of the {STORE_PACKAGE} world: it must export {}, but exports {shown}",
        spoken(" or ")
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

//! The `wasm:` selector: `wasm:<component>[?<option>=<value>&…]`, parsed into a
//! [`WasmTaskStoreBuilder`]. The `toolnexus` crate's `resolve_store` hands every `wasm:`
//! selector here; this backend alone knows its options: the sandbox's, shared with agents and
//! HTTP components (`sandbox_options`), and a store's own (`max-task`, `durability`,
//! `lease-ms`).

use crate::load::ComponentSource;
use crate::sandbox_options::{Seen, canonical, parse_as};
use crate::sandbox_spec::Sandboxed;
use crate::task_store::{WasmTaskStore, WasmTaskStoreBuilder};
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::time::Duration;
use toolnexus_core::options::{parse_query, parse_size};
use toolnexus_core::{Durability, StoreError};

/// The component path that names the file-store component embedded in this crate.
pub const BUILTIN_COMPONENT: &str = "builtin";

/// The lock leases a `lease-ms` option accepts, in milliseconds.
const LEASE_MS: RangeInclusive<u64> = 10..=3_600_000;

/// The options a `wasm:` selector accepts after `?`.
pub const WASM_OPTIONS: &[&str] = &[
    "dir",
    "readonly",
    "memory",
    "max-memory",
    "memory-total",
    "timeout",
    "max-task",
    "instances",
    "max-instances",
    "durability",
    "lease-ms",
    "stderr",
    "cache",
    "quota",
    "max-component",
];

/// The builder a `wasm:` selector describes, not yet built (nothing is read or compiled here):
/// `wasm:<path>` or `wasm:builtin`, then options ([`WASM_OPTIONS`]), each described once, with
/// its default and builder method, in the repository's `docs/wasm-options.md`. Option values
/// are percent-decoded. Anything else is a [`StoreError::InvalidSelector`] naming what is wrong.
pub fn builder_from_selector(selector: &str) -> Result<WasmTaskStoreBuilder, StoreError> {
    let invalid = |reason: &str| StoreError::InvalidSelector {
        selector: selector.to_owned(),
        reason: reason.to_owned(),
    };
    let rest = selector
        .strip_prefix("wasm:")
        .ok_or_else(|| invalid("a wasm selector starts with \"wasm:\""))?;
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    if path.is_empty() {
        return Err(invalid(
            "no component after \"wasm:\" (a path, or \"builtin\")",
        ));
    }
    let source = if path == BUILTIN_COMPONENT {
        ComponentSource::BuiltinFileStore
    } else {
        ComponentSource::File(PathBuf::from(path))
    };
    let mut builder = WasmTaskStore::builder(source);
    let mut seen = Seen::default();
    for (key, value) in parse_query(query).map_err(|e| invalid(&e))? {
        if let Some(name) = canonical(&key) {
            seen.once(name, &key).map_err(|e| invalid(&e))?;
            if name == "allow-hosts" {
                return Err(invalid(
                    "\"allow-hosts\" is an option of agents and HTTP components: a store \
                     component gets no network",
                ));
            }
            let option = parse_as(name, &key, &value).map_err(|e| invalid(&e))?;
            builder.sandbox_spec().apply(option);
            continue;
        }
        let bad = |what: &str| invalid(&format!("{key:?} must be {what}, not {value:?}"));
        builder = match key.as_str() {
            "max-task" => {
                builder.max_task_size(parse_size(&value).ok_or_else(|| bad("a size like 16MiB"))?)
            }
            "durability" => match value.as_str() {
                "full" => builder.durability(Durability::Full),
                "relaxed" => builder.durability(Durability::Relaxed),
                _ => return Err(bad("full or relaxed")),
            },
            "lease-ms" => builder.lock_lease(Duration::from_millis(
                value
                    .parse::<u64>()
                    .ok()
                    .filter(|ms| LEASE_MS.contains(ms))
                    .ok_or_else(|| {
                        bad("a whole number of milliseconds from 10 to 3600000, like 10000")
                    })?,
            )),
            other => {
                return Err(invalid(&format!(
                    "unknown option {other:?} (known: {})",
                    WASM_OPTIONS.join(", ")
                )));
            }
        };
    }
    Ok(builder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_ms_sets_the_lock_lease() {
        let builder = builder_from_selector("wasm:builtin?lease-ms=2500").unwrap();
        assert_eq!(builder.lock_lease, Some(Duration::from_millis(2500)));
        let builder = builder_from_selector("wasm:builtin").unwrap();
        assert_eq!(builder.lock_lease, None, "not passed unless given");
        for ms in ["10", "3600000"] {
            let builder = builder_from_selector(&format!("wasm:builtin?lease-ms={ms}")).unwrap();
            assert_eq!(
                builder.lock_lease,
                Some(Duration::from_millis(ms.parse().unwrap()))
            );
        }
    }

    /// The sandbox's options are spelled as for agents and HTTP components (`max-memory` was
    /// refused for stores while agents took it).
    #[test]
    fn the_sandbox_options_take_the_spellings_every_component_takes() {
        let builder =
            builder_from_selector("wasm:builtin?max-memory=32MiB&max-instances=3&timeout=2s")
                .unwrap();
        assert_eq!(builder.spec.memory_bytes, 32 << 20);
        assert_eq!(builder.spec.max_instances, 3);
        assert_eq!(builder.spec.timeout, Duration::from_secs(2));
        for (selector, says) in [
            ("wasm:builtin?memory=1MiB&max-memory=2MiB", "given twice"),
            (
                "wasm:builtin?allow-hosts=a.example",
                "a store component gets no network",
            ),
            (
                "wasm:builtin?max-instances=0",
                "\"max-instances\" must be a positive",
            ),
        ] {
            match builder_from_selector(selector) {
                Err(StoreError::InvalidSelector { reason, .. }) => {
                    assert!(reason.contains(says), "{selector}: {reason}")
                }
                other => panic!("{selector}: expected InvalidSelector, got {other:?}"),
            }
        }
    }

    #[test]
    fn bad_lease_ms_values_are_refused_naming_the_option() {
        for bad in ["9", "3600001", "0", "-5", "1.5", "10s", "", "abc"] {
            match builder_from_selector(&format!("wasm:builtin?lease-ms={bad}")) {
                Err(StoreError::InvalidSelector { reason, .. }) => {
                    assert!(reason.contains("\"lease-ms\""), "{bad}: {reason}");
                    assert!(reason.contains("milliseconds"), "{bad}: {reason}");
                }
                other => panic!("{bad}: expected InvalidSelector, got {other:?}"),
            }
        }
    }
}

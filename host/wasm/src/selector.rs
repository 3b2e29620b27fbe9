//! The `wasm:` selector: `wasm:<component>[?<option>=<value>&…]`, parsed into a
//! [`WasmTaskStoreBuilder`]. The `toolnexus` crate's `resolve_store` hands every `wasm:`
//! selector here; this backend alone knows its options.

use crate::load::ComponentSource;
use crate::task_store::{CacheDir, WasmTaskStore, WasmTaskStoreBuilder};
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::time::Duration;
use toolnexus_core::options::{parse_bool, parse_duration, parse_query, parse_size};
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
    "memory-total",
    "timeout",
    "max-task",
    "instances",
    "durability",
    "lease-ms",
    "stderr",
    "cache",
    "quota",
    "max-component",
];

/// The `stderr=` option of every `wasm:` selector: `log` forwards the component's stderr to the
/// host's log, `off` does not; anything else is `None`.
pub(crate) fn stderr_option(value: &str) -> Option<bool> {
    match value {
        "log" => Some(true),
        "off" => Some(false),
        _ => None,
    }
}

/// The `cache=` option of every `wasm:` selector: `off`, or the directory of compiled
/// components; an empty value is `None`.
pub(crate) fn cache_option(value: &str) -> Option<CacheDir> {
    match value {
        "" => None,
        "off" => Some(CacheDir::Off),
        dir => Some(CacheDir::At(PathBuf::from(dir))),
    }
}

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
    for (key, value) in parse_query(query).map_err(|e| invalid(&e))? {
        let bad = |what: &str| invalid(&format!("{key:?} must be {what}, not {value:?}"));
        builder = match key.as_str() {
            "dir" if value.is_empty() => return Err(invalid("empty \"dir\"")),
            "dir" => builder.dir(value),
            "instances" => builder.max_instances(
                value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| bad("a positive integer"))?,
            ),
            "memory" => {
                builder.memory_limit(parse_size(&value).ok_or_else(|| bad("a size like 64MiB"))?)
            }
            "memory-total" => builder
                .memory_total_limit(parse_size(&value).ok_or_else(|| bad("a size like 512MiB"))?),
            "max-task" => {
                builder.max_task_size(parse_size(&value).ok_or_else(|| bad("a size like 16MiB"))?)
            }
            "quota" => builder
                .disk_quota(parse_size(&value).ok_or_else(|| bad("a size like 1GiB"))? as u64),
            "max-component" => builder.max_component_size(
                parse_size(&value).ok_or_else(|| bad("a size like 64MiB"))? as u64,
            ),
            "timeout" => builder
                .timeout(parse_duration(&value).ok_or_else(|| bad("a duration like 5s or 250ms"))?),
            "readonly" => {
                builder.read_only(parse_bool(&value).ok_or_else(|| bad("true or false"))?)
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
            "stderr" => {
                builder.forward_stderr(stderr_option(&value).ok_or_else(|| bad("log or off"))?)
            }
            "cache" => {
                builder.cache(cache_option(&value).ok_or_else(|| bad("a directory or off"))?)
            }
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

//! The component server's selector: `<component.wasm>[?<option>=<value>&…]` (a leading `wasm:`
//! is allowed), parsed with the grammar every backend shares (`toolnexus_core::options`) into
//! an [`HttpComponentBuilder`]. The options are the sandbox's, with the names and meanings they
//! have for stores and agents where they apply ([`HTTP_COMPONENT_OPTIONS`], each described in
//! the repository's `docs/wasm-options.md`); anything else is refused, naming it.

use crate::http_component::builder::HttpComponentBuilder;
use crate::load::ComponentSource;
use crate::sandbox_options::{Seen, canonical, parse_as};
use crate::sandbox_spec::Sandboxed;
use std::path::PathBuf;
use std::time::Duration;
use toolnexus_core::StoreError;
use toolnexus_core::options::{parse_duration, parse_query};

/// The options a component server's selector accepts after `?`.
pub const HTTP_COMPONENT_OPTIONS: &[&str] = &[
    "dir",
    "readonly",
    "quota",
    "memory",
    "max-memory",
    "memory-total",
    "instances",
    "max-instances",
    "request-timeout",
    "timeout",
    "queue-timeout",
    "allow-hosts",
    "stderr",
    "cache",
    "max-component",
];

/// Options of stores that mean nothing for an HTTP component: refused rather than ignored, since
/// an operator who writes one expects the host to act on it.
const STORE_ONLY_OPTIONS: &[&str] = &["durability", "lease-ms", "max-task"];

/// `0`, `0s`, `0ms`, `0m`: the zero the shared duration grammar refuses.
fn zero_duration(value: &str) -> Option<Duration> {
    let digits = value.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &value[digits.len()..];
    let zero = !digits.is_empty() && digits.bytes().all(|b| b == b'0');
    (zero && ["", "ms", "s", "m"].contains(&unit)).then_some(Duration::ZERO)
}

/// The builder a component server's selector describes, not yet built (nothing is read or
/// compiled here). Anything malformed is a [`StoreError::InvalidSelector`] naming what is
/// wrong.
pub fn http_component_from_selector(selector: &str) -> Result<HttpComponentBuilder, StoreError> {
    let invalid = |reason: &str| StoreError::InvalidSelector {
        selector: selector.to_owned(),
        reason: reason.to_owned(),
    };
    let rest = selector.strip_prefix("wasm:").unwrap_or(selector);
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    if path.is_empty() {
        return Err(invalid(
            "no component: a path to a .wasm file comes before \"?\"",
        ));
    }
    let mut builder = HttpComponentBuilder::new(ComponentSource::File(PathBuf::from(path)));
    let mut seen = Seen::default();
    for (key, value) in parse_query(query).map_err(|e| invalid(&e))? {
        // `request-timeout` is this server's spelling of the sandbox's `timeout`.
        let name = match key.as_str() {
            "request-timeout" => Some("timeout"),
            other => canonical(other),
        };
        if let Some(name) = name {
            seen.once(name, &key).map_err(|e| invalid(&e))?;
            let option = parse_as(name, &key, &value).map_err(|e| invalid(&e))?;
            builder.sandbox_spec().apply(option);
            continue;
        }
        let bad = |what: &str| invalid(&format!("{key:?} must be {what}, not {value:?}"));
        builder = match key.as_str() {
            // Zero is meaningful here: no wait at all, 503 at once when every instance is busy.
            "queue-timeout" => {
                seen.once("queue-timeout", &key).map_err(|e| invalid(&e))?;
                builder.queue_timeout(
                    parse_duration(&value)
                        .or_else(|| zero_duration(&value))
                        .ok_or_else(|| bad("a duration like 10s or 0s"))?,
                )
            }
            store_only if STORE_ONLY_OPTIONS.contains(&store_only) => {
                return Err(invalid(&format!(
                    "{store_only:?} is an option of task-store components, not of an HTTP \
                     component"
                )));
            }
            other => {
                return Err(invalid(&format!(
                    "unknown option {other:?} (known: {})",
                    HTTP_COMPONENT_OPTIONS.join(", ")
                )));
            }
        };
    }
    Ok(builder)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(selector: &str) -> String {
        match http_component_from_selector(selector) {
            Err(StoreError::InvalidSelector { reason, .. }) => reason,
            other => panic!("{selector}: expected InvalidSelector, got {other:?}"),
        }
    }

    #[test]
    fn options_set_the_sandbox_and_the_server() {
        let builder = http_component_from_selector(
            "wasm:/x/app.wasm?dir=data&quota=2MiB&memory=32MiB&memory-total=256MiB&instances=3\
             &request-timeout=2m&queue-timeout=0s&stderr=log&readonly=false&allow-hosts=127.0.0.1:9",
        )
        .unwrap();
        assert_eq!(builder.spec.dir, Some(PathBuf::from("data")));
        assert_eq!(builder.spec.disk_quota_bytes, 2 << 20);
        assert_eq!(builder.spec.memory_bytes, 32 << 20);
        assert_eq!(builder.spec.memory_total_bytes, 256 << 20);
        assert_eq!(builder.spec.max_instances, 3);
        assert_eq!(builder.spec.timeout, Duration::from_secs(120));
        assert_eq!(builder.queue_timeout, Duration::ZERO);
        assert!(builder.spec.forward_stderr);
        assert_eq!(
            builder.name, "app.wasm",
            "the file name, never its directory"
        );
        let plain = http_component_from_selector("app.wasm").unwrap();
        assert_eq!(plain.spec.dir, None, "no directory unless given");
    }

    #[test]
    fn bad_options_are_refused_naming_the_option() {
        for (selector, says) in [
            ("a.wasm?request-timeout=soon", "\"request-timeout\" must be"),
            ("a.wasm?timeout=0s", "\"timeout\" must be"),
            ("a.wasm?queue-timeout=x", "\"queue-timeout\" must be"),
            ("a.wasm?memory=lots", "\"memory\" must be a size"),
            ("a.wasm?instances=0", "\"instances\" must be a positive"),
            ("a.wasm?stderr=yes", "\"stderr\" must be log or off"),
            (
                "a.wasm?readonly=maybe",
                "\"readonly\" must be true or false",
            ),
            (
                "a.wasm?durability=relaxed",
                "\"durability\" is an option of task-store",
            ),
            ("a.wasm?colour=blue", "unknown option \"colour\""),
            ("a.wasm?dir=", "empty \"dir\""),
            ("a.wasm?dir=a&dir=b", "dir"),
            ("a.wasm?memory=1MiB&max-memory=2MiB", "given twice"),
            ("a.wasm?timeout=1s&request-timeout=2s", "given twice"),
            ("a.wasm?allow-hosts=http://x", "allow-hosts"),
            ("a.wasm?queue-timeout=0h", "\"queue-timeout\" must be"),
            ("?dir=x", "no component"),
        ] {
            let got = reason(selector);
            assert!(got.contains(says), "{selector}: {got}");
        }
    }
}

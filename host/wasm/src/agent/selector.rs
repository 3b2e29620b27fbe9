//! The `wasm:` agent selector: `wasm:<component>[?<option>=<value>&…]`, parsed into a
//! [`WasmAgentBuilder`] with the grammar of the store's `wasm:` selector (the shared option
//! parsing of `toolnexus_core::options`). The sandbox's options ([`AGENT_OPTIONS`]) set limits;
//! every other option is a setting passed to the agent's `config.configure`. `wasm:echo` and
//! `wasm:tck` name the agents embedded in this crate.

use crate::agent::builder::WasmAgentBuilder;
use crate::agent::wasm_agent::WasmAgent;
use crate::load::{ComponentSource, ECHO_AGENT_COMPONENT, TCK_AGENT_COMPONENT};
use crate::sandbox_options::{SandboxOption, Seen, canonical, parse_as};
use crate::sandbox_spec::Sandboxed;
use std::path::PathBuf;
use std::sync::Arc;
use toolnexus_core::StoreError;
use toolnexus_core::options::{parse_bool, parse_query};

/// The options the host takes itself from an agent selector; any other is the agent's setting.
/// (Outgoing HTTP's `allow-hosts` joins them, and the match below, where it is linked.)
pub const AGENT_OPTIONS: &[&str] = &[
    "max-memory",
    "memory",
    "memory-total",
    "max-instances",
    "instances",
    "timeout",
    "stderr",
    "cache",
    "max-component",
    "allow-hosts",
    "fresh-instances",
];

/// Store options that mean nothing for an agent: refused rather than passed on, since an
/// operator who writes one expects the host to act on it.
const STORE_ONLY_OPTIONS: &[&str] = &[
    "dir",
    "readonly",
    "quota",
    "durability",
    "lease-ms",
    "max-task",
];

/// The embedded agents, by the name that selects them.
fn builtin(name: &str) -> Option<&'static [u8]> {
    match name {
        "echo" => Some(ECHO_AGENT_COMPONENT),
        "tck" => Some(TCK_AGENT_COMPONENT),
        _ => None,
    }
}

/// The agent a `wasm:` selector describes, loaded and instantiated once
/// ([`WasmAgentBuilder::build`]): compiling can take a second, so from async code call this
/// inside `spawn_blocking`.
pub fn agent_from_selector(selector: &str) -> Result<WasmAgent, StoreError> {
    agent_builder_from_selector(selector)?.build()
}

/// The builder a `wasm:` agent selector describes, not yet built: `wasm:<path>`, `wasm:echo`
/// or `wasm:tck`, then options, percent-decoded: [`AGENT_OPTIONS`] (each described in the
/// repository's `docs/wasm-options.md`) and the agent's own settings. Anything malformed is a
/// [`StoreError::InvalidSelector`] naming what is wrong.
pub fn agent_builder_from_selector(selector: &str) -> Result<WasmAgentBuilder, StoreError> {
    let invalid = |reason: &str| StoreError::InvalidSelector {
        selector: selector.to_owned(),
        reason: reason.to_owned(),
    };
    let rest = selector
        .strip_prefix("wasm:")
        .ok_or_else(|| invalid("an agent selector starts with \"wasm:\""))?;
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    if path.is_empty() {
        return Err(invalid(
            "no component after \"wasm:\" (a path, \"echo\" or \"tck\")",
        ));
    }
    let source = match builtin(path) {
        Some([]) => {
            return Err(invalid(&format!(
                "the {path} agent is not embedded in this build of the host"
            )));
        }
        Some(bytes) => ComponentSource::Bytes {
            name: path.to_owned(),
            bytes: Arc::from(bytes),
        },
        None => ComponentSource::File(PathBuf::from(path)),
    };
    let mut builder = WasmAgent::builder(source);
    let mut seen = Seen::default();
    for (key, value) in parse_query(query).map_err(|e| invalid(&e))? {
        let store_only = || {
            invalid(&format!(
                "{key:?} is an option of store components, not of agents (an agent gets no \
                 directory)"
            ))
        };
        if STORE_ONLY_OPTIONS.contains(&key.as_str()) {
            return Err(store_only());
        }
        if let Some(name) = canonical(&key) {
            seen.once(name, &key).map_err(|e| invalid(&e))?;
            match parse_as(name, &key, &value).map_err(|e| invalid(&e))? {
                SandboxOption::Dir(_) | SandboxOption::ReadOnly(_) | SandboxOption::Quota(_) => {
                    return Err(store_only());
                }
                option => builder.sandbox_spec().apply(option),
            }
            continue;
        }
        let bad = |what: &str| invalid(&format!("{key:?} must be {what}, not {value:?}"));
        builder = match key.as_str() {
            "fresh-instances" => {
                builder.fresh_instances(parse_bool(&value).ok_or_else(|| bad("true or false"))?)
            }
            "" => return Err(invalid("an option with no name")),
            _ => builder.setting(key, value),
        };
    }
    Ok(builder)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn reason(selector: &str) -> String {
        match agent_builder_from_selector(selector) {
            Err(StoreError::InvalidSelector { reason, .. }) => reason,
            other => panic!("{selector}: expected InvalidSelector, got {other:?}"),
        }
    }

    #[test]
    fn options_set_limits_and_the_rest_are_settings() {
        let builder = agent_builder_from_selector(
            "wasm:agent.wasm?timeout=10m&max-memory=32MiB&max-instances=3&stderr=log\
             &model=small&greeting=hi%20there&memory-total=1GiB",
        )
        .unwrap();
        assert_eq!(builder.spec.timeout, Duration::from_secs(600));
        assert_eq!(builder.spec.memory_bytes, 32 << 20);
        assert_eq!(builder.spec.memory_total_bytes, 1 << 30);
        assert_eq!(builder.spec.max_instances, 3);
        assert!(builder.spec.forward_stderr);
        assert_eq!(
            builder.settings,
            vec![
                ("model".to_owned(), "small".to_owned()),
                ("greeting".to_owned(), "hi there".to_owned()),
            ]
        );
        assert_eq!(
            builder.name, "agent.wasm",
            "the file name, never its directory"
        );
        let builder = agent_builder_from_selector("wasm:/some/where/a.wasm?instances=2").unwrap();
        assert_eq!(builder.name, "a.wasm");
        assert_eq!(builder.spec.max_instances, 2);
        assert!(!builder.fresh_instances, "instances are reused by default");
        let builder = agent_builder_from_selector("wasm:a.wasm?fresh-instances=true").unwrap();
        assert!(builder.fresh_instances);
        assert!(builder.settings.is_empty(), "a host option, not a setting");
    }

    #[test]
    fn bad_options_are_refused_naming_the_option() {
        for (selector, says) in [
            ("wasm:a.wasm?timeout=soon", "\"timeout\" must be a duration"),
            ("wasm:a.wasm?timeout=0s", "\"timeout\" must be a duration"),
            (
                "wasm:a.wasm?max-memory=lots",
                "\"max-memory\" must be a size",
            ),
            (
                "wasm:a.wasm?max-instances=0",
                "\"max-instances\" must be a positive",
            ),
            ("wasm:a.wasm?stderr=yes", "\"stderr\" must be log or off"),
            (
                "wasm:a.wasm?fresh-instances=maybe",
                "\"fresh-instances\" must be true or false",
            ),
            (
                "wasm:a.wasm?dir=/tmp",
                "\"dir\" is an option of store components",
            ),
            (
                "wasm:a.wasm?quota=1GiB",
                "\"quota\" is an option of store components",
            ),
            ("wasm:?timeout=1s", "no component"),
            ("file:a.wasm", "starts with \"wasm:\""),
        ] {
            let got = reason(selector);
            assert!(got.contains(says), "{selector}: {got}");
        }
    }
}

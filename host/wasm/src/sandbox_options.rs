//! The options every `wasm:` selector shares (store, agent and HTTP components): one name, at
//! most one other spelling, one grammar and one error text each, parsed here once
//! ([`parse_as`], by the one name [`canonical`] gives). Each selector applies the ones it takes and refuses the rest in its
//! own words; its own options (a store's `durability`, an agent's settings) stay with it. A new
//! sandbox limit gets its option here.

use crate::sandbox::policy::outgoing_http::OutgoingHttpPolicy;
use crate::task_store::CacheDir;
use std::path::PathBuf;
use std::time::Duration;
use toolnexus_core::options::{parse_bool, parse_duration, parse_size};

/// Every spelling of the sandbox's options, each with its one name.
const SPELLINGS: &[(&str, &str)] = &[
    ("dir", "dir"),
    ("readonly", "readonly"),
    ("quota", "quota"),
    ("memory", "memory"),
    ("max-memory", "memory"),
    ("memory-total", "memory-total"),
    ("instances", "instances"),
    ("max-instances", "instances"),
    ("timeout", "timeout"),
    ("stderr", "stderr"),
    ("cache", "cache"),
    ("max-component", "max-component"),
    ("allow-hosts", "allow-hosts"),
];

/// One sandbox option, its value parsed.
#[derive(Debug)]
pub(crate) enum SandboxOption {
    Dir(PathBuf),
    ReadOnly(bool),
    Quota(u64),
    Memory(usize),
    MemoryTotal(usize),
    Instances(usize),
    Timeout(Duration),
    Stderr(bool),
    Cache(CacheDir),
    MaxComponent(u64),
    AllowHosts(OutgoingHttpPolicy),
}

/// The one name of the sandbox option spelled `key`, if it is one.
pub(crate) fn canonical(key: &str) -> Option<&'static str> {
    SPELLINGS
        .iter()
        .find(|(spelling, _)| *spelling == key)
        .map(|(_, name)| *name)
}

/// `value` as the sandbox option named `name`, written `key` (errors name `key`).
pub(crate) fn parse_as(name: &str, key: &str, value: &str) -> Result<SandboxOption, String> {
    let bad = |what: &str| format!("{key:?} must be {what}, not {value:?}");
    let size = |example: &str| parse_size(value).ok_or_else(|| bad(example));
    Ok(match name {
        "dir" if value.is_empty() => return Err(format!("empty {key:?}")),
        "dir" => SandboxOption::Dir(PathBuf::from(value)),
        "readonly" => {
            SandboxOption::ReadOnly(parse_bool(value).ok_or_else(|| bad("true or false"))?)
        }
        "quota" => SandboxOption::Quota(size("a size like 1GiB")? as u64),
        "memory" => SandboxOption::Memory(size("a size like 64MiB")?),
        "memory-total" => SandboxOption::MemoryTotal(size("a size like 512MiB")?),
        "instances" => SandboxOption::Instances(
            value
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| bad("a positive integer"))?,
        ),
        "timeout" => SandboxOption::Timeout(
            parse_duration(value).ok_or_else(|| bad("a duration like 5s, 250ms or 10m"))?,
        ),
        "stderr" => SandboxOption::Stderr(match value {
            "log" => true,
            "off" => false,
            _ => return Err(bad("log or off")),
        }),
        "cache" => SandboxOption::Cache(match value {
            "" => return Err(bad("a directory or off")),
            "off" => CacheDir::Off,
            dir => CacheDir::At(PathBuf::from(dir)),
        }),
        "max-component" => SandboxOption::MaxComponent(size("a size like 64MiB")? as u64),
        "allow-hosts" => SandboxOption::AllowHosts(
            OutgoingHttpPolicy::from_allow_hosts(value).map_err(|e| format!("allow-hosts: {e}"))?,
        ),
        other => return Err(format!("unknown option {other:?}")),
    })
}

/// The options of one selector seen so far by their one name: the same option under two
/// spellings is the option given twice.
#[derive(Debug, Default)]
pub(crate) struct Seen(Vec<&'static str>);

impl Seen {
    /// `Err` if the option `name` (written `key`) was given before.
    pub(crate) fn once(&mut self, name: &'static str, key: &str) -> Result<(), String> {
        if self.0.contains(&name) {
            return Err(format!("option {key:?} is given twice"));
        }
        self.0.push(name);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_are_one_option_and_bad_values_name_the_spelling_used() {
        assert_eq!(canonical("max-memory"), canonical("memory"));
        assert_eq!(canonical("max-instances"), Some("instances"));
        assert_eq!(canonical("durability"), None, "a store's own option");
        assert!(matches!(
            parse_as("memory", "max-memory", "32MiB"),
            Ok(SandboxOption::Memory(n)) if n == 32 << 20
        ));
        let reason = parse_as("instances", "max-instances", "0").unwrap_err();
        assert!(
            reason.contains("\"max-instances\" must be a positive integer"),
            "{reason}"
        );
        let reason = parse_as("timeout", "timeout", "0s").unwrap_err();
        assert!(
            reason.contains("\"timeout\" must be a duration"),
            "{reason}"
        );
        let mut seen = Seen::default();
        seen.once("memory", "memory").unwrap();
        assert!(
            seen.once("memory", "max-memory")
                .unwrap_err()
                .contains("twice")
        );
    }
}

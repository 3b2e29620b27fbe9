//! [`resolve_store`]: one selector string (or an already-built store) → a store.

use crate::error::StoreError;
use crate::file::FileTaskStore;
use crate::memory::InMemoryTaskStore;
use crate::store::TaskStore;
use crate::wasm::{CacheDir, ComponentSource, WasmTaskStore};
use std::path::PathBuf;
use std::sync::Arc;
use toolnexus_format::Durability;

/// Where durable stores keep Tasks when no directory is named: `.toolnexus/tasks` under the
/// current directory.
pub const DEFAULT_DATA_DIR: &str = ".toolnexus/tasks";

/// The component path that names the file-store component embedded in this crate.
pub const BUILTIN_COMPONENT: &str = "builtin";

/// What [`resolve_store`] accepts: nothing (the default), a selector string, or a store.
#[derive(Clone)]
pub enum StoreSelector {
    /// No selector: the in-memory store.
    Default,
    /// A selector string, such as `"memory"`, `"file:./tasks"` or `"wasm:./store.wasm"`.
    Named(String),
    /// An already-built store, used as it is.
    Store(Arc<dyn TaskStore>),
}

impl From<&str> for StoreSelector {
    fn from(s: &str) -> Self {
        StoreSelector::Named(s.to_owned())
    }
}

impl From<String> for StoreSelector {
    fn from(s: String) -> Self {
        StoreSelector::Named(s)
    }
}

impl From<Option<&str>> for StoreSelector {
    fn from(s: Option<&str>) -> Self {
        s.map_or(StoreSelector::Default, StoreSelector::from)
    }
}

impl From<Option<String>> for StoreSelector {
    fn from(s: Option<String>) -> Self {
        s.map_or(StoreSelector::Default, StoreSelector::Named)
    }
}

impl From<Arc<dyn TaskStore>> for StoreSelector {
    fn from(store: Arc<dyn TaskStore>) -> Self {
        StoreSelector::Store(store)
    }
}

/// Turns a selector into a store.
///
/// | selector | store |
/// |---|---|
/// | none, `"memory"` | a new [`InMemoryTaskStore`] |
/// | `"file:<dir>"` | [`FileTaskStore`] over `<dir>` (created if missing) |
/// | `"wasm:<component>[?dir=<dir>]"` | [`WasmTaskStore`] running the component file, granted `<dir>` (default [`DEFAULT_DATA_DIR`]); `wasm:builtin` is the embedded file-store component |
/// | `"postgres://<user>:<password>@<host>:<port>/<db>[?table=<name>&pool=8&timeout=5s]"` (or `postgresql://`) | `PostgresTaskStore` (cargo feature `postgres`): one table on that server, created if missing; other options are libpq connection parameters |
/// | an `Arc<dyn TaskStore>` | that same store |
/// | anything else | [`StoreError::UnknownSelector`]: `Unknown A2A store "…"` |
///
/// `wasm:` options after `?` ([`WASM_OPTIONS`]): `dir=<dir>`, `readonly=true`, `memory=64MiB`,
/// `timeout=5s`, `max-task=16MiB`, `instances=8`, `durability=full|relaxed`, `stderr=log`,
/// `cache=<dir>|off`; see
/// `docs/security.md`.
///
/// A `wasm:` component is loaded, compiled and checked here, so a missing or wrong component
/// fails now rather than at the first call (compiling may take a second: from async code, call
/// this in `spawn_blocking`). A `postgres://` store connects and creates its table here, so a
/// bad URL, wrong credentials or an unreachable server fail now too (within the connect
/// timeout, 5 s by default); this blocks the calling thread, inside a Tokio runtime or not.
pub fn resolve_store(selector: impl Into<StoreSelector>) -> Result<Arc<dyn TaskStore>, StoreError> {
    let selector = match selector.into() {
        StoreSelector::Default => return Ok(Arc::new(InMemoryTaskStore::new())),
        StoreSelector::Store(store) => return Ok(store),
        StoreSelector::Named(s) => s,
    };
    let invalid = |reason: &str| StoreError::InvalidSelector {
        selector: selector.clone(),
        reason: reason.to_owned(),
    };
    if selector == "memory" {
        return Ok(Arc::new(InMemoryTaskStore::new()));
    }
    if let Some(dir) = selector.strip_prefix("file:") {
        if dir.is_empty() {
            return Err(invalid("no directory after \"file:\""));
        }
        return Ok(Arc::new(FileTaskStore::new(dir)?));
    }
    if let Some(rest) = selector.strip_prefix("wasm:") {
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
                "memory" => builder
                    .memory_limit(parse_size(&value).ok_or_else(|| bad("a size like 64MiB"))?),
                "max-task" => builder
                    .max_task_size(parse_size(&value).ok_or_else(|| bad("a size like 16MiB"))?),
                "timeout" => builder.timeout(
                    parse_duration(&value).ok_or_else(|| bad("a duration like 5s or 250ms"))?,
                ),
                "readonly" => {
                    builder.read_only(parse_bool(&value).ok_or_else(|| bad("true or false"))?)
                }
                "durability" => match value.as_str() {
                    "full" => builder.durability(Durability::Full),
                    "relaxed" => builder.durability(Durability::Relaxed),
                    _ => return Err(bad("full or relaxed")),
                },
                "stderr" => match value.as_str() {
                    "log" => builder.forward_stderr(true),
                    "off" => builder.forward_stderr(false),
                    _ => return Err(bad("log or off")),
                },
                "cache" => match value.as_str() {
                    "" => return Err(bad("a directory or off")),
                    "off" => builder.cache(CacheDir::Off),
                    dir => builder.cache(CacheDir::At(PathBuf::from(dir))),
                },
                other => {
                    return Err(invalid(&format!(
                        "unknown option {other:?} (known: {})",
                        WASM_OPTIONS.join(", ")
                    )));
                }
            };
        }
        return Ok(Arc::new(builder.build()?));
    }
    if selector.starts_with("postgres://") || selector.starts_with("postgresql://") {
        return resolve_postgres(&selector);
    }
    Err(StoreError::UnknownSelector(selector))
}

#[cfg(feature = "postgres")]
fn resolve_postgres(selector: &str) -> Result<Arc<dyn TaskStore>, StoreError> {
    let builder = crate::postgres::builder_from_selector(selector, parse_query, parse_duration)?;
    Ok(Arc::new(builder.connect_blocking()?))
}

#[cfg(not(feature = "postgres"))]
fn resolve_postgres(selector: &str) -> Result<Arc<dyn TaskStore>, StoreError> {
    // Whatever follows the scheme is not shown: it may hold a password.
    let scheme = selector.split("://").next().unwrap_or("postgres");
    Err(StoreError::InvalidSelector {
        selector: format!("{scheme}://…"),
        reason: "this build of toolnexus lacks PostgreSQL support: rebuild it with the cargo \
                 feature \"postgres\" (on by default)"
            .into(),
    })
}

/// The options a `wasm:` selector accepts after `?`.
pub const WASM_OPTIONS: &[&str] = &[
    "dir",
    "readonly",
    "memory",
    "timeout",
    "max-task",
    "instances",
    "durability",
    "stderr",
    "cache",
];

/// `64MiB`, `512KiB`, `1GiB`, `4096` (bytes), `10MB` (decimal units too).
fn parse_size(s: &str) -> Option<usize> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let number: usize = number.parse().ok()?;
    let scale: usize = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => return None,
    };
    number.checked_mul(scale).filter(|n| *n > 0)
}

/// `5s`, `250ms`, `2m`.
fn parse_duration(s: &str) -> Option<std::time::Duration> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let number: u64 = number.parse().ok()?;
    let duration = match unit {
        "ms" => std::time::Duration::from_millis(number),
        "s" => std::time::Duration::from_secs(number),
        "m" => std::time::Duration::from_secs(number.checked_mul(60)?),
        _ => return None,
    };
    (!duration.is_zero()).then_some(duration)
}

fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// `a=1&b=x%26y` → `[("a","1"), ("b","x&y")]`. Each key at most once.
fn parse_query(query: &str) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("option {pair:?} has no \"=value\""))?;
        let (key, value) = (percent_decode(key)?, percent_decode(value)?);
        if out.iter().any(|(k, _)| *k == key) {
            return Err(format!("option {key:?} is given twice"));
        }
        out.push((key, value));
    }
    Ok(out)
}

fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let byte = s
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .ok_or_else(|| format!("bad percent escape in {s:?}"))?;
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{s:?} does not decode to UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_parse() {
        assert_eq!(parse_size("64MiB"), Some(64 << 20));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("1GiB"), Some(1 << 30));
        assert_eq!(parse_size("10MB"), Some(10_000_000));
        for bad in ["", "MiB", "0", "-1", "12XB", "99999999999999999999GiB"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
        assert_eq!(
            parse_duration("250ms"),
            Some(std::time::Duration::from_millis(250))
        );
        assert_eq!(
            parse_duration("5s"),
            Some(std::time::Duration::from_secs(5))
        );
        assert_eq!(
            parse_duration("2m"),
            Some(std::time::Duration::from_secs(120))
        );
        for bad in ["", "5", "0s", "1h", "s"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn query_is_split_and_decoded() {
        assert_eq!(
            parse_query("dir=a%26b&instances=2").unwrap(),
            [
                ("dir".to_owned(), "a&b".to_owned()),
                ("instances".to_owned(), "2".to_owned())
            ]
        );
        assert!(parse_query("dir").is_err());
        assert!(parse_query("dir=a&dir=b").is_err());
        assert!(parse_query("dir=%zz").is_err());
    }
}

//! [`Namespaces`]: one store per namespace (a tenant, an owner of a tenant, …), every one
//! derived from the one selector an operator gave, each a separate store of the same kind.
//! The mapping is in [`Namespaces`]' docs; what it isolates and what not, in
//! `docs/namespaces.md`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use toolnexus_core::options::redact;
use toolnexus_core::{FileTaskStore, InMemoryTaskStore, StoreError, TaskStore};

use crate::{StoreSelector, resolve_store};

/// The longest namespace segment, in characters (all ASCII, so also in bytes).
pub const MAX_SEGMENT_LEN: usize = 64;
/// The most segments a namespace may have.
pub const MAX_NAMESPACE_DEPTH: usize = 8;

/// The longest table name the PostgreSQL store accepts (without its schema): PostgreSQL's 63
/// bytes less room for the names of the table's indexes (`<table>_context_listed`).
const PG_MAX_TABLE: usize = 48;
/// Characters of the hash in a hashed table name: 100 bits of SHA-256 in base32.
const PG_HASH_CHARS: usize = 20;
/// What a namespace table name adds to its base table at least: `__`, `_x` and the hash.
const PG_HASHED_OVERHEAD: usize = 2 + 2 + PG_HASH_CHARS;
/// The longest PostgreSQL base table (without its schema) that can be divided into namespaces,
/// in bytes (24): every namespace, however long, must still get a table name the store accepts
/// (at most 48 bytes; see [`namespace_table`]).
pub const MAX_NAMESPACED_TABLE: usize = PG_MAX_TABLE - PG_HASHED_OVERHEAD;

/// Stores for namespaces under one selector: each namespace is a separate store of the same
/// kind as the selector's, created on first use and kept for the life of this value.
///
/// A namespace is one or more segments joined by `/` (`"t.acme"`, `"t.acme/o.alice"`); each
/// segment is 1 to [`MAX_SEGMENT_LEN`] characters of `A-Z a-z 0-9 . _ -`, not starting with `.`
/// and not ending with `.json` ([`check_namespace_segment`]). Per backend:
///
/// | root selector | the store of namespace `a/b` |
/// |---|---|
/// | `memory` (or none) | a new, separate in-memory store |
/// | `file:<dir>` | `file:<dir>/a/b` (`<dir>` made absolute) |
/// | `wasm:<component>?dir=<dir>&…` | the same component and options, `dir=<dir>/a/b` |
/// | `postgres://…?table=<t>&…` | the same server and options, table [`namespace_table`]`(t, "a/b")` |
///
/// The stores over directories keep their Tasks as files directly in their directory and never
/// read its subdirectories, so a namespace's Tasks are neither listed, found nor pruned through
/// the root or a parent namespace.
///
/// ```no_run
/// # async fn demo() -> Result<(), toolnexus::StoreError> {
/// let namespaces = toolnexus::Namespaces::new("file:./tasks")?;
/// let acme = namespaces.store("t.acme")?;                // file:./tasks/t.acme
/// let alice = namespaces.store("t.acme/o.alice")?;       // file:./tasks/t.acme/o.alice
/// acme.save(&r#"{"id": "task-1"}"#.parse()?).await?;
/// assert!(alice.get("task-1").await?.is_none());         // nothing is shared
/// assert!(namespaces.root().get("task-1").await?.is_none());
/// # Ok(()) }
/// ```
///
/// Nothing here bounds how many namespaces are opened: each one costs what a store of its kind
/// costs (a directory, a component's instances, a PostgreSQL connection pool and two threads)
/// for as long as this value lives. Ask only for namespaces from a bounded set (the configured
/// tenants and owners), never for names taken from requests.
pub struct Namespaces {
    /// The selector with any password replaced, for messages.
    shown: String,
    root: Arc<dyn TaskStore>,
    kind: Kind,
    /// Each namespace asked for (valid ones only): its store once opened. The outer lock is
    /// held only to find a namespace's slot; the slot's lock while its store is being opened,
    /// so two callers opening the same namespace at once get the same store.
    opened: Mutex<HashMap<String, Slot>>,
}

type Slot = Arc<Mutex<Option<Arc<dyn TaskStore>>>>;

/// How a namespace's store is made.
enum Kind {
    Memory,
    /// Under the root's directory (absolute).
    File {
        base: PathBuf,
    },
    /// The selector with its component path made absolute, and the root's granted directory
    /// (absolute); each namespace's builder gets its own directory under it.
    #[cfg(feature = "wasm")]
    Wasm {
        selector: String,
        base: PathBuf,
    },
    /// The selector (with its password: it is only ever used to connect) and the root table.
    #[cfg(feature = "postgres")]
    Postgres {
        selector: String,
        table: String,
    },
}

impl std::fmt::Debug for Namespaces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Namespaces")
            .field("selector", &self.shown)
            .field("root", &self.root.describe())
            .finish_non_exhaustive()
    }
}

impl Namespaces {
    /// Resolves the root store now, with the errors [`resolve_store`] gives for the same
    /// selector. A store built by the caller ([`StoreSelector::Store`]) cannot be divided into
    /// namespaces: [`StoreError::InvalidSelector`]. No selector ([`StoreSelector::Default`]) is
    /// `memory`. Blocking, like [`resolve_store`].
    pub fn new(selector: impl Into<StoreSelector>) -> Result<Self, StoreError> {
        let selector = match selector.into() {
            StoreSelector::Default => "memory".to_owned(),
            StoreSelector::Named(s) => s,
            StoreSelector::Store(store) => {
                return Err(StoreError::InvalidSelector {
                    selector: store.describe(),
                    reason: "a store built by the caller cannot be divided into namespaces: \
                             give a selector string (memory, file:, wasm: or postgres://)"
                        .into(),
                });
            }
        };
        let shown = redact(&selector);
        let (root, kind) = open_root(&selector)?;
        Ok(Namespaces {
            shown,
            root,
            kind,
            opened: Mutex::new(HashMap::new()),
        })
    }

    /// The root store (the selector itself): what the server uses with no tenant and no
    /// owner. It never sees the Tasks of a namespace, nor they its Tasks.
    pub fn root(&self) -> Arc<dyn TaskStore> {
        Arc::clone(&self.root)
    }

    /// The selector these namespaces derive from, with any password replaced by `***`.
    pub fn selector(&self) -> &str {
        &self.shown
    }

    /// The store of namespace `ns` (segments joined by `/`, e.g. `"t.acme/o.alice"`), opened
    /// on first use and the same store on every later call. An invalid namespace
    /// ([`check_namespace`]) is refused with [`StoreError::InvalidSelector`] before anything is
    /// created. Opening fails as [`resolve_store`] does for the namespace's selector; a failed
    /// open is tried again on the next call.
    ///
    /// Blocking: the first use may create directories, compile or instantiate a component, or
    /// connect to PostgreSQL; from async code, call it in `spawn_blocking`. Later calls only
    /// take a lock.
    pub fn store(&self, ns: &str) -> Result<Arc<dyn TaskStore>, StoreError> {
        check(ns).map_err(|reason| self.invalid(ns, reason))?;
        let slot = {
            let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(opened.entry(ns.to_owned()).or_default())
        };
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(store) = slot.as_ref() {
            return Ok(Arc::clone(store));
        }
        let store = self.open(ns)?;
        *slot = Some(Arc::clone(&store));
        Ok(store)
    }

    /// The namespaces whose stores are open, sorted.
    pub fn opened(&self) -> Vec<String> {
        let opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        let mut names: Vec<String> = opened
            .iter()
            .filter(|(_, slot)| slot.lock().unwrap_or_else(|e| e.into_inner()).is_some())
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        names
    }

    fn invalid(&self, ns: &str, reason: String) -> StoreError {
        StoreError::InvalidSelector {
            selector: format!("{} namespace {}", self.shown, shorten(ns)),
            reason,
        }
    }

    /// Opens the store of a namespace already checked.
    fn open(&self, ns: &str) -> Result<Arc<dyn TaskStore>, StoreError> {
        match &self.kind {
            Kind::Memory => Ok(Arc::new(InMemoryTaskStore::new())),
            Kind::File { base } => {
                let dir = namespace_dir(base, ns)?;
                Ok(Arc::new(FileTaskStore::new(dir)?))
            }
            #[cfg(feature = "wasm")]
            Kind::Wasm { selector, base } => {
                use toolnexus_wasm::SandboxedDir;
                let dir = namespace_dir(base, ns)?;
                // The compiled component is reused from this process's memo (keyed by the
                // component's content): a namespace costs an instantiation, not a compile.
                Ok(Arc::new(
                    toolnexus_wasm::builder_from_selector(selector)?
                        .dir(dir)
                        .build()?,
                ))
            }
            #[cfg(feature = "postgres")]
            Kind::Postgres { selector, table } => {
                let table = table_of(table, ns).map_err(|reason| self.invalid(ns, reason))?;
                Ok(Arc::new(
                    toolnexus_postgres::builder_from_selector(selector)?
                        .table(table)
                        .connect_blocking()?,
                ))
            }
        }
    }
}

/// Resolves the root store and says how to make namespaces beside it.
fn open_root(selector: &str) -> Result<(Arc<dyn TaskStore>, Kind), StoreError> {
    if selector == "memory" {
        return Ok((Arc::new(InMemoryTaskStore::new()), Kind::Memory));
    }
    if let Some(dir) = selector.strip_prefix("file:") {
        let root = resolve_store(selector)?;
        let base = absolute_dir(Path::new(dir))?;
        return Ok((root, Kind::File { base }));
    }
    #[cfg(feature = "wasm")]
    if selector.starts_with("wasm:") {
        // The root as resolve_store opens it (and fails as it does); the namespaces from the
        // same selector with the component's path made absolute.
        let store = toolnexus_wasm::builder_from_selector(selector)?.build()?;
        let base = store.dir().to_path_buf(); // absolute: the builder resolves it
        let selector = absolute_component(selector);
        return Ok((Arc::new(store), Kind::Wasm { selector, base }));
    }
    #[cfg(feature = "postgres")]
    if selector.starts_with("postgres://") || selector.starts_with("postgresql://") {
        let store = toolnexus_postgres::builder_from_selector(selector)?.connect_blocking()?;
        let table = postgres_table_option(selector)?;
        return Ok((
            Arc::new(store),
            Kind::Postgres {
                selector: selector.to_owned(),
                table,
            },
        ));
    }
    // Every other selector fails exactly as resolve_store fails it (unknown scheme, a backend
    // this build lacks); should one resolve, it is one this code cannot divide.
    let store = resolve_store(selector)?;
    Err(StoreError::InvalidSelector {
        selector: redact(selector),
        reason: format!(
            "{} cannot be divided into namespaces (memory, file:, wasm: and postgres:// can)",
            store.describe()
        ),
    })
}

/// The directory (which exists) as an absolute path, so a later change of the current
/// directory does not move the namespaces.
fn absolute_dir(dir: &Path) -> Result<PathBuf, StoreError> {
    dir.canonicalize()
        .map_err(|e| StoreError::io(format!("cannot resolve directory {}", dir.display()), e))
}

/// `wasm:<path>?…` with a relative `<path>` made absolute, so each namespace loads the same
/// file whatever the current directory is then. Left as it is when it is `builtin`, already
/// absolute, or cannot be made absolute without changing its meaning (a `?` in the result).
#[cfg(feature = "wasm")]
fn absolute_component(selector: &str) -> String {
    let rest = &selector["wasm:".len()..];
    let (path, query) = match rest.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (rest, None),
    };
    if path.is_empty() || path == toolnexus_wasm::BUILTIN_COMPONENT || Path::new(path).is_absolute()
    {
        return selector.to_owned();
    }
    match std::path::absolute(path)
        .ok()
        .and_then(|p| p.to_str().map(str::to_owned))
    {
        Some(abs) if !abs.contains('?') => match query {
            Some(query) => format!("wasm:{abs}?{query}"),
            None => format!("wasm:{abs}"),
        },
        _ => selector.to_owned(),
    }
}

/// The `table` option of a `postgres://` selector the store already accepted, decoded as the
/// store decodes it, or the store's default table.
#[cfg(feature = "postgres")]
fn postgres_table_option(selector: &str) -> Result<String, StoreError> {
    let query = selector.split_once('?').map_or("", |(_, query)| query);
    for pair in query.split('&') {
        // The store's own options are told from libpq's by the key as written.
        let key = pair.split_once('=').map_or(pair, |(key, _)| key);
        if key == "table" {
            let parsed = toolnexus_core::options::parse_query(pair).map_err(|reason| {
                StoreError::InvalidSelector {
                    selector: redact(selector),
                    reason,
                }
            })?;
            return Ok(parsed
                .into_iter()
                .next()
                .map(|(_, v)| v)
                .unwrap_or_default());
        }
    }
    Ok(toolnexus_postgres::DEFAULT_TABLE.to_owned())
}

/// `<base>/<seg>/<seg>…` for a checked namespace, after making sure no part of it that exists
/// already is anything but a directory (a link, planted to send a namespace elsewhere, or a
/// file). Creating it is left to the store.
fn namespace_dir(base: &Path, ns: &str) -> Result<PathBuf, StoreError> {
    let mut dir = base.to_path_buf();
    for segment in ns.split('/') {
        dir.push(segment);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(meta) => {
                let what = if meta.file_type().is_symlink() {
                    "a symbolic link"
                } else {
                    "not a directory"
                };
                return Err(StoreError::io(
                    format!("cannot use namespace directory {}", dir.display()),
                    std::io::Error::other(format!("it exists and is {what}")),
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(StoreError::io(
                    format!("cannot inspect namespace directory {}", dir.display()),
                    e,
                ));
            }
        }
    }
    Ok(dir)
}

/// Checks one namespace segment: 1 to [`MAX_SEGMENT_LEN`] characters of `A-Z a-z 0-9 . _ -`,
/// not `.` or `..`, not starting with `.` (hidden names are the stores' own), not ending with
/// `.json` in any case (a file store's Task files do). The error,
/// [`StoreError::InvalidSelector`], names what is wrong.
pub fn check_namespace_segment(segment: &str) -> Result<(), StoreError> {
    check_segment(segment).map_err(|reason| StoreError::InvalidSelector {
        selector: format!("namespace segment {}", shorten(segment)),
        reason,
    })
}

/// Checks a whole namespace: 1 to [`MAX_NAMESPACE_DEPTH`] segments joined by `/`, each one
/// valid by [`check_namespace_segment`] (so no empty segment: no leading, trailing or doubled
/// `/`). [`Namespaces::store`] refuses what this refuses, before it creates anything.
pub fn check_namespace(ns: &str) -> Result<(), StoreError> {
    check(ns).map_err(|reason| StoreError::InvalidSelector {
        selector: format!("namespace {}", shorten(ns)),
        reason,
    })
}

fn check(ns: &str) -> Result<(), String> {
    if ns.is_empty() {
        return Err(
            "the namespace is empty (the store without a namespace is Namespaces::root)".into(),
        );
    }
    let depth = ns.split('/').count();
    if depth > MAX_NAMESPACE_DEPTH {
        return Err(format!(
            "the namespace has {depth} segments, more than {MAX_NAMESPACE_DEPTH}"
        ));
    }
    for segment in ns.split('/') {
        check_segment(segment)?;
    }
    Ok(())
}

fn check_segment(segment: &str) -> Result<(), String> {
    if segment.is_empty() {
        return Err(
            "a namespace segment is empty (segments are joined by a single '/', \
                    with none before the first or after the last)"
                .into(),
        );
    }
    if let Some(bad) = segment
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "namespace segment {} has the character {bad:?}; only A-Z a-z 0-9 . _ - are allowed",
            shorten(segment)
        ));
    }
    if segment.len() > MAX_SEGMENT_LEN {
        return Err(format!(
            "namespace segment {} is {} characters long, more than {MAX_SEGMENT_LEN}",
            shorten(segment),
            segment.len()
        ));
    }
    if segment == "." || segment == ".." {
        return Err(format!(
            "namespace segment {segment:?} is not allowed: it would name another directory"
        ));
    }
    if segment.starts_with('.') {
        return Err(format!(
            "namespace segment {segment:?} starts with '.', which the stores reserve for their \
             own hidden files"
        ));
    }
    if segment.to_ascii_lowercase().ends_with(".json") {
        return Err(format!(
            "namespace segment {segment:?} ends with \".json\", which a file store reserves for \
             Task files"
        ));
    }
    Ok(())
}

/// A name for a message: debug-quoted (control characters escaped), cut after 80 characters.
fn shorten(s: &str) -> String {
    const MAX: usize = 80;
    match s.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{:?}… ({} bytes)", &s[..cut], s.len()),
        None => format!("{s:?}"),
    }
}

/// The PostgreSQL table of namespace `ns` under the table `table` (`name` or `schema.name`,
/// as a `postgres://` selector's `table=` option gives it): `<name>__<encoded ns>`, in the same
/// schema.
///
/// The encoding keeps letters and digits and spells every other character as `_` and a letter
/// (`/` → `__`, `_` → `_u`, `.` → `_d`, `-` → `_h`), so it is injective and readable:
/// `tasks`, `t.acme/o.alice` → `tasks__t_dacme__o_dalice`. A name that would be longer than
/// the store accepts (48 bytes, leaving room for its indexes within PostgreSQL's 63) becomes a
/// prefix of that cut between two codes, `_x`, and 100 bits of the SHA-256 of `ns` in base32
/// (20 characters): 48 bytes in all, or 47 when a two-byte code did not fit. `_x` is no code of
/// the encoding, so a hashed name never equals a plain one, and two hashed names are equal only
/// if the hashes collide. Nor does a namespace's table ever take the name of an index (the
/// suffixes `_listed`, `_context_listed`, `_state_listed`, … start with no code, and a hash
/// holds no `_`).
///
/// Errors ([`StoreError::InvalidSelector`]): an invalid namespace ([`check_namespace`]), a
/// table that is not an identifier, or a table name longer than [`MAX_NAMESPACED_TABLE`]
/// bytes (some namespaces would then get no name; the store refuses it for every namespace).
pub fn namespace_table(table: &str, ns: &str) -> Result<String, StoreError> {
    table_of(table, ns).map_err(|reason| StoreError::InvalidSelector {
        selector: format!("table {} namespace {}", shorten(table), shorten(ns)),
        reason,
    })
}

/// [`namespace_table`], its error only the reason.
fn table_of(table: &str, ns: &str) -> Result<String, String> {
    check(ns)?;
    let (schema, name) = match table.rsplit_once('.') {
        Some((schema, name)) => (Some(schema), name),
        None => (None, table),
    };
    let ident = |s: &str| {
        s.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    if !ident(name) || schema.is_some_and(|s| !ident(s)) {
        return Err(format!(
            "table {} must be an identifier ([A-Za-z_][A-Za-z0-9_]*), optionally \
             schema-qualified (schema.table)",
            shorten(table)
        ));
    }
    if name.len() > MAX_NAMESPACED_TABLE {
        return Err(format!(
            "table name {name:?} is {} bytes long; tables divided into namespaces may have at \
             most {MAX_NAMESPACED_TABLE} (a namespace's table adds up to {PG_HASHED_OVERHEAD} \
             bytes, and the store accepts {PG_MAX_TABLE})",
            name.len()
        ));
    }
    // Letters and digits as they are; every other character as `_` and a code letter.
    let codes: Vec<&str> = ns
        .split_inclusive(|_| true)
        .map(|c| match c {
            "/" => "__",
            "_" => "_u",
            "." => "_d",
            "-" => "_h",
            plain => plain, // checked: an ASCII letter or digit
        })
        .collect();
    let plain_len: usize = codes.iter().map(|c| c.len()).sum();
    let mut out = String::with_capacity(PG_MAX_TABLE);
    out.push_str(name);
    out.push_str("__");
    if name.len() + 2 + plain_len <= PG_MAX_TABLE {
        codes.iter().for_each(|c| out.push_str(c));
    } else {
        // As many whole codes as fit before `_x` and the hash.
        let budget = PG_MAX_TABLE - name.len() - PG_HASHED_OVERHEAD;
        let mut used = 0;
        for code in &codes {
            if used + code.len() > budget {
                break;
            }
            out.push_str(code);
            used += code.len();
        }
        out.push_str("_x");
        out.push_str(&base32_hash(ns));
    }
    Ok(match schema {
        Some(schema) => format!("{schema}.{out}"),
        None => out,
    })
}

/// The first [`PG_HASH_CHARS`] × 5 bits of the SHA-256 of `s`, in lower-case base32 (RFC 4648
/// alphabet: `a-z`, `2-7`).
fn base32_hash(s: &str) -> String {
    use sha2::{Digest, Sha256};
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let digest = Sha256::digest(s.as_bytes());
    (0..PG_HASH_CHARS)
        .map(|i| {
            let bit = i * 5;
            let (byte, shift) = (bit / 8, bit % 8);
            let word = (u16::from(digest[byte]) << 8) | u16::from(digest[byte + 1]);
            let index = (word >> (11 - shift)) & 0x1f;
            ALPHABET[usize::from(index)] as char
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_checked() {
        for good in [
            "a",
            "t.acme",
            "o_alice-1",
            "A.b.c",
            &"x".repeat(64),
            "json",
            "a.jsonx",
        ] {
            assert!(check_namespace_segment(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            &"x".repeat(65),
            "a/b",
            "a\\b",
            "a b",
            "é",
            "a\0",
            "x.json",
            "x.JSON",
        ] {
            match check_namespace_segment(bad) {
                Err(StoreError::InvalidSelector { .. }) => {}
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn namespaces_are_checked() {
        for good in ["a", "t.acme/o.alice", &["s"; MAX_NAMESPACE_DEPTH].join("/")] {
            assert!(check_namespace(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "/",
            "/abs",
            "a/",
            "a//b",
            "a/../b",
            "../a",
            &["s"; MAX_NAMESPACE_DEPTH + 1].join("/"),
        ] {
            assert!(check_namespace(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn messages_are_short_and_escaped() {
        let long = "\n".repeat(10_000);
        let err = check_namespace(&long).unwrap_err().to_string();
        assert!(err.len() < 1_000, "{err}");
        assert!(!err.contains('\n'), "{err}");
    }

    #[test]
    fn table_names_are_readable_when_short() {
        assert_eq!(
            namespace_table("tasks", "t.acme/o.alice").unwrap(),
            "tasks__t_dacme__o_dalice"
        );
        assert_eq!(
            namespace_table("app.tasks", "a_b-c").unwrap(),
            "app.tasks__a_ub_hc"
        );
    }

    #[test]
    fn long_table_names_are_hashed_within_the_limit() {
        let ns = "t.a-very-long-tenant-name/o.an-even-longer-owner-name";
        let name = namespace_table("toolnexus_tasks", ns).unwrap();
        assert_eq!(name.len(), PG_MAX_TABLE, "{name}");
        assert!(name.starts_with("toolnexus_tasks__t_da_hv"), "{name}");
        assert_eq!(&name[PG_MAX_TABLE - PG_HASH_CHARS - 2..][..2], "_x");
        let longest = "t".repeat(MAX_NAMESPACED_TABLE);
        let name = namespace_table(&longest, &"x".repeat(64)).unwrap();
        assert_eq!(name.len(), PG_MAX_TABLE, "{name}");
        assert!(namespace_table(&"t".repeat(MAX_NAMESPACED_TABLE + 1), "a").is_err());
        assert!(namespace_table("1tasks", "a").is_err());
        assert!(namespace_table("a.b.c", "a").is_err());
    }

    #[cfg(feature = "wasm")]
    #[test]
    fn relative_component_paths_are_made_absolute() {
        for kept in [
            "wasm:builtin?dir=x",
            "wasm:/abs/store.wasm",
            "wasm:/abs/s.wasm?dir=y",
        ] {
            assert_eq!(absolute_component(kept), kept);
        }
        let cwd = std::env::current_dir().unwrap();
        let made = absolute_component("wasm:store.wasm?dir=d&instances=2");
        let expected = format!(
            "wasm:{}?dir=d&instances=2",
            cwd.join("store.wasm").display()
        );
        assert_eq!(made, expected);
    }

    #[test]
    fn base32_hash_matches_rfc4648() {
        // The first 100 bits of SHA-256("") = e3b0c442 98fc1c14 9a…, in base32.
        assert_eq!(base32_hash(""), "4oymiquy7qobjgx36tej");
    }
}

//! The compiled-component cache: compiling a component takes a quarter second to seconds, so a
//! second process loading the same component reuses the machine code the first one produced.
//!
//! Entries are keyed by the SHA-256 of the component's bytes, the wasmtime version and the
//! engine's compatibility hash (its configuration and target), so a change to any of them is a
//! miss, never a wrong hit. Each entry is `MAGIC ‖ SHA-256(payload) ‖ payload`, written to a temp
//! file and renamed into place: concurrent processes never see half an entry, and an entry that
//! is truncated or altered fails the checksum and is recompiled and rewritten.
//!
//! The cache holds native code that is run without further checks, so it is used only when
//! no one but the user running the host could have written it: the directory (after links) must
//! be owned by that user and not writable by group or others, and each entry is opened without
//! following a link and must be a regular file with the same owner and mode rule (checked on the
//! open file, so nothing can be swapped in between). The checksum covers the entry's name too,
//! so an entry renamed or linked to another component's name is a miss. A directory or entry
//! that fails these checks is not read or written: the host warns once per directory (target
//! `toolnexus::cache`) and compiles. Directories the host creates are 0700, entries 0600.

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use toolnexus_format::Durability;
use toolnexus_format::dir::{create_private_dir, write_atomically};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The header of an entry. Version 2 binds the checksum to the entry's name.
const MAGIC: &[u8; 8] = b"TNCWASM2";

/// How a component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Already compiled in this process.
    Memory,
    /// Loaded from the on-disk cache.
    Disk,
    /// Compiled now (and written to the disk cache, if there is one).
    Compiled,
}

/// The default cache directory: `$TOOLNEXUS_CACHE_DIR`, else `$XDG_CACHE_HOME/toolnexus/components`,
/// else `$HOME/.cache/toolnexus/components`; `None` if none of these is set.
pub fn default_cache_dir() -> Option<PathBuf> {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("TOOLNEXUS_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("toolnexus/components")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/toolnexus/components")))
}

/// The cache file name for a component in an engine.
pub(crate) fn entry_name(engine: &Engine, component_digest: &[u8; 32]) -> String {
    struct Sha(Sha256);
    impl Hasher for Sha {
        fn finish(&self) -> u64 {
            0
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
    }
    let mut sha = Sha(Sha256::new());
    sha.0.update(component_digest);
    // Covers the wasmtime version, target, compiler flags, tunables and wasm features.
    engine.precompile_compatibility_hash().hash(&mut sha);
    let key = sha.0.finalize();
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}.cwasm")
}

/// Loads the entry for this component from `dir`, or `None` on a miss, a corrupt entry, an
/// entry this engine cannot use, or a directory or entry someone else could have written.
pub(crate) fn load(engine: &Engine, dir: &Path, name: &str) -> Option<Component> {
    if !trusted_dir(dir) {
        return None;
    }
    let bytes = read_trusted(dir, name)?;
    let payload = verified_payload(name, &bytes)?;
    // SAFETY: the payload is the output of `Component::serialize` for this engine's
    // configuration (the entry name includes the engine's compatibility hash), its checksum
    // matches its name, and only the current user could have written it (see the module docs).
    // wasmtime also checks the header and refuses artifacts from another version or
    // configuration.
    unsafe { Component::deserialize(engine, payload) }.ok()
}

/// The checksum of an entry: its name, then its payload.
fn digest(name: &str, payload: &[u8]) -> [u8; 32] {
    let mut sha = Sha256::new();
    sha.update((name.len() as u64).to_le_bytes());
    sha.update(name.as_bytes());
    sha.update(payload);
    sha.finalize().into()
}

fn verified_payload<'a>(name: &str, bytes: &'a [u8]) -> Option<&'a [u8]> {
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    if rest.len() < 32 {
        return None;
    }
    let (sum, payload) = rest.split_at(32);
    (digest(name, payload).as_slice() == sum).then_some(payload)
}

/// Writes the entry for a freshly compiled component. Failures are ignored: the cache is an
/// optimisation, never a reason to fail a load.
pub(crate) fn store(dir: &Path, name: &str, component: &Component) {
    let Ok(payload) = component.serialize() else {
        return;
    };
    if create_private_dir(dir).is_err() || !trusted_dir(dir) {
        return;
    }
    let mut entry = Vec::with_capacity(MAGIC.len() + 32 + payload.len());
    entry.extend_from_slice(MAGIC);
    entry.extend_from_slice(&digest(name, &payload));
    entry.extend_from_slice(&payload);
    let _ = write_atomically(dir, name, &entry, Durability::Relaxed);
}

/// Why a cache directory or entry is not used.
#[derive(Debug, PartialEq, Eq)]
enum Distrust {
    NotOwned { owner: u32 },
    WritableByOthers { mode: u32 },
    NotRegular,
}

impl std::fmt::Display for Distrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Distrust::NotOwned { owner } => write!(f, "it is owned by user {owner}, not by us"),
            Distrust::WritableByOthers { mode } => {
                write!(f, "its mode {mode:o} lets group or others write it")
            }
            Distrust::NotRegular => write!(f, "it is not a regular file"),
        }
    }
}

/// Whether `meta` (of the directory, or of an open entry) could only have been written by us.
#[cfg(unix)]
fn check_owner(meta: &std::fs::Metadata) -> Result<(), Distrust> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(Distrust::NotOwned { owner: meta.uid() });
    }
    if meta.mode() & 0o022 != 0 {
        return Err(Distrust::WritableByOthers {
            mode: meta.mode() & 0o7777,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_owner(_meta: &std::fs::Metadata) -> Result<(), Distrust> {
    Ok(())
}

/// Whether the cache directory may be used; warns once per directory when it may not.
fn trusted_dir(dir: &Path) -> bool {
    match std::fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => distrusted(dir, &Distrust::NotRegular),
        Ok(meta) => match check_owner(&meta) {
            Ok(()) => true,
            Err(why) => distrusted(dir, &why),
        },
        // Missing: a miss now, and `store` creates it private.
        Err(_) => false,
    }
}

/// Reads an entry without following a link, if it is a regular file only we could have
/// written; `None` on a miss.
fn read_trusted(dir: &Path, name: &str) -> Option<Vec<u8>> {
    use std::io::Read;
    let path = dir.join(name);
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NOFOLLOW | libc::O_NONBLOCK,
    );
    let mut file = match options.open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(_) => {
            // A link (ELOOP) or an entry we may not open: never used.
            distrusted(&path, &Distrust::NotRegular);
            return None;
        }
    };
    let meta = file.metadata().ok()?;
    let verdict = if meta.is_file() {
        check_owner(&meta)
    } else {
        Err(Distrust::NotRegular)
    };
    if let Err(why) = verdict {
        distrusted(&path, &why);
        return None;
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// Warns, once per path per process, that the cache there is not used; returns `false`.
fn distrusted(path: &Path, why: &Distrust) -> bool {
    static WARNED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    let first = WARNED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(path.to_path_buf());
    if first {
        tracing::warn!(
            target: "toolnexus::cache",
            path = %path.display(),
            "not using the compiled-component cache here: {why}; compiling instead"
        );
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_guards_the_payload() {
        let mut entry = MAGIC.to_vec();
        entry.extend_from_slice(&digest("a.cwasm", b"payload"));
        entry.extend_from_slice(b"payload");
        assert_eq!(verified_payload("a.cwasm", &entry), Some(&b"payload"[..]));
        assert_eq!(
            verified_payload("b.cwasm", &entry),
            None,
            "an entry under another name is a miss"
        );
        let mut flipped = entry.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(verified_payload("a.cwasm", &flipped), None);
        assert_eq!(verified_payload("a.cwasm", &entry[..entry.len() - 1]), None);
        assert_eq!(verified_payload("a.cwasm", b"TNCWASM2short"), None);
        assert_eq!(verified_payload("a.cwasm", b""), None);
    }
}

//! The compiled-component cache: compiling a component takes a quarter second to seconds, so a
//! second process loading the same component reuses the machine code the first one produced.
//!
//! Entries are keyed by the SHA-256 of the component's bytes, the wasmtime version and the
//! engine's compatibility hash (its configuration and target), so a change to any of them is a
//! miss, never a wrong hit. Each entry is `MAGIC ‖ SHA-256(payload) ‖ payload`, written to a temp
//! file and renamed into place: concurrent processes never see half an entry, and an entry that
//! is truncated or altered fails the checksum and is recompiled and rewritten.
//!
//! The cache holds native code that is run without further checks: its directory must be
//! writable only by the user running the host (it is created with mode 0700).

use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use toolnexus_format::{Durability, dir::write_atomically};
use wasmtime::Engine;
use wasmtime::component::Component;

const MAGIC: &[u8; 8] = b"TNCWASM1";

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

/// Loads the entry for this component from `dir`, or `None` on a miss, a corrupt entry or an
/// entry this engine cannot use.
pub(crate) fn load(engine: &Engine, dir: &Path, name: &str) -> Option<Component> {
    let bytes = std::fs::read(dir.join(name)).ok()?;
    let payload = verified_payload(&bytes)?;
    // SAFETY: the payload is the output of `Component::serialize` for this engine's
    // configuration (the entry name includes the engine's compatibility hash) and passed its
    // checksum; the cache directory is private to the user (see the module docs). wasmtime
    // also checks the header and refuses artifacts from another version or configuration.
    unsafe { Component::deserialize(engine, payload) }.ok()
}

fn verified_payload(bytes: &[u8]) -> Option<&[u8]> {
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    if rest.len() < 32 {
        return None;
    }
    let (digest, payload) = rest.split_at(32);
    (Sha256::digest(payload).as_slice() == digest).then_some(payload)
}

/// Writes the entry for a freshly compiled component. Failures are ignored: the cache is an
/// optimisation, never a reason to fail a load.
pub(crate) fn store(dir: &Path, name: &str, component: &Component) {
    let Ok(payload) = component.serialize() else {
        return;
    };
    if create_private_dir(dir).is_err() {
        return;
    }
    let mut entry = Vec::with_capacity(MAGIC.len() + 32 + payload.len());
    entry.extend_from_slice(MAGIC);
    entry.extend_from_slice(&Sha256::digest(&payload));
    entry.extend_from_slice(&payload);
    let _ = write_atomically(dir, name, &entry, Durability::Relaxed);
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_guards_the_payload() {
        let mut entry = MAGIC.to_vec();
        entry.extend_from_slice(&Sha256::digest(b"payload"));
        entry.extend_from_slice(b"payload");
        assert_eq!(verified_payload(&entry), Some(&b"payload"[..]));
        let mut flipped = entry.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(verified_payload(&flipped), None);
        assert_eq!(verified_payload(&entry[..entry.len() - 1]), None);
        assert_eq!(verified_payload(b"TNCWASM1short"), None);
        assert_eq!(verified_payload(b""), None);
    }
}

//! Loading a component: read its bytes, then the compiled form from this process's memo, the
//! disk cache ([`crate::cache`]) or Cranelift, and check that it is a component of our world at
//! a version this host speaks (0.2 or 0.1: which one decides how it is called), before anything
//! is instantiated.

use crate::cache::{self, CacheOutcome};
use crate::{ComponentSource, ContractVersion, EPOCH_TICK, FILE_STORE_COMPONENT, STORE_PACKAGE};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use wasmtime::component::Component;
use wasmtime::{Config, Engine};

/// The process-wide engine: one engine lets every store share compiled code, and one thread
/// advances its epoch for every per-call deadline.
pub(crate) fn engine() -> Result<&'static Engine, &'static String> {
    static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let mut config = Config::new();
            config.wasm_component_model(true);
            config.epoch_interruption(true);
            let engine = Engine::new(&config)
                .map_err(|e| format!("cannot create the wasmtime engine: {e:#}"))?;
            let weak = engine.weak();
            std::thread::Builder::new()
                .name("toolnexus-epoch".into())
                .spawn(move || {
                    while let Some(engine) = weak.upgrade() {
                        engine.increment_epoch();
                        drop(engine);
                        crate::clock::fire_backstops();
                        std::thread::sleep(EPOCH_TICK);
                    }
                })
                .map_err(|e| format!("cannot start the epoch thread: {e}"))?;
            Ok(engine)
        })
        .as_ref()
}

/// Compiles a component, or loads its compiled form: once per distinct content per process, and
/// across processes through the disk cache.
pub(crate) fn compile(
    engine: &Engine,
    source: &ComponentSource,
    cache_dir: Option<&Path>,
    memoize: bool,
    max_bytes: u64,
) -> Result<(Component, CacheOutcome), String> {
    static COMPILED: OnceLock<Mutex<HashMap<[u8; 32], Component>>> = OnceLock::new();
    let too_big = |size: u64| {
        format!(
            "it is {size} bytes, more than the {max_bytes} bytes this host compiles \
             (compiling costs time and memory in proportion to size; raise max-component to allow it)"
        )
    };
    let owned;
    let bytes: &[u8] = match source {
        ComponentSource::BuiltinFileStore => FILE_STORE_COMPONENT,
        ComponentSource::File(path) => {
            owned = read_at_most(path, max_bytes)
                .map_err(|e| format!("cannot read the file: {e}"))?
                .map_err(too_big)?;
            &owned
        }
        ComponentSource::Bytes { bytes, .. } => bytes,
    };
    if bytes.len() as u64 > max_bytes {
        return Err(too_big(bytes.len() as u64));
    }
    check_header(bytes)?;
    let digest: [u8; 32] = Sha256::digest(bytes).into();
    let memo = COMPILED.get_or_init(Default::default);
    if memoize && let Some(component) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(&digest)
    {
        return Ok((component.clone(), CacheOutcome::Memory));
    }
    let entry = cache::entry_name(engine, &digest);
    let (component, outcome) = match cache_dir.and_then(|dir| cache::load(engine, dir, &entry)) {
        Some(component) => (component, CacheOutcome::Disk),
        None => {
            let component =
                Component::new(engine, bytes).map_err(|e| format!("invalid component: {e:#}"))?;
            if let Some(dir) = cache_dir {
                cache::store(dir, &entry, &component);
            }
            (component, CacheOutcome::Compiled)
        }
    };
    memo.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(digest, component.clone());
    Ok((component, outcome))
}

/// The file's bytes if it holds at most `max` of them; otherwise its size (never reading more
/// than `max + 1` bytes, whatever the file claims or turns out to be).
fn read_at_most(path: &Path, max: u64) -> std::io::Result<Result<Vec<u8>, u64>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let claimed = file.metadata()?.len();
    if claimed > max {
        return Ok(Err(claimed));
    }
    let mut bytes = Vec::with_capacity(claimed as usize);
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Ok(Err(bytes.len() as u64));
    }
    Ok(Ok(bytes))
}

/// Says what a file is when it is not a component, before the parser's less friendly message.
pub(crate) fn check_header(bytes: &[u8]) -> Result<(), String> {
    const MAGIC: &[u8] = b"\0asm";
    if bytes.len() < 8 || &bytes[..4] != MAGIC {
        return Err("not a WebAssembly file (no \\0asm header)".into());
    }
    match bytes[4..8] {
        [0x0d, 0x00, 0x01, 0x00] => Ok(()),
        [0x01, 0x00, 0x00, 0x00] => Err(
            "a core WebAssembly module, not a component (wrap it with `wasm-tools component new`)"
                .into(),
        ),
        _ => Err(format!(
            "an unsupported WebAssembly version or layer {:02x?}",
            &bytes[4..8]
        )),
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
    // wasmtime links semver-compatible versions (0.2.x for 0.2.0); anything else is not ours.
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
            "it exports {}, a version of the {STORE_PACKAGE} contract incompatible with both that this host speaks ({})",
            other.join(", "),
            spoken(" and ")
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
        assert!(!semver_compatible("1.0.0", "0.1.0"));
        assert!(!semver_compatible("garbage", "0.1.0"));
        assert!(!semver_compatible("0.0.9", "0.1.0"));
        assert!(semver_compatible("1.2.0", "1.0.0"));
        assert!(!semver_compatible("2.0.0", "1.0.0"));
    }
}

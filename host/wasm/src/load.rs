//! Loading a component: the process-wide engine ([`engine`]), where a component comes from
//! ([`ComponentSource`]), and its compiled form from this process's memo, the disk cache
//! ([`crate::cache`]) or Cranelift ([`compile`]). Which world and version it targets is checked
//! by its user (`task_store::version::check_world`) before anything is instantiated.

use crate::cache::{self, CacheOutcome};
use crate::sandbox::deadline::{self, EPOCH_TICK};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use wasmtime::component::Component;
use wasmtime::{Config, Engine, EngineWeak};

/// The file-store component built from `guest/file-store/`, embedded at compile time.
pub static FILE_STORE_COMPONENT: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/file_store.wasm"));

/// The echo agent built from `guest/agent-echo/` (`wasm:echo`), embedded at compile time; empty
/// in a build without that folder (a packaged copy of this crate).
pub static ECHO_AGENT_COMPONENT: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/agent_echo.wasm"));

/// The A2A conformance (TCK) agent built from `guest/agent-tck/` (`wasm:tck`), embedded at
/// compile time; empty in a build without that folder.
pub static TCK_AGENT_COMPONENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/agent_tck.wasm"));

/// Where a component comes from.
#[derive(Debug, Clone)]
pub enum ComponentSource {
    /// The file store built from this repository's `guest/file-store/` ([`FILE_STORE_COMPONENT`]).
    BuiltinFileStore,
    /// A component file on disk.
    File(PathBuf),
    /// Component bytes already in memory; the string names it in errors.
    Bytes { name: String, bytes: Arc<[u8]> },
}

impl ComponentSource {
    pub(crate) fn name(&self) -> String {
        match self {
            ComponentSource::BuiltinFileStore => "builtin file-store".into(),
            ComponentSource::File(path) => path.display().to_string(),
            ComponentSource::Bytes { name, .. } => name.clone(),
        }
    }
}

/// The process-wide engine, made on first use.
static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();

/// The process-wide engine: one engine lets every store share compiled code, and the epoch
/// thread ([`tick_epoch_of`]) advances its epoch for every per-call deadline.
pub(crate) fn engine() -> Result<&'static Engine, &'static String> {
    ENGINE
        .get_or_init(|| {
            let mut config = Config::new();
            config.wasm_component_model(true);
            config.epoch_interruption(true);
            let engine = Engine::new(&config)
                .map_err(|e| format!("cannot create the wasmtime engine: {e:#}"))?;
            tick_epoch_of(&engine)?;
            Ok(engine)
        })
        .as_ref()
}

/// Has the epoch thread advance `engine`'s epoch every [`EPOCH_TICK`] for as long as the engine
/// lives, starting the thread if it is not running yet. Every engine a store runs on needs it,
/// the process-wide one and an embedder's own (`crate::embed`): the per-call deadlines count
/// on those ticks, and the same thread fires the backstops ([`deadline::fire_backstops`]).
pub(crate) fn tick_epoch_of(engine: &Engine) -> Result<(), String> {
    static TICKED: Mutex<Vec<EngineWeak>> = Mutex::new(Vec::new());
    static THREAD: OnceLock<Result<(), String>> = OnceLock::new();
    {
        let mut ticked = TICKED.lock().unwrap_or_else(|e| e.into_inner());
        let known = ticked
            .iter()
            .any(|weak| weak.upgrade().is_some_and(|e| Engine::same(&e, engine)));
        if !known {
            ticked.push(engine.weak());
        }
    }
    THREAD
        .get_or_init(|| {
            std::thread::Builder::new()
                .name("toolnexus-epoch".into())
                .spawn(|| {
                    loop {
                        TICKED
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .retain(|weak| match weak.upgrade() {
                                Some(engine) => {
                                    engine.increment_epoch();
                                    true
                                }
                                None => false,
                            });
                        deadline::fire_backstops();
                        std::thread::sleep(EPOCH_TICK);
                    }
                })
                .map(drop)
                .map_err(|e| format!("cannot start the epoch thread: {e}"))
        })
        .clone()
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
    // The memo holds the process-wide engine's components only: a component runs on the engine
    // that compiled it, and one held here would keep an embedder's engine alive for good.
    let on_process_engine = ENGINE
        .get()
        .and_then(|made| made.as_ref().ok())
        .is_some_and(|process| Engine::same(process, engine));
    if memoize
        && on_process_engine
        && let Some(component) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(&digest)
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
    if on_process_engine {
        memo.lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(digest, component.clone());
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_backstop_is_ready_once_its_time_has_passed() {
        // The epoch thread, which fires backstops, comes with the engine.
        engine().expect("an engine");
        let started = std::time::Instant::now();
        let wait = std::time::Duration::from_millis(30);
        tokio::time::timeout(std::time::Duration::from_secs(30), deadline::backstop(wait))
            .await
            .expect("fired by the epoch thread");
        assert!(started.elapsed() >= wait, "not before its time");
    }
}

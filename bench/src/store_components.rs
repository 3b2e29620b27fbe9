//! Store components named on the command line (`--store-component LABEL=PATH.wasm`), such as the
//! JavaScript and Python stores, measured beside the built-in Rust file-store component: same
//! ops, sizes, durabilities and instance count, each in rows of its own (`wasm-LABEL`).

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use toolnexus::Durability;
use toolnexus::wasm::{CacheDir, ComponentSource, WasmTaskStore};
use toolnexus::wasm::{Sandboxed, SandboxedDir};

/// One `--store-component` argument.
#[derive(Debug, Clone)]
pub struct StoreComponent {
    /// The name its rows carry: `wasm-` and the label, beside the Rust component's `wasm`.
    pub store: String,
    /// The component file.
    pub path: PathBuf,
}

impl FromStr for StoreComponent {
    type Err = String;

    fn from_str(arg: &str) -> Result<Self, String> {
        let (label, path) = arg
            .split_once('=')
            .ok_or_else(|| format!("expected LABEL=PATH.wasm, got {arg:?}"))?;
        // The label becomes a row name and a JSON value: keep it one plain word.
        if label.is_empty()
            || !label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(format!(
                "the label {label:?} must be letters, digits, '-' or '_' (e.g. js=store.wasm)"
            ));
        }
        if path.is_empty() {
            return Err(format!("no component path after {label}="));
        }
        Ok(StoreComponent {
            store: format!("wasm-{label}"),
            path: PathBuf::from(path),
        })
    }
}

impl StoreComponent {
    pub fn source(&self) -> ComponentSource {
        ComponentSource::File(self.path.clone())
    }

    /// What an error names: the rows' store and the file they came from.
    pub fn describe(&self) -> String {
        format!("{} (component {})", self.store, self.path.display())
    }
}

/// Refuses two components under one label, which would mix their rows.
pub fn check_unique(components: &[StoreComponent]) -> Result<()> {
    for (i, c) in components.iter().enumerate() {
        if components[..i].iter().any(|d| d.store == c.store) {
            bail!("--store-component names {} twice", c.store);
        }
    }
    Ok(())
}

/// What every component store is given alike.
pub struct Sandbox {
    /// Instances (`--instances`); the store's default if `None`.
    pub instances: Option<usize>,
    /// The cap on one instance's memory (`--component-memory-mib`); the store's default if
    /// `None`.
    pub memory_bytes: Option<usize>,
    /// Where compiled components are kept ([`cache_dir`]).
    pub cache: CacheDir,
}

/// A component store over `dir`, its compiled form cached in `sandbox.cache`. Within one
/// process a component compiles once (the builder memoizes it), so its full and relaxed stores
/// share one compile.
pub fn open(
    source: ComponentSource,
    dir: PathBuf,
    durability: Durability,
    sandbox: &Sandbox,
) -> Result<WasmTaskStore> {
    let mut builder = WasmTaskStore::builder(source)
        .dir(dir)
        .durability(durability)
        .cache(sandbox.cache.clone());
    if let Some(n) = sandbox.instances {
        builder = builder.max_instances(n);
    }
    if let Some(bytes) = sandbox.memory_bytes {
        builder = builder.memory_limit(bytes);
    }
    Ok(builder.build()?)
}

/// Opens a named component, the error saying which one failed to load.
pub fn open_named(
    component: &StoreComponent,
    dir: PathBuf,
    durability: Durability,
    sandbox: &Sandbox,
) -> Result<WasmTaskStore> {
    open(component.source(), dir, durability, sandbox).with_context(|| {
        format!(
            "loading the store component {} ({})",
            component.path.display(),
            component.store
        )
    })
}

/// Where compiled components are kept across runs: beside the stores' data when `--workdir`
/// is given (so the large JavaScript and Python components compile once, not every run), else
/// the user's default cache.
pub fn cache_dir(workdir: Option<&Path>) -> CacheDir {
    match workdir {
        Some(dir) => CacheDir::At(dir.join("bench-component-cache")),
        None => CacheDir::Default,
    }
}

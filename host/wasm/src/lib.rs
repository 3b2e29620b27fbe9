//! [`WasmTaskStore`]: any component of the `toolnexus:task-store` world, run sandboxed by
//! wasmtime and adapted to [`TaskStore`].
//!
//! # Contract versions, and Task versions
//!
//! The host speaks one version of the contract, [`CONTRACT_VERSION`] (`wit/` in the repository;
//! its doc comments are the spec), and checks at load that a component exports
//! [`STORE_INTERFACE`] (or a semver-compatible patch version of it). A component of any other
//! version is refused with a message naming its version and ours; earlier versions were never
//! released, and `docs/write-your-own-store.md` ("Contract versions") says why no adapter is
//! kept.
//!
//! - Every stored Task has a **version**, 1 after its first save and one more with each later
//!   save, forgotten by `delete`. `get` returns it ([`TaskStore::get_versioned`]), and `save`
//!   takes a condition (any, absent, or exactly version *n*) and returns the new version
//!   ([`TaskStore::save_versioned`]); a condition that does not hold is
//!   [`StoreError::Conflict`] with the version stored. The host checks the answers: a version
//!   0, a conflict the condition rules out, or a new version that is not the one the condition
//!   implies (1 on absent, *n* + 1 on version *n*) is [`StoreError::Component`].
//! - `list` (the optional `catalog`) is newest status timestamp first (ties by id), filters by
//!   `status_timestamp_after` (passed as RFC 3339 text), reports [`TaskPage::total_size`], and
//!   a query the component calls invalid (a page token it did not make) is
//!   [`StoreError::InvalidQuery`].
//! - The optional `push-configs` interface ([`PUSH_CONFIGS_INTERFACE`]) keeps a Task's
//!   push-notification configs, set, got, listed and deleted by config id
//!   ([`TaskStore::save_push_config`] and the others; [`TaskStore::supports_push_configs`]
//!   says whether the component exports it). The host checks those answers too: a config that
//!   is not a JSON object with a non-empty string `id`, a `get` answering another id, or a
//!   `list` unsorted, with an id twice, or past its bounds (400 configs, 16 MiB) is
//!   [`StoreError::Component`].
//! - A write the component began but cannot say took effect (`outcome-unknown`) is
//!   [`StoreError::OutcomeUnknown`]: read again before retrying.
//!
//! Settings go to components that export the optional `config` interface: `durability`
//! ([`WasmTaskStoreBuilder::durability`], always passed) and `lock-lease-ms`
//! ([`WasmTaskStoreBuilder::lock_lease`], passed only when set).
//!
//! # What a store component can and cannot do
//!
//! The host grants a component exactly what its builder (or selector) grants, and nothing else:
//!
//! - **one directory**, preopened at guest path `/`, read-write or read-only; paths cannot leave
//!   it (`..`, absolute paths and symlinks that point outside all fail inside wasmtime-wasi),
//!   and it cannot create links;
//! - wall and monotonic clocks and random bytes;
//! - no environment variables, no arguments, empty stdin, stdout discarded, stderr discarded
//!   unless [`WasmTaskStoreBuilder::forward_stderr`] sends it to the host's `tracing` log;
//! - no network: TCP, UDP and name lookup are all denied;
//! - bounded resources: a cap on all linear memories of an instance together, a deadline per
//!   call that holds in wall-clock time (epoch interruption, and clock waits cut at it), at most
//!   1,024 host resources (open files, streams) per instance (8,192 shared out when there are
//!   more than 8 instances, at least 128 each), 512 MiB of memory for all instances together
//!   (a call starts only with room for its instance to grow as large as the largest), a disk
//!   quota on a read-write
//!   directory, and a maximum Task size in both directions ([`Limits`]);
//! - files it creates are 0600, and the directory, when the host creates it, 0700.
//!
//! What the host promises in return: a component that exceeds a limit, traps, or answers with
//! something that is not the Task asked for gets a typed error for that call
//! ([`StoreError::LimitExceeded`], [`StoreError::Component`]); the instance is discarded, never
//! reused; the store keeps serving with fresh instances. Calls run on one of at most
//! `max_instances` pooled instances (64 by default, within the memory budget), on Tokio's
//! blocking pool, except a `get` (on Linux), which
//! runs on the caller's async worker as long as it only computes (yielding every epoch tick) or
//! reads what the kernel has cached, and is moved to the pool before anything that would wait:
//! guest code never holds a worker, and a worker never waits on its file I/O (`sandbox::inline`).
//!
//! # Agent components
//!
//! [`agent`] runs components of the agent contract (`toolnexus:a2a@0.1.0`, `wit/a2a/`) in the
//! same sandbox, without a directory, behind the native `toolnexus_a2a_protocol::Agent` trait:
//! [`agent::WasmAgent`], built from a `wasm:` agent selector
//! ([`agent::agent_from_selector`]) or [`agent::WasmAgentBuilder`].
//!
//! This crate is the sandbox host only: the trait, `Task` and the errors come from
//! `toolnexus-core`, and `toolnexus::resolve_store` hands it every `wasm:` selector
//! ([`builder_from_selector`]). Where to look: `sandbox/` runs a component under the host's
//! grants and limits, whatever world it targets (the per-instance state and its parts, the
//! memory budget, deadlines, the policies, the one registry of replaced WASI functions, the
//! instance pool); `task_store/` is the `toolnexus:task-store` contract on top of it (the
//! contract's bindings, the builder, [`WasmTaskStore`] and the checks of its answers); loading
//! and the engine in `load.rs`, the compiled cache in `cache.rs`, `wasm:` selectors in
//! `selector.rs`.
//!
//! [`TaskStore`]: toolnexus_core::TaskStore
//! [`TaskStore::get_versioned`]: toolnexus_core::TaskStore::get_versioned
//! [`TaskStore::save_versioned`]: toolnexus_core::TaskStore::save_versioned
//! [`TaskStore::save_push_config`]: toolnexus_core::TaskStore::save_push_config
//! [`TaskStore::supports_push_configs`]: toolnexus_core::TaskStore::supports_push_configs
//! [`StoreError::Conflict`]: toolnexus_core::StoreError::Conflict
//! [`StoreError::OutcomeUnknown`]: toolnexus_core::StoreError::OutcomeUnknown
//! [`StoreError::InvalidQuery`]: toolnexus_core::StoreError::InvalidQuery
//! [`StoreError::Component`]: toolnexus_core::StoreError::Component
//! [`StoreError::LimitExceeded`]: toolnexus_core::StoreError::LimitExceeded
//! [`TaskPage::total_size`]: toolnexus_core::TaskPage::total_size

pub mod agent;
pub use sandbox::policy::outgoing_http;
mod cache;
pub mod embed;
pub mod http_component;
mod load;
pub mod message;
mod sandbox;
mod sandbox_options;
mod sandbox_spec;
mod selector;
mod task_store;

pub use cache::{CacheOutcome, default_cache_dir};
pub use load::{ComponentSource, ECHO_AGENT_COMPONENT, FILE_STORE_COMPONENT, TCK_AGENT_COMPONENT};
pub use sandbox::policy::descriptor_share::raise_descriptor_limit;
pub use sandbox::policy::quota::{DEFAULT_DISK_QUOTA, ENTRY_BYTES};
pub use sandbox_spec::{SandboxSpec, Sandboxed, SandboxedDir, SandboxedNetwork};
pub use selector::{BUILTIN_COMPONENT, WASM_OPTIONS, builder_from_selector};
pub use task_store::{
    CATALOG_INTERFACE, CONFIG_INTERFACE, CONTRACT_VERSION, CacheDir, DEFAULT_MAX_COMPONENT_BYTES,
    DEFAULT_MAX_INSTANCES, DEFAULT_MEMORY_TOTAL, Limits, LoadReport, PUSH_CONFIGS_INTERFACE,
    STORE_INTERFACE, STORE_PACKAGE, WasmTaskStore, WasmTaskStoreBuilder,
};

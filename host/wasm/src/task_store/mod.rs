//! The `toolnexus:task-store` contract on top of the sandbox: its bindings and version
//! ([`contract`], [`version`]), the world as the pool runs it ([`world`]), the builder
//! ([`builder`]) and [`WasmTaskStore`] ([`store`]) with its [`TaskStore`] methods and the
//! checks of their answers ([`calls`], the push configs' in [`push_calls`]), each one call on
//! the pool ([`store_op`]).
//!
//! [`TaskStore`]: toolnexus_core::TaskStore

mod builder;
mod calls;
mod contract;
mod limits;
mod push_calls;
mod store;
mod store_op;
mod version;
mod world;

pub use builder::{CacheDir, LoadReport, WasmTaskStoreBuilder};
pub use limits::{
    DEFAULT_MAX_COMPONENT_BYTES, DEFAULT_MAX_INSTANCES, DEFAULT_MEMORY_TOTAL, Limits,
};
pub use store::WasmTaskStore;
pub use version::{
    CATALOG_INTERFACE, CONFIG_INTERFACE, CONTRACT_VERSION, PUSH_CONFIGS_INTERFACE, STORE_INTERFACE,
    STORE_PACKAGE,
};

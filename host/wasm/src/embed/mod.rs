//! Embedding in a wasmtime-based agent runtime: store components on the runtime's own
//! [`Engine`] ([`WasmTaskStoreBuilder::engine`], checked by [`check_engine`]), and any
//! [`TaskStore`](toolnexus_core::TaskStore) served as the `toolnexus:task-store` imports of the
//! runtime's own components ([`add_task_store_to_linker`]). `docs/embedding.md` has an example.

mod engine_check;
mod imports;

pub use engine_check::{EngineError, check_engine};
pub use imports::{
    HasTaskStore, MAX_IMPORTED_PAGE_BYTES, MAX_IMPORTED_TASK_BYTES, add_task_store_to_linker,
};

use crate::load::tick_epoch_of;
use crate::task_store::WasmTaskStoreBuilder;
use wasmtime::Engine;

impl WasmTaskStoreBuilder {
    /// Runs the component on `engine`, the runtime's own, instead of the process-wide engine
    /// this crate makes: compiled code is then the runtime's to share (a component compiled on
    /// one engine cannot run on another).
    ///
    /// The engine must be made with:
    ///
    /// - `Config::epoch_interruption(true)`: each call's deadline (and its yields to other work
    ///   on an async worker) counts on epoch ticks. This crate's epoch thread then advances the
    ///   engine's epoch every 10 ms for as long as the engine lives; the runtime's own stores
    ///   on it see those ticks too (set their epoch deadlines accordingly), and the runtime may
    ///   advance the epoch as well: deadlines are measured in wall-clock time, so extra ticks
    ///   only add yields.
    /// - `Config::wasm_component_model(true)` (wasmtime's default).
    /// - no `Config::consume_fuel(true)`: the sandbox gives its stores no fuel.
    ///
    /// Async support needs no setting: in wasmtime 48 it is always on
    /// (`Config::async_support` has no effect). Memory settings are the runtime's: the sandbox
    /// caps linear memories through a store limiter, so any guard size, reservation or
    /// allocator works, but a pooling allocator must have room for the store's instances
    /// (up to [`max_instances`](Self::max_instances)) beside the runtime's own, with a
    /// `max_memory_size` of at least the memory limit, or instantiation fails.
    ///
    /// wasmtime does not let anyone read an engine's settings back, so they are checked by
    /// probes ([`check_engine`]: one tiny module compiled and run, a few milliseconds); a
    /// missing one is an [`EngineError`] naming it.
    pub fn engine(mut self, engine: Engine) -> Result<Self, EngineError> {
        check_engine(&engine)?;
        tick_epoch_of(&engine).map_err(EngineError::EpochThread)?;
        self.engine = Some(engine);
        Ok(self)
    }
}

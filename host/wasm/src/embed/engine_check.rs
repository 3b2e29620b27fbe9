//! Whether an embedder's engine can run the sandbox ([`check_engine`]), and what is missing when
//! it cannot ([`EngineError`]).
//!
//! wasmtime 48 does not let a caller read an [`Engine`]'s configuration back (its
//! `Config` keeps its settings private), so each setting is found by trying what depends on it:
//! a store's fuel answers only when fuel is on, an empty component compiles only with the
//! component model, and an empty function traps at its entry on a store whose epoch deadline
//! has passed only when the code checks epochs. The probes compile one tiny module (a few
//! milliseconds), once per check.

use std::fmt;
use wasmtime::component::Component;
use wasmtime::{Engine, Instance, Module, Store, Trap};

/// `(module (func (export "f")))`: a function that does nothing, so calling it runs no more
/// than the epoch check at its entry.
pub(crate) const EMPTY_FUNCTION_MODULE: &[u8] = &[
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // header, version 1
    0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // types: () -> ()
    0x03, 0x02, 0x01, 0x00, // functions: one of type 0
    0x07, 0x05, 0x01, 0x01, b'f', 0x00, 0x00, // exports: "f" = function 0
    0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b, // code: no locals, end
];

/// `(component)`: the empty component.
pub(crate) const EMPTY_COMPONENT: &[u8] = &[0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

/// A setting an embedder's engine lacks, or has and must not, for the sandbox to run on it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EngineError {
    /// `Config::epoch_interruption(true)` is missing: without it a call's deadline cannot stop
    /// guest code that computes forever, nor make it yield to other work on an async worker.
    EpochInterruptionOff,
    /// `Config::wasm_component_model(true)` is missing: stores are components.
    ComponentModelOff,
    /// `Config::consume_fuel(true)` is set: the sandbox bounds calls by deadline and gives its
    /// stores no fuel, so every call would trap at once.
    FuelConsumptionOn,
    /// The engine cannot compile or run code on this host (no compiler, another target): the
    /// message is wasmtime's.
    CannotRunCode(String),
    /// The thread that advances the engine's epoch could not be started.
    EpochThread(String),
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::EpochInterruptionOff => f.write_str(
                "the wasmtime engine lacks epoch interruption (Config::epoch_interruption(true)), \
                 which the sandbox needs to hold each call's deadline",
            ),
            EngineError::ComponentModelOff => f.write_str(
                "the wasmtime engine lacks the component model \
                 (Config::wasm_component_model(true)), and store components need it",
            ),
            EngineError::FuelConsumptionOn => f.write_str(
                "the wasmtime engine consumes fuel (Config::consume_fuel(true)); the sandbox \
                 bounds calls by deadline and gives its stores no fuel, so turn it off",
            ),
            EngineError::CannotRunCode(reason) => {
                write!(f, "the wasmtime engine cannot run code here: {reason}")
            }
            EngineError::EpochThread(reason) => {
                write!(f, "cannot drive the wasmtime engine's epoch: {reason}")
            }
        }
    }
}

impl std::error::Error for EngineError {}

impl From<EngineError> for toolnexus_core::StoreError {
    fn from(err: EngineError) -> Self {
        toolnexus_core::StoreError::Load {
            component: "(any: the engine is refused)".into(),
            reason: err.to_string(),
        }
    }
}

/// Checks that the sandbox can run on `engine`: the component model and epoch interruption on,
/// fuel consumption off, and code compiled by it runnable here. Each failure names the setting.
pub fn check_engine(engine: &Engine) -> Result<(), EngineError> {
    let mut store = Store::new(engine, ());
    if store.get_fuel().is_ok() {
        return Err(EngineError::FuelConsumptionOn);
    }
    if Component::new(engine, EMPTY_COMPONENT).is_err() {
        return Err(EngineError::ComponentModelOff);
    }
    let module = Module::new(engine, EMPTY_FUNCTION_MODULE)
        .map_err(|e| EngineError::CannotRunCode(format!("{e:#}")))?;
    let instance = Instance::new(&mut store, &module, &[])
        .map_err(|e| EngineError::CannotRunCode(format!("{e:#}")))?;
    let function = instance
        .get_typed_func::<(), ()>(&mut store, "f")
        .map_err(|e| EngineError::CannotRunCode(format!("{e:#}")))?;
    // A fresh store's epoch deadline has passed already (it is 0) and its default on reaching
    // it is a trap: code compiled with epoch checks traps at the function's entry.
    match function.call(&mut store, ()) {
        Ok(()) => Err(EngineError::EpochInterruptionOff),
        Err(e) if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) => Ok(()),
        Err(e) => Err(EngineError::CannotRunCode(format!("{e:#}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probes_are_what_they_say() {
        assert_eq!(
            EMPTY_FUNCTION_MODULE,
            wat::parse_str(r#"(module (func (export "f")))"#).unwrap()
        );
        assert_eq!(EMPTY_COMPONENT, wat::parse_str("(component)").unwrap());
    }
}

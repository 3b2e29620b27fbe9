//! The bindings of the three versions of the contract, each generated for the world with every
//! interface of its version. Only `store` is required of a component; the others are each
//! looked up on their own and used when present.

/// Contract 0.3.0 (`wit/`): 0.2's interfaces unchanged, and `push-configs`.
mod generated_0_3 {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "push-task-store",
        exports: { default: async },
    });
}

/// Contract 0.2.0 (`wit/0.2.0/`, frozen).
mod generated_0_2 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.2.0",
        world: "lean-full-task-store",
        exports: { default: async },
    });
}

/// Contract 0.1.0 (`wit/0.1.0/`, frozen).
mod generated_0_1 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.1.0",
        world: "full-task-store",
        exports: { default: async },
    });
}

pub(crate) use generated_0_1::exports::toolnexus::task_store as v0_1;
pub(crate) use generated_0_2::exports::toolnexus::task_store as v0_2;
pub(crate) use generated_0_3::exports::toolnexus::task_store as v0_3;

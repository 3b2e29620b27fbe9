//! The bindings of the contract (`wit/`), generated for the world with every interface. Only
//! `store` is required of a component; the others are each looked up on their own and used
//! when present.

mod generated {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "push-task-store",
        exports: { default: async },
    });
}

pub(crate) use generated::exports::toolnexus::task_store as wit;

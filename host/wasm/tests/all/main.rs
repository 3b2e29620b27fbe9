//! The integration tests of `toolnexus-wasm`, in one test binary.

mod contracts;
mod embedding;

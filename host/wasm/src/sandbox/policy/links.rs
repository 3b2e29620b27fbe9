//! No links: a store component cannot create symbolic or hard links, even inside its own
//! directory.
//!
//! wasmtime-wasi already refuses links whose target is absolute, and never lets the component
//! itself follow one out of its directory. But a relative link that climbs out
//! (`etcdir -> ../../../../etc`) is still created, and everything else that reads the directory
//! (the native `FileTaskStore`, backup tools, another program) would follow it. A task store has
//! no use for links, so `symlink-at` and `link-at` answer `not-permitted` ([`refuse`]).

use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode;

/// The answer to `symlink-at` and `link-at`, whatever they are asked.
pub(crate) fn refuse() -> Result<(), ErrorCode> {
    Err(ErrorCode::NotPermitted)
}

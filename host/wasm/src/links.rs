//! No links: a store component cannot create symbolic or hard links, even inside its own
//! directory.
//!
//! wasmtime-wasi already refuses links whose target is absolute, and never lets the component
//! itself follow one out of its directory. But a relative link that climbs out
//! (`etcdir -> ../../../../etc`) is still created, and everything else that reads the directory
//! (the native `FileTaskStore`, backup tools, another program) would follow it. A task store has
//! no use for links, so `symlink-at` and `link-at` answer `not-permitted`.

use crate::pool::Host;
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::bindings::filesystem::types::{ErrorCode, PathFlags};

/// The interface whose link functions are replaced; wasmtime links every `0.2.x` import to it.
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// Replaces `descriptor.symlink-at` and `descriptor.link-at` in `linker` (after WASI was added
/// to it) with functions that refuse.
pub(crate) fn refuse_links(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    types.func_wrap(
        "[method]descriptor.symlink-at",
        |_: StoreContextMut<'_, Host>,
         (_dir, _target, _name): (Resource<Descriptor>, String, String)| {
            Ok((Err::<(), _>(ErrorCode::NotPermitted),))
        },
    )?;
    types.func_wrap(
        "[method]descriptor.link-at",
        |_: StoreContextMut<'_, Host>,
         (_dir, _flags, _old, _new_dir, _new): (
            Resource<Descriptor>,
            PathFlags,
            String,
            Resource<Descriptor>,
            String,
        )| { Ok((Err::<(), _>(ErrorCode::NotPermitted),)) },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

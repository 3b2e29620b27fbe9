//! No special files: a FIFO, a socket or a device under the directory is never opened for a
//! component (`open-at` answers `not-permitted`).
//!
//! The open of a FIFO waits in the kernel for a writer, without bound and out of reach of the
//! call's deadline, holding a blocking thread all along; a device's open can have effects
//! outside the directory. A name swapped for something else between this look and the open is
//! not caught by it: that takes another writer of the directory racing the component (and the
//! host's own open of a regular file, `sandbox::open`, does not wait on a FIFO even then).

use crate::sandbox::descriptors;
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::filesystem::Descriptor;

/// What a look at a name before opening it found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Look {
    /// A FIFO, a socket or a device, which the host never opens for a component.
    Special,
    Regular,
    /// Anything else: a directory, a link not followed, nothing (the real call says why).
    Other,
}

/// What `path` under `dir` names (Linux; elsewhere [`Look::Other`]).
///
/// A single name not followed, off an async worker (`on_worker`), is looked at with one
/// `fstatat` of it in `dir`, which cannot leave `dir`; anything else through an `O_PATH`
/// handle resolved beneath `dir` (an `openat2`, an `fstat` and a `close`).
pub(crate) fn look(
    table: &ResourceTable,
    dir: &Resource<Descriptor>,
    path: &str,
    follow: bool,
    on_worker: bool,
) -> Look {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::FileType;
        let kind = match descriptors::stat_name(table, dir, path, follow, on_worker) {
            Some(found) => found.map(|st| st.st_mode),
            None => {
                let Some(found) = descriptors::path_handle(table, dir, path, follow) else {
                    return Look::Other;
                };
                rustix::fs::fstat(&found).map(|st| st.st_mode)
            }
        };
        match kind.map(FileType::from_raw_mode) {
            Ok(FileType::RegularFile) => Look::Regular,
            Ok(
                FileType::Fifo
                | FileType::Socket
                | FileType::CharacterDevice
                | FileType::BlockDevice,
            ) => Look::Special,
            _ => Look::Other,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (table, dir, path, follow, on_worker, descriptors::again);
        Look::Other
    }
}

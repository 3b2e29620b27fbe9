//! Private files: a file the component creates is its owner's alone (0600 on Unix), as the
//! native store's are, whatever the umask lets through. The directory the host creates is 0700
//! already.

use crate::sandbox::open::{OpenRequest, open_here};
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::bindings::filesystem::types::{DescriptorFlags, OpenFlags};

/// An exclusive create (`create` and `exclusive`, nothing else), made here: 0600 in one
/// system call ([`open_here`]; `cached`: resolved from the kernel's cache only). `None` where
/// that does not apply or the create failed; the real create then runs, and
/// [`make_private`] follows it.
pub(crate) fn create_private(
    table: &mut ResourceTable,
    dir: &Resource<Descriptor>,
    path: &str,
    open_flags: OpenFlags,
    flags: DescriptorFlags,
    cached: bool,
) -> wasmtime::Result<Option<Resource<Descriptor>>> {
    if open_flags != OpenFlags::CREATE | OpenFlags::EXCLUSIVE {
        return Ok(None);
    }
    let request = OpenRequest {
        create: true,
        follow: false,
        flags,
        cached,
    };
    open_here(table, dir, path, request)
}

/// Makes a file the component just created through wasmtime-wasi 0600. Best effort.
pub(crate) fn make_private(table: &ResourceTable, file: &Resource<Descriptor>) {
    #[cfg(unix)]
    if let Ok(Descriptor::File(file)) = table.get(file) {
        use std::os::unix::fs::PermissionsExt;
        let _ = file
            .file
            .set_permissions(std::fs::Permissions::from_mode(0o600));
    }
    #[cfg(not(unix))]
    let _ = (table, file);
}

//! Looks at the guest's descriptors and at the names under them, without opening anything for
//! the guest: shared by the policies that must know what a call is about to touch.

use std::sync::Arc;
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::filesystem::Descriptor;

/// The open file behind a descriptor, if it is a file.
pub(crate) fn open_file(
    table: &ResourceTable,
    fd: &Resource<Descriptor>,
) -> Option<Arc<std::fs::File>> {
    match table.get(fd) {
        Ok(Descriptor::File(file)) => Some(Arc::clone(&file.file)),
        _ => None,
    }
}

/// A second handle on a borrowed descriptor, for a look before the real call takes the first.
pub(crate) fn again(fd: &Resource<Descriptor>) -> Resource<Descriptor> {
    Resource::new_borrow(fd.rep())
}

/// A handle on what a name names, held without opening it ([`path_handle`]).
#[cfg(target_os = "linux")]
pub(crate) type Held = rustix::fd::OwnedFd;
#[cfg(not(target_os = "linux"))]
pub(crate) type Held = ();

/// A handle on what `path` under `dir` names, for looking at it or holding it without opening
/// it: `O_PATH` (which reads, writes and waits for nothing, whatever the file is), resolved
/// beneath `dir`, a final link followed only if `follow`. Linux only; `None` elsewhere, and when
/// nothing is there (or the name escapes, …: the real call reports that).
pub(crate) fn path_handle(
    table: &ResourceTable,
    dir: &Resource<Descriptor>,
    path: &str,
    follow: bool,
) -> Option<Held> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{Mode, OFlags, ResolveFlags};
        let Ok(Descriptor::Dir(dir)) = table.get(dir) else {
            return None;
        };
        let mut flags = OFlags::PATH | OFlags::CLOEXEC;
        if !follow {
            flags |= OFlags::NOFOLLOW;
        }
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        rustix::fs::openat2(&*dir.dir, path, flags, Mode::empty(), resolve).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (table, dir, path, follow);
        None
    }
}

/// Whether `path` is one name: not empty, not `.` or `..`, no `/` (nor a NUL, which no name
/// holds). Such a name, not followed, names an entry of the directory it is looked up in and
/// nothing beyond it, without `openat2`'s `RESOLVE_BENEATH`.
fn single_name(path: &str) -> bool {
    !path.is_empty() && path != "." && path != ".." && !path.contains(['/', '\0'])
}

/// `fstatat` of the single name `path` in `dir`, not followed (Linux): `None` where that does not
/// apply (a path of more than one name, a followed link, a call on an async worker
/// (`on_worker`), where a look must come from the kernel's cache alone, `dir` not a directory),
/// and then the caller looks through a handle ([`path_handle`]).
#[cfg(target_os = "linux")]
pub(crate) fn stat_name(
    table: &ResourceTable,
    dir: &Resource<Descriptor>,
    path: &str,
    follow: bool,
    on_worker: bool,
) -> Option<rustix::io::Result<rustix::fs::Stat>> {
    if follow || !single_name(path) || on_worker {
        return None;
    }
    let Ok(Descriptor::Dir(dir)) = table.get(dir) else {
        return None;
    };
    Some(rustix::fs::statat(
        &*dir.dir,
        path,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_one_plain_name_is_a_single_name() {
        for name in ["task.json", "a", ".hidden", "..."] {
            assert!(single_name(name), "{name}");
        }
        for path in ["", ".", "..", "a/b", "/a", "a\0b"] {
            assert!(!single_name(path), "{path:?}");
        }
    }
}

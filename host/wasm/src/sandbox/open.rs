//! Opening a file for the guest in one system call, where wasmtime-wasi's `open-at` takes two
//! or three ([`open_here`]): used for a plain open of a regular file and for a private
//! (0600) exclusive create.

use crate::sandbox::inline;
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::OpenMode;
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::bindings::filesystem::types::DescriptorFlags;

/// What [`open_here`] is asked to open.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpenRequest {
    /// Create it (exclusively, 0600).
    pub(crate) create: bool,
    /// Follow a final link (never when creating).
    pub(crate) follow: bool,
    /// What the guest asked to be allowed.
    pub(crate) flags: DescriptorFlags,
    /// Resolve the name from the kernel's cache only (a call running inline).
    pub(crate) cached: bool,
}

/// Opens `path` under `dir` for the guest, as wasmtime-wasi's `open-at` would open it for
/// `flags` without `open-flags` (`create`: with `create` and `exclusive`), in one system call
/// where wasmtime-wasi takes two or three:
///
/// - an existing name, just found to be a regular file (inline by the lookup from the
///   kernel's cache, otherwise by a look at it), is opened without a second look at what was
///   opened (the look was just taken; the guest's `stat` of what it gets tells it the rest).
///   `cached`, it is resolved from the kernel's cache only, and the call is stopped if it has
///   left it since the look. The open never blocks on a FIFO swapped in after the look
///   (`O_NONBLOCK`, which a regular file ignores);
/// - a create makes the file 0600 as it creates it, where wasmtime-wasi's `open-at` cannot
///   take a mode. A final link is never followed.
///
/// Names resolve beneath `dir` as wasmtime-wasi resolves them (`openat2` with
/// `RESOLVE_BENEATH` and `RESOLVE_NO_MAGICLINKS`). `None` where this does not apply (other
/// flags, a write to a read-only directory, not Linux) or the open failed (nothing was created
/// then): the real call then opens, or says why it cannot, in wasmtime-wasi's words. `Err` (a
/// trap, as from wasmtime-wasi) if the instance holds too many handles to be given the file.
pub(crate) fn open_here(
    table: &mut ResourceTable,
    dir: &Resource<Descriptor>,
    path: &str,
    request: OpenRequest,
) -> wasmtime::Result<Option<Resource<Descriptor>>> {
    let OpenRequest {
        create,
        follow,
        flags,
        cached,
    } = request;
    if !(DescriptorFlags::READ | DescriptorFlags::WRITE).contains(flags) {
        return Ok(None);
    }
    // As wasmtime-wasi opens a file: a create writes; a file is read unless asked only to be
    // written.
    let write = create || flags.contains(DescriptorFlags::WRITE);
    let mode = match (flags != DescriptorFlags::WRITE, write) {
        (true, true) => OpenMode::READ | OpenMode::WRITE,
        (false, true) => OpenMode::WRITE,
        _ => OpenMode::READ,
    };
    let Ok(Descriptor::Dir(found)) = table.get(dir) else {
        return Ok(None);
    };
    if write && found.perms.write_not_permitted() {
        return Ok(None);
    }
    let perms = found.perms;
    let how = Open {
        create,
        follow,
        mode,
        cached,
    };
    let Some(file) = open_beneath(&found.dir, path, how)? else {
        return Ok(None);
    };
    // Every instance's WASI context lets file I/O block the thread of the call
    // (`sandbox::pool`): so does this file.
    let file = wasmtime_wasi::filesystem::File::new(file, perms, mode, true);
    Ok(Some(table.push(Descriptor::File(file))?))
}

/// How [`open_beneath`] opens a name.
#[derive(Debug, Clone, Copy)]
struct Open {
    /// Create it (exclusively, 0600).
    create: bool,
    /// Follow a final link (never when creating).
    follow: bool,
    mode: OpenMode,
    /// Resolve the name from the kernel's cache only.
    cached: bool,
}

#[cfg(target_os = "linux")]
fn open_beneath(
    dir: &std::fs::File,
    path: &str,
    how: Open,
) -> wasmtime::Result<Option<std::fs::File>> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;
    let access = match (
        how.mode.contains(OpenMode::READ),
        how.mode.contains(OpenMode::WRITE),
    ) {
        (true, true) => OFlags::RDWR,
        (false, true) => OFlags::WRONLY,
        _ => OFlags::RDONLY,
    };
    let mut flags = access | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    let mut mode = Mode::empty();
    if how.create {
        flags |= OFlags::CREATE | OFlags::EXCL;
        mode = Mode::from_raw_mode(0o600);
    }
    if how.create || !how.follow {
        flags |= OFlags::NOFOLLOW;
    }
    let mut resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    if how.cached {
        resolve |= ResolveFlags::CACHED;
    }
    match rustix::fs::openat2(dir, path, flags, mode, resolve) {
        Ok(fd) => Ok(Some(std::fs::File::from(fd))),
        Err(Errno::AGAIN) if how.cached => Err(inline::stop(
            "a lookup of a name not in the kernel's cache",
            false,
        )),
        Err(_) => Ok(None),
    }
}

#[cfg(not(target_os = "linux"))]
fn open_beneath(
    _dir: &std::fs::File,
    _path: &str,
    _how: Open,
) -> wasmtime::Result<Option<std::fs::File>> {
    let _ = inline::stop;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn the_host_opens_as_asked_waits_on_no_fifo_and_creates_files_private() {
        use std::io::{Read, Write};
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("task.json"), "{}").unwrap();
        std::os::unix::fs::symlink("task.json", tmp.path().join("link")).unwrap();
        let fifo = std::ffi::CString::new(tmp.path().join("fifo").to_str().unwrap()).unwrap();
        // SAFETY: a plain call with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let dir = std::fs::File::open(tmp.path()).unwrap();
        let mut text = String::new();
        open_beneath(&dir, "task.json", reading(false, true))
            .unwrap()
            .expect("a cached regular file opens")
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "{}");
        let writing = Open {
            mode: OpenMode::WRITE,
            ..reading(false, false)
        };
        let mut file = open_beneath(&dir, "task.json", writing)
            .unwrap()
            .expect("opens for writing");
        file.write_all(b"[]").unwrap();
        assert!(file.read(&mut [0; 2]).is_err(), "opened only to write");
        assert_eq!(std::fs::read(tmp.path().join("task.json")).unwrap(), b"[]");
        // A link is not followed unless asked to be, and nothing escapes the directory.
        assert!(matches!(
            open_beneath(&dir, "link", reading(false, false)),
            Ok(None)
        ));
        assert!(
            open_beneath(&dir, "link", reading(true, false))
                .unwrap()
                .is_some()
        );
        assert!(matches!(
            open_beneath(&dir, "../x", reading(false, false)),
            Ok(None)
        ));
        // A FIFO swapped in after the look: the open returns at once, without a writer.
        let opened = open_beneath(&dir, "fifo", reading(false, false)).unwrap();
        assert!(opened.is_some(), "opened without waiting for a writer");
        // A create makes the file private whatever the umask, and only if nothing is there.
        let create = Open {
            create: true,
            mode: OpenMode::WRITE,
            ..reading(false, false)
        };
        assert!(open_beneath(&dir, "new", create).unwrap().is_some());
        let made = std::fs::metadata(tmp.path().join("new")).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&made.permissions()) & 0o777,
            0o600
        );
        assert!(
            matches!(open_beneath(&dir, "new", create), Ok(None)),
            "exclusive"
        );
        assert!(
            matches!(open_beneath(&dir, "link", create), Ok(None)),
            "never through a link"
        );
    }

    #[cfg(target_os = "linux")]
    fn reading(follow: bool, cached: bool) -> Open {
        Open {
            create: false,
            follow,
            mode: OpenMode::READ,
            cached,
        }
    }
}

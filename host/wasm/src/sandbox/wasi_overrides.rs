//! Every WASI function the host replaces, registered in one place ([`add_to_linker`]), each
//! calling into the policies that concern it:
//!
//! | function of `wasi:filesystem/types` | inline (`sandbox::inline`) | and |
//! |---|---|---|
//! | `write`, `set-size` | never | quota charge |
//! | `write-via-stream`, `append-via-stream` | never (nor a write through a stream kept from an earlier call) | quota-counted stream, written in place |
//! | `read-via-stream` | — | stream read in place, counted as holding the file |
//! | `open-at` | cached names; never a create or truncate | special files refused, private creates, fenced exclusive creates, quota |
//! | `create-directory-at` | never | quota charge |
//! | `unlink-file-at`, `remove-directory-at` | never | quota credit |
//! | `rename-at` | never | refused for a file another writer holds (`policy::fences`), quota credit |
//! | `sync` | never | shared directory flush (`sandbox::dir_sync`) |
//! | `sync-data`, `advise`, `set-times`, `set-times-at`, `read-directory`, `read-directory-entry` | never | — |
//! | `read` | page cache only | read in place (`sandbox::direct_io`) |
//! | `stat-at`, `readlink-at`, `metadata-hash-at` | cached names | — |
//! | `symlink-at`, `link-at` | — | refused (`policy::links`) |
//!
//! and `subscribe-duration` and `subscribe-instant` of `wasi:clocks/monotonic-clock`, cut at
//! the call's deadline (`policy::clock`). wasmtime links every `0.2.x` import to the
//! interfaces named here.

use crate::sandbox::descriptors;
use crate::sandbox::direct_io::{self, NotRead};
use crate::sandbox::inline;
use crate::sandbox::open::{OpenRequest, open_here};
use crate::sandbox::policy::quota::{self, ENTRY_BYTES};
use crate::sandbox::policy::special_files::{self, Look};
use crate::sandbox::policy::{clock, links, private_files, quota_streams};
use crate::sandbox::state::InstanceState;
use crate::sandbox::wasi_resources::WasiResources;
use std::sync::Arc;
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource, ResourceTable};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    Advice, DescriptorFlags, ErrorCode, Filesize, Host as TypesHost, HostDescriptor,
    HostDirectoryEntryStream, NewTimestamp, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, FsError, FsResult, ReaddirIterator};

/// The filesystem interface whose functions are replaced.
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";
/// The clock interface whose subscriptions are replaced.
const MONOTONIC_CLOCK: &str = "wasi:clocks/monotonic-clock@0.2.12";

type Cx<'a> = StoreContextMut<'a, InstanceState>;
type Fd = Resource<Descriptor>;

/// Adds WASI to `linker`, and then the host's replacements of the functions in the table
/// above.
pub(crate) fn add_to_linker(linker: &mut Linker<InstanceState>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    linker.allow_shadowing(true);
    filesystem_writes(linker)?;
    filesystem_names(linker)?;
    filesystem_waits(linker)?;
    filesystem_reads(linker)?;
    clock_subscriptions(linker)?;
    linker.allow_shadowing(false);
    Ok(())
}

/// The answer of a replaced call: a WASI error code, or a trap when the call trapped.
type Answer<T> = wasmtime::Result<(Result<T, ErrorCode>,)>;

fn answer<T>(wasi: &mut WasiResources, result: FsResult<T>) -> Answer<T> {
    match result {
        Ok(value) => Ok((Ok(value),)),
        Err(e) => Ok((Err(TypesHost::convert_error_code(
            &mut wasi.filesystem(),
            e,
        )?),)),
    }
}

fn no_space<T>() -> Answer<T> {
    Ok((Err(ErrorCode::InsufficientSpace),))
}

/// Writes to files: charged against the quota before they happen, never inline.
fn filesystem_writes(linker: &mut Linker<InstanceState>) -> wasmtime::Result<()> {
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    types.func_wrap_async(
        "[method]descriptor.write",
        |mut cx: Cx<'_>, (fd, buf, offset): (Fd, Vec<u8>, Filesize)| {
            Box::new(async move {
                let s = cx.data_mut();
                s.inline.refuse("write")?;
                let mut charged = 0;
                // Held from the look at the length to the write (`DiskQuota::sizes`).
                let _sizes = match &s.quota {
                    Some(quota) => {
                        let file = quota::file_identity(&s.wasi.table, &fd);
                        Some(quota.lock_sizes(file).await)
                    }
                    None => None,
                };
                if let Some(quota) = &s.quota {
                    let end = offset.saturating_add(buf.len() as u64);
                    charged = quota::file_len(&s.wasi.table, &fd)
                        .map_or(0, |len| end.saturating_sub(len));
                    if !quota.charge(charged) {
                        return no_space();
                    }
                }
                let result = HostDescriptor::write(&mut s.wasi.filesystem(), fd, buf, offset).await;
                if result.is_err()
                    && let Some(quota) = &s.quota
                {
                    quota.credit(charged);
                }
                answer(&mut s.wasi, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.set-size",
        |mut cx: Cx<'_>, (fd, size): (Fd, Filesize)| {
            Box::new(async move {
                let s = cx.data_mut();
                s.inline.refuse("set-size")?;
                let Some(quota) = s.quota.clone() else {
                    let result = HostDescriptor::set_size(&mut s.wasi.filesystem(), fd, size).await;
                    return answer(&mut s.wasi, result);
                };
                let _sizes = quota
                    .lock_sizes(quota::file_identity(&s.wasi.table, &fd))
                    .await;
                let len = quota::file_len(&s.wasi.table, &fd).unwrap_or(0);
                let growth = size.saturating_sub(len);
                if !quota.charge(growth) {
                    return no_space();
                }
                let result = HostDescriptor::set_size(&mut s.wasi.filesystem(), fd, size).await;
                match &result {
                    Ok(()) => quota.credit(len.saturating_sub(size)),
                    Err(_) => quota.credit(growth),
                }
                answer(&mut s.wasi, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.write-via-stream",
        |mut cx: Cx<'_>, (fd, offset): (Fd, Filesize)| {
            Box::new(async move {
                let s = cx.data_mut();
                s.inline.refuse("write-via-stream")?;
                let file = descriptors::open_file(&s.wasi.table, &fd);
                let result =
                    match HostDescriptor::write_via_stream(&mut s.wasi.filesystem(), fd, offset) {
                        Ok(stream) => counted_output(s, stream, Some(offset), file),
                        Err(e) => Err(e),
                    };
                answer(&mut s.wasi, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.append-via-stream",
        |mut cx: Cx<'_>, (fd,): (Fd,)| {
            Box::new(async move {
                let s = cx.data_mut();
                s.inline.refuse("append-via-stream")?;
                let file = descriptors::open_file(&s.wasi.table, &fd);
                let result = match HostDescriptor::append_via_stream(&mut s.wasi.filesystem(), fd) {
                    Ok(stream) => counted_output(s, stream, None, file),
                    Err(e) => Err(e),
                };
                answer(&mut s.wasi, result)
            })
        },
    )?;
    Ok(())
}

/// Swaps a file's new output stream, for a read-write directory (one with a quota), for one
/// written in place ([`direct_io::writes_here`]) and counted against the quota
/// ([`quota_streams::counted`]): `position` is where a write stream starts (`None` for an
/// append stream), `file` the file it writes.
fn counted_output(
    s: &mut InstanceState,
    stream: Resource<DynOutputStream>,
    position: Option<u64>,
    file: Option<Arc<std::fs::File>>,
) -> FsResult<Resource<DynOutputStream>> {
    let Some(quota) = s.quota.clone() else {
        return Ok(stream);
    };
    let inline = s.inline.on_worker.clone();
    swap(&mut s.wasi.table, stream, |inner: DynOutputStream| {
        let inner = direct_io::writes_here(inner, position, file.as_ref(), &inline);
        quota_streams::counted(&quota, inner, position, file, &inline)
    })
}

/// Replaces the stream behind `stream` with what `wrap` makes of it.
fn swap<S: Send + 'static>(
    table: &mut ResourceTable,
    stream: Resource<S>,
    wrap: impl FnOnce(S) -> S,
) -> FsResult<Resource<S>> {
    let inner = table.delete(stream)?;
    Ok(table.push(wrap(inner))?)
}

/// Calls that make or remove names: never inline; special files are never opened, creates are
/// private, and what they add or free is counted against the quota.
fn filesystem_names(linker: &mut Linker<InstanceState>) -> wasmtime::Result<()> {
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    types.func_wrap_async(
        "[method]descriptor.open-at",
        |mut cx: Cx<'_>,
         (fd, path_flags, path, open_flags, flags): (
            Fd,
            PathFlags,
            String,
            OpenFlags,
            DescriptorFlags,
        )| {
            Box::new(async move {
                let s = cx.data_mut();
                // Every open takes a descriptor of the process's share first.
                if !s.descriptors.take_one() {
                    return Ok((Err(ErrorCode::InsufficientMemory),));
                }
                let opened = open_at(s, fd, path_flags, path, open_flags, flags).await;
                match &opened {
                    Ok((Ok(file),)) => {
                        // The quota knows which files the pool's instances hold.
                        if let (Some(quota), Some(held)) =
                            (&s.quota, descriptors::open_file(&s.wasi.table, file))
                        {
                            quota.opened(&held);
                        }
                    }
                    _ => s.descriptors.give_back_one(),
                }
                opened
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.create-directory-at",
        |mut cx: Cx<'_>, (fd, path): (Fd, String)| {
            Box::new(async move {
                let s = cx.data_mut();
                s.inline.refuse("create-directory-at")?;
                if let Some(quota) = &s.quota
                    && !quota.charge(ENTRY_BYTES)
                {
                    return no_space();
                }
                let result =
                    HostDescriptor::create_directory_at(&mut s.wasi.filesystem(), fd, path).await;
                if let (Err(_), Some(quota)) = (&result, &s.quota) {
                    quota.credit(ENTRY_BYTES);
                }
                answer(&mut s.wasi, result)
            })
        },
    )?;
    for (name, unlink) in [
        ("[method]descriptor.unlink-file-at", true),
        ("[method]descriptor.remove-directory-at", false),
    ] {
        types.func_wrap_async(name, move |mut cx: Cx<'_>, (fd, path): (Fd, String)| {
            Box::new(async move {
                let s = cx.data_mut();
                s.inline.refuse(if unlink {
                    "unlink-file-at"
                } else {
                    "remove-directory-at"
                })?;
                let (freed, file) = match s.quota.is_some() {
                    true => (
                        quota::entry_bytes(&mut s.wasi, &fd, &path).await,
                        quota::name_identity(&s.wasi.table, &fd, &path),
                    ),
                    false => (None, None),
                };
                let result = if unlink {
                    HostDescriptor::unlink_file_at(&mut s.wasi.filesystem(), fd, path).await
                } else {
                    HostDescriptor::remove_directory_at(&mut s.wasi.filesystem(), fd, path).await
                };
                if let (Ok(()), Some(quota), Some(bytes)) = (&result, &s.quota, freed) {
                    quota.defer_credit(file, bytes);
                    quota::settle(quota, &mut s.wasi.table);
                }
                answer(&mut s.wasi, result)
            })
        })?;
    }
    types.func_wrap_async(
        "[method]descriptor.rename-at",
        |mut cx: Cx<'_>, (fd, old, new_fd, new): (Fd, String, Fd, String)| {
            Box::new(async move {
                let s = cx.data_mut();
                s.inline.refuse("rename-at")?;
                // A file another writer holds under its kernel lock is not moved (`fences`).
                let Ok(fenced) = s.fences.check_rename(&s.wasi.table, &fd, &old) else {
                    return Ok((Err(ErrorCode::Busy),));
                };
                // What the destination held, if anything, is freed by the rename, unless it is
                // the very file being renamed (a rename onto itself frees nothing).
                let held = quota::hold_replaced(&s.wasi.table, &new_fd, &new);
                let on_worker = s.inline.running_inline();
                let replaced = match s.quota.is_some() {
                    true => {
                        let (old, new) = ((&fd, old.as_str()), (&new_fd, new.as_str()));
                        quota::replaced_bytes(&mut s.wasi, old, new, held.as_ref(), on_worker).await
                    }
                    false => None,
                };
                let replaced_file = quota::held_identity(held.as_ref());
                let result =
                    HostDescriptor::rename_at(&mut s.wasi.filesystem(), fd, old, new_fd, new).await;
                drop((held, fenced));
                if let (Ok(()), Some(quota), Some(bytes)) = (&result, &s.quota, replaced) {
                    quota.defer_credit(replaced_file, bytes);
                    quota::settle(quota, &mut s.wasi.table);
                }
                answer(&mut s.wasi, result)
            })
        },
    )?;
    types.func_wrap(
        "[method]descriptor.symlink-at",
        |_: Cx<'_>, (_dir, _target, _name): (Fd, String, String)| Ok((links::refuse(),)),
    )?;
    types.func_wrap(
        "[method]descriptor.link-at",
        |_: Cx<'_>, (_dir, _flags, _old, _new_dir, _new): (Fd, PathFlags, String, Fd, String)| {
            Ok((links::refuse(),))
        },
    )?;
    Ok(())
}

/// `open-at` under every policy that concerns it (after the descriptor share's charge, which
/// its caller takes and gives back).
async fn open_at(
    s: &mut InstanceState,
    fd: Fd,
    path_flags: PathFlags,
    path: String,
    open_flags: OpenFlags,
    flags: DescriptorFlags,
) -> wasmtime::Result<(Result<Fd, ErrorCode>,)> {
    // Only a create or a truncate changes what the directory holds.
    let changes = open_flags.intersects(OpenFlags::CREATE | OpenFlags::TRUNCATE);
    if changes {
        s.inline.refuse("open-at with create or truncate")?;
    }
    let follow = path_flags.contains(PathFlags::SYMLINK_FOLLOW);
    s.inline.check_lookup(&s.wasi.table, &fd, &path, follow)?;
    let on_worker = s.inline.running_inline();
    // An exclusive create opens nothing that is there already; a name just found
    // to be a file or a directory need not be looked at again.
    let exclusive = open_flags.contains(OpenFlags::CREATE | OpenFlags::EXCLUSIVE);
    let found = match s.inline.checked(&fd, &path) {
        _ if exclusive => Look::Other,
        Some(true) => Look::Regular,
        Some(false) => Look::Other,
        None => special_files::look(&s.wasi.table, &fd, &path, follow, on_worker),
    };
    if found == Look::Special {
        return Ok((Err(ErrorCode::NotPermitted),));
    }
    // A plain open of a regular file, opened here without a second look at it.
    let plain = OpenRequest {
        create: false,
        follow,
        flags,
        cached: on_worker,
    };
    if found == Look::Regular
        && open_flags == OpenFlags::empty()
        && let Some(file) = open_here(&mut s.wasi.table, &fd, &path, plain)?
    {
        return Ok((Ok(file),));
    }
    let quota = s.quota.clone().filter(|_| changes);
    // A truncation is measured against the length: from the look to the open, no other size
    // change in the pool (`DiskQuota::sizes`).
    let _sizes = match &quota {
        Some(quota) if open_flags.contains(OpenFlags::TRUNCATE) => {
            let file = quota::open_target_identity(&s.wasi.table, &fd, &path, follow);
            Some(quota.lock_sizes(file).await)
        }
        _ => None,
    };
    // What an exclusive create would replace is nothing: it fails if anything is
    // there (and gives back what it was charged), so there is nothing to look at.
    let before = match &quota {
        Some(_) if !exclusive => quota::entry_bytes(&mut s.wasi, &fd, &path).await,
        _ => None,
    };
    let creates = quota.is_some() && before.is_none() && open_flags.contains(OpenFlags::CREATE);
    if let Some(quota) = &quota
        && creates
        && !quota.charge(ENTRY_BYTES)
    {
        return no_space();
    }
    let made_private =
        private_files::create_private(&mut s.wasi.table, &fd, &path, open_flags, flags, on_worker)?;
    let (result, private) = match made_private {
        Some(file) => (Ok(file), true),
        None => {
            let result = HostDescriptor::open_at(
                &mut s.wasi.filesystem(),
                fd,
                path_flags,
                path,
                open_flags,
                flags,
            )
            .await;
            (result, false)
        }
    };
    if let (Ok(file), true) = (&result, exclusive) {
        s.fences.fence_created(&s.wasi.table, file);
    }
    if let Some(quota) = &quota {
        match (&result, before) {
            (Ok(file), _) if creates && !private => {
                private_files::make_private(&s.wasi.table, file)
            }
            (Err(_), _) if creates => quota.credit(ENTRY_BYTES),
            (Ok(_), Some(bytes)) if open_flags.contains(OpenFlags::TRUNCATE) => {
                quota.credit(bytes.saturating_sub(ENTRY_BYTES))
            }
            _ => {}
        }
    }
    answer(&mut s.wasi, result)
}

/// Calls that may wait for the disk and change nothing the quota counts: never inline.
fn filesystem_waits(linker: &mut Linker<InstanceState>) -> wasmtime::Result<()> {
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    types.func_wrap_async("[method]descriptor.sync", |mut cx: Cx<'_>, (fd,): (Fd,)| {
        Box::new(async move {
            let s = cx.data_mut();
            s.inline.refuse("sync")?;
            // A directory's flush is shared with the other instances syncing it now.
            #[cfg(target_os = "linux")]
            if let Ok(Descriptor::Dir(dir)) = s.wasi.table.get(&fd) {
                let dir = Arc::clone(&dir.dir);
                let synced = crate::sandbox::dir_sync::sync_shared(&dir);
                return answer(&mut s.wasi, synced.map_err(FsError::from));
            }
            let result = HostDescriptor::sync(&mut s.wasi.filesystem(), fd).await;
            answer(&mut s.wasi, result)
        })
    })?;
    types.func_wrap_async(
        "[method]descriptor.sync-data",
        |mut cx: Cx<'_>, (fd,): (Fd,)| {
            Box::new(async move {
                let s = cx.data_mut();
                s.inline.refuse("sync-data")?;
                let result = HostDescriptor::sync_data(&mut s.wasi.filesystem(), fd).await;
                answer(&mut s.wasi, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.advise",
        |mut cx: Cx<'_>, (fd, offset, len, advice): (Fd, Filesize, Filesize, Advice)| {
            Box::new(async move {
                let s = cx.data_mut();
                // `posix_fadvise` may start reading (`will-need`): not on an async worker.
                s.inline.refuse("advise")?;
                let result =
                    HostDescriptor::advise(&mut s.wasi.filesystem(), fd, offset, len, advice).await;
                answer(&mut s.wasi, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.set-times",
        |mut cx: Cx<'_>, (fd, atime, mtime): (Fd, NewTimestamp, NewTimestamp)| {
            Box::new(async move {
                let s = cx.data_mut();
                s.inline.refuse("set-times")?;
                let result =
                    HostDescriptor::set_times(&mut s.wasi.filesystem(), fd, atime, mtime).await;
                answer(&mut s.wasi, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.set-times-at",
        |mut cx: Cx<'_>,
         (fd, flags, path, atime, mtime): (Fd, PathFlags, String, NewTimestamp, NewTimestamp)| {
            Box::new(async move {
                let s = cx.data_mut();
                s.inline.refuse("set-times-at")?;
                let result = HostDescriptor::set_times_at(
                    &mut s.wasi.filesystem(),
                    fd,
                    flags,
                    path,
                    atime,
                    mtime,
                )
                .await;
                answer(&mut s.wasi, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.read-directory",
        |mut cx: Cx<'_>, (fd,): (Fd,)| {
            Box::new(async move {
                let s = cx.data_mut();
                s.inline.refuse("read-directory")?;
                let result = HostDescriptor::read_directory(&mut s.wasi.filesystem(), fd).await;
                answer(&mut s.wasi, result)
            })
        },
    )?;
    // A directory stream made in an earlier call (on a blocking thread) and kept: reading it
    // lists the directory.
    types.func_wrap_async(
        "[method]directory-entry-stream.read-directory-entry",
        |mut cx: Cx<'_>, (stream,): (Resource<ReaddirIterator>,)| {
            Box::new(async move {
                let s = cx.data_mut();
                s.inline.refuse("read-directory-entry")?;
                let result = HostDirectoryEntryStream::read_directory_entry(
                    &mut s.wasi.filesystem(),
                    stream,
                )
                .await;
                answer(&mut s.wasi, result)
            })
        },
    )?;
    Ok(())
}

/// Reads and looks: done on the thread of the call, and inline only from the kernel's caches.
fn filesystem_reads(linker: &mut Linker<InstanceState>) -> wasmtime::Result<()> {
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    types.func_wrap_async(
        "[method]descriptor.read",
        |mut cx: Cx<'_>, (fd, len, offset): (Fd, Filesize, Filesize)| {
            Box::new(async move {
                let s = cx.data_mut();
                if let Some(file) = descriptors::open_file(&s.wasi.table, &fd) {
                    let inline = s.inline.running_inline();
                    return match direct_io::read_positional(&file, len, offset, inline) {
                        Ok(read) => Ok((Ok(read),)),
                        Err(NotRead::Wait(why)) => Err(inline::read_stop(why)),
                        Err(NotRead::Failed(e)) => answer(&mut s.wasi, Err(FsError::from(e))),
                    };
                }
                // Not a file: wasmtime-wasi says what is wrong.
                let result = HostDescriptor::read(&mut s.wasi.filesystem(), fd, len, offset).await;
                answer(&mut s.wasi, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.read-via-stream",
        |mut cx: Cx<'_>, (fd, offset): (Fd, Filesize)| {
            Box::new(async move {
                let s = cx.data_mut();
                let file = descriptors::open_file(&s.wasi.table, &fd);
                let result =
                    match HostDescriptor::read_via_stream(&mut s.wasi.filesystem(), fd, offset) {
                        Ok(stream) => read_in_place(s, stream, offset, file),
                        Err(e) => Err(e),
                    };
                answer(&mut s.wasi, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.stat-at",
        |mut cx: Cx<'_>, (fd, flags, path): (Fd, PathFlags, String)| {
            Box::new(async move {
                let s = cx.data_mut();
                let follow = flags.contains(PathFlags::SYMLINK_FOLLOW);
                s.inline.check_lookup(&s.wasi.table, &fd, &path, follow)?;
                let result =
                    HostDescriptor::stat_at(&mut s.wasi.filesystem(), fd, flags, path).await;
                answer(&mut s.wasi, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.readlink-at",
        |mut cx: Cx<'_>, (fd, path): (Fd, String)| {
            Box::new(async move {
                let s = cx.data_mut();
                s.inline.check_lookup(&s.wasi.table, &fd, &path, false)?;
                let result = HostDescriptor::readlink_at(&mut s.wasi.filesystem(), fd, path).await;
                answer(&mut s.wasi, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.metadata-hash-at",
        |mut cx: Cx<'_>, (fd, flags, path): (Fd, PathFlags, String)| {
            Box::new(async move {
                let s = cx.data_mut();
                let follow = flags.contains(PathFlags::SYMLINK_FOLLOW);
                s.inline.check_lookup(&s.wasi.table, &fd, &path, follow)?;
                let result =
                    HostDescriptor::metadata_hash_at(&mut s.wasi.filesystem(), fd, flags, path)
                        .await;
                answer(&mut s.wasi, result)
            })
        },
    )?;
    Ok(())
}

/// Swaps a file's new input stream (its permission checks done) for one that reads on the
/// thread of the call ([`direct_io::reads_here`]) and, for a read-write directory, is counted
/// as holding the file ([`quota_streams::held`]).
fn read_in_place(
    s: &mut InstanceState,
    stream: Resource<DynInputStream>,
    offset: u64,
    file: Option<Arc<std::fs::File>>,
) -> FsResult<Resource<DynInputStream>> {
    let quota = s.quota.clone();
    if file.is_none() && quota.is_none() {
        return Ok(stream);
    }
    let inline = s.inline.on_worker.clone();
    let held_file = file.clone();
    swap(&mut s.wasi.table, stream, |inner: DynInputStream| {
        let inner = direct_io::reads_here(inner, offset, file, &inline);
        match &quota {
            Some(quota) => quota_streams::held(quota, inner, held_file.as_deref()),
            None => inner,
        }
    })
}

/// The monotonic clock's subscriptions, never waiting past the call's deadline.
fn clock_subscriptions(linker: &mut Linker<InstanceState>) -> wasmtime::Result<()> {
    let mut monotonic = linker.instance(MONOTONIC_CLOCK)?;
    monotonic.func_wrap(
        "subscribe-duration",
        |mut store: Cx<'_>, (nanos,): (u64,)| {
            let s = store.data_mut();
            let wanted = clock::after_duration(nanos);
            Ok((clock::subscribe_until(
                &mut s.deadline,
                &mut s.wasi.table,
                wanted,
            )?,))
        },
    )?;
    monotonic.func_wrap("subscribe-instant", |mut store: Cx<'_>, (when,): (u64,)| {
        let s = store.data_mut();
        let wanted = clock::guest_instant(s.deadline.guest_clock, when);
        Ok((clock::subscribe_until(
            &mut s.deadline,
            &mut s.wasi.table,
            wanted,
        )?,))
    })?;
    Ok(())
}

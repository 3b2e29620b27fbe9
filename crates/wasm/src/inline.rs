//! Calls on the caller's async worker thread.
//!
//! Handing a call to Tokio's blocking pool and back costs two thread switches, most of a small
//! `get` (tens of microseconds on a small VM, against a few for the call itself). So a `get` runs
//! where its caller awaits it, as an async wasmtime call on a fiber, when an idle instance is
//! ready, and everything else (saves, deletes, lists, instantiation) still runs on the blocking
//! pool. What a call on a worker may do is bounded, so that a component, whatever it does,
//! cannot hold the worker:
//!
//! - **Compute:** the guest yields to the executor at every epoch tick and traps at its
//!   deadline ([`crate::pool`]); a clock wait is an async sleep.
//! - **File I/O:** reads, `stat`s and opens for reading run right there, as they do on a
//!   blocking thread (page-cache work for a store's `get`). Anything that changes the
//!   directory or waits for the disk (writes, `set-size`, `set-times`, syncs, creates,
//!   truncates, renames, unlinks, new directories, write streams) is never done inline: the
//!   host stops the call there with [`NeedsBlocking`] before doing any of it, drops the
//!   instance, and runs the call again on the blocking pool, under the same deadline, with the
//!   same permit. Nothing was changed by the first attempt, so the second is the call. The
//!   store then runs all of its `get`s on the blocking pool: a component that writes in `get`
//!   would pay for the retry each time.

use crate::pool::Host;
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{HostDescriptor, NewTimestamp, PathFlags};

/// Why a call running inline was stopped: it asked for a file operation that may wait (named).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NeedsBlocking(pub(crate) &'static str);

impl std::fmt::Display for NeedsBlocking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` may wait for the disk: the call is retried on a blocking thread",
            self.0
        )
    }
}

impl std::error::Error for NeedsBlocking {}

/// `Err` (a trap carrying [`NeedsBlocking`]) if the call in progress runs inline.
pub(crate) fn check(host: &Host, op: &'static str) -> wasmtime::Result<()> {
    match host.inline {
        true => Err(wasmtime::Error::new(NeedsBlocking(op))),
        false => Ok(()),
    }
}

/// What stopped a call that needed a blocking thread, if that is why it failed.
pub(crate) fn needs_blocking(err: &wasmtime::Error) -> Option<NeedsBlocking> {
    err.chain()
        .find_map(|cause| cause.downcast_ref::<NeedsBlocking>())
        .copied()
}

/// The interface whose functions are wrapped; wasmtime links every `0.2.x` import to it.
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// Wraps the functions of `wasi:filesystem/types` that wait for the disk and that no other
/// wrapper ([`crate::quota`], [`crate::links`]) checks already: `sync`, `sync-data`,
/// `set-times` and `set-times-at` (after WASI was added to `linker`).
pub(crate) fn guard_waits(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    types.func_wrap_async(
        "[method]descriptor.sync",
        |mut cx: StoreContextMut<'_, Host>, (fd,): (Resource<Descriptor>,)| {
            Box::new(async move {
                let host = cx.data_mut();
                check(host, "sync")?;
                let result = HostDescriptor::sync(&mut host.filesystem(), fd).await;
                crate::quota::answer(host, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.sync-data",
        |mut cx: StoreContextMut<'_, Host>, (fd,): (Resource<Descriptor>,)| {
            Box::new(async move {
                let host = cx.data_mut();
                check(host, "sync-data")?;
                let result = HostDescriptor::sync_data(&mut host.filesystem(), fd).await;
                crate::quota::answer(host, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.set-times",
        |mut cx: StoreContextMut<'_, Host>,
         (fd, atime, mtime): (Resource<Descriptor>, NewTimestamp, NewTimestamp)| {
            Box::new(async move {
                let host = cx.data_mut();
                check(host, "set-times")?;
                let result =
                    HostDescriptor::set_times(&mut host.filesystem(), fd, atime, mtime).await;
                crate::quota::answer(host, result)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.set-times-at",
        |mut cx: StoreContextMut<'_, Host>,
         (fd, flags, path, atime, mtime): (
            Resource<Descriptor>,
            PathFlags,
            String,
            NewTimestamp,
            NewTimestamp,
        )| {
            Box::new(async move {
                let host = cx.data_mut();
                check(host, "set-times-at")?;
                let result = HostDescriptor::set_times_at(
                    &mut host.filesystem(),
                    fd,
                    flags,
                    path,
                    atime,
                    mtime,
                )
                .await;
                crate::quota::answer(host, result)
            })
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

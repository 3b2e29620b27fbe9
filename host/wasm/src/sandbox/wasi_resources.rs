//! An instance's WASI context and resource table: what the guest is granted (at most one
//! preopened directory, clocks and random bytes, no network, no environment, no arguments,
//! empty stdin, stdout discarded, stderr discarded or logged) and the host resources it holds.

use crate::sandbox::deadline::GuestClock;
use crate::sandbox::stderr_log;
use std::path::Path;
use toolnexus_core::StoreError;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// What a fresh instance's WASI context grants.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Grant<'a> {
    /// Names the component in logs and errors.
    pub(crate) name: &'a str,
    /// The one directory, preopened at guest path `/`; `None` grants no file system at all
    /// (an agent component).
    pub(crate) dir: Option<&'a Path>,
    pub(crate) read_only: bool,
    /// Sends the guest's stderr, line by line, to the host's `tracing` log.
    pub(crate) forward_stderr: bool,
    /// The guest's monotonic clock.
    pub(crate) clock: GuestClock,
    /// The most host resources (open files, streams, pollables) the instance may hold at once.
    pub(crate) max_handles: usize,
}

/// The WASI context of an instance and the table of the host resources it holds.
pub(crate) struct WasiResources {
    pub(crate) ctx: WasiCtx,
    pub(crate) table: ResourceTable,
}

impl WasiResources {
    /// A context granting what `grant` says and nothing else.
    pub(crate) fn new(grant: Grant<'_>) -> Result<Self, StoreError> {
        let mut wasi = WasiCtxBuilder::new();
        // Calls run where file I/O may happen (a blocking thread, or a worker within what
        // `sandbox::inline` lets through): let it happen right there instead of bouncing every
        // syscall through another thread. Must precede `preopened_dir`.
        wasi.allow_blocking_current_thread(true);
        wasi.allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        if grant.forward_stderr {
            wasi.stderr(stderr_log::LogStderr::new(grant.name));
        }
        wasi.monotonic_clock(grant.clock);
        let perms = if grant.read_only {
            FsPerms::ReadOnly
        } else {
            FsPerms::ReadWrite
        };
        if let Some(dir) = grant.dir {
            wasi.preopened_dir(dir, "/", perms).map_err(|e| {
                StoreError::io(
                    format!("cannot open directory {} for {}", dir.display(), grant.name),
                    std::io::Error::other(format!("{e:#}")),
                )
            })?;
        }
        let mut table = ResourceTable::new();
        table.set_max_capacity(grant.max_handles);
        Ok(WasiResources {
            ctx: wasi.build(),
            table,
        })
    }
}

impl WasiView for WasiResources {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }
}

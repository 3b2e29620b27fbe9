//! The instance pool: each call takes an idle instance (or instantiates a fresh one with its
//! own WASI context and limits), arms its deadline, and gives it back afterwards, unless it
//! trapped or hit a limit, in which case it is dropped and never reused. At most
//! `max_instances` exist at once (the semaphore in [`Inner`]).

use crate::clock::{CallDeadline, GuestClock};
use crate::contract::{Api, Exports, WitError};
use crate::inline::InlineFlag;
use crate::message::sanitize;
use crate::quota::{DiskQuota, QuotaHandle};
use crate::{Limits, stderr_log};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::Semaphore;
use toolnexus_core::{Limit, StoreError};
use wasmtime::component::{InstancePre, ResourceTable, ResourceTableError};
use wasmtime::{ResourceLimiter, Store, StoreContextMut, Trap, UpdateDeadline};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

pub(crate) struct Inner {
    pub(crate) name: String,
    pub(crate) dir: PathBuf,
    /// The disk quota's count for a read-write directory ([`crate::quota`]).
    pub(crate) disk: Option<Arc<DiskQuota>>,
    pub(crate) pre: InstancePre<Host>,
    /// The component's exports, of the contract version it targets.
    pub(crate) exports: Exports,
    /// Passed to `config.configure` of every fresh instance, if the component exports it.
    pub(crate) settings: Vec<(String, String)>,
    pub(crate) read_only: bool,
    pub(crate) forward_stderr: bool,
    /// Whether this is the built-in file store, whose Task files the host can name: a `get`
    /// answer that is not the Task asked for is then reported as that file's corruption.
    pub(crate) names_task_files: bool,
    pub(crate) limits: Limits,
    pub(crate) idle: Mutex<Vec<Instance>>,
    /// One permit per instance that may exist; a call holds one from before it takes an
    /// instance until the guest code has returned, on its blocking thread, even if the caller
    /// stopped waiting.
    pub(crate) permits: Arc<Semaphore>,
    /// The most instances kept idle between calls (the same as the permits).
    pub(crate) max_idle: usize,
    /// Whether `get`s run on the caller's task ([`crate::inline`]): until
    /// [`MAX_INLINE_STOPS`] of them asked for something never done there.
    pub(crate) inline_gets: AtomicBool,
    /// How many `get`s running inline asked for something never done there (not counting what
    /// the kernel's cache decided).
    pub(crate) inline_stops: AtomicU32,
}

/// After this many `get`s asked for something never done on an async worker, a store's `get`s
/// run on the blocking pool directly. Not after the first: a component may do one-time work
/// (a sweep, a directory to create) in its first call, and an instance created on the blocking
/// pool does it there, so such a component stops at most once per instance made idle at load.
pub(crate) const MAX_INLINE_STOPS: u32 = 3;

pub(crate) struct Instance {
    pub(crate) store: Store<Host>,
    pub(crate) api: Api,
}

impl Instance {
    /// Resets the call's deadline (for wasm code and for clock waits), where it runs (`inline`:
    /// on an async worker, see [`crate::inline`]) and the memory-limit flag before a call.
    pub(crate) fn arm(&mut self, deadline: Instant, inline: bool) {
        let host = self.store.data_mut();
        host.limiter.hit = false;
        if let Some(quota) = &host.quota {
            quota.reset();
        }
        host.deadline = CallDeadline {
            at: deadline,
            hit: false,
        };
        host.inline.set(inline);
        host.inline_checked = None;
        self.store.set_epoch_deadline(1);
    }

    /// Whether the instance holds more host resources than a store needs between calls.
    pub(crate) fn leaks_handles(&mut self) -> bool {
        self.store.data_mut().table.iter_mut().count() > MAX_HANDLES_BETWEEN_CALLS
    }

    /// Whether a write of the call was refused for the disk quota.
    pub(crate) fn hit_quota(&self) -> bool {
        self.store
            .data()
            .quota
            .as_ref()
            .is_some_and(QuotaHandle::hit)
    }

    /// Whether the call asked to wait past its deadline (see [`crate::clock`]).
    pub(crate) fn hit_deadline(&self) -> bool {
        self.store.data().deadline.hit
    }
}

/// Per-instance host state: the WASI context with its single preopen, the memory limiter, and
/// the deadline of the call in progress with the guest's clock.
pub(crate) struct Host {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) deadline: CallDeadline,
    pub(crate) clock: GuestClock,
    /// The store's disk quota, for a read-write directory.
    pub(crate) quota: Option<QuotaHandle>,
    /// The call in progress runs on an async worker thread: file operations that may wait long
    /// (writes, syncs, renames, …) must not run here ([`crate::inline`]).
    pub(crate) inline: InlineFlag,
    /// The last file or directory found cached in this call
    /// ([`crate::inline::check_lookup`]): the handle of the directory it is under, its path.
    pub(crate) inline_checked: Option<crate::inline::Checked>,
}

impl Drop for Host {
    /// Dropping the instance closes every file it held, so what its unlinks and replacing
    /// renames freed is free now.
    fn drop(&mut self) {
        if let Some(quota) = &self.quota {
            quota.settle_all();
        }
    }
}

impl WasiView for Host {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Refuses memory growth past the cap and remembers that it did, so a trap that follows can be
/// reported as the limit it is.
pub(crate) struct MemoryLimiter {
    /// The cap on all linear memories of the instance together.
    pub(crate) memory_bytes: usize,
    /// What its linear memories hold now, together.
    pub(crate) total: usize,
    pub(crate) hit: bool,
}

/// The most host resources (open files, streams, pollables) an instance may hold at once. Each
/// open file is a host descriptor, so this bounds what one instance can take of the process's
/// descriptors; `open` past it fails inside the guest.
pub(crate) const MAX_HANDLES: usize = 1024;

/// An instance that still holds more host resources than this after a call leaks them (a store
/// needs a handful: its directory, its standard streams); it is dropped instead of pooled, which
/// closes them.
pub(crate) const MAX_HANDLES_BETWEEN_CALLS: usize = 64;

/// Core instances, tables and linear memories an instance may create: far more than a store, a
/// composition of a few components or a JavaScript engine needs, far fewer than wasmtime's
/// default of 10,000 each.
const MAX_CORE_INSTANCES: usize = 64;
const MAX_TABLES: usize = 64;
const MAX_MEMORIES: usize = 16;

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self.total.saturating_sub(current).saturating_add(desired);
        if total > self.memory_bytes {
            self.hit = true;
            return Ok(false);
        }
        self.total = total;
        Ok(true)
    }

    fn instances(&self) -> usize {
        MAX_CORE_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1 << 20)
    }
}

/// At every epoch tick ([`crate::EPOCH_TICK`]) while wasm code runs: past the call's deadline, a
/// trap ([`Trap::Interrupt`], reported as the timeout); before it, a yield to the executor and
/// on. A call running on an async worker ([`crate::inline`]) so shares its thread with other
/// work at least once a tick, however long the guest computes.
fn on_epoch_tick(cx: StoreContextMut<'_, Host>) -> wasmtime::Result<UpdateDeadline> {
    if Instant::now() >= cx.data().deadline.at {
        return Ok(UpdateDeadline::Interrupt);
    }
    Ok(UpdateDeadline::Yield(1))
}

impl Inner {
    /// A fresh instance, configured. On a thread that may block (never inline): `configure`
    /// may do any file I/O.
    pub(crate) async fn instantiate(&self) -> Result<Instance, StoreError> {
        let mut wasi = WasiCtxBuilder::new();
        // Calls run where file I/O may happen (a blocking thread, or a worker within what
        // `crate::inline` lets through): let it happen right there instead of bouncing every
        // syscall through another thread. Must precede `preopened_dir`.
        wasi.allow_blocking_current_thread(true);
        wasi.allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        if self.forward_stderr {
            wasi.stderr(stderr_log::LogStderr::new(&self.name));
        }
        let clock = GuestClock {
            start: std::time::Instant::now(),
        };
        wasi.monotonic_clock(clock);
        let perms = if self.read_only {
            FsPerms::ReadOnly
        } else {
            FsPerms::ReadWrite
        };
        wasi.preopened_dir(&self.dir, "/", perms).map_err(|e| {
            StoreError::io(
                format!(
                    "cannot open directory {} for {}",
                    self.dir.display(),
                    self.name
                ),
                std::io::Error::other(format!("{e:#}")),
            )
        })?;
        let host = Host {
            wasi: wasi.build(),
            table: {
                let mut table = ResourceTable::new();
                table.set_max_capacity(MAX_HANDLES);
                table
            },
            limiter: MemoryLimiter {
                memory_bytes: self.limits.memory_bytes,
                total: 0,
                hit: false,
            },
            // Instantiating and `configure` run under the same deadline as a call.
            deadline: CallDeadline::after(self.limits.timeout),
            clock,
            quota: self.disk.clone().map(QuotaHandle::new),
            inline: InlineFlag::default(),
            inline_checked: None,
        };
        let mut store = Store::new(self.pre.engine(), host);
        store.limiter(|host| &mut host.limiter);
        store.epoch_deadline_callback(on_epoch_tick);
        store.set_epoch_deadline(1);
        let setup = self.setup(&mut store).await;
        if store.data().deadline.hit {
            return Err(self.limit_error(Limit::Timeout(self.limits.timeout)));
        }
        if let (Some(disk), Some(quota)) = (&self.disk, &store.data().quota)
            && quota.hit()
            && !matches!(setup, Ok(Ok(_)))
        {
            return Err(self.limit_error(Limit::Disk(disk.limit)));
        }
        match setup {
            Ok(Ok(api)) => Ok(Instance { store, api }),
            Ok(Err(refused)) => {
                Err(self.component_error(format!("refused its settings: {}", sanitize(&refused))))
            }
            Err(e) => {
                let limit = self.classify_trap(&store, &e);
                Err(limit.unwrap_or_else(|| {
                    self.component_error(sanitize(&format!("instantiation failed: {e:#}")))
                }))
            }
        }
    }

    /// Instantiates and, if the component exports `config`, configures it. The inner `Err` is
    /// the component refusing its settings.
    pub(crate) async fn setup(
        &self,
        store: &mut Store<Host>,
    ) -> wasmtime::Result<Result<Api, String>> {
        let instance = self.pre.instantiate_async(&mut *store).await?;
        self.exports.setup(store, &instance, &self.settings).await
    }

    pub(crate) fn take_idle(&self) -> Option<Instance> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop()
    }

    /// Back to the idle pool, unless it is full (then the instance is dropped).
    pub(crate) fn release(&self, instance: Instance) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < self.max_idle {
            idle.push(instance);
        }
    }

    pub(crate) fn component_error(&self, reason: String) -> StoreError {
        StoreError::Component {
            component: self.name.clone(),
            reason,
        }
    }

    pub(crate) fn limit_error(&self, limit: Limit) -> StoreError {
        StoreError::LimitExceeded {
            component: self.name.clone(),
            limit,
        }
    }

    /// A trap caused by a limit, as that limit.
    pub(crate) fn classify_trap(
        &self,
        store: &Store<Host>,
        err: &wasmtime::Error,
    ) -> Option<StoreError> {
        if err.downcast_ref::<Trap>() == Some(&Trap::Interrupt) || store.data().deadline.hit {
            return Some(self.limit_error(Limit::Timeout(self.limits.timeout)));
        }
        if store.data().limiter.hit {
            return Some(self.limit_error(Limit::Memory(self.limits.memory_bytes)));
        }
        let table_full = err.chain().any(|cause| {
            matches!(
                cause.downcast_ref::<ResourceTableError>(),
                Some(ResourceTableError::Full)
            )
        });
        if table_full {
            return Some(self.limit_error(Limit::Handles(MAX_HANDLES)));
        }
        None
    }

    pub(crate) fn trap_error(&self, instance: &Instance, err: wasmtime::Error) -> StoreError {
        self.classify_trap(&instance.store, &err)
            .unwrap_or_else(|| self.component_error(sanitize(&format!("trapped: {err:#}"))))
    }

    /// A component's own error, its message made safe to show ([`sanitize`]).
    pub(crate) fn wit_error(&self, err: WitError) -> StoreError {
        match err {
            // The host checked the input before the call, so a refusal is the component's own
            // rule (a policy such as lifecycle-guard's), not malformed input.
            WitError::InvalidInput(msg) => StoreError::Rejected {
                store: format!("store component {}", self.name),
                reason: sanitize(&msg),
            },
            WitError::Corrupt(msg) => StoreError::Corrupt {
                location: format!("{} (store component {})", self.dir.display(), self.name),
                reason: sanitize(&msg),
            },
            WitError::Io(msg) => StoreError::io(
                format!("store component {} over {}", self.name, self.dir.display()),
                std::io::Error::other(sanitize(&msg)),
            ),
            WitError::Other(msg) => self.component_error(sanitize(&msg)),
            // Only a conditional `save` can conflict, and its caller takes that answer before
            // it gets here ([`crate::WasmTaskStore::save_versioned`]).
            WitError::Conflict(conflict) => self.component_error(format!(
                "answered \"conflict\" to a call that has no condition: {}",
                sanitize(&conflict.message)
            )),
        }
    }
}

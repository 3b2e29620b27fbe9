//! The instance pool: each call takes an idle instance (or instantiates a fresh one with its
//! own WASI context and limits), arms its deadline, and gives it back afterwards, unless it
//! trapped or hit a limit, in which case it is dropped and never reused. At most
//! `max_instances` exist at once (the semaphore in [`Inner`]), and together their linear
//! memories hold at most the store's memory budget ([`MemoryBudget`]): a call starts only while
//! the budget has room for its instance to grow as large as the largest seen, and otherwise
//! waits for an instance to come back.

use crate::clock::{CallDeadline, GuestClock};
use crate::contract::{Api, Exports, WitError};
use crate::inline::InlineFlag;
use crate::message::sanitize;
use crate::quota::{DiskQuota, QuotaHandle};
use crate::{Limits, stderr_log};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{Notify, Semaphore};
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
    /// The linear memories of all instances together ([`MemoryBudget`]).
    pub(crate) budget: Arc<MemoryBudget>,
    /// The most host resources one instance may hold at once ([`handles_per_instance`]).
    pub(crate) max_handles: usize,
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
        host.limiter.hit = None;
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

/// Refuses memory growth past the instance's cap or past the store's budget, and remembers
/// which, so a trap that follows can be reported as the limit it is.
pub(crate) struct MemoryLimiter {
    /// The cap on all linear memories of the instance together.
    pub(crate) memory_bytes: usize,
    /// What its linear memories hold now, together.
    pub(crate) total: usize,
    /// What this instance holds of the store's budget: at least `total`, and during a call
    /// enough to grow to what the largest call needed ([`MemoryBudget::reserve`]); given back
    /// when the instance is dropped.
    pub(crate) share: Share,
    /// The limit a refused growth hit in the current call.
    pub(crate) hit: Option<Limit>,
}

/// The store's budget for the linear memories of all its instances together
/// ([`crate::Limits::memory_total_bytes`]). Each instance holds a share of it ([`MemoryLimiter`]),
/// given back when the instance is dropped. A call starts only with room in the budget for its
/// instance to grow to the most any instance has held (before any call has finished: to the
/// per-instance cap), and otherwise waits for an instance to come back; so a component whose
/// instances are small runs many calls at once, one whose instances are large runs fewer, and
/// as many calls as fit at the cap (8 by default) always can. A growth past the budget is
/// refused like one past the instance's cap: that takes a call needing more than any before it
/// while the budget is spread over many.
#[derive(Debug)]
pub(crate) struct MemoryBudget {
    pub(crate) limit: usize,
    /// The per-instance cap ([`crate::Limits::memory_bytes`]).
    cap: usize,
    used: AtomicUsize,
    /// The most an instance held when a call on it came back (its memories together; they
    /// never shrink). A call that traps is not counted: its instance is dropped.
    largest: AtomicUsize,
    /// Whether a call has come back, so that `largest` is what calls need.
    measured: AtomicBool,
    /// Calls running now.
    running: AtomicUsize,
    /// Woken when an instance comes back to the pool or gives its share back.
    pub(crate) freed: Notify,
}

impl MemoryBudget {
    pub(crate) fn new(limit: usize, cap: usize) -> Self {
        MemoryBudget {
            limit,
            cap,
            used: AtomicUsize::new(0),
            largest: AtomicUsize::new(0),
            measured: AtomicBool::new(false),
            running: AtomicUsize::new(0),
            freed: Notify::new(),
        }
    }

    /// Takes `bytes` of the budget, if they fit.
    fn take(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|sum| *sum <= self.limit)
            })
            .is_ok()
    }

    fn give_back(&self, bytes: usize) {
        if bytes > 0 {
            self.used.fetch_sub(bytes, Ordering::AcqRel);
            self.freed.notify_waiters();
        }
    }

    fn end_call(&self, running: bool) {
        if running {
            self.running.fetch_sub(1, Ordering::AcqRel);
            self.freed.notify_waiters();
        }
    }

    /// What a call's instance should be able to grow to: what the largest instance holds, or
    /// the per-instance cap before any call has come back; never more than the whole budget.
    fn call_room(&self) -> usize {
        let room = if self.measured.load(Ordering::Acquire) {
            self.largest.load(Ordering::Acquire)
        } else {
            self.cap
        };
        room.min(self.limit)
    }

    /// Takes what an instance already holding `charged` needs for a call (up to
    /// [`MemoryBudget::call_room`]), and counts the call as running; `None` if it does not fit
    /// while other calls run. With none running it always fits (any growth then takes its own
    /// share, as far as the budget goes).
    fn reserve(&self, charged: usize) -> Option<usize> {
        let need = self.call_room().saturating_sub(charged);
        if !self.take(need) {
            // Alone, a call gets what is left.
            if self.running.load(Ordering::Acquire) > 0 {
                return None;
            }
            self.running.fetch_add(1, Ordering::AcqRel);
            return Some(0);
        }
        self.running.fetch_add(1, Ordering::AcqRel);
        Some(need)
    }

    /// Room for a call on a fresh instance: its share, taken from the budget, or `None`.
    pub(crate) fn admit(self: &Arc<Self>) -> Option<Share> {
        let bytes = self.reserve(0)?;
        Some(Share {
            budget: Arc::clone(self),
            bytes,
            running: true,
        })
    }

    /// The most an instance held when a call on it came back.
    #[cfg(test)]
    pub(crate) fn largest(&self) -> usize {
        self.largest.load(Ordering::Acquire)
    }

    /// What all instances hold of the budget now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

impl MemoryLimiter {
    /// Starts a call on this (idle) instance: room for it to grow, if the budget has it
    /// ([`MemoryBudget::reserve`]).
    fn start_call(&mut self) -> bool {
        let share = &mut self.share;
        match share.budget.reserve(share.bytes) {
            Some(more) => {
                share.bytes += more;
                share.running = true;
                true
            }
            None => false,
        }
    }

    /// The call came back: what the instance holds is what calls need, and the room reserved
    /// beyond it goes back to the budget. Whether no instance held as much before.
    fn end_call(&mut self) -> bool {
        let share = &mut self.share;
        let budget = &share.budget;
        let larger = budget.largest.fetch_max(self.total, Ordering::AcqRel) < self.total;
        if share.running {
            budget.measured.store(true, Ordering::Release);
        }
        budget.end_call(std::mem::take(&mut share.running));
        let spare = share.bytes.saturating_sub(self.total);
        share.bytes -= spare;
        budget.give_back(spare);
        larger
    }
}

/// Part of the memory budget, held by an instance's [`MemoryLimiter`] (or by a call about to
/// make one, [`MemoryBudget::admit`]); given back when dropped.
pub(crate) struct Share {
    budget: Arc<MemoryBudget>,
    bytes: usize,
    /// Whether it is for a call (counted in the budget's `running`).
    running: bool,
}

impl Share {
    /// No part of the budget and no call: the store's first instance, made at load.
    pub(crate) fn none(budget: &Arc<MemoryBudget>) -> Self {
        Share {
            budget: Arc::clone(budget),
            bytes: 0,
            running: false,
        }
    }

    fn into_limiter(self, memory_bytes: usize) -> MemoryLimiter {
        MemoryLimiter {
            memory_bytes,
            total: 0,
            share: self,
            hit: None,
        }
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        self.budget.end_call(self.running);
        self.budget.give_back(self.bytes);
    }
}

/// The host resources all instances of a store may hold at once, shared out among its
/// `max_instances` ([`handles_per_instance`]).
pub(crate) const HANDLE_BUDGET: usize = 8 * MAX_HANDLES;

/// The fewest host resources an instance may hold at once, however many instances there are.
pub(crate) const MIN_HANDLES: usize = 128;

/// The most host resources (open files, streams, pollables) one of `max_instances` instances
/// may hold at once: [`MAX_HANDLES`], or less when [`HANDLE_BUDGET`] shared out among them
/// gives less, but never below [`MIN_HANDLES`].
pub(crate) fn handles_per_instance(max_instances: usize) -> usize {
    (HANDLE_BUDGET / max_instances.max(1)).clamp(MIN_HANDLES, MAX_HANDLES)
}

/// The most host resources (open files, streams, pollables) an instance may hold at once, when
/// the store has at most 8 instances ([`handles_per_instance`]). Each open file is a host
/// descriptor, so this bounds what one instance can take of the process's descriptors; `open`
/// past it fails inside the guest.
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
            self.hit = Some(Limit::Memory(self.memory_bytes));
            return Ok(false);
        }
        let share = &mut self.share;
        if total > share.bytes {
            if !share.budget.take(total - share.bytes) {
                self.hit = Some(Limit::MemoryTotal(share.budget.limit));
                return Ok(false);
            }
            share.bytes = total;
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
    /// A fresh instance, configured, starting with `share` of the memory budget (taken by
    /// [`MemoryBudget::admit`]; given back if this fails). On a thread that may block (never
    /// inline): `configure` may do any file I/O.
    pub(crate) async fn instantiate(&self, share: Share) -> Result<Instance, StoreError> {
        // Owns the share from here: given back with the instance, or on the way out of a
        // failure.
        let limiter = share.into_limiter(self.limits.memory_bytes);
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
                table.set_max_capacity(self.max_handles);
                table
            },
            limiter,
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

    /// An idle instance with room in the memory budget for a call on it
    /// ([`MemoryBudget::reserve`]), if there is one and the room.
    pub(crate) fn take_idle(&self) -> Option<Instance> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let mut instance = idle.pop()?;
        if instance.store.data_mut().limiter.start_call() {
            Some(instance)
        } else {
            idle.push(instance);
            None
        }
    }

    /// Back to the idle pool, unless it is full (then the instance is dropped); either way a
    /// call waiting for an instance ([`Inner::instance_or_share`]) looks again.
    pub(crate) fn release(&self, mut instance: Instance) {
        let limiter = &mut instance.store.data_mut().limiter;
        if limiter.end_call() {
            tracing::debug!(
                component = %self.name,
                bytes = limiter.total,
                budget = self.budget.limit,
                "the largest instance so far: calls start with room to grow to this"
            );
        }
        {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < self.max_idle {
                idle.push(instance);
            }
        }
        // Again, now that it can be taken.
        self.budget.freed.notify_waiters();
    }

    /// For a call holding a permit: an idle instance, or else the memory budget's share for a
    /// fresh one ([`MemoryBudget::admit`]), waiting for an instance to come back (or to be
    /// dropped) while neither is there.
    pub(crate) async fn instance_or_share(&self) -> Result<Instance, Share> {
        loop {
            let freed = self.budget.freed.notified();
            tokio::pin!(freed);
            // Registered before looking, so a release between the look and the wait wakes it.
            freed.as_mut().enable();
            if let Some(instance) = self.take_idle() {
                return Ok(instance);
            }
            if let Some(share) = self.budget.admit() {
                return Err(share);
            }
            freed.await;
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
        if let Some(limit) = store.data().limiter.hit {
            return Some(self.limit_error(limit));
        }
        let table_full = err.chain().any(|cause| {
            matches!(
                cause.downcast_ref::<ResourceTableError>(),
                Some(ResourceTableError::Full)
            )
        });
        if table_full {
            return Some(self.limit_error(Limit::Handles(self.max_handles)));
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

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    /// An instance's limiter as [`Inner::instantiate`] makes it, its memories grown to `total`.
    fn instance(share: Share, total: usize) -> MemoryLimiter {
        let mut limiter = share.into_limiter(64 * MIB);
        assert!(limiter.memory_growing(0, total, None).unwrap());
        limiter
    }

    #[test]
    fn calls_start_with_room_to_grow_to_the_cap_until_one_has_come_back() {
        let budget = Arc::new(MemoryBudget::new(100 * MIB, 30 * MIB));
        let mut shares: Vec<_> = std::iter::from_fn(|| budget.admit()).take(10).collect();
        assert_eq!(shares.len(), 3, "three calls of 30 MiB fit in 100 MiB");
        let mut first = instance(shares.pop().unwrap(), 10 * MIB);
        assert!(
            budget.admit().is_none(),
            "two shares and one instance hold 90 MiB"
        );
        drop(shares);
        assert!(first.end_call(), "the largest instance so far");
        // Measured: calls need 10 MiB, what the idle instance holds.
        assert_eq!(budget.used(), 10 * MIB);
        let more: Vec<_> = std::iter::from_fn(|| budget.admit()).take(20).collect();
        assert_eq!(
            more.len(),
            9,
            "nine more calls of 10 MiB fit beside the idle instance"
        );
        drop(more);
        assert!(
            first.start_call(),
            "the idle instance needs no more for a call"
        );
        drop(first);
        assert_eq!(budget.used(), 0, "everything is given back");
    }

    #[test]
    fn growth_past_the_budget_is_refused_as_the_total_limit_and_changes_nothing() {
        let budget = Arc::new(MemoryBudget::new(40 * MIB, 64 * MIB));
        let mut a = instance(budget.admit().unwrap(), 10 * MIB);
        assert_eq!(
            a.share.bytes,
            40 * MIB,
            "alone, a call may grow to the whole budget"
        );
        let _ = a.end_call();
        let mut b = instance(budget.admit().unwrap(), 10 * MIB);
        assert!(!b.memory_growing(10 * MIB, 31 * MIB, None).unwrap());
        assert_eq!(b.hit, Some(Limit::MemoryTotal(40 * MIB)));
        assert_eq!((b.total, b.share.bytes), (10 * MIB, 10 * MIB));
        assert_eq!(budget.used(), 20 * MIB);
        b.hit = None;
        assert!(!b.memory_growing(10 * MIB, 65 * MIB, None).unwrap());
        assert_eq!(
            b.hit,
            Some(Limit::Memory(64 * MIB)),
            "the instance's own cap first"
        );
        drop((a, b));
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_lone_call_always_starts_even_when_idle_instances_fill_the_budget() {
        let budget = Arc::new(MemoryBudget::new(16 * MIB, 64 * MIB));
        let mut idle: Vec<_> = (0..4)
            .map(|_| {
                let mut limiter = instance(Share::none(&budget), 4 * MIB);
                let _ = limiter.end_call();
                limiter
            })
            .collect();
        assert_eq!(budget.used(), 16 * MIB);
        assert!(idle[0].start_call(), "nothing else runs");
        assert!(
            !idle[1].start_call(),
            "a second call waits: no room for it to grow"
        );
        assert!(budget.admit().is_none());
        let _ = idle[0].end_call();
        assert!(idle[1].start_call());
        drop(idle);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn handles_are_shared_out_among_instances_within_bounds() {
        assert_eq!(handles_per_instance(1), MAX_HANDLES);
        assert_eq!(handles_per_instance(8), MAX_HANDLES);
        assert_eq!(handles_per_instance(16), 512);
        assert_eq!(handles_per_instance(64), MIN_HANDLES);
        assert_eq!(handles_per_instance(10_000), MIN_HANDLES);
    }
}

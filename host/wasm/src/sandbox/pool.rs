//! The instance pool: each call takes an idle instance (or instantiates a fresh one with its
//! own WASI context and limits), arms its deadline, and gives it back afterwards, unless it
//! trapped or hit a limit, in which case it is dropped and never reused. At most
//! `max_instances` exist at once (the permits of [`InstancePool`]), and together their linear
//! memories hold at most the pool's memory budget ([`MemoryBudget`]): a call starts only while
//! the budget has room for its instance to grow as large as the largest seen, and otherwise
//! waits for an instance to come back.
//!
//! The pool knows nothing of what the component exports: a [`World`] says how a fresh instance
//! is set up, what a ready instance's functions are (its [`World::Api`]) and what its own errors
//! mean. Calls are run by `sandbox::call`.

use crate::message::sanitize;
use crate::sandbox::deadline::{self, CallDeadline, GuestClock};
use crate::sandbox::inline::{InlineGets, InlineState};
use crate::sandbox::memory::{MemoryBudget, MemoryReservation};
use crate::sandbox::policy::descriptor_share::{DescriptorCount, PoolDescriptors};
use crate::sandbox::policy::outgoing_http::{OutgoingHttp, OutgoingHttpPolicy};
use crate::sandbox::policy::quota::{DiskQuota, QuotaState};
use crate::sandbox::state::InstanceState;
use crate::sandbox::wasi_resources::{Grant, WasiResources};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use toolnexus_core::{Limit, StoreError};
use wasmtime::component::{Instance as ComponentInstance, InstancePre, ResourceTableError};
use wasmtime::{Store, Trap};

/// What a pool's components are: how a fresh instance is set up and what its calls answer.
pub(crate) trait World: Send + Sync + 'static {
    /// The functions of a ready instance.
    type Api: Send + 'static;
    /// A component's own error, as its functions answer it.
    type Error: Send + 'static;

    /// Loads the functions of a fresh instance and configures it. The inner `Err` is the
    /// component refusing its settings.
    async fn setup(
        &self,
        store: &mut Store<InstanceState>,
        instance: &ComponentInstance,
    ) -> wasmtime::Result<Result<Self::Api, String>>;

    /// A component's own error as the error of the call.
    fn answer_error(&self, sandbox: &SandboxConfig, err: Self::Error) -> StoreError;
}

/// What every instance of a pool is granted, and its limits.
#[derive(Debug, Clone)]
pub(crate) struct SandboxConfig {
    /// Names the component in errors and logs.
    pub(crate) name: String,
    /// The one directory granted, preopened at guest path `/`; `None` for a world that gets
    /// no file system (agents). A store's world keeps its own copy for its errors.
    pub(crate) dir: Option<PathBuf>,
    pub(crate) read_only: bool,
    /// Sends stderr to the host's `tracing` log.
    pub(crate) forward_stderr: bool,
    /// The cap on all linear memories of an instance together.
    pub(crate) memory_bytes: usize,
    /// The budget for the linear memories of all instances together ([`MemoryBudget`]).
    pub(crate) memory_total_bytes: usize,
    /// How long one call (or an instantiation) may run.
    pub(crate) timeout: Duration,
    /// The most instances that exist at once.
    pub(crate) max_instances: usize,
    /// Where `wasi:http` requests may go, for a world that links it (agents); the default
    /// refuses every request.
    pub(crate) outgoing_http: Arc<OutgoingHttpPolicy>,
    /// Whether every call gets a fresh instance (dropped after it), so that nothing one call
    /// leaves in linear memory reaches the next; otherwise instances are reused.
    pub(crate) fresh_instances: bool,
}

impl SandboxConfig {
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
}

/// The instances of one component over one directory.
pub(crate) struct InstancePool<W: World> {
    pub(crate) config: SandboxConfig,
    pub(crate) world: W,
    /// The disk quota's count for a read-write directory (`policy::quota`).
    pub(crate) disk: Option<Arc<DiskQuota>>,
    pre: InstancePre<InstanceState>,
    idle: Mutex<Vec<Instance<W::Api>>>,
    /// One permit per instance that may exist; a call holds one from before it takes an
    /// instance until the guest code has returned, on its blocking thread, even if the caller
    /// stopped waiting.
    pub(crate) permits: Arc<Semaphore>,
    /// The most instances kept idle between calls (the same as the permits).
    max_idle: usize,
    /// The linear memories of all instances together ([`MemoryBudget`]).
    pub(crate) budget: Arc<MemoryBudget>,
    /// The most host resources one instance may hold at once ([`handles_per_instance`]).
    pub(crate) max_handles: usize,
    /// Whether `get`s run on the caller's task (`sandbox::inline`).
    pub(crate) inline_gets: InlineGets,
    /// The process's descriptors its instances hold (`policy::descriptor_share`).
    descriptors: Arc<PoolDescriptors>,
}

/// An instance ready for calls: its store and its world's functions.
pub(crate) struct Instance<A> {
    pub(crate) store: Store<InstanceState>,
    pub(crate) api: A,
}

impl<A> Instance<A> {
    /// Resets the call's deadline (for wasm code and for clock waits), where it runs (`inline`:
    /// on an async worker, see `sandbox::inline`) and the limit flags before a call.
    pub(crate) fn start_call(&mut self, deadline: Instant, inline: bool) {
        self.store.data_mut().start_call(deadline, inline);
        self.store.set_epoch_deadline(1);
    }

    /// Whether the instance holds more host resources, or more of the process's file
    /// descriptors, than a store needs between calls. Counts its descriptors anew
    /// (`policy::descriptor_share`).
    pub(crate) fn leaks_handles(&mut self, has_dir: bool) -> bool {
        let state = self.store.data_mut();
        let descriptors = state.descriptors.settle(&mut state.wasi.table, has_dir);
        descriptors > MAX_DESCRIPTORS_BETWEEN_CALLS
            || state.wasi.table.iter_mut().count() > MAX_HANDLES_BETWEEN_CALLS
    }

    /// Whether a write of the call was refused for the disk quota.
    pub(crate) fn hit_quota(&self) -> bool {
        self.store
            .data()
            .quota
            .as_ref()
            .is_some_and(QuotaState::hit)
    }

    /// Whether the call asked to wait past its deadline (see `policy::clock`).
    pub(crate) fn hit_deadline(&self) -> bool {
        self.store.data().deadline.hit
    }
}

/// The host resources all instances of a pool may hold at once, shared out among its
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
/// the pool has at most 8 instances ([`handles_per_instance`]). Each open file is a host
/// descriptor, so this bounds what one instance can take of the process's descriptors; `open`
/// past it fails inside the guest.
pub(crate) const MAX_HANDLES: usize = 1024;

/// An instance that still holds more host resources than this after a call leaks them (a store
/// needs a handful: its directory, its standard streams); it is dropped instead of pooled, which
/// closes them.
pub(crate) const MAX_HANDLES_BETWEEN_CALLS: usize = 64;

/// An instance that still holds more of the process's file descriptors than this after a call
/// (its directory, a few files) is dropped instead of pooled: idle instances of every pool
/// together must not sit on the process's descriptors.
pub(crate) const MAX_DESCRIPTORS_BETWEEN_CALLS: usize = 8;

impl<W: World> InstancePool<W> {
    /// A pool with no instance yet: `pre` is the component linked to the sandbox's WASI
    /// (`sandbox::wasi_overrides`), `disk` the quota's count for a read-write directory.
    pub(crate) fn new(
        config: SandboxConfig,
        pre: InstancePre<InstanceState>,
        world: W,
        disk: Option<Arc<DiskQuota>>,
    ) -> Self {
        let max_instances = config.max_instances.max(1);
        InstancePool {
            budget: Arc::new(MemoryBudget::new(
                config.memory_total_bytes,
                config.memory_bytes,
            )),
            permits: Arc::new(Semaphore::new(max_instances)),
            max_idle: max_instances,
            max_handles: handles_per_instance(max_instances),
            idle: Mutex::new(Vec::new()),
            inline_gets: InlineGets::new(),
            descriptors: PoolDescriptors::new(),
            config,
            world,
            disk,
            pre,
        }
    }

    /// A fresh instance, set up by its world, starting with `reservation` of the memory budget
    /// (taken by [`MemoryBudget::admit`], or none for the first instance; given back if this
    /// fails). On a thread that may block (never inline): setting up may do any file I/O.
    pub(crate) async fn instantiate(
        &self,
        reservation: MemoryReservation,
    ) -> Result<Instance<W::Api>, StoreError> {
        let config = &self.config;
        // Owns the reservation from here: given back with the instance, or on the way out of a
        // failure.
        let memory = reservation.into_limiter(config.memory_bytes);
        let guest_clock = GuestClock {
            start: Instant::now(),
        };
        let wasi = WasiResources::new(Grant {
            name: &config.name,
            dir: config.dir.as_deref(),
            read_only: config.read_only,
            forward_stderr: config.forward_stderr,
            clock: guest_clock,
            max_handles: self.max_handles,
        })?;
        let state = InstanceState {
            wasi,
            memory,
            // Instantiating and setting up run under the same deadline as a call.
            deadline: CallDeadline::after(config.timeout, guest_clock),
            quota: self.disk.clone().map(QuotaState::new),
            inline: InlineState::default(),
            fences: Default::default(),
            descriptors: DescriptorCount::new(&self.descriptors, config.dir.is_some()),
            call_context: None,
            http: OutgoingHttp::new(Arc::clone(&config.outgoing_http)),
        };
        let mut store = Store::new(self.pre.engine(), state);
        store.limiter(|state| &mut state.memory);
        store.epoch_deadline_callback(|cx| Ok(cx.data().deadline.on_epoch_tick()));
        store.set_epoch_deadline(1);
        let at = store.data().deadline.at;
        let setup = deadline::bounded(at, async {
            match self.pre.instantiate_async(&mut store).await {
                Ok(instance) => self.world.setup(&mut store, &instance).await,
                Err(e) => Err(e),
            }
        })
        .await;
        // Waiting in a host call at the deadline: stopped there (`deadline::bounded`).
        let Ok(setup) = setup else {
            return Err(config.limit_error(Limit::Timeout(config.timeout)));
        };
        if store.data().deadline.hit {
            return Err(config.limit_error(Limit::Timeout(config.timeout)));
        }
        if let (Some(disk), Some(quota)) = (&self.disk, &store.data().quota)
            && quota.hit()
            && !matches!(setup, Ok(Ok(_)))
        {
            return Err(config.limit_error(Limit::Disk(disk.limit)));
        }
        match setup {
            Ok(Ok(api)) => Ok(Instance { store, api }),
            Ok(Err(refused)) => {
                Err(config.component_error(format!("refused its settings: {}", sanitize(&refused))))
            }
            Err(e) => {
                let limit = self.classify_trap(&store, &e);
                Err(limit.unwrap_or_else(|| {
                    config.component_error(sanitize(&format!("instantiation failed: {e:#}")))
                }))
            }
        }
    }

    /// An idle instance with room in the memory budget for a call on it, if there is one and
    /// the room.
    pub(crate) fn take_idle(&self) -> Option<Instance<W::Api>> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let mut instance = idle.pop()?;
        if instance.store.data_mut().memory.start_call() {
            Some(instance)
        } else {
            idle.push(instance);
            None
        }
    }

    /// Makes one instance now, as a builder does before it answers: a component whose start-up
    /// traps, loops or refuses its settings is refused at build, not at the first call. On a
    /// thread of its own: set-up may do WASI I/O, which blocks on a Tokio runtime, and the
    /// builder's caller may be on an async worker, where blocking would panic.
    pub(crate) fn first_instance(&self) -> Result<Instance<W::Api>, String> {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    wasmtime_wasi::runtime::in_tokio(
                        self.instantiate(MemoryReservation::none(&self.budget)),
                    )
                })
                .join()
        })
        .map_err(|_| "instantiating it panicked the host thread".to_owned())?
        .map_err(|e| e.to_string())
    }

    /// Back to the idle pool, unless it is full (then the instance is dropped); either way a
    /// call waiting for an instance ([`InstancePool::instance_or_reservation`]) looks again.
    pub(crate) fn release(&self, mut instance: Instance<W::Api>) {
        let memory = &mut instance.store.data_mut().memory;
        if memory.end_call() {
            tracing::debug!(
                component = %self.config.name,
                bytes = memory.total,
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
        self.budget.instance_freed.notify_waiters();
    }

    /// For a call holding a permit: an idle instance, or else the memory budget's reservation
    /// for a fresh one ([`MemoryBudget::admit`]), waiting for an instance to come back (or to
    /// be dropped) while neither is there.
    pub(crate) async fn instance_or_reservation(
        &self,
    ) -> Result<Instance<W::Api>, MemoryReservation> {
        loop {
            let freed = self.budget.instance_freed.notified();
            tokio::pin!(freed);
            // Registered before looking, so a release between the look and the wait wakes it.
            freed.as_mut().enable();
            if let Some(instance) = self.take_idle() {
                return Ok(instance);
            }
            if let Some(reservation) = self.budget.admit() {
                return Err(reservation);
            }
            freed.await;
        }
    }

    /// A trap caused by a limit, as that limit.
    pub(crate) fn classify_trap(
        &self,
        store: &Store<InstanceState>,
        err: &wasmtime::Error,
    ) -> Option<StoreError> {
        let config = &self.config;
        if err.downcast_ref::<Trap>() == Some(&Trap::Interrupt) || store.data().deadline.hit {
            return Some(config.limit_error(Limit::Timeout(config.timeout)));
        }
        if let Some(limit) = store.data().memory.hit {
            return Some(config.limit_error(limit));
        }
        let table_full = err.chain().any(|cause| {
            matches!(
                cause.downcast_ref::<ResourceTableError>(),
                Some(ResourceTableError::Full)
            )
        });
        if table_full {
            return Some(config.limit_error(Limit::Handles(self.max_handles)));
        }
        None
    }

    pub(crate) fn trap_error(
        &self,
        instance: &Instance<W::Api>,
        err: wasmtime::Error,
    ) -> StoreError {
        self.classify_trap(&instance.store, &err)
            .unwrap_or_else(|| {
                self.config
                    .component_error(sanitize(&format!("trapped: {err:#}")))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_shared_out_among_instances_within_bounds() {
        assert_eq!(handles_per_instance(1), MAX_HANDLES);
        assert_eq!(handles_per_instance(8), MAX_HANDLES);
        assert_eq!(handles_per_instance(16), 512);
        assert_eq!(handles_per_instance(64), MIN_HANDLES);
        assert_eq!(handles_per_instance(10_000), MIN_HANDLES);
    }
}

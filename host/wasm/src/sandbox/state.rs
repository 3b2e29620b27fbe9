//! What the host keeps for each instance ([`InstanceState`]), in parts that each policy takes
//! alone: the WASI context and resource table, the memory limiter, the call deadline with the
//! guest's clock, the disk quota, the state of inline calls, and the world's context for the
//! call in progress.

use crate::sandbox::deadline::CallDeadline;
use crate::sandbox::inline::InlineState;
use crate::sandbox::memory::MemoryLimiter;
use crate::sandbox::policy::descriptor_share::DescriptorCount;
use crate::sandbox::policy::fences::Fences;
use crate::sandbox::policy::outgoing_http::{HasOutgoingHttp, OutgoingHttp};
use crate::sandbox::policy::quota::QuotaState;
use crate::sandbox::wasi_resources::WasiResources;
use std::any::Any;
use std::time::Instant;
use wasmtime_wasi::{WasiCtxView, WasiView};
use wasmtime_wasi_http::WasiHttpCtxView;

/// Per-instance host state.
pub(crate) struct InstanceState {
    pub(crate) wasi: WasiResources,
    pub(crate) memory: MemoryLimiter,
    /// The deadline of the call in progress (or of instantiation), with the guest's clock.
    pub(crate) deadline: CallDeadline,
    /// The pool's disk quota, for a read-write directory.
    pub(crate) quota: Option<QuotaState>,
    pub(crate) inline: InlineState,
    /// The files the instance created exclusively and holds under their kernel locks.
    pub(crate) fences: Fences,
    /// The process's file descriptors it is counted for.
    pub(crate) descriptors: DescriptorCount,
    /// What the world's host functions need for the call in progress (an agent's run: where
    /// its updates go), set by the call itself and gone when the next call starts. Opaque
    /// here: the sandbox never looks inside, so it knows nothing of any world.
    pub(crate) call_context: Option<Box<dyn Any + Send>>,
    /// Outgoing HTTP under the pool's policy, for a world that links `wasi:http`.
    pub(crate) http: OutgoingHttp,
}

impl HasOutgoingHttp for InstanceState {
    fn outgoing_http(&mut self) -> WasiHttpCtxView<'_> {
        self.http.view(&mut self.wasi.table)
    }
}

impl InstanceState {
    /// Resets every part for a call that must end by `deadline`; `inline` if it runs on an
    /// async worker (`sandbox::inline`).
    pub(crate) fn start_call(&mut self, deadline: Instant, inline: bool) {
        self.memory.hit = None;
        if let Some(quota) = &self.quota {
            quota.start_call();
        }
        self.deadline.start_call(deadline);
        self.inline.start_call(inline);
        // A context left by an earlier call never reaches this one.
        self.call_context = None;
    }
}

impl Drop for InstanceState {
    /// Dropping the instance closes every file it held, so what its unlinks and replacing
    /// renames freed is free now.
    fn drop(&mut self) {
        // Its streams and descriptors closed first (the fields would only be dropped after
        // this), so that what they held is let go when the quota counts.
        drop(std::mem::take(&mut self.wasi.table));
        if let Some(quota) = &self.quota {
            quota.settle_all();
        }
    }
}

impl WasiView for InstanceState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        self.wasi.ctx()
    }
}

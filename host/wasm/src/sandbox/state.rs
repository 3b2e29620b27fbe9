//! What the host keeps for each instance ([`InstanceState`]), in parts that each policy takes
//! alone: the WASI context and resource table, the memory limiter, the call deadline with the
//! guest's clock, the disk quota, and the state of inline calls.

use crate::sandbox::deadline::CallDeadline;
use crate::sandbox::inline::InlineState;
use crate::sandbox::memory::MemoryLimiter;
use crate::sandbox::policy::quota::QuotaState;
use crate::sandbox::wasi_resources::WasiResources;
use std::time::Instant;
use wasmtime_wasi::{WasiCtxView, WasiView};

/// Per-instance host state.
pub(crate) struct InstanceState {
    pub(crate) wasi: WasiResources,
    pub(crate) memory: MemoryLimiter,
    /// The deadline of the call in progress (or of instantiation), with the guest's clock.
    pub(crate) deadline: CallDeadline,
    /// The pool's disk quota, for a read-write directory.
    pub(crate) quota: Option<QuotaState>,
    pub(crate) inline: InlineState,
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
    }
}

impl Drop for InstanceState {
    /// Dropping the instance closes every file it held, so what its unlinks and replacing
    /// renames freed is free now.
    fn drop(&mut self) {
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

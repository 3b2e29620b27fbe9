//! The limits a store component runs under ([`Limits`]) and the builder's defaults.

use crate::sandbox::policy::quota::DEFAULT_DISK_QUOTA;
use std::time::Duration;

/// The largest component compiled unless
/// [`WasmTaskStoreBuilder::max_component_size`](crate::WasmTaskStoreBuilder::max_component_size)
/// says otherwise: 32 MiB, over twice the largest store we know of (a JavaScript engine, 12 MiB),
/// and at most about a minute and 3 GiB of compiling for the worst shape we found (see
/// `docs/security.md`).
pub const DEFAULT_MAX_COMPONENT_BYTES: u64 = 32 << 20;

/// The default budget for the linear memories of all of a store's instances together
/// ([`Limits::memory_total_bytes`]): 512 MiB.
pub const DEFAULT_MEMORY_TOTAL: usize = 512 << 20;

/// The default for
/// [`WasmTaskStoreBuilder::max_instances`](crate::WasmTaskStoreBuilder::max_instances): calls
/// a store runs at once.
pub const DEFAULT_MAX_INSTANCES: usize = 64;

/// Resource limits for a store component. Each applies per call (time), per instance (memory)
/// or to the store's instances together (the memory budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most all linear memories of an instance may hold together, in bytes. Default
    /// 64 MiB.
    pub memory_bytes: usize,
    /// The most the linear memories of all the store's instances may hold together, in bytes.
    /// Default [`DEFAULT_MEMORY_TOTAL`] (512 MiB: 8 instances at the default per-instance
    /// cap). A call starts only while this has room for its instance to grow as large as the
    /// largest so far, so small instances run many calls at once and large ones fewer, the
    /// others waiting for an instance; a growth that does not fit fails the call like one
    /// past `memory_bytes` ([`Limit::MemoryTotal`](toolnexus_core::Limit::MemoryTotal)).
    pub memory_total_bytes: usize,
    /// How long one call may run before it is interrupted. Default 5 s. A call held past it
    /// in a system call (a hung disk), where interruption cannot reach, is answered as timed
    /// out at twice this and a second.
    pub timeout: Duration,
    /// The largest Task, as JSON text, accepted by `save` or from `get`. Default 16 MiB.
    pub max_task_bytes: usize,
    /// The most a read-write directory may hold, counted as file lengths plus 4 KiB per entry
    /// (see `sandbox::policy::quota`). Default [`DEFAULT_DISK_QUOTA`] (1 GiB); unused for
    /// read-only stores.
    pub disk_quota_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 64 << 20,
            memory_total_bytes: DEFAULT_MEMORY_TOTAL,
            timeout: Duration::from_secs(5),
            max_task_bytes: 16 << 20,
            disk_quota_bytes: DEFAULT_DISK_QUOTA,
        }
    }
}

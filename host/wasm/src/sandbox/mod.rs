//! The component sandbox: everything that runs a component under the host's grants and limits,
//! whatever world it targets. It knows nothing of the task-store contract, which is built on
//! top of it (`task_store/`); another world plugs in through [`pool::World`].
//!
//! - [`state`]: what the host keeps per instance ([`state::InstanceState`]), in parts:
//!   [`wasi_resources`] (the WASI context and resource table), [`memory`] (the limiter and the
//!   pool's memory budget), [`deadline`] (the call deadline and the guest's clock),
//!   `policy::quota` (the disk quota) and [`inline`] (calls on the caller's worker);
//! - [`policy`]: what the host refuses or counts of the guest's WASI calls, and
//!   [`wasi_overrides`], the one place that replaces WASI functions and calls the policies;
//! - [`pool`]: the instances of one component, generic over its [`pool::World`], and [`call`],
//!   running one call on them;
//! - helpers: [`descriptors`] (looks at names and descriptors), [`open`] (one-call opens),
//!   [`direct_io`] (file I/O on the thread of the call), [`dir_sync`] (shared directory
//!   flushes, Linux), [`stderr_log`] (the guest's stderr in the host's log).

pub(crate) mod call;
pub(crate) mod deadline;
pub(crate) mod descriptors;
#[cfg(target_os = "linux")]
pub(crate) mod dir_sync;
pub(crate) mod direct_io;
pub(crate) mod inline;
pub(crate) mod memory;
pub(crate) mod open;
pub(crate) mod policy;
pub(crate) mod pool;
pub(crate) mod state;
mod stderr_log;
pub(crate) mod wasi_overrides;
pub(crate) mod wasi_resources;

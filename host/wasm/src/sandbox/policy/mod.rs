//! What the host refuses or counts of a component's WASI calls, each policy taking only its own
//! part of the instance's state; `sandbox::wasi_overrides` calls them.
//!
//! - [`quota`], [`quota_holds`] and [`quota_streams`]: the disk quota of a read-write directory;
//! - [`special_files`]: no FIFO, socket or device is opened;
//! - [`private_files`]: files are created 0600;
//! - [`fences`]: files created exclusively are held under kernel locks, never moved by another
//!   writer while held;
//! - [`links`]: no links are created;
//! - [`clock`]: clock waits never outlast the call's deadline;
//! - [`descriptor_share`]: all instances together hold at most the components' share of the
//!   process's file descriptors.

pub(crate) mod clock;
pub(crate) mod descriptor_share;
pub(crate) mod fences;
pub(crate) mod links;
pub mod outgoing_http;
pub(crate) mod private_files;
pub(crate) mod quota;
pub(crate) mod quota_holds;
pub(crate) mod quota_streams;
pub(crate) mod special_files;

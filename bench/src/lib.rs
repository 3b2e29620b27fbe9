//! What the benchmark binaries share.

pub mod proc_status;

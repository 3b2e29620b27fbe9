//! The toolnexus on-disk Task format, written once and shared by every file-backed store. It
//! lives in `shared/` because both sides use it: the host's crates natively and the guest
//! components compiled to WebAssembly.
//!
//! Both the native `FileTaskStore` (in `toolnexus-core`) and the file-store WebAssembly
//! component (`guest/file-store/`) are thin adapters over [`DirStore`], so the two produce
//! byte-for-byte the same directory. The format itself is specified in `docs/on-disk-format.md`; this crate
//! is its reference implementation:
//!
//! - [`id`]: the injective, path-safe mapping from a Task id to a file name;
//! - [`task`]: what counts as a Task (a JSON object with a non-empty string `id`);
//! - [`state`]: the A2A task states in every protocol version's spelling, and which are terminal;
//! - [`query`]: list filters and paging;
//! - [`push_config`]: what counts as a push-notification config (the store keeps them per Task,
//!   [`DirStore::save_push_config`] and its siblings);
//! - [`dir`]: atomic writes (unique temp file, flush, rename, directory sync), verified reads,
//!   version records, per-Task locks, and the clean-up of temp files left behind by a crash;
//! - [`group`]: group commit, one flush shared by the callers waiting for one at the same time.
//!
//! It has no async runtime and no host-only dependency, so the components use it too (the
//! lifecycle guard asks [`state`]). It is synchronous `std::fs` code on purpose: natively it runs on a blocking thread, inside a
//! component it runs against the one directory the host preopened.

pub mod dir;
pub mod group;
pub mod id;
pub mod push_config;
pub mod query;
pub mod state;
pub mod task;
/// Inside a component: how the directory store reads and writes through `wasi:filesystem`.
#[cfg(all(target_os = "wasi", target_env = "p2"))]
pub mod wasi_fs {
    pub use crate::dir::set_host_refuses_special_files;
}

pub use dir::{DirError, DirStore, Durability, Expect};
pub use id::{IdError, decode_file_name, encode_id};
pub use push_config::{PushConfigError, check_push_config_text};
pub use query::{ListQuery, Timestamp};
pub use task::{TaskError, parse_task, task_id};

//! The components this crate was built with (`build.rs`), so that `tn-compose a2a --agent echo
//! --store file` needs no other file: the A2A server and the run bridge, the file store, the
//! lifecycle guard, and the echo and tck agents. Each can be replaced by a prebuilt file at
//! build time through its environment variable (`build.rs` lists them). A part whose folder was
//! not in the workspace at build time is empty here, and [`part`] says so.

use crate::ComposeError;

/// The A2A server component (`guest/a2a-server`).
pub static SERVER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/a2a_server.wasm"));
/// The run bridge (`guest/a2a-run-bridge`).
pub static BRIDGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/a2a_run_bridge.wasm"));
/// The file store (`guest/file-store`).
pub static FILE_STORE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/file_store.wasm"));
/// The lifecycle guard middleware (`guest/lifecycle-guard`).
pub static LIFECYCLE_GUARD: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/lifecycle_guard.wasm"));
/// The echo agent (`guest/agent-echo`).
pub static ECHO_AGENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/agent_echo.wasm"));
/// The agent the A2A TCK drives (`guest/agent-tck`).
pub static TCK_AGENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/agent_tck.wasm"));

/// `bytes`, or [`ComposeError::NotEmbedded`] naming `what` when this build has none.
pub fn part(bytes: &'static [u8], what: &'static str) -> Result<&'static [u8], ComposeError> {
    if bytes.is_empty() {
        Err(ComposeError::NotEmbedded(what))
    } else {
        Ok(bytes)
    }
}

/// The file store under the lifecycle guard, the `guarded` store of `tn-compose a2a`.
pub fn guarded_file_store() -> Result<Vec<u8>, ComposeError> {
    crate::compose(
        part(LIFECYCLE_GUARD, "the lifecycle guard")?,
        part(FILE_STORE, "the file store")?,
    )
}

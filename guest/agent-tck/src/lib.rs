//! # `toolnexus-agent-tck`: the agent the A2A TCK expects, as a WebAssembly component
//!
//! The A2A Technology Compatibility Kit (TCK) checks a server by sending messages whose
//! `messageId` starts with a prefix naming a behaviour ("complete with a message", "add a file
//! artifact", "stream two chunks", …), then looking at what comes back. This agent component
//! (world `toolnexus:a2a/configurable-agent`, contract in `wit/a2a/agent.wit`) has those
//! behaviours, so that `tnstore serve --agent wasm:tck` (the host embeds it under that name) can
//! be run under the TCK. Any other message is echoed exactly as `toolnexus-agent-echo` does
//! (the same code: `guest/agent-echo/src/echo.rs`).
//!
//! ## Prefix → behaviour
//!
//! A messageId is matched against every prefix; the longest that fits wins. "Artifact" is one
//! artifact update, the whole artifact (last chunk), with the id `<task-id>-tck-<turn>-<n>`
//! (`turn`: how many user messages came before in the Task, `n`: the artifact's number in the
//! run). "working" is a status update without a message (the Task is already `working` when the
//! agent runs; this is the scenario's explicit progress report).
//!
//! | prefix | updates, in order | run ends |
//! |---|---|---|
//! | `tck-complete-task` | — | `completed`, status message "Hello from TCK" |
//! | `tck-artifact-text` | artifact: text "Generated text content" | `completed` |
//! | `tck-artifact-file` | artifact: file, inline bytes `tck`, `output.txt`, `text/plain` | `completed` |
//! | `tck-artifact-file-url` | artifact: file by URL `https://example.com/output.txt`, `output.txt`, `text/plain` | `completed` |
//! | `tck-artifact-data` | artifact: data `{"key": "value", "count": 42}` | `completed` |
//! | `tck-message-response` | — | a direct Message reply: text "Direct message response" |
//! | `tck-input-required` | — | `input-required`, no status message |
//! | `tck-reject-task` | — | `rejected`, status message "rejected" |
//! | `tck-stream-001` | working; artifact: text "Stream hello from TCK" | `completed` |
//! | `tck-stream-002` | — | `completed` |
//! | `tck-stream-003` | working; artifact: text "Stream task lifecycle" | `completed` |
//! | `tck-stream-ordering-001` | working; artifact: text "Ordered output" | `completed` |
//! | `tck-stream-artifact-text` | working; artifact: text "Streamed text content" | `completed` |
//! | `tck-stream-artifact-file` | working; artifact: file, inline bytes `tck`, `output.txt`, `text/plain` | `completed` |
//! | `tck-stream-artifact-chunked` | working; artifact chunk "chunk-1 " (creates it); chunk "chunk-2" appended, last chunk | `completed` |
//! | `test-resubscribe-message-id` | working; then waits 2 × `streaming-timeout-ms` | `completed` |
//! | (text) `events:N:MS` | toolnexus's own, for its end-to-end tests: N rounds of a status update "step i" and an artifact update (`<task-id>-events`: "0", then "i" appended, the last round its last chunk), MS ms apart | `completed`, status message "done" |
//! | anything else, or no messageId | the echo agent: the text parts joined by newlines as the artifact `<task-id>-reply` (named `reply`); `ask:…` asks "what should I echo?" | `completed` (`input-required` for `ask:`) |
//!
//! The behaviour depends only on the message of the run: answering a `tck-input-required`
//! Task with a `tck-complete-task` message completes it. The agent does not know whether the
//! client streams; the runtime streams whatever the agent emits.
//!
//! Where the TCK's reference agents answer `tck-reject-task` with a protocol error, this one
//! rejects the Task: the contract's outcomes are Task states or a message, and `rejected` is the
//! state for "the agent will not do it".
//!
//! ## Settings
//!
//! - `streaming-timeout-ms` (default 2000, the TCK's `TCK_STREAMING_TIMEOUT` of 2 s): the unit
//!   of the long-running scenario's wait. Set it to the TCK's value when that is changed.
//! - `delay-ms` (default 0): the echo fallback's delay, as in `toolnexus-agent-echo`.
//!
//! Waits look at `is-canceled` at least every 50 ms; a canceled Task or an update answered
//! `stopped` ends the run at once. An update the runtime refuses otherwise fails the Task.
//!
//! ## Building
//!
//! ```text
//! cargo build -p toolnexus-agent-tck --target wasm32-wasip2 --release
//! ```
//!
//! gives `target/wasm32-wasip2/release/toolnexus_agent_tck.wasm`, a component exporting
//! `toolnexus:a2a/agent@0.1.0` and `toolnexus:a2a/config@0.1.0`. Natively
//! (`cargo test -p toolnexus-agent-tck`) the bindings are only type-checked and the unit tests
//! run the prefix table, the scripts and their player against a recorder.

// The echo agent's behaviour, compiled from its crate's source: the fallback must stay exactly
// the echo agent, and a dependency on that crate would link its component exports into this one.
#[path = "../../agent-echo/src/echo.rs"]
pub mod echo;

mod component;
pub mod events;
pub mod run;
pub mod scenario;
pub mod script;

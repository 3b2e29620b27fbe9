//! What the calls of every contract version answer, in one shape: the component's own error as
//! the current contract's `store-error` (every earlier version's cases are among its cases), a
//! list query as the component receives it and a page as it answered.

use super::bindings::v0_3;

/// A component's own error, in the current (0.3) shape.
pub(crate) use v0_3::store::StoreError as WitError;
pub(crate) use v0_3::store::VersionConflict;

/// What a call answered: a trap (outer `Err`) or the component's answer, whose `Err` is its own
/// error.
pub(crate) type Answer<T> = wasmtime::Result<Result<T, WitError>>;

/// A list query as the component receives it (the status timestamp already RFC 3339 text).
#[derive(Debug, Clone)]
pub(crate) struct ListArgs {
    pub(crate) context_id: Option<String>,
    pub(crate) state: Option<String>,
    pub(crate) status_timestamp_after: Option<String>,
    pub(crate) page_size: u32,
    pub(crate) page_token: Option<String>,
}

/// A page as the component answered it, not yet checked.
#[derive(Debug)]
pub(crate) struct Page {
    pub(crate) tasks: Vec<String>,
    pub(crate) next_page_token: Option<String>,
    /// `None` from a 0.1 component, which cannot tell.
    pub(crate) total_size: Option<u64>,
}

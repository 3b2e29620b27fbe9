//! What the calls answer: the component's own error (`store-error`), a list query as the
//! component receives it and a page as it answered.

use super::bindings::wit;

/// A component's own error.
pub(crate) use wit::store::StoreError as WitError;
pub(crate) use wit::store::VersionConflict;

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
    pub(crate) total_size: u64,
}

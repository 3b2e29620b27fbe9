//! [`OwnerLimits`]: what each owner (each store namespace) may make the server hold, so that
//! one owner cannot take the disk, the memory or the streams of all.

/// The default most Tasks one namespace may hold.
pub const DEFAULT_MAX_TASKS_PER_OWNER: u64 = 100_000;
/// The default most bytes the Tasks of one namespace may take, as stored (their JSON).
pub const DEFAULT_MAX_BYTES_PER_OWNER: u64 = 4 << 30;
/// The default most streams open at once per namespace.
pub const DEFAULT_MAX_STREAMS_PER_OWNER: usize = 64;
/// The default most streams open at once on one Task.
pub const DEFAULT_MAX_STREAMS_PER_TASK: usize = 16;
/// The default most bytes of events one stream may leave unread (each event counted as the
/// size of the Task it carries) before it is ended.
pub const DEFAULT_MAX_STREAM_BACKLOG_BYTES: usize = 8 << 20;

/// What each namespace (an owner, a tenant, or an owner within a tenant; the root store
/// without either) may hold. A request over a bound is refused with
/// [`ErrorKind::LimitReached`](crate::ErrorKind::LimitReached) (-32011, HTTP 429), whose
/// message names the bound, and changes nothing.
///
/// With the defaults, the events one owner's streams can hold unread are at most
/// `max_streams_per_owner × max_stream_backlog_bytes` (512 MiB); a single event larger than the
/// backlog bound still reaches a reader that keeps up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnerLimits {
    /// The most Tasks a namespace may hold: past it `SendMessage` of a new Task is refused.
    pub max_tasks_per_owner: u64,
    /// The most bytes (stored JSON) a namespace's Tasks may take: a new Task, a continuing
    /// message or an agent's update that would pass it is refused.
    pub max_bytes_per_owner: u64,
    /// The most event streams (`SendStreamingMessage`, `SubscribeToTask`) open at once per
    /// namespace.
    pub max_streams_per_owner: usize,
    /// The most event streams open at once on one Task.
    pub max_streams_per_task: usize,
    /// The most bytes of events one stream may leave unread; past it the stream ends with an
    /// error event and the client can subscribe again.
    pub max_stream_backlog_bytes: usize,
}

impl OwnerLimits {
    /// Whether the Tasks or bytes of a namespace are bounded at all. When neither is (both
    /// `u64::MAX`), nothing is counted: no namespace's store is listed or measured at its
    /// first use. A server that keeps no state between requests (the composed server makes a
    /// fresh instance per request) would otherwise count its whole store on every new Task.
    pub fn bounds_tasks_or_bytes(&self) -> bool {
        self.max_tasks_per_owner != u64::MAX || self.max_bytes_per_owner != u64::MAX
    }
}

impl Default for OwnerLimits {
    fn default() -> Self {
        OwnerLimits {
            max_tasks_per_owner: DEFAULT_MAX_TASKS_PER_OWNER,
            max_bytes_per_owner: DEFAULT_MAX_BYTES_PER_OWNER,
            max_streams_per_owner: DEFAULT_MAX_STREAMS_PER_OWNER,
            max_streams_per_task: DEFAULT_MAX_STREAMS_PER_TASK,
            max_stream_backlog_bytes: DEFAULT_MAX_STREAM_BACKLOG_BYTES,
        }
    }
}

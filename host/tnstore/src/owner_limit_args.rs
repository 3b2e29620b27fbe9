//! `tnstore serve`'s bounds per owner (each store namespace: owner, tenant, or both): Tasks and
//! their bytes, event streams open, and how far one stream may fall behind.

use toolnexus_a2a::OwnerLimits;
use toolnexus_a2a::owner_limits::{
    DEFAULT_MAX_BYTES_PER_OWNER, DEFAULT_MAX_STREAM_BACKLOG_BYTES, DEFAULT_MAX_STREAMS_PER_OWNER,
    DEFAULT_MAX_STREAMS_PER_TASK, DEFAULT_MAX_TASKS_PER_OWNER,
};

#[derive(clap::Args, Debug, Clone)]
pub struct OwnerLimitArgs {
    /// At most this many Tasks per owner (per tenant without tokens; the root store without
    /// either); a SendMessage that would create one more is refused with -32011 (HTTP 429).
    #[arg(long, default_value_t = DEFAULT_MAX_TASKS_PER_OWNER,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_tasks_per_owner: u64,
    /// At most this many bytes of stored Tasks per owner; a new Task, message or agent update
    /// that would pass it is refused (-32011).
    #[arg(long, default_value_t = DEFAULT_MAX_BYTES_PER_OWNER,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_bytes_per_owner: u64,
    /// At most this many event streams (SendStreamingMessage, SubscribeToTask) open at once per
    /// owner; a further one is refused with -32011.
    #[arg(long, default_value_t = DEFAULT_MAX_STREAMS_PER_OWNER,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    max_streams_per_owner: usize,
    /// At most this many event streams open at once on one Task.
    #[arg(long, default_value_t = DEFAULT_MAX_STREAMS_PER_TASK,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    max_streams_per_task: usize,
    /// A stream whose reader leaves more than this many bytes of events unread (each counted
    /// as the size of the Task it carries) is ended with a -32011 error event; the client can
    /// subscribe again and goes on from the Task as it is.
    #[arg(long, default_value_t = DEFAULT_MAX_STREAM_BACKLOG_BYTES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    max_stream_backlog_bytes: usize,
}

impl OwnerLimitArgs {
    pub fn limits(&self) -> OwnerLimits {
        OwnerLimits {
            max_tasks_per_owner: self.max_tasks_per_owner,
            max_bytes_per_owner: self.max_bytes_per_owner,
            max_streams_per_owner: self.max_streams_per_owner,
            max_streams_per_task: self.max_streams_per_task,
            max_stream_backlog_bytes: self.max_stream_backlog_bytes,
        }
    }
}

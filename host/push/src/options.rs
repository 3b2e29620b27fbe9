//! [`PushOptions`]: what the operator decides about deliveries, with the defaults `tnstore
//! serve` uses.

use crate::secrets::SealKey;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use toolnexus_egress::allow_list::AllowList;

/// The default per-request deadline: A2A recommends 10 to 30 seconds for a webhook's answer.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default number of attempts of one delivery (the first and five retries).
pub const DEFAULT_ATTEMPTS: u32 = 6;
/// The default wait before the first retry; each later one doubles it (2, 4, 8, 16, 32 s: about
/// a minute in all, less with jitter).
pub const DEFAULT_FIRST_BACKOFF: Duration = Duration::from_secs(2);
/// The default longest wait between two attempts.
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(60);
/// The default number of deliveries in flight at once, across all Tasks.
pub const DEFAULT_CONCURRENCY: usize = 16;
/// The default most deliveries waiting (queued or retrying) at once.
pub const DEFAULT_MAX_QUEUED: usize = 4096;
/// The default largest body posted; a larger Task goes as its status only.
pub const DEFAULT_MAX_PAYLOAD_BYTES: usize = 1024 * 1024;
/// How many redirects (307 or 308 only) one attempt follows.
pub const MAX_REDIRECTS: usize = 3;

/// How a [`PushSender`](crate::PushSender) delivers.
#[derive(Debug, Clone)]
pub struct PushOptions {
    /// Destinations that may be non-public (`--push-allow`): literal IPs, `internal:` names,
    /// each with or without a port. Public destinations need no entry.
    pub allow: AllowList,
    /// Seals `token` and `authentication.credentials` at rest; `None`: stored as given.
    pub key: Option<SealKey>,
    /// Where pending deliveries are kept across restarts (a slot of it per process:
    /// [`outbox_slot`](crate::outbox_slot)); `None`: in memory only (lost when the process
    /// stops).
    pub outbox: Option<PathBuf>,
    /// Which store the deliveries belong to (its description): an outbox slot left by another
    /// store is not taken.
    pub store_name: String,
    /// One attempt's deadline: name resolution, connect, TLS, request and response head.
    pub timeout: Duration,
    /// Attempts of one delivery before it is dropped (at least 1).
    pub attempts: u32,
    /// The wait before the first retry; doubled for each later one, up to `max_backoff`.
    pub first_backoff: Duration,
    pub max_backoff: Duration,
    /// Deliveries in flight at once across all Tasks (at least 1).
    pub concurrency: usize,
    /// Deliveries waiting at once (queued or between attempts); past it a new one is refused
    /// with a log line (at least 1).
    pub max_queued: usize,
    /// The largest body posted, in bytes of JSON.
    pub max_payload_bytes: usize,
    /// The TLS client configuration of HTTPS webhooks (HTTP/1.1 by ALPN); `None`: the
    /// system's roots, as agents' outgoing HTTP uses.
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

impl Default for PushOptions {
    fn default() -> Self {
        PushOptions {
            allow: AllowList::default(),
            key: None,
            outbox: None,
            store_name: String::new(),
            timeout: DEFAULT_TIMEOUT,
            attempts: DEFAULT_ATTEMPTS,
            first_backoff: DEFAULT_FIRST_BACKOFF,
            max_backoff: DEFAULT_MAX_BACKOFF,
            concurrency: DEFAULT_CONCURRENCY,
            max_queued: DEFAULT_MAX_QUEUED,
            max_payload_bytes: DEFAULT_MAX_PAYLOAD_BYTES,
            tls: None,
        }
    }
}

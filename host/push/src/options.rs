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
/// The default number of one namespace's (tenant's, owner's) deliveries in flight at once: a
/// quarter of [`DEFAULT_CONCURRENCY`], so one namespace whose webhooks hang keeps the others
/// three quarters of the slots.
pub const DEFAULT_CONCURRENCY_PER_NAMESPACE: usize = 4;
/// The default number of deliveries to one destination (scheme, host, port) in flight at once:
/// a webhook that accepts and never answers holds at most this many slots.
pub const DEFAULT_CONCURRENCY_PER_DESTINATION: usize = 4;
/// The default most deliveries waiting (queued or retrying) at once.
pub const DEFAULT_MAX_QUEUED: usize = 4096;
/// The default most deliveries of one namespace waiting at once: an eighth of
/// [`DEFAULT_MAX_QUEUED`], so a namespace flooding a dead webhook leaves room for the others.
pub const DEFAULT_MAX_QUEUED_PER_NAMESPACE: usize = 512;
/// The default most deliveries to one destination waiting at once.
pub const DEFAULT_MAX_QUEUED_PER_DESTINATION: usize = 512;
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
    /// Deliveries in flight at once across all Tasks (at least 1): the outer bound of the
    /// two below.
    pub concurrency: usize,
    /// Deliveries of one namespace in flight at once (at least 1).
    pub concurrency_per_namespace: usize,
    /// Deliveries to one destination (the webhook URL's scheme, host and port) in flight at
    /// once (at least 1).
    pub concurrency_per_destination: usize,
    /// Deliveries waiting at once (queued or between attempts); past it a new one is refused
    /// with a log line (at least 1): the outer bound of the two below.
    pub max_queued: usize,
    /// Deliveries of one namespace waiting at once; past it that namespace's new ones are
    /// refused (at least 1).
    pub max_queued_per_namespace: usize,
    /// Deliveries to one destination waiting at once, the destination as the config names it
    /// when the delivery is queued; past it new ones to it are refused (at least 1).
    pub max_queued_per_destination: usize,
    /// The largest body posted, in bytes of JSON.
    pub max_payload_bytes: usize,
    /// Webhooks over HTTPS only (`--push-require-https`): an `http://` URL is refused when a
    /// config is created, at delivery (a config stored before), and as a redirect's target.
    pub require_https: bool,
    /// The TLS client configuration of HTTPS webhooks (HTTP/1.1 by ALPN); `None`: the
    /// system's roots, as agents' outgoing HTTP uses.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// For crash tests only: abort the process right after a save of a Task in this state,
    /// before its deliveries are written (what a kill at that instant leaves).
    #[doc(hidden)]
    pub abort_after_save_in_state: Option<String>,
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
            concurrency_per_namespace: DEFAULT_CONCURRENCY_PER_NAMESPACE,
            concurrency_per_destination: DEFAULT_CONCURRENCY_PER_DESTINATION,
            max_queued: DEFAULT_MAX_QUEUED,
            max_queued_per_namespace: DEFAULT_MAX_QUEUED_PER_NAMESPACE,
            max_queued_per_destination: DEFAULT_MAX_QUEUED_PER_DESTINATION,
            max_payload_bytes: DEFAULT_MAX_PAYLOAD_BYTES,
            require_https: false,
            tls: None,
            abort_after_save_in_state: None,
        }
    }
}

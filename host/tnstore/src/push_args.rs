//! The `tnstore serve` flags for push notifications (docs/push-notifications.md): which
//! non-public webhooks are allowed, the key that seals webhook credentials at rest, where
//! pending deliveries are kept, the bounds of delivery, and `--no-push`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use toolnexus_push::{AllowList, PushOptions, PushSender, SealKey, options};

/// Where pending deliveries are kept by default over a durable store.
const DEFAULT_OUTBOX: &str = ".toolnexus/push-outbox";

/// For crash tests only: a Task state (as stored, e.g. `completed`); the server aborts right
/// after saving a Task in that state, before its deliveries are written to the outbox.
pub const ABORT_AFTER_SAVE_ENV: &str = "TNSTORE_TEST_PUSH_ABORT_AFTER_SAVE";

/// The push-notification flags of `tnstore serve`.
#[derive(clap::Args, Debug)]
pub struct PushArgs {
    /// Let webhooks reach this destination although it is not a public address: a literal IP
    /// (127.0.0.1:8080, [::1], 10.0.0.5) or a name that may resolve to internal addresses
    /// (internal:hooks.lan:8443), with or without a port. Repeat, or separate with commas.
    /// Without it, webhooks reach public addresses only (never loopback, private, link-local,
    /// CGNAT or cloud metadata addresses).
    #[arg(long = "push-allow", value_name = "HOST[:PORT]")]
    pub push_allow: Vec<String>,
    /// Seal webhook tokens and credentials at rest with this key: 32 random bytes as 64 hex
    /// digits or base64 (`openssl rand -hex 32`). Without it they are stored as given (a
    /// warning at start), and the store must be protected like the credentials.
    #[arg(long, value_name = "FILE")]
    pub push_key_file: Option<PathBuf>,
    /// Keep pending deliveries in this directory, so a restart delivers them (each process
    /// takes a slot of its own in it). Default: .toolnexus/push-outbox over a durable store,
    /// memory over --store memory.
    #[arg(long, value_name = "DIR", env = "TNSTORE_PUSH_OUTBOX")]
    pub push_outbox: Option<PathBuf>,
    /// Give a webhook this long to answer (connect, send, response head), e.g. 10s.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = positive_duration)]
    pub push_timeout: Duration,
    /// Attempts of one delivery (the first and the retries) before it is dropped.
    #[arg(long, value_name = "N", default_value_t = options::DEFAULT_ATTEMPTS,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub push_attempts: u32,
    /// The wait before the first retry; each later one doubles it (with jitter, at most 60s).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = positive_duration)]
    pub push_backoff: Duration,
    /// Deliveries in flight at once, across all Tasks (the outer bound of the per-namespace
    /// and per-destination ones).
    #[arg(long, value_name = "N", default_value_t = options::DEFAULT_CONCURRENCY,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096))]
    pub push_concurrency: usize,
    /// Deliveries of one namespace (a tenant's, an owner's) in flight at once.
    #[arg(long, value_name = "N", default_value_t = options::DEFAULT_CONCURRENCY_PER_NAMESPACE,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096))]
    pub push_concurrency_per_namespace: usize,
    /// Deliveries to one destination (a webhook URL's scheme, host and port) in flight at
    /// once.
    #[arg(long, value_name = "N", default_value_t = options::DEFAULT_CONCURRENCY_PER_DESTINATION,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096))]
    pub push_concurrency_per_destination: usize,
    /// Deliveries waiting at once (queued or between attempts); past it new ones are refused
    /// with a log line.
    #[arg(long, value_name = "N", default_value_t = options::DEFAULT_MAX_QUEUED,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub push_max_queued: usize,
    /// Deliveries of one namespace waiting at once; past it that namespace's new ones are
    /// refused with a log line.
    #[arg(long, value_name = "N", default_value_t = options::DEFAULT_MAX_QUEUED_PER_NAMESPACE,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub push_max_queued_per_namespace: usize,
    /// Deliveries to one destination waiting at once; past it new ones to it are refused with
    /// a log line.
    #[arg(long, value_name = "N", default_value_t = options::DEFAULT_MAX_QUEUED_PER_DESTINATION,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub push_max_queued_per_destination: usize,
    /// The largest body posted to a webhook; a larger Task goes as its status only.
    #[arg(long, value_name = "BYTES", default_value_t = options::DEFAULT_MAX_PAYLOAD_BYTES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1024..))]
    pub push_max_payload_bytes: usize,
    /// Send push notifications over HTTPS only: an http:// webhook URL is refused when a
    /// config is created, at delivery, and as a redirect's target.
    #[arg(long)]
    pub push_require_https: bool,
    /// Offer no push notifications (the config methods answer -32003, the card says so).
    /// An outbox named by TNSTORE_PUSH_OUTBOX (or --push-outbox) is then left alone.
    #[arg(long, conflicts_with_all = ["push_allow", "push_key_file", "push_require_https"])]
    pub no_push: bool,
}

fn positive_duration(text: &str) -> Result<Duration, String> {
    match humantime::parse_duration(text) {
        Ok(d) if d.is_zero() => Err("must be longer than zero".into()),
        Ok(d) => Ok(d),
        Err(e) => Err(format!("{e} (expected e.g. 10s, 500ms)")),
    }
}

impl PushArgs {
    /// The options the flags say, checked (allow-list entries, the key file), or `None` with
    /// `--no-push`. The error names the flag.
    pub fn options(&self, selector: &str) -> Result<Option<PushOptions>, String> {
        if self.no_push {
            return Ok(None);
        }
        let allow = AllowList::parse(&self.push_allow.join(","))
            .map_err(|e| format!("--push-allow: {e}"))?;
        let key = self
            .push_key_file
            .as_deref()
            .map(SealKey::from_file)
            .transpose()
            .map_err(|e| format!("--push-key-file: {e}"))?;
        let outbox = match &self.push_outbox {
            Some(dir) => Some(dir.clone()),
            None if selector.trim() == "memory" => None,
            None => Some(PathBuf::from(DEFAULT_OUTBOX)),
        };
        Ok(Some(PushOptions {
            allow,
            key,
            outbox,
            store_name: String::new(),
            timeout: self.push_timeout,
            attempts: self.push_attempts,
            first_backoff: self.push_backoff,
            max_backoff: options::DEFAULT_MAX_BACKOFF.max(self.push_backoff),
            concurrency: self.push_concurrency,
            concurrency_per_namespace: self.push_concurrency_per_namespace,
            concurrency_per_destination: self.push_concurrency_per_destination,
            max_queued: self.push_max_queued,
            max_queued_per_namespace: self.push_max_queued_per_namespace,
            max_queued_per_destination: self.push_max_queued_per_destination,
            max_payload_bytes: self.push_max_payload_bytes,
            require_https: self.push_require_https,
            tls: None,
            abort_after_save_in_state: std::env::var(ABORT_AFTER_SAVE_ENV)
                .ok()
                .filter(|state| !state.is_empty()),
        }))
    }
}

/// Starts the sender over `stores` (call inside the runtime, once the store is open);
/// `store_name` is the store's description (which outbox slot is this store's).
pub fn start(
    options: Option<PushOptions>,
    stores: Arc<dyn toolnexus_a2a::Stores>,
    store_name: String,
) -> Result<Option<Arc<PushSender>>, String> {
    let Some(mut options) = options else {
        return Ok(None);
    };
    // An in-memory store keeps nothing at rest, so there is nothing to seal.
    if options.key.is_none() && store_name != "memory" {
        tracing::warn!(
            "push notifications: no --push-key-file, so webhook tokens and credentials are \
             stored as given; protect the store like those credentials"
        );
    }
    options.store_name = store_name;
    PushSender::start(stores, options)
        .map(|sender| Some(Arc::new(sender)))
        .map_err(|e| format!("--push-outbox: {e}"))
}

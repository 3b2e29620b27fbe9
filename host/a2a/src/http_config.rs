//! The HTTP side's settings ([`HttpConfig`]): TLS, connection and request deadlines, the
//! connection cap and the body size, with their defaults.

use std::time::Duration;

#[cfg(feature = "server")]
pub use crate::tls::TlsIdentity;

/// Without the cargo feature `server` there is no TLS (nor `serve`): this type has no value,
/// so [`HttpConfig::tls`] is always `None`.
#[cfg(not(feature = "server"))]
#[derive(Clone, Debug)]
pub enum TlsIdentity {}

/// Default of [`HttpConfig::header_read_timeout`].
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default of [`HttpConfig::body_read_timeout`].
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Default of [`HttpConfig::idle_timeout`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default of [`HttpConfig::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default of [`HttpConfig::max_body_bytes`].
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;

/// What the HTTP side accepts: TLS, deadlines, connections, body size.
///
/// [`serve`](crate::serve) applies all of them. A [`router`](crate::router) embedded in
/// an application of your own applies `body_read_timeout`, `max_body_bytes` and (for the
/// keep-alives of event streams) `idle_timeout`; TLS, the header deadline and the connection
/// cap are then the host application's business.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// Serve HTTPS with this certificate and key (`TlsIdentity::from_pem_files`, with the
    /// cargo feature `server`); only [`serve`](crate::serve) uses it. None (the default):
    /// plain HTTP.
    pub tls: Option<TlsIdentity>,
    /// How long a client has to send a whole request head (request line and headers), counted
    /// from the connection's accept, or on a kept-alive connection from the first byte of the
    /// next request (default 10 s). Past it the connection is closed without an answer.
    pub header_read_timeout: Duration,
    /// How long a client has to send a request's whole body once its head is in (default
    /// 30 s). Past it the request gets HTTP 408 and the connection is closed.
    pub body_read_timeout: Duration,
    /// How long a connection may sit with nothing moving on it while the server waits for the
    /// client, to take an answer or to start its next request (default 60 s); then it is
    /// closed. An event stream sends a keep-alive comment well within it.
    pub idle_timeout: Duration,
    /// The most connections served at once (default 1024; 0 counts as 1). Past it the server
    /// stops accepting until one closes: further clients wait in the operating system's listen
    /// backlog (their connect may succeed there), unserved but not refused.
    pub max_connections: usize,
    /// The largest request body accepted, in bytes (default 1 MiB); larger ones get HTTP 413.
    pub max_body_bytes: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            tls: None,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

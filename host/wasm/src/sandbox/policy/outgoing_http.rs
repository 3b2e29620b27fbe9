//! Outgoing HTTP (`wasi:http/outgoing-handler`) for components that may call other services,
//! such that a guest cannot turn the host against the network it sits in (SSRF). The rules are
//! in the repository's `docs/outgoing-http.md`; in short:
//!
//! - a request goes only to a host the operator's `allow-hosts` list names ([`AllowList`](allow_list::AllowList);
//!   empty by default, so nothing goes anywhere), over `http` or `https`;
//! - the host resolves the name itself and checks **every** address against the entry's
//!   [`Reach`](allow_list::Reach): a name entry reaches public addresses only, never loopback, private, CGNAT,
//!   link-local, metadata, unspecified, multicast or broadcast ones ([`AddressClass`](address::AddressClass), IPv6
//!   forms of IPv4 addresses judged by the IPv4 address), unless the entry names the literal IP
//!   or marks the name `internal:`; it then connects to one of those checked addresses, never
//!   resolving again (no DNS rebinding);
//! - redirects are not followed by the host: `wasi:http` hands the 3xx to the guest, whose
//!   next request is checked like any other;
//! - every request is bounded ([`OutgoingHttpLimits`]): a connect deadline, a whole-response
//!   deadline, a response body size, and a number of requests in flight per instance.
//!
//! A denied request fails with `HTTP-request-denied`; the reason goes to the host's log.
//!
//! To serve `wasi:http` to an instance, its store data holds an [`OutgoingHttp`] (the
//! per-instance `WasiHttpCtx` and the checked sender), implements [`HasOutgoingHttp`], and its
//! linker gets [`add_to_linker`]. The `wasi:io` interfaces `wasi:http` uses come from
//! `wasmtime_wasi::p2::add_to_linker_async`, added separately.

mod limited_body;
mod send;
#[cfg(test)]
mod tests;

// The address rules live in their own crate, shared with push deliveries; re-exported here
// under the paths they always had.
use toolnexus_egress::tls;
pub use toolnexus_egress::{address, allow_list, check, destination};

use allow_list::{AllowHostsError, AllowList};
pub use send::ConnectionTask;

use hyper::http::{Request, Response};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi_http::p2::bindings::http::{outgoing_handler, types};
use wasmtime_wasi_http::{
    Error, RequestOptions, WasiBody, WasiHttp, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks,
};

/// How far one request may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutgoingHttpLimits {
    /// Name resolution, TCP connect, TLS and HTTP handshakes, together. A guest's own
    /// `connect-timeout` may shorten it.
    pub connect_timeout: Duration,
    /// From the request to the last byte of the response. A guest's `first-byte-timeout` and
    /// `between-bytes-timeout` may cut earlier, never later.
    pub response_timeout: Duration,
    /// The most response body bytes; a longer body fails with `HTTP-response-body-size` (at
    /// once when its `content-length` says so, else where it passes the limit).
    pub max_response_body_bytes: u64,
    /// Requests in flight at once per instance (until the response body is read or dropped);
    /// one more fails with `connection-limit-reached`. At least 1.
    pub max_concurrent_requests: usize,
}

impl Default for OutgoingHttpLimits {
    /// Sized for calls to a model API: 10 s to connect, 5 min for the whole answer, 16 MiB of
    /// body, 4 requests in flight.
    fn default() -> Self {
        OutgoingHttpLimits {
            connect_timeout: Duration::from_secs(10),
            response_timeout: Duration::from_secs(300),
            max_response_body_bytes: 16 * 1024 * 1024,
            max_concurrent_requests: 4,
        }
    }
}

/// What a component's outgoing HTTP may do: the allow-list, the limits and the TLS roots.
/// Shared by all instances of a component.
#[derive(Debug, Clone)]
pub struct OutgoingHttpPolicy {
    allow: AllowList,
    limits: OutgoingHttpLimits,
    tls: tls::TlsRoots,
}

impl Default for OutgoingHttpPolicy {
    /// Nothing allowed.
    fn default() -> Self {
        OutgoingHttpPolicy::new(AllowList::default())
    }
}

impl OutgoingHttpPolicy {
    /// The policy of an allow-list, with the default limits and the system's TLS roots.
    pub fn new(allow: AllowList) -> Self {
        OutgoingHttpPolicy {
            allow,
            limits: OutgoingHttpLimits::default(),
            tls: tls::TlsRoots::System,
        }
    }

    /// The policy of the `allow-hosts` option's text (see [`AllowList::parse`]).
    pub fn from_allow_hosts(text: &str) -> Result<Self, AllowHostsError> {
        AllowList::parse(text).map(OutgoingHttpPolicy::new)
    }

    pub fn with_limits(mut self, limits: OutgoingHttpLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Verify HTTPS servers against these roots instead of the system's.
    pub fn with_tls_roots(mut self, roots: rustls::RootCertStore) -> Result<Self, String> {
        self.tls = tls::TlsRoots::given(roots)?;
        Ok(self)
    }

    pub fn allow_list(&self) -> &AllowList {
        &self.allow
    }

    pub fn limits(&self) -> OutgoingHttpLimits {
        self.limits
    }

    fn tls_config(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        self.tls.config()
    }
}

/// The TLS client configuration of the system's roots (HTTP/1.1 by ALPN), read once per
/// process: for the host's other senders of checked requests (push notifications), so that all
/// of its outgoing HTTPS trusts the same roots.
pub fn system_tls_config() -> Result<Arc<rustls::ClientConfig>, String> {
    toolnexus_egress::system_tls_config()
}

/// One instance's `wasi:http` state: the context `wasmtime-wasi-http` needs and the checked
/// sender with the instance's in-flight count.
pub struct OutgoingHttp {
    ctx: WasiHttpCtx,
    sender: CheckedSender,
}

impl OutgoingHttp {
    pub fn new(policy: Arc<OutgoingHttpPolicy>) -> Self {
        let permits = policy.limits.max_concurrent_requests.max(1);
        OutgoingHttp {
            ctx: WasiHttpCtx::new(),
            sender: CheckedSender {
                policy,
                in_flight: Arc::new(Semaphore::new(permits)),
            },
        }
    }

    /// The view `wasi:http`'s host functions work on, with the instance's resource table.
    pub fn view<'a>(&'a mut self, table: &'a mut ResourceTable) -> WasiHttpCtxView<'a> {
        WasiHttpCtxView {
            ctx: &mut self.ctx,
            table,
            hooks: &mut self.sender,
        }
    }

    /// Sends a request the way a guest's `outgoing-handler.handle` does: checked, bounded,
    /// counted against this instance's requests in flight. A refused request's future
    /// resolves to the error.
    pub fn send(
        &mut self,
        request: Request<WasiBody>,
        options: Option<RequestOptions>,
    ) -> impl Future<Output = Result<(Response<WasiBody>, ConnectionTask), Error>> + Send + use<>
    {
        self.sender.start(request, options)
    }
}

/// The store data of instances that may use `wasi:http`: gives its view.
pub trait HasOutgoingHttp: Send {
    /// Typically `self.outgoing_http.view(&mut self.wasi.table)`.
    fn outgoing_http(&mut self) -> WasiHttpCtxView<'_>;
}

/// Adds `wasi:http/outgoing-handler` and `wasi:http/types` (async) to `linker`, served by
/// `T`'s [`OutgoingHttp`].
pub fn add_to_linker<T: HasOutgoingHttp + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    fn view<T: HasOutgoingHttp>(data: &mut T) -> WasiHttpCtxView<'_> {
        data.outgoing_http()
    }
    let options = wasmtime_wasi_http::p2::bindings::LinkOptions::default();
    outgoing_handler::add_to_linker::<T, WasiHttp>(linker, view::<T>)?;
    types::add_to_linker::<T, WasiHttp>(linker, &options.into(), view::<T>)?;
    Ok(())
}

/// The `wasi:http` hooks: every request goes through [`send::send_checked`].
struct CheckedSender {
    policy: Arc<OutgoingHttpPolicy>,
    in_flight: Arc<Semaphore>,
}

impl CheckedSender {
    fn start(
        &self,
        request: Request<WasiBody>,
        options: Option<RequestOptions>,
    ) -> impl Future<Output = Result<(Response<WasiBody>, ConnectionTask), Error>> + Send + use<>
    {
        // Taken now, while the guest's call is running, so the count holds whatever order the
        // spawned sends run in.
        let permit = Arc::clone(&self.in_flight).try_acquire_owned();
        let policy = Arc::clone(&self.policy);
        async move {
            let Ok(permit) = permit else {
                tracing::debug!("outgoing HTTP request refused: too many requests in flight");
                return Err(Error::ConnectionLimitReached);
            };
            send::send_checked(policy, request, options, permit).await
        }
    }
}

/// The largest write an outgoing body's stream takes at once; with one chunk buffered beside
/// the one in flight, what the host holds for one body the guest has not sent (or whose
/// reader is slow) is at most twice this. wasmtime-wasi-http's default is 1 MiB, 2 MiB a body,
/// which a guest holding hundreds of unsent bodies would multiply into gigabytes.
pub const OUTGOING_BODY_CHUNK_BYTES: usize = 64 << 10;

impl WasiHttpHooks for CheckedSender {
    fn p2_outgoing_body_buffer_chunks(&mut self) -> usize {
        1
    }

    fn p2_outgoing_body_chunk_size(&mut self) -> usize {
        OUTGOING_BODY_CHUNK_BYTES
    }

    /// Every scheme reaches [`send::send_checked`], which denies all but `http` and `https`, so
    /// the guest gets `HTTP-request-denied` for them like for any other refusal.
    fn is_supported_scheme(&mut self, _scheme: &hyper::http::uri::Scheme) -> bool {
        true
    }

    fn send_request(
        &mut self,
        request: Request<WasiBody>,
        options: Option<RequestOptions>,
        _response_errors: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Box<dyn Future<Output = Result<(Response<WasiBody>, ConnectionTask), Error>> + Send> {
        Box::new(self.start(request, options))
    }
}

//! One request through the component ([`HttpComponent`]): admitted (an instance's permit and
//! room in the memory budget), then a fresh instance made and its `handle` called on a thread
//! of the blocking pool (file I/O happens right there, as for every component call), while the
//! connection's task waits for the response head and then streams the body as the component
//! writes it. The run goes on after the response until the component returns or its deadline;
//! the instance is dropped after every request, so nothing of one request reaches another.
//!
//! Deadlines: wasm code stops at the deadline by epoch interruption; clock waits are cut at it
//! (`sandbox::policy::clock`); any other wait in the host (a stream to a client that does not
//! read, an outgoing request, a request body that does not come) ends when the run is dropped
//! at the deadline. A thread held in a system call past it cannot be stopped: the client is
//! then answered (or its body cut) at the backstop, twice the deadline and a second, and the
//! instance's permit stays taken until the system call returns.

use crate::http_component::admission::{self, Admitted};
use crate::http_component::body::{GuardedBody, ResponseBody, RunFailed, text};
use crate::http_component::world::HttpWorld;
use crate::sandbox::deadline;
use crate::sandbox::policy::outgoing_http::HasOutgoingHttp;
use crate::sandbox::pool::InstancePool;
use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::body::Body;
use hyper::{Request, Response, StatusCode};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;
use toolnexus_a2a_protocol::task_count::TaskCount;
use toolnexus_core::{Limit, StoreError};
use wasmtime_wasi_http::p2::bindings::http::types::{ErrorCode, Scheme};
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;

/// Where the component server's log lines go.
const TARGET: &str = "toolnexus::http_component";

/// The response head the component sets, or the error code it sets instead.
type Head = Result<Response<HyperOutgoingBody>, ErrorCode>;

/// A `wasi:http` component ready to serve: compiled, checked, with its sandbox's limits. Cheap
/// to clone; every clone serves with the same instances and budget.
#[derive(Clone)]
pub struct HttpComponent {
    inner: Arc<Inner>,
}

struct Inner {
    pool: InstancePool<HttpWorld>,
    request_timeout: Duration,
    queue_timeout: Duration,
    runs: Arc<TaskCount>,
    next_request: AtomicU64,
}

impl HttpComponent {
    pub(crate) fn new(
        pool: InstancePool<HttpWorld>,
        request_timeout: Duration,
        queue_timeout: Duration,
    ) -> Self {
        HttpComponent {
            inner: Arc::new(Inner {
                pool,
                request_timeout,
                queue_timeout,
                runs: Arc::default(),
                next_request: AtomicU64::new(1),
            }),
        }
    }

    /// The component's name in logs.
    pub fn name(&self) -> &str {
        &self.inner.pool.config.name
    }

    /// Handler runs in progress, including those that already sent their response.
    pub fn runs_in_progress(&self) -> usize {
        self.inner.runs.running()
    }

    /// Ready once no handler run is in progress.
    pub async fn idle(&self) {
        self.inner.runs.idle().await
    }

    /// Answers one request: the component's response as it streams, or the host's own answer
    /// (400 for a request without a host, 503 when no instance is free in time, 500 when the
    /// component fails before its response head).
    ///
    /// The body is handed to the component as it comes, with no timeout of its own: [`serve`]
    /// (`crate::http_component::serve`) holds it to its body timeout.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<ResponseBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<wasmtime_wasi_http::Error>,
    {
        let inner = &self.inner;
        let id = inner.next_request.fetch_add(1, Ordering::Relaxed);
        if !has_authority(&request) {
            return plain(
                StatusCode::BAD_REQUEST,
                "a request needs a Host header or an absolute URI\n",
            );
        }
        let Some(admitted) = admission::admit(&inner.pool, inner.queue_timeout).await else {
            tracing::debug!(target: TARGET, request = id, "every instance busy: 503");
            let mut busy = plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy: every instance of the component is handling a request\n",
            );
            busy.headers_mut().insert(
                hyper::header::RETRY_AFTER,
                hyper::header::HeaderValue::from_static("1"),
            );
            return busy;
        };
        let started = Instant::now();
        let deadline = started + inner.request_timeout;
        let backstop = started + backstop_after(inner.request_timeout);
        let (head_tx, head_rx) = oneshot::channel();
        let failed = RunFailed::default();
        let running = inner.runs.start();
        let run = Run {
            component: Arc::clone(inner),
            id,
            deadline,
            failed: failed.clone(),
        };
        // The permit, the reservation and the count move into the run: if the client goes
        // away, the run goes on to its end (it may work after the response), and its instance
        // counts against `instances` until it returns.
        drop(tokio::task::spawn_blocking(move || {
            let _running = running;
            wasmtime_wasi::runtime::in_tokio(run.run(admitted, request, head_tx));
        }));
        let head = tokio::select! {
            head = head_rx => head,
            () = tokio::time::sleep_until(backstop) => {
                tracing::warn!(target: TARGET, request = id,
                    "no response head by the backstop: the run is held in a system call");
                return internal_error(id);
            }
        };
        match head {
            Ok(Ok(response)) => {
                response.map(|body| GuardedBody::new(body, failed, backstop).boxed_unsync())
            }
            Ok(Err(code)) => {
                tracing::warn!(target: TARGET, request = id, error = ?code,
                    "the component answered an error code instead of a response");
                internal_error(id)
            }
            Err(_) if failed.is_set() => internal_error(id),
            Err(_) => {
                tracing::warn!(target: TARGET, request = id,
                    "the component dropped its response-outparam without setting a response");
                internal_error(id)
            }
        }
    }
}

/// How long the connection waits for a run held in a system call: its deadline, as much again,
/// and a second (as for every component call).
fn backstop_after(timeout: Duration) -> Duration {
    timeout
        .saturating_mul(2)
        .saturating_add(Duration::from_secs(1))
}

/// Whether wasmtime-wasi-http can give the request an authority: from its URI, or a `Host`
/// header it can read as text.
fn has_authority<B>(request: &Request<B>) -> bool {
    request.uri().authority().is_some()
        || request
            .headers()
            .get(hyper::header::HOST)
            .is_some_and(|host| host.to_str().is_ok())
}

fn plain(status: StatusCode, body: &'static str) -> Response<ResponseBody> {
    let mut response = Response::new(text(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A 500 that tells the client nothing of the component but the request's number, under which
/// the log has the details.
fn internal_error(id: u64) -> Response<ResponseBody> {
    let mut response = Response::new(text(format!(
        "internal error: the component failed to answer (request {id})\n"
    )));
    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// What went wrong with a run, without the store-flavoured wording of `StoreError`'s own
/// message (the log line names the component already).
fn describe(error: StoreError) -> String {
    match error {
        StoreError::Component { reason, .. } => reason,
        StoreError::LimitExceeded {
            limit: Limit::Timeout(timeout),
            ..
        } => format!("stopped at its deadline of {timeout:?}"),
        StoreError::LimitExceeded { limit, .. } => format!("exceeded its {limit}"),
        other => other.to_string(),
    }
}

/// One handler run, on its blocking thread.
struct Run {
    component: Arc<Inner>,
    id: u64,
    deadline: Instant,
    failed: RunFailed,
}

impl Run {
    async fn run<B>(self, admitted: Admitted, request: Request<B>, head: oneshot::Sender<Head>)
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<wasmtime_wasi_http::Error>,
    {
        let Admitted {
            permit: _permit,
            reservation,
        } = admitted;
        let pool = &self.component.pool;
        let timeout = self.component.request_timeout;
        let mut instance = match pool.instantiate(reservation).await {
            Ok(instance) => instance,
            Err(e) => {
                return self.fail(format_args!("cannot make an instance: {}", describe(e)));
            }
        };
        instance.start_call(self.deadline.into_std(), false);
        let mut http = instance.store.data_mut().outgoing_http();
        let resources = http
            .new_incoming_request(Scheme::Http, request)
            .and_then(|request| Ok((request, http.new_response_outparam(head)?)));
        let (request, outparam) = match resources {
            Ok(resources) => resources,
            Err(e) => return self.fail(format_args!("cannot pass the request on: {e:#}")),
        };
        let call = instance.api.wasi_http_incoming_handler().call_handle(
            &mut instance.store,
            request,
            outparam,
        );
        // Past the deadline the call is dropped wherever it waits, which drops its instance
        // and with it every stream it holds.
        let returned = deadline::bounded(self.deadline.into_std(), call).await.ok();
        match returned {
            Some(Ok(())) if !instance.hit_deadline() => {
                // What it holds now is what a request needs: the next ones reserve that much.
                instance.store.data_mut().memory.end_call();
                if instance.hit_quota() {
                    tracing::info!(target: TARGET, request = self.id,
                        component = %pool.config.name, "a write was refused for the disk quota");
                }
            }
            // It asked to wait past its deadline and was woken at it.
            Some(Ok(())) | None => self.fail(format_args!("stopped: {}", Limit::Timeout(timeout))),
            Some(Err(trap)) => {
                // Set before the instance (and the body's sender) is dropped below.
                self.failed.set();
                let error = pool.trap_error(&instance, trap);
                self.fail(format_args!("{}", describe(error)));
            }
        }
    }

    /// Marks the run failed (before its instance is dropped, so its body's guard sees it) and
    /// logs why.
    fn fail(&self, why: std::fmt::Arguments<'_>) {
        self.failed.set();
        tracing::warn!(target: TARGET, request = self.id,
            component = %self.component.pool.config.name, "request failed: {why}");
    }
}

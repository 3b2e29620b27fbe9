//! The HTTP side of [`crate::serve`]: the accept loop with its connection cap, and one HTTP/1.1
//! connection at a time with the header and idle deadlines.
//!
//! hyper's own `header_read_timeout` starts whenever a connection waits for a request head,
//! including the wait for the next request on a keep-alive connection, so it cannot be a short
//! header deadline and a longer idle deadline at once. The deadlines are therefore kept here,
//! from what the connection does (bytes read and written, requests started and answered):
//!
//! - **head**: from the moment a connection is accepted, or from the first byte of a later
//!   request on a kept-alive connection, the whole request head must arrive within the header
//!   timeout;
//! - **handling**: while a request is being handled there is no connection deadline (the
//!   handler bounds the body read with the body timeout; store calls have their own);
//! - **waiting**: once the answer is produced, the connection is closed if nothing moves on it
//!   (no byte of the answer taken by the client, no byte of a next request) for the idle
//!   timeout.
//!
//! A connection past its deadline is dropped, which closes the socket. (A pipelining client
//! whose next request head was partly read while the previous one was handled gets the idle
//! timeout and then the header timeout for it: still bounded.)
//!
//! With TLS the handshake comes first, on the connection's own task (a slow client never holds
//! up the accept loop), and counts towards the first request head's deadline.
//!
//! When the shutdown future given to [`run`] is ready, the listener closes and each connection
//! finishes the request it is answering and closes (hyper's graceful shutdown: an idle
//! kept-alive connection closes at once). [`Connections`] then tells how many requests are
//! still being handled, ends the event streams still open, and waits for the connections to
//! close.

use crate::stream_end::ending_on;
use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::future::{Future, poll_fn};
use std::io;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use toolnexus_a2a_protocol::task_count::TaskCount;
use tower_service::Service;

/// How long the accept loop pauses after an accept error that is not about one connection
/// (such as running out of file descriptors), so it neither spins nor floods the log.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The connection limits of [`run`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
}

/// Accepts connections on `listener` and serves `router` on each (over TLS with `tls`), at
/// most `limits.max_connections` at once, until `shutdown` is ready. Past the cap, the loop
/// stops accepting until a connection closes: further clients wait in the listen backlog of
/// the operating system (their TCP handshake may complete there, but no byte of theirs is
/// read).
///
/// Once `shutdown` is ready the listener is closed and every connection told to close after
/// the request it is answering; the [`Connections`] returned follow them to their end.
pub(crate) async fn run(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()>,
) -> Connections {
    // Within what one `acquire_many` can take, so that the stop can wait for every permit.
    let max = u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX);
    let permits = Arc::new(Semaphore::new(max as usize));
    let handling = Arc::new(TaskCount::default());
    let (stop, stopping) = watch::channel(false);
    let (end_streams, streams_end) = watch::channel(false);
    let builder = hyper::server::conn::http1::Builder::new();
    let mut shutdown = pin!(shutdown);
    loop {
        let (permit, accepted) = tokio::select! {
            () = &mut shutdown => break,
            accepted = async {
                // The semaphore is never closed, so this only waits.
                let permit = Arc::clone(&permits).acquire_owned().await;
                (permit, listener.accept().await)
            } => accepted,
        };
        let Ok(permit) = permit else {
            break;
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                drop(permit);
                accept_failed(e).await;
                continue;
            }
        };
        // Replies and stream events go out as soon as they are written: with Nagle's algorithm on,
        // an event written after an unacknowledged one waits for the client's delayed ACK
        // (about 40 ms on Linux), so every stream would take that long.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(target: "toolnexus::server", %peer, error = %e, "cannot set TCP_NODELAY");
        }
        let serving = Serving {
            router: router.clone(),
            builder: builder.clone(),
            limits,
            stopping: stopping.clone(),
            handling: Arc::clone(&handling),
            streams_end: streams_end.clone(),
        };
        let tls = tls.clone();
        let accepted = Instant::now();
        tokio::spawn(async move {
            match tls {
                None => serve_connection(stream, accepted, serving).await,
                Some(acceptor) => {
                    let handshake = tokio::time::timeout_at(
                        deadline_after(accepted, limits.header_read_timeout),
                        acceptor.accept(stream),
                    );
                    match handshake.await {
                        Ok(Ok(stream)) => {
                            serve_connection(stream, accepted, serving).await;
                        }
                        Ok(Err(e)) => {
                            tracing::debug!(target: "toolnexus::server", %peer, error = %e, "TLS handshake failed");
                        }
                        Err(_) => {
                            tracing::debug!(target: "toolnexus::server", %peer, "TLS handshake too slow: closing");
                        }
                    }
                }
            }
            tracing::trace!(target: "toolnexus::server", %peer, "connection closed");
            drop(permit);
        });
    }
    // No new connections from here; the open ones finish the request they answer.
    drop(listener);
    let _ = stop.send(true);
    Connections {
        permits,
        max,
        handling,
        end_streams,
        _stop: stop,
    }
}

/// The connections of a stopped [`run`], closing.
pub(crate) struct Connections {
    /// One per open connection taken from it.
    permits: Arc<Semaphore>,
    max: u32,
    /// The requests being handled (from their head to their answer's head).
    handling: Arc<TaskCount>,
    end_streams: watch::Sender<bool>,
    /// Kept: a connection whose stop signal went would take it for a stop anyway.
    _stop: watch::Sender<bool>,
}

impl Connections {
    /// How many requests are being handled (their answer not begun).
    pub(crate) fn requests_in_progress(&self) -> usize {
        self.handling.running()
    }

    /// Ready once no request is being handled.
    pub(crate) async fn requests_idle(&self) {
        self.handling.idle().await;
    }

    /// Ends every event stream at its next pause (see `stream_end`).
    pub(crate) fn end_streams(&self) {
        let _ = self.end_streams.send(true);
    }

    /// Ready once every connection is closed.
    pub(crate) async fn closed(&self) {
        let _ = self.permits.acquire_many(self.max).await;
    }
}

/// What each connection of [`run`] is served with.
struct Serving {
    router: Router,
    builder: hyper::server::conn::http1::Builder,
    limits: Limits,
    /// Turns true when the server stops: the connection closes after its current answer.
    stopping: watch::Receiver<bool>,
    handling: Arc<TaskCount>,
    /// Turns true when the open event streams are to end.
    streams_end: watch::Receiver<bool>,
}

/// `since + timeout`, or far enough away to never come for a timeout too large to add.
fn deadline_after(since: Instant, timeout: Duration) -> Instant {
    since
        .checked_add(timeout)
        .unwrap_or_else(|| since + Duration::from_secs(86_400 * 365))
}

async fn accept_failed(e: io::Error) {
    // A connection that went away before it was accepted: nothing to wait for.
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        tracing::debug!(target: "toolnexus::server", error = %e, "connection lost before accept");
        return;
    }
    // Out of file descriptors or memory, most likely: wait for some to be freed.
    tracing::warn!(target: "toolnexus::server", error = %e, backoff = ?ACCEPT_BACKOFF,
        "cannot accept a connection; pausing");
    tokio::time::sleep(ACCEPT_BACKOFF).await;
}

/// Where a connection is in its life, for its deadline.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// A request head is arriving (or due), since this instant.
    Head(Instant),
    /// A request is being handled: no connection deadline.
    Handling,
    /// Waiting for the client (to take the answer or send the next request); nothing moved
    /// since this instant.
    Waiting(Instant),
}

/// What closed a connection on our side.
#[derive(Debug, Clone, Copy)]
enum Expired {
    Header,
    Idle,
}

struct Watch {
    header: Duration,
    idle: Duration,
    phase: Mutex<Phase>,
}

impl Watch {
    fn set(&self, f: impl FnOnce(Phase) -> Phase) {
        let mut phase = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        *phase = f(*phase);
    }

    /// When the connection is due to be closed, if it is; a timeout too far away to be an
    /// instant (such as `Duration::MAX`) is none.
    fn deadline(&self) -> Option<(Instant, Expired)> {
        let phase = *self.phase.lock().unwrap_or_else(|e| e.into_inner());
        match phase {
            Phase::Head(since) => Some((since.checked_add(self.header)?, Expired::Header)),
            Phase::Handling => None,
            Phase::Waiting(since) => Some((since.checked_add(self.idle)?, Expired::Idle)),
        }
    }

    fn bytes_read(&self) {
        self.set(|phase| match phase {
            Phase::Waiting(_) => Phase::Head(Instant::now()),
            other => other,
        });
    }

    fn bytes_written(&self) {
        self.set(|phase| match phase {
            Phase::Waiting(_) => Phase::Waiting(Instant::now()),
            other => other,
        });
    }

    fn request_started(&self) {
        self.set(|_| Phase::Handling);
    }

    fn answer_ready(&self) {
        self.set(|_| Phase::Waiting(Instant::now()));
    }
}

/// Serves one connection (plain TCP, or TLS after its handshake) accepted at `accepted`.
async fn serve_connection<S>(stream: S, accepted: Instant, serving: Serving)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Serving {
        router,
        builder,
        limits,
        mut stopping,
        handling,
        streams_end,
    } = serving;
    let watch = Arc::new(Watch {
        header: limits.header_read_timeout,
        idle: limits.idle_timeout,
        phase: Mutex::new(Phase::Head(accepted)),
    });
    let io = TokioIo::new(Watched {
        inner: stream,
        watch: Arc::clone(&watch),
    });
    let service_watch = Arc::clone(&watch);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        service_watch.request_started();
        let handled = handling.start();
        let watch = Arc::clone(&service_watch);
        let mut router = router.clone();
        let streams_end = streams_end.clone();
        async move {
            let response = router.call(request.map(Body::new)).await;
            watch.answer_ready();
            drop(handled);
            response.map(|response| response.map(|body| ending_on(body, &streams_end)))
        }
    });
    let mut connection = pin!(builder.serve_connection(io, service));
    let mut stop = pin!(stopping.wait_for(|stop| *stop));
    let mut stopped = false;
    let mut timer = Box::pin(tokio::time::sleep_until(Instant::now()));
    let outcome = poll_fn(|cx| {
        if !stopped && stop.as_mut().poll(cx).is_ready() {
            // Closes an idle connection now, else once its current answer is written.
            stopped = true;
            connection.as_mut().graceful_shutdown();
        }
        if let Poll::Ready(done) = connection.as_mut().poll(cx) {
            return Poll::Ready(done.map_err(Some));
        }
        // Every change of phase happens while the connection is polled (its reads, writes and
        // the service future are all inside it), so checking right after it is enough.
        if let Some((deadline, expired)) = watch.deadline() {
            if timer.deadline() != deadline {
                timer.as_mut().reset(deadline);
            }
            if timer.as_mut().poll(cx).is_ready() {
                tracing::debug!(target: "toolnexus::server", ?expired, "closing connection: deadline passed");
                return Poll::Ready(Err(None));
            }
        }
        Poll::Pending
    })
    .await;
    if let Err(Some(e)) = outcome {
        tracing::debug!(target: "toolnexus::server", error = %e, "connection error");
    }
}

/// The connection, telling the [`Watch`] when bytes move.
struct Watched<S> {
    inner: S,
    watch: Arc<Watch>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.watch.bytes_read();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.watch.bytes_written();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.watch.bytes_written();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

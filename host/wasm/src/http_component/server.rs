//! The HTTP/1.1 server in front of an [`HttpComponent`] ([`serve`]): hyper on a Tokio listener,
//! at most `max_connections` connections at once, a deadline for each request head, a deadline
//! for a client that does not take its answer, and a graceful stop.
//!
//! This is its own small accept loop rather than the A2A server's (`toolnexus-a2a`'s
//! `conn.rs`): that one serves an axum `Router` and is private to its crate, and this crate
//! must not depend on axum. It keeps the same rules, more simply:
//!
//! - **head**: hyper's header-read timeout, which runs whenever a connection waits for a
//!   request head, so it also closes a kept-alive connection that sends no next request;
//! - **body**: a request's whole body must arrive within the body timeout of its head
//!   (`request_body`);
//! - **stall**: a connection whose answer has waited to be written (the client not reading)
//!   for the stall timeout is closed; a connection with nothing to write has no deadline here
//!   (a quiet stream is the component's to keep alive, and its run ends by its own deadline);
//! - **stop**: when `shutdown` is ready the listener closes, each connection finishes the
//!   request it is answering and closes, and [`serve`] returns once every connection is closed
//!   and every handler run (including work after a response) has ended.

use crate::http_component::handler::HttpComponent;
use crate::http_component::request_body::TimedBody;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::{Future, poll_fn};
use std::io;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;
use toolnexus_a2a_protocol::task_count::TaskCount;

const TARGET: &str = "toolnexus::http_component";

/// How long the accept loop pauses after an accept error that is not about one connection
/// (such as running out of file descriptors), so it neither spins nor floods the log.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The connection limits of [`serve`].
#[derive(Debug, Clone, Copy)]
pub struct ServerLimits {
    /// The whole request head must arrive within this, from the connection's start or, on a
    /// kept-alive connection, from the end of the previous answer.
    pub header_read_timeout: Duration,
    /// A connection whose answer has waited this long for the client to take it is closed.
    pub stall_timeout: Duration,
    /// A request's whole body must arrive within this, from its head; past it the component's
    /// read of the body fails with `connection-read-timeout`.
    pub body_read_timeout: Duration,
    /// Connections served at once; further clients wait in the listen backlog.
    pub max_connections: usize,
}

impl Default for ServerLimits {
    /// 10 s for a head, 60 s for a stalled client, 30 s for a body, 1,024 connections (the
    /// A2A server's).
    fn default() -> Self {
        ServerLimits {
            header_read_timeout: Duration::from_secs(10),
            stall_timeout: Duration::from_secs(60),
            body_read_timeout: Duration::from_secs(30),
            max_connections: 1024,
        }
    }
}

/// Serves `component` on `listener` until `shutdown` is ready, then stops gracefully (see the
/// module's documentation) and returns.
pub async fn serve(
    listener: TcpListener,
    component: HttpComponent,
    limits: ServerLimits,
    shutdown: impl Future<Output = ()>,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let connections = Arc::new(TaskCount::default());
    let (stop, stopping) = watch::channel(false);
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
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
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                drop(permit);
                accept_failed(e).await;
                continue;
            }
        };
        // Stream events go out as soon as they are written (no wait for a delayed ACK).
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(target: TARGET, %peer, error = %e, "cannot set TCP_NODELAY");
        }
        let running = connections.start();
        let component = component.clone();
        let builder = builder.clone();
        let stopping = stopping.clone();
        tokio::spawn(async move {
            serve_connection(stream, component, builder, limits, stopping).await;
            tracing::trace!(target: TARGET, %peer, "connection closed");
            drop((permit, running));
        });
    }
    // No new connections from here; the open ones finish what they answer.
    drop(listener);
    let _ = stop.send(true);
    connections.idle().await;
    component.idle().await;
}

async fn accept_failed(e: io::Error) {
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        tracing::debug!(target: TARGET, error = %e, "connection lost before accept");
        return;
    }
    tracing::warn!(target: TARGET, error = %e, backoff = ?ACCEPT_BACKOFF,
        "cannot accept a connection; pausing");
    tokio::time::sleep(ACCEPT_BACKOFF).await;
}

/// Serves one connection until it closes, its client stalls, or (once `stopping` turns true)
/// it has finished the answer in progress.
async fn serve_connection(
    stream: TcpStream,
    component: HttpComponent,
    builder: http1::Builder,
    limits: ServerLimits,
    mut stopping: watch::Receiver<bool>,
) {
    let (stall, body_read_timeout) = (limits.stall_timeout, limits.body_read_timeout);
    let writes = Arc::new(WriteWatch::default());
    let io = TokioIo::new(Watched {
        inner: stream,
        writes: Arc::clone(&writes),
    });
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let component = component.clone();
        let body_by = Instant::now() + body_read_timeout;
        let request = request.map(|body| TimedBody::new(body, body_by));
        async move { Ok::<_, Infallible>(component.handle(request).await) }
    });
    let mut connection = pin!(builder.serve_connection(io, service));
    let mut stop = pin!(stopping.wait_for(|stop| *stop));
    let mut stopped = false;
    let mut timer = Box::pin(tokio::time::sleep_until(Instant::now()));
    let outcome = poll_fn(|cx| {
        if !stopped && stop.as_mut().poll(cx).is_ready() {
            stopped = true;
            connection.as_mut().graceful_shutdown();
        }
        if let Poll::Ready(done) = connection.as_mut().poll(cx) {
            return Poll::Ready(done.err());
        }
        // Writes are only attempted while the connection is polled, so looking right after it
        // is enough.
        if let Some(since) = writes.blocked_since() {
            let at = since + stall;
            if timer.deadline() != at {
                timer.as_mut().reset(at);
            }
            if timer.as_mut().poll(cx).is_ready() {
                tracing::debug!(target: TARGET, "closing connection: the client takes no answer");
                return Poll::Ready(None);
            }
        }
        Poll::Pending
    })
    .await;
    if let Some(e) = outcome {
        tracing::debug!(target: TARGET, error = %e, "connection error");
    }
}

/// Since when the connection's writes have been waiting for the client, if they are.
#[derive(Debug, Default)]
struct WriteWatch {
    blocked: Mutex<Option<Instant>>,
}

impl WriteWatch {
    fn blocked_since(&self) -> Option<Instant> {
        *self.blocked.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn saw<T>(&self, polled: &Poll<io::Result<T>>, wrote: impl Fn(&T) -> bool) {
        let mut blocked = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
        match polled {
            Poll::Pending => {
                blocked.get_or_insert_with(Instant::now);
            }
            Poll::Ready(Ok(done)) if wrote(done) => *blocked = None,
            Poll::Ready(_) => {}
        }
    }
}

/// The connection, telling its [`WriteWatch`] when writes wait and when they move.
struct Watched {
    inner: TcpStream,
    writes: Arc<WriteWatch>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.writes.saw(&polled, |n| *n > 0);
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.writes.saw(&polled, |n| *n > 0);
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

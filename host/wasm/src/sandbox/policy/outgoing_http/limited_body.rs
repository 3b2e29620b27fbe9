//! A response body held to the policy's limits while the guest reads it: at most so many
//! bytes, done by the whole-response deadline, and (when the guest asked for one) no longer
//! than its between-bytes timeout without data. It holds the request's concurrency permit, so
//! a request counts until its body is read or dropped.

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, Sleep};
use wasmtime_wasi_http::Error;

pub(super) struct LimitedBody {
    inner: Incoming,
    received: u64,
    max_bytes: u64,
    deadline: Pin<Box<Sleep>>,
    /// The guest's between-bytes timeout and the timer it resets.
    idle: Option<(Duration, Pin<Box<Sleep>>)>,
    /// Set once an error was returned: the body ends there.
    failed: bool,
    _permit: OwnedSemaphorePermit,
}

impl LimitedBody {
    pub(super) fn new(
        inner: Incoming,
        max_bytes: u64,
        deadline: Instant,
        between_bytes: Option<Duration>,
        permit: OwnedSemaphorePermit,
    ) -> Self {
        LimitedBody {
            inner,
            received: 0,
            max_bytes,
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
            idle: between_bytes.map(|d| (d, Box::pin(tokio::time::sleep(d)))),
            failed: false,
            _permit: permit,
        }
    }

    fn fail(&mut self, error: Error) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        self.failed = true;
        Poll::Ready(Some(Err(error)))
    }
}

/// The `wasi:http` error for a failure of hyper's connection.
pub(super) fn from_hyper(error: hyper::Error) -> Error {
    if error.is_timeout() {
        Error::HttpResponseTimeout
    } else {
        Error::Hyper(error)
    }
}

impl Body for LimitedBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        if this.failed {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.received = this.received.saturating_add(data.len() as u64);
                    if this.received > this.max_bytes {
                        return this.fail(Error::HttpResponseBodySize(Some(this.max_bytes)));
                    }
                }
                if let Some((timeout, timer)) = &mut this.idle {
                    timer.as_mut().reset(Instant::now() + *timeout);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            // Past the deadline the connection task drops the connection, and the body then
            // ends with hyper's "connection closed": the cause is the deadline.
            Poll::Ready(Some(Err(_))) if Instant::now() >= this.deadline.deadline() => {
                this.fail(Error::HttpResponseTimeout)
            }
            Poll::Ready(Some(Err(e))) => this.fail(from_hyper(e)),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                if this.deadline.as_mut().poll(cx).is_ready() {
                    return this.fail(Error::HttpResponseTimeout);
                }
                if let Some((_, timer)) = &mut this.idle
                    && timer.as_mut().poll(cx).is_ready()
                {
                    return this.fail(Error::ConnectionReadTimeout);
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.failed || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

//! Response bodies: the host's own short answers ([`text`]) and the component's streamed body,
//! guarded ([`GuardedBody`]) so that a client can always tell a complete answer from a cut one
//! and is never held past the request's backstop.
//!
//! wasmtime-wasi-http ends a component's body normally when its instance is dropped unfinished
//! (the finish signal's sender is gone, which it reads as the end). A trap or the deadline in
//! the middle of a stream would then look complete: a chunked answer closed by its last chunk.
//! The guard turns that end into an error when the handler run failed, which makes hyper cut
//! the connection without the last chunk.

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use tokio::time::{Instant, Sleep};
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;

/// Any error of a response body.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The body of every response the component server sends.
pub type ResponseBody = UnsyncBoxBody<Bytes, BoxError>;

/// A whole body of `text`.
pub(crate) fn text(text: impl Into<Bytes>) -> ResponseBody {
    http_body_util::Full::new(text.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// Set by a handler run that failed (a trap, a limit, the deadline) before its instance is
/// dropped, so the guard of its body sees it when the body ends.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunFailed(Arc<AtomicBool>);

impl RunFailed {
    pub(crate) fn set(&self) {
        self.0.store(true, Ordering::Release);
    }

    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// The component's body: its frames as they come, an error instead of the end when the run
/// failed, and an error at `backstop` if the body is still open then (its run held in a system
/// call past its deadline).
pub(crate) struct GuardedBody {
    inner: HyperOutgoingBody,
    failed: RunFailed,
    backstop: Pin<Box<Sleep>>,
}

impl GuardedBody {
    pub(crate) fn new(inner: HyperOutgoingBody, failed: RunFailed, backstop: Instant) -> Self {
        GuardedBody {
            inner,
            failed,
            backstop: Box::pin(tokio::time::sleep_until(backstop)),
        }
    }
}

impl Body for GuardedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => Poll::Ready(Some(Ok(frame))),
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(Box::new(e)))),
            Poll::Ready(None) if self.failed.is_set() => Poll::Ready(Some(Err(
                "the component failed before it finished its response".into(),
            ))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match self.backstop.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(
                    "the component's response was still open past its deadline".into(),
                ))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

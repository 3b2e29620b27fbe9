//! The request body a component reads, held to the server's body timeout ([`TimedBody`]): the
//! whole body must arrive within it from the request head. A client that declares a large
//! body and then sends nothing would otherwise keep the component waiting in its stream read,
//! holding an instance, until the request's deadline; with the timeout, the component's read
//! fails (`connection-read-timeout`) and its run ends as the component decides (the native
//! A2A server answers 408 at its own body timeout).

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::time::{Instant, Sleep};
use wasmtime_wasi_http::Error;

/// `inner`, ending with `connection-read-timeout` if it is not over by its deadline.
pub(crate) struct TimedBody<B> {
    inner: B,
    deadline: Pin<Box<Sleep>>,
    /// Set once the timeout was reported: the body ends there.
    timed_out: bool,
}

impl<B> TimedBody<B> {
    pub(crate) fn new(inner: B, deadline: Instant) -> Self {
        TimedBody {
            inner,
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
            timed_out: false,
        }
    }
}

impl<B> Body for TimedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Error>,
{
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        if this.timed_out {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame.map(|frame| frame.map_err(Into::into))),
            Poll::Pending if this.deadline.as_mut().poll(cx).is_ready() => {
                this.timed_out = true;
                tracing::debug!(target: "toolnexus::http_component",
                    "request body not received within the body timeout");
                Poll::Ready(Some(Err(Error::ConnectionReadTimeout)))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.timed_out || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

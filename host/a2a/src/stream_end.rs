//! Ending the event streams still open when the server stops: a response body whose length is
//! not known (a server-sent event stream) ends, once told to, at its next pause between
//! frames, so the client reads a complete response (the chunked body's last chunk) rather than
//! a connection cut in the middle of one.

use axum::body::{Body, Bytes};
use hyper::body::{Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::watch;

/// `body`, made to end when `end` turns true (or its sender goes), if it is a stream; a body
/// of known length is left whole.
pub(crate) fn ending_on(body: Body, end: &watch::Receiver<bool>) -> Body {
    if hyper::body::Body::size_hint(&body).exact().is_some() {
        return body;
    }
    let mut end = end.clone();
    Body::new(EndingBody {
        inner: body,
        end: Box::pin(async move {
            let _ = end.wait_for(|end| *end).await;
        }),
        ended: false,
    })
}

struct EndingBody {
    inner: Body,
    end: Pin<Box<dyn Future<Output = ()> + Send>>,
    ended: bool,
}

impl hyper::body::Body for EndingBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Pending if self.end.as_mut().poll(cx).is_ready() => {
                self.ended = true;
                Poll::Ready(None)
            }
            polled => polled,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

//! A component's stderr, forwarded line by line to the host's `tracing` log.

use bytes::Bytes;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// The longest line forwarded in one event; longer output is split. Each line is sanitized
/// (control characters escaped) before it is logged.
const MAX_LINE: usize = crate::message::MAX_MESSAGE;

pub(crate) struct LogStderr {
    component: Arc<str>,
}

impl LogStderr {
    pub(crate) fn new(component: &str) -> Self {
        LogStderr {
            component: component.into(),
        }
    }
}

impl IsTerminal for LogStderr {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogStderr {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(LineLogger {
            component: Arc::clone(&self.component),
            pending: Vec::new(),
        })
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(LineLogger {
            component: Arc::clone(&self.component),
            pending: Vec::new(),
        })
    }
}

struct LineLogger {
    component: Arc<str>,
    pending: Vec<u8>,
}

impl LineLogger {
    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' || self.pending.len() >= MAX_LINE {
                self.emit();
                if b == b'\n' {
                    continue;
                }
            }
            self.pending.push(b);
        }
    }

    fn emit(&mut self) {
        let line = crate::message::sanitize(&String::from_utf8_lossy(&self.pending));
        tracing::info!(target: "toolnexus::component", component = %self.component, "{line}");
        self.pending.clear();
    }
}

impl Drop for LineLogger {
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            self.emit();
        }
    }
}

impl OutputStream for LineLogger {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 * 1024)
    }
}

#[async_trait::async_trait]
impl Pollable for LineLogger {
    async fn ready(&mut self) {}
}

impl AsyncWrite for LineLogger {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

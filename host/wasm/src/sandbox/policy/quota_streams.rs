//! The disk quota's file streams: an output stream charged for every byte it writes past the
//! file's length ([`counted`]), and an input stream counted as holding its file ([`held`]), so
//! that what unlinked files free is given back only once no stream can keep them
//! (`policy::quota_holds`).

use crate::sandbox::inline::{self, InlineFlag};
use crate::sandbox::policy::quota::{FileStreamGuard, QuotaState};
use bytes::Bytes;
use std::sync::Arc;
use wasmtime_wasi::p2::{
    DynInputStream, DynOutputStream, InputStream, OutputStream, Pollable, StreamError,
};

/// `inner`, a file's new output stream, charged for what it adds: `position` is where a write
/// stream starts (`None` for an append stream), `file` the file it writes.
pub(crate) fn counted(
    quota: &QuotaState,
    inner: DynOutputStream,
    position: Option<u64>,
    file: Option<Arc<std::fs::File>>,
    inline: &InlineFlag,
) -> DynOutputStream {
    Box::new(CountedStream {
        inner,
        held: quota.hold_file_stream(file.as_deref()),
        quota: quota.clone(),
        position,
        file,
        inline: inline.clone(),
    })
}

/// `inner`, a new input stream on `file`, counted as holding the file while it lives.
pub(crate) fn held(
    quota: &QuotaState,
    inner: DynInputStream,
    file: Option<&std::fs::File>,
) -> DynInputStream {
    Box::new(HeldStream {
        inner,
        _held: quota.hold_file_stream(file),
    })
}

/// A file's input stream, counted while it lives.
struct HeldStream {
    inner: DynInputStream,
    _held: FileStreamGuard,
}

#[async_trait::async_trait]
impl Pollable for HeldStream {
    async fn ready(&mut self) {
        self.inner.ready().await
    }
}

#[async_trait::async_trait]
impl InputStream for HeldStream {
    fn read(&mut self, size: usize) -> Result<Bytes, StreamError> {
        self.inner.read(size)
    }

    async fn blocking_read(&mut self, size: usize) -> Result<Bytes, StreamError> {
        self.inner.blocking_read(size).await
    }

    fn skip(&mut self, nelem: usize) -> Result<usize, StreamError> {
        self.inner.skip(nelem)
    }

    async fn blocking_skip(&mut self, nelem: usize) -> Result<usize, StreamError> {
        self.inner.blocking_skip(nelem).await
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await
    }
}

/// A file's output stream that is charged for every byte it writes past the file's length.
struct CountedStream {
    inner: DynOutputStream,
    /// Holds the file for the quota's credits; knows the file, for its lock on size changes.
    held: FileStreamGuard,
    quota: QuotaState,
    /// Where the next write lands, or `None` for an append stream (every byte is growth).
    position: Option<u64>,
    /// The file, to read its length before each write: another descriptor may have truncated
    /// or grown it since.
    file: Option<Arc<std::fs::File>>,
    /// Whether the call in progress runs on an async worker. A stream made in one call may be
    /// kept for a later one that runs there, where a write must not happen: an attempt
    /// stopped later in the call (for a sync, a rename) would be run again, and its write
    /// would stay behind from the abandoned attempt.
    inline: InlineFlag,
}

impl CountedStream {
    /// Charges a write of `n` bytes, or refuses it as the disk being full; in a call running
    /// on an async worker, stops it first (it is run again on a blocking thread). `sizes`: the
    /// pool's lock on size changes, held until the write is done; without it (another size
    /// change of the pool in progress) the whole write is charged, never measured against a
    /// length that may be changing.
    fn charge(
        &mut self,
        n: usize,
        sizes: Option<&tokio::sync::OwnedMutexGuard<()>>,
    ) -> Result<(), StreamError> {
        if self.inline.get() {
            return Err(StreamError::Trap(inline::stop("a stream write", true)));
        }
        let n = n as u64;
        let growth = match (self.position, &self.file, sizes) {
            (Some(position), Some(file), Some(_)) => {
                // A length we cannot read counts as empty: the whole write is charged.
                let len = file.metadata().map_or(0, |meta| meta.len());
                position.saturating_add(n).saturating_sub(len)
            }
            _ => n,
        };
        if !self.quota.charge(growth) {
            return Err(StreamError::LastOperationFailed(no_space_error().into()));
        }
        if let Some(position) = &mut self.position {
            *position = position.saturating_add(n);
        }
        Ok(())
    }

    /// For a write stream, the pool's lock on size changes if it is free now (a write that
    /// must not wait takes the conservative charge otherwise); an append is charged whole and
    /// needs none.
    fn sizes_now(&self) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        self.position
            .and_then(|_| self.quota.try_lock_sizes(self.held.file()))
    }
}

/// The error a refused stream write fails with: `ENOSPC`, which the guest reads as
/// `insufficient-space`.
fn no_space_error() -> std::io::Error {
    #[cfg(unix)]
    {
        std::io::Error::from_raw_os_error(libc::ENOSPC)
    }
    #[cfg(not(unix))]
    {
        std::io::Error::from(std::io::ErrorKind::StorageFull)
    }
}

#[async_trait::async_trait]
impl Pollable for CountedStream {
    async fn ready(&mut self) {
        self.inner.ready().await
    }
}

#[async_trait::async_trait]
impl OutputStream for CountedStream {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        let sizes = self.sizes_now();
        self.charge(bytes.len(), sizes.as_ref())?;
        self.inner.write(bytes)
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        self.inner.check_write()
    }

    async fn blocking_write_and_flush(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        let sizes = match self.position {
            Some(_) => Some(self.quota.lock_sizes(self.held.file()).await),
            None => None,
        };
        self.charge(bytes.len(), sizes.as_ref())?;
        self.inner.blocking_write_and_flush(bytes).await
    }

    fn write_zeroes(&mut self, n: usize) -> Result<(), StreamError> {
        let sizes = self.sizes_now();
        self.charge(n, sizes.as_ref())?;
        self.inner.write_zeroes(n)
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await
    }
}

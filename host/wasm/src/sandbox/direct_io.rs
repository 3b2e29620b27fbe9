//! File reads and writes on the thread of the call, without thread hand-offs.
//!
//! wasmtime-wasi's own file streams hand every non-blocking `read` and `write` (the ones the
//! guest's libc uses) to Tokio's blocking pool and back: two thread switches each, tens of
//! microseconds on a small VM. These do the I/O right where the call runs, and the guest sees
//! what it would from wasmtime-wasi. In a call running inline (`sandbox::inline`) a read takes
//! only what the page cache holds and a write stops the call.

use crate::sandbox::inline::{self, InlineFlag, ReadOutcome};
use bytes::{Bytes, BytesMut};
use std::sync::Arc;
use wasmtime_wasi::p2::bindings::filesystem::types::Filesize;
use wasmtime_wasi::p2::{
    DynInputStream, DynOutputStream, InputStream, OutputStream, Pollable, StreamError,
};

/// The most one positional `read` answers with, and so the most the host allocates for one:
/// a guest that asks for more gets this much and asks again.
pub(crate) const MAX_READ: usize = 1 << 20;

/// What one read or `check-write` of a file stream moves at most, as wasmtime-wasi's file
/// streams do (it bounds what one guest call makes the host allocate).
pub(crate) const CHUNK: usize = 64 * 1024;

/// Why a positional read has no answer.
#[derive(Debug)]
pub(crate) enum NotRead {
    /// Inline, the read would wait: the call is stopped.
    Wait(inline::Wait),
    Failed(std::io::Error),
}

/// One read: only from the page cache if `inline`, else a plain `pread`.
fn read_once(file: &std::fs::File, buf: &mut [u8], position: u64, inline: bool) -> ReadOutcome {
    match inline {
        true => inline::read_nowait(file, buf, position),
        false => read_at(file, buf, position),
    }
}

/// `descriptor.read` of a file, on the thread of the call: up to `len` bytes (at most
/// [`MAX_READ`]) from `offset`, and whether the end of the file was reached. wasmtime-wasi's
/// own reads once and says "end" only when that read found nothing, so a guest reading a file
/// whole asks twice; this reads on until it has `len` bytes or finds the end, which it then
/// reports with the bytes: a file read in one call. Inline the reads are `preadv2(RWF_NOWAIT)`,
/// and a read that would wait for the disk stops the call before any answer.
pub(crate) fn read_positional(
    file: &std::fs::File,
    len: Filesize,
    offset: Filesize,
    inline: bool,
) -> Result<(Vec<u8>, bool), NotRead> {
    let want = usize::try_from(len).unwrap_or(usize::MAX).min(MAX_READ);
    let mut buf = vec![0; want];
    let mut got = 0;
    let mut end = false;
    while got < want {
        let at = offset.saturating_add(got as u64);
        match read_once(file, &mut buf[got..], at, inline) {
            ReadOutcome::Bytes(0) => {
                end = true;
                break;
            }
            ReadOutcome::Bytes(n) => got += n,
            ReadOutcome::Failed(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            ReadOutcome::Failed(e) => return Err(NotRead::Failed(e)),
            ReadOutcome::Wait(why) => return Err(NotRead::Wait(why)),
        }
    }
    buf.truncate(got);
    Ok((buf, end))
}

/// `inner`, a file's new input stream (its permission checks done), swapped for one that
/// reads `file` from `position` on the thread of the call ([`DirectReadStream`]); `inner`
/// itself if the descriptor was not a file.
pub(crate) fn reads_here(
    inner: DynInputStream,
    position: u64,
    file: Option<Arc<std::fs::File>>,
    inline: &InlineFlag,
) -> DynInputStream {
    let Some(file) = file else {
        return inner;
    };
    drop(inner);
    Box::new(DirectReadStream {
        file,
        position,
        inline: inline.clone(),
        closed: false,
    })
}

/// `inner`, a file's new output stream (its permission checks done), swapped for one that
/// writes `file` from `position` on the thread of the call ([`DirectWriteStream`], Unix);
/// `inner` itself for an append stream (no `position`) or a descriptor that was not a file.
pub(crate) fn writes_here(
    inner: DynOutputStream,
    position: Option<u64>,
    file: Option<&Arc<std::fs::File>>,
    inline: &InlineFlag,
) -> DynOutputStream {
    #[cfg(unix)]
    if let (Some(position), Some(file)) = (position, file) {
        drop(inner);
        return Box::new(DirectWriteStream {
            file: Arc::clone(file),
            position,
            inline: inline.clone(),
            closed: false,
        });
    }
    #[cfg(not(unix))]
    let _ = (position, file, inline);
    inner
}

/// A file's input stream that reads on the thread of the call. wasmtime-wasi's own hands a
/// non-blocking `read` to Tokio's blocking pool; this reads right there: with a plain `pread`
/// on a blocking thread, and with `preadv2(RWF_NOWAIT)` in a call running inline, which stops
/// the call rather than wait for a page not in the cache. The guest sees what it would from
/// wasmtime-wasi's stream: at most [`CHUNK`] bytes from the stream's position per read, and
/// `closed` at the end of the file.
pub(crate) struct DirectReadStream {
    pub(crate) file: Arc<std::fs::File>,
    pub(crate) position: u64,
    pub(crate) inline: InlineFlag,
    pub(crate) closed: bool,
}

impl DirectReadStream {
    fn read_here(&mut self, size: usize) -> Result<Bytes, StreamError> {
        if self.closed {
            return Err(StreamError::Closed);
        }
        if size == 0 {
            return Ok(Bytes::new());
        }
        let mut buf = BytesMut::zeroed(size.min(CHUNK));
        let inline = self.inline.get();
        let n = loop {
            match read_once(&self.file, &mut buf, self.position, inline) {
                ReadOutcome::Bytes(n) => break n,
                ReadOutcome::Failed(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                ReadOutcome::Wait(why) => return Err(StreamError::Trap(inline::read_stop(why))),
                ReadOutcome::Failed(e) => {
                    self.closed = true;
                    return Err(StreamError::LastOperationFailed(e.into()));
                }
            }
        };
        if n == 0 {
            self.closed = true;
            return Err(StreamError::Closed);
        }
        buf.truncate(n);
        self.position = self.position.saturating_add(n as u64);
        Ok(buf.freeze())
    }
}

#[cfg(unix)]
fn read_at(file: &std::fs::File, buf: &mut [u8], position: u64) -> ReadOutcome {
    use std::os::unix::fs::FileExt;
    match file.read_at(buf, position) {
        Ok(n) => ReadOutcome::Bytes(n),
        Err(e) => ReadOutcome::Failed(e),
    }
}

#[cfg(windows)]
fn read_at(file: &std::fs::File, buf: &mut [u8], position: u64) -> ReadOutcome {
    use std::os::windows::fs::FileExt;
    match file.seek_read(buf, position) {
        Ok(n) => ReadOutcome::Bytes(n),
        Err(e) => ReadOutcome::Failed(e),
    }
}

#[async_trait::async_trait]
impl Pollable for DirectReadStream {
    /// Always ready: a read is done when asked for.
    async fn ready(&mut self) {}
}

#[async_trait::async_trait]
impl InputStream for DirectReadStream {
    fn read(&mut self, size: usize) -> Result<Bytes, StreamError> {
        self.read_here(size)
    }

    async fn blocking_read(&mut self, size: usize) -> Result<Bytes, StreamError> {
        self.read_here(size)
    }
}

/// A file's output stream at a position that writes on the thread of the call, where
/// wasmtime-wasi's own file stream hands every non-blocking `write` (the one the guest's libc
/// uses) to Tokio's blocking pool and back: two thread switches per write, twice per save.
/// Write streams are only made, and written, on a blocking thread (never inline), so the write
/// is done in place. What the guest sees is the same: the bytes land at the stream's position,
/// in order, before `write` returns; a failed write fails with its I/O error (mapped to the
/// WASI error code, such as `insufficient-space`) and closes the stream.
#[cfg(unix)]
pub(crate) struct DirectWriteStream {
    pub(crate) file: Arc<std::fs::File>,
    pub(crate) position: u64,
    /// A stream made in one call may be kept for a later one, which may run inline: a write
    /// there stops the call like any other write.
    pub(crate) inline: InlineFlag,
    pub(crate) closed: bool,
}

#[cfg(unix)]
#[async_trait::async_trait]
impl Pollable for DirectWriteStream {
    /// Always ready: nothing is ever left in flight.
    async fn ready(&mut self) {}
}

#[cfg(unix)]
#[async_trait::async_trait]
impl OutputStream for DirectWriteStream {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        use std::os::unix::fs::FileExt;
        if self.closed {
            return Err(StreamError::Closed);
        }
        if self.inline.get() {
            return Err(StreamError::Trap(inline::stop("a write", true)));
        }
        match self.file.write_all_at(&bytes, self.position) {
            Ok(()) => {
                self.position = self.position.saturating_add(bytes.len() as u64);
                Ok(())
            }
            Err(e) => {
                self.closed = true;
                Err(StreamError::LastOperationFailed(e.into()))
            }
        }
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        match self.closed {
            true => Err(StreamError::Closed),
            false => Ok(()),
        }
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        match self.closed {
            true => Err(StreamError::Closed),
            false => Ok(CHUNK),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::inline::needs_blocking;

    #[test]
    fn a_positional_read_reads_on_to_what_was_asked_or_the_end_and_says_which() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("data");
        let data: Vec<u8> = (0..5000).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let inline = cfg!(target_os = "linux");
        for on_worker in [false, inline] {
            let read = |len, offset| read_positional(&file, len, offset, on_worker).unwrap();
            assert_eq!(
                read(5001, 0),
                (data.clone(), true),
                "the whole file, and its end"
            );
            assert_eq!(
                read(5000, 0),
                (data.clone(), false),
                "all asked for: end not seen"
            );
            assert_eq!(read(10, 4995), (data[4995..].to_vec(), true));
            assert_eq!(read(7, 100), (data[100..107].to_vec(), false));
            assert_eq!(read(7, 5000), (Vec::new(), true), "at the end");
            assert_eq!(read(7, 1 << 40), (Vec::new(), true), "past it");
            assert_eq!(read(0, 0), (Vec::new(), false), "nothing asked for");
        }
        // An offset no file can have is the system's error, as from wasmtime-wasi.
        assert!(matches!(
            read_positional(&file, 7, u64::MAX, false),
            Err(NotRead::Failed(e)) if e.kind() == std::io::ErrorKind::InvalidInput
        ));
        let big = tmp.path().join("big");
        std::fs::write(&big, vec![7u8; MAX_READ + 10]).unwrap();
        let big = std::fs::File::open(&big).unwrap();
        let (bytes, end) = read_positional(&big, u64::MAX, 0, false).unwrap();
        assert_eq!(
            (bytes.len(), end),
            (MAX_READ, false),
            "at most MAX_READ per call"
        );
    }

    #[test]
    fn reads_come_in_chunks_from_the_position_and_end_closed() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("data");
        let data: Vec<u8> = (0..CHUNK + 100).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let mut reads = DirectReadStream {
            file: Arc::new(std::fs::File::open(&path).unwrap()),
            position: 10,
            inline: InlineFlag::default(),
            closed: false,
        };
        assert!(reads.read_here(0).unwrap().is_empty());
        let first = reads.read_here(usize::MAX).unwrap();
        assert_eq!(first.len(), CHUNK, "at most one chunk per read");
        assert_eq!(&first[..], &data[10..10 + CHUNK]);
        let rest = reads.read_here(1000).unwrap();
        assert_eq!(&rest[..], &data[10 + CHUNK..]);
        assert!(matches!(reads.read_here(1), Err(StreamError::Closed)));
        assert!(matches!(reads.read_here(1), Err(StreamError::Closed)));
    }

    #[cfg(unix)]
    #[test]
    fn a_write_stream_kept_for_a_call_running_inline_stops_it_before_writing() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("data");
        std::fs::write(&path, b"").unwrap();
        let inline = InlineFlag::default();
        let mut writes = DirectWriteStream {
            file: Arc::new(std::fs::OpenOptions::new().write(true).open(&path).unwrap()),
            position: 0,
            inline: inline.clone(),
            closed: false,
        };
        writes
            .write(Bytes::from_static(b"on a blocking thread"))
            .unwrap();
        inline.set(true);
        match writes.write(Bytes::from_static(b" and inline")) {
            Err(StreamError::Trap(e)) => assert!(needs_blocking(&e).is_some_and(|n| n.counts)),
            other => panic!("a write inline must stop the call: {other:?}"),
        }
        assert_eq!(std::fs::read(&path).unwrap(), b"on a blocking thread");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_inline_read_of_a_cached_file_reads_it() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("data");
        std::fs::write(&path, b"cached bytes").unwrap();
        let inline = InlineFlag::default();
        inline.set(true);
        let mut reads = DirectReadStream {
            file: Arc::new(std::fs::File::open(&path).unwrap()),
            position: 0,
            inline,
            closed: false,
        };
        assert_eq!(&reads.read_here(100).unwrap()[..], b"cached bytes");
        assert!(matches!(reads.read_here(1), Err(StreamError::Closed)));
    }
}

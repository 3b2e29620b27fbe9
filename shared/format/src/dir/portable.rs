//! The directory store's file operations on a native system that is not Unix: `std::fs` alone.
//! There a read looks at a name before it opens it (no `O_NOFOLLOW`), a lock's identity cannot
//! be told (its stamp tells it instead), nothing is held across a rename and files get the
//! modes the system gives them. Saves still share their directory flushes ([`DirFlush`]).

use super::stat::{Fenced, LockLook, Refused, Seen, Stamp};
pub(super) use super::std_meta::Opened;
use super::std_meta::{kind_of, set_modified_after};
pub(super) use super::std_meta::{read_names, stamp_at, stamp_of};
use crate::group::SharedFlush;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, Write};
use std::path::Path;
use std::sync::Arc;

/// The file, to write: an `Opened` of [`open_for_update`].
impl Opened {
    pub(super) fn into_writer(self) -> Writer {
        Writer(self.file)
    }
}

/// Opens `path` for reading if it is a regular file. What the name is gets looked at first,
/// so a link or a FIFO is refused without opening what it names.
pub(super) fn open_for_read(path: &Path) -> Result<Opened, Refused> {
    open_regular(path, OpenOptions::new().read(true))
}

/// Opens `path` for reading and writing if it is a regular file, refused as
/// [`open_for_read`] refuses.
pub(super) fn open_for_update(path: &Path) -> Result<Opened, Refused> {
    open_regular(path, OpenOptions::new().read(true).write(true))
}

fn open_regular(path: &Path, options: &OpenOptions) -> Result<Opened, Refused> {
    let named = fs::symlink_metadata(path).map_err(Refused::Io)?.file_type();
    if !named.is_file() {
        return Err(Refused::Kind(kind_of(named)));
    }
    let file = options.open(path).map_err(Refused::Io)?;
    let meta = file.metadata().map_err(Refused::Io)?;
    if !meta.is_file() {
        return Err(Refused::Kind(kind_of(meta.file_type())));
    }
    Ok(Opened {
        stamp: stamp_of(&meta),
        file,
    })
}

/// Creates `path` for writing, failing if anything is there.
pub(super) fn create_new(path: &Path) -> io::Result<Writer> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map(Writer)
}

/// A file a save writes (its temp file, the lock, the version record it overwrites in place).
pub(super) struct Writer(File);

impl Writer {
    /// Writes all of `bytes` from the start of the file.
    pub(super) fn write_from_start(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.0.seek(io::SeekFrom::Start(0))?;
        self.0.write_all(bytes)
    }

    /// Flushes the file's data (and length) to disk.
    pub(super) fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }

    /// The file's identity cannot be told here.
    pub(super) fn identity(&self) -> Option<(u64, u64)> {
        None
    }

    /// Writes the file's first byte again (`first`, the byte that is there): its content stays
    /// as it is, its modification time moves to now.
    pub(super) fn rewrite_first(&self, first: u8) -> io::Result<()> {
        let mut file: &File = &self.0;
        file.seek(io::SeekFrom::Start(0))?;
        file.write_all(&[first])?;
        file.seek(io::SeekFrom::End(0)).map(|_| ())
    }

    /// Sets the file's modification time 1 ns past `old`'s.
    pub(super) fn set_modified_after(&self, old: Stamp) -> io::Result<()> {
        set_modified_after(&self.0, old)
    }

    /// The file's stamp as it is now.
    pub(super) fn stamp(&self) -> io::Result<Stamp> {
        self.0.metadata().map(|meta| stamp_of(&meta))
    }

    /// No kernel locks are used here (the stores are tested on Linux only): the lease alone
    /// guards the lock.
    pub(super) fn fence(&self) -> Fenced {
        Fenced::No
    }
}

/// Nothing is held by a look at a lock.
pub(super) type LookHold = ();

/// What is at the lock name `path` ([`LockLook`]): its stamp, `Unfenced`.
pub(super) fn look_at_lock(path: &Path) -> io::Result<LockLook<LookHold>> {
    match fs::symlink_metadata(path) {
        Ok(meta) => Ok(LockLook::Unfenced(
            Seen {
                identity: None,
                stamp: stamp_of(&meta),
            },
            (),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(LockLook::Gone),
        Err(e) => Err(e),
    }
}

/// Identities cannot be told here ([`Writer::identity`] has none to compare with).
pub(super) fn identity_at(_path: &Path) -> io::Result<(u64, u64)> {
    Err(io::ErrorKind::Unsupported.into())
}

/// Nothing is held across a rename here.
pub(super) type Held = ();

/// The stamp of what is at `path` (not followed) and whether it is a directory.
pub(super) fn look_for_replace(path: &Path) -> (io::Result<(Stamp, bool)>, Held) {
    let found = fs::symlink_metadata(path).map(|meta| (stamp_of(&meta), meta.is_dir()));
    (found, ())
}

/// Creates `dir` and any missing parents; a directory that exists is left as it is.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new().recursive(true).create(dir)
}

/// Flushes the directory `dir` (its entries) to disk.
pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The directory flushes of saves, shared by the saves (of one store and its clones) waiting
/// for one at the same time ([`SharedFlush`]: group commit).
#[derive(Debug, Clone, Default)]
pub(super) struct DirFlush(Arc<SharedFlush>);

impl DirFlush {
    /// Flushes the directory `dir`, shared with the saves into it that wait for a flush at the
    /// same time, doing `meanwhile` while the flush this call waits for may already run. An
    /// error of `meanwhile` comes first; the flush's is returned inside.
    pub(super) fn sync_with<E>(
        &self,
        dir: &Path,
        meanwhile: impl FnOnce() -> Result<(), E>,
    ) -> Result<io::Result<()>, E> {
        let mut other = Ok(());
        let synced = self.0.run(|| sync_dir(dir), || other = meanwhile());
        other.map(|()| synced)
    }
}

//! Which files the instances of one pool hold open, and the quota credits that wait on them
//! ([`Holds`]): what an unlinked (or replaced) file frees comes back only once no instance of
//! the pool holds that file, by descriptor or by stream.
//!
//! Why pool-wide: the blocks of an unlinked file stay in use while any descriptor on it is
//! open, whichever instance holds it. Counted per instance, instance A could keep a file open
//! while instance B unlinks it and is credited at once, and the directory would hold more than
//! its quota, as often as they repeat it.
//!
//! Files are known by device and inode. A descriptor is counted from its open (`open-at`) and
//! its instance's holds are counted anew from its resource table at the end of every call and
//! after every unlink or replacing rename ([`InstanceHolds::recount`]); a stream is counted
//! while it lives (`policy::quota::FileStreamGuard`). A file whose identity cannot be read is an unknown hold:
//! while there is one, no credit comes back. A credit whose file is unknown (not Linux, a path
//! of several names) comes back only once the pool holds no file at all.

use std::collections::HashMap;
use std::sync::Mutex;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::filesystem::Descriptor;

/// A file's device and inode.
pub(crate) type Identity = (u64, u64);

/// The files all of a pool's instances hold, and the credits waiting for them to be let go.
#[derive(Debug, Default)]
pub(crate) struct Holds {
    inner: Mutex<HoldsInner>,
}

#[derive(Debug, Default)]
struct HoldsInner {
    /// How many descriptors and streams hold each file.
    held: HashMap<Identity, usize>,
    /// Holds of files whose identity could not be read.
    unknown: usize,
    /// Bytes freed by unlinks and replacing renames, with the file that frees them.
    pending: Vec<(Option<Identity>, u64)>,
}

impl HoldsInner {
    fn add(&mut self, file: Option<Identity>) {
        match file {
            Some(file) => *self.held.entry(file).or_default() += 1,
            None => self.unknown += 1,
        }
    }

    fn remove(&mut self, file: Option<Identity>) {
        match file {
            Some(file) => {
                if let Some(count) = self.held.get_mut(&file) {
                    *count -= 1;
                    if *count == 0 {
                        self.held.remove(&file);
                    }
                }
            }
            None => self.unknown = self.unknown.saturating_sub(1),
        }
    }
}

impl Holds {
    fn lock(&self) -> std::sync::MutexGuard<'_, HoldsInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts `bytes` as freed once no instance holds `file` (any file, if unknown).
    pub(crate) fn defer(&self, file: Option<Identity>, bytes: u64) {
        if bytes > 0 {
            self.lock().pending.push((file, bytes));
        }
    }

    /// Whether any credit waits for its file to be let go.
    pub(crate) fn has_pending(&self) -> bool {
        !self.lock().pending.is_empty()
    }

    /// Takes out the credits whose file no instance holds any more; their sum.
    pub(crate) fn due(&self) -> u64 {
        let mut inner = self.lock();
        if inner.pending.is_empty() {
            return 0;
        }
        let HoldsInner {
            held,
            unknown,
            pending,
        } = &mut *inner;
        let free = |file: &Option<Identity>| {
            *unknown == 0
                && match file {
                    Some(file) => !held.contains_key(file),
                    None => held.is_empty(),
                }
        };
        pending
            .extract_if(.., |(file, _)| free(file))
            .map(|(_, bytes)| bytes)
            .fold(0u64, u64::saturating_add)
    }

    /// Counts a hold on `file` (a stream's, for as long as it lives).
    pub(crate) fn hold(&self, file: Option<Identity>) {
        self.lock().add(file);
    }

    /// Lets go of a hold counted by [`Holds::hold`].
    pub(crate) fn release(&self, file: Option<Identity>) {
        self.lock().remove(file);
    }
}

/// The files one instance holds by descriptor, as last counted.
#[derive(Debug, Default)]
pub(crate) struct InstanceHolds {
    files: Vec<Option<Identity>>,
}

impl InstanceHolds {
    /// Counts a descriptor just opened on `file`.
    pub(crate) fn opened(&mut self, holds: &Holds, file: Option<Identity>) {
        holds.lock().add(file);
        self.files.push(file);
    }

    /// Counts the instance's holds anew from the descriptors in its `table` (those closed
    /// since are let go).
    pub(crate) fn recount(&mut self, holds: &Holds, table: &mut ResourceTable) {
        let now: Vec<Option<Identity>> = table
            .iter_mut()
            .filter_map(|entry| match entry.downcast_ref::<Descriptor>() {
                Some(Descriptor::File(file)) => Some(identity(&file.file)),
                _ => None,
            })
            .collect();
        let mut inner = holds.lock();
        for file in &now {
            inner.add(*file);
        }
        for file in self.files.drain(..) {
            inner.remove(file);
        }
        self.files = now;
    }

    /// Lets go of everything: for an instance being dropped.
    pub(crate) fn release_all(&mut self, holds: &Holds) {
        let mut inner = holds.lock();
        for file in self.files.drain(..) {
            inner.remove(file);
        }
    }
}

/// The identity of an open file, if it can be read.
pub(crate) fn identity(file: &std::fs::File) -> Option<Identity> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        file.metadata().ok().map(|meta| (meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credit_comes_back_once_no_one_holds_its_file() {
        let holds = Holds::default();
        let (a, b) = (Some((1, 10)), Some((1, 11)));
        let mut first = InstanceHolds::default();
        first.opened(&holds, a);
        holds.hold(b);
        holds.defer(a, 100);
        holds.defer(b, 10);
        assert_eq!(holds.due(), 0, "both still held");
        first.release_all(&holds);
        assert_eq!(holds.due(), 100, "a let go");
        holds.release(b);
        assert_eq!(holds.due(), 10, "b let go");
        assert_eq!(holds.due(), 0, "given back once");
    }

    #[test]
    fn unknown_files_wait_for_the_pool_to_hold_nothing() {
        let holds = Holds::default();
        let mut instance = InstanceHolds::default();
        instance.opened(&holds, Some((1, 1)));
        holds.defer(None, 5);
        assert_eq!(holds.due(), 0, "something is held");
        holds.hold(None);
        instance.release_all(&holds);
        holds.defer(Some((1, 2)), 7);
        assert_eq!(holds.due(), 0, "an unknown hold could be any file");
        holds.release(None);
        assert_eq!(holds.due(), 12);
    }
}

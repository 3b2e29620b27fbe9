//! Which part of an outbox directory a process writes to: a slot, the numbered subdirectory
//! (`0`, `1`, …) whose `lock` file it holds locked while it runs. Several processes may share
//! one outbox directory (replicas over one store, or a default directory), each in its own
//! slot; a process that starts takes a free slot and delivers what the slot's last holder left
//! in it. A slot records (in `store`, a SHA-256 of the store's description, so no credentials)
//! which store its deliveries belong to, and a process takes only a slot of its own store, or
//! an empty one: another store's leftovers wait for a process of that store.

use sha2::{Digest, Sha256};
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

/// The most slots one outbox directory has.
pub const MAX_SLOTS: usize = 256;
const LOCK: &str = "lock";
const STORE: &str = "store";

/// A slot held: its directory, locked while this lives.
#[derive(Debug)]
pub struct Slot {
    pub dir: PathBuf,
    _lock: File,
}

/// Takes the first free slot of `root` that is empty or belongs to `store_name`.
pub fn claim(root: &Path, store_name: &str) -> Result<Slot, String> {
    create_private_dir(root)?;
    let store_id = format!("{:x}\n", Sha256::digest(store_name.as_bytes()));
    for n in 0..MAX_SLOTS {
        let dir = root.join(n.to_string());
        create_private_dir(&dir)?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(LOCK))
            .map_err(|e| format!("cannot open {}: {e}", dir.join(LOCK).display()))?;
        if lock.try_lock().is_err() {
            continue; // Another running process holds it.
        }
        let recorded = fs::read_to_string(dir.join(STORE)).ok();
        let mine = recorded.as_deref() == Some(store_id.as_str());
        if !mine && recorded.is_some() && has_entries(&dir)? {
            continue; // Another store's deliveries: not ours to send.
        }
        if !mine {
            fs::write(dir.join(STORE), &store_id)
                .map_err(|e| format!("cannot write {}: {e}", dir.join(STORE).display()))?;
        }
        return Ok(Slot { dir, _lock: lock });
    }
    Err(format!(
        "the push outbox {} has no free slot ({MAX_SLOTS} processes or stores use it); give \
         this server its own --push-outbox",
        root.display()
    ))
}

fn has_entries(dir: &Path) -> Result<bool, String> {
    let listing = fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    Ok(listing.filter_map(Result::ok).any(|item| {
        item.file_name()
            .to_str()
            .is_some_and(|n| n.ends_with(".json"))
    }))
}

/// Creates `dir` and its parents, 0700 where it creates them.
pub fn create_private_dir(dir: &Path) -> Result<(), String> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|e| format!("cannot create the push outbox {}: {e}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_take_different_slots_and_a_freed_slot_is_taken_again() {
        let root = tempfile::tempdir().unwrap();
        let a = claim(root.path(), "file:/a").unwrap();
        let b = claim(root.path(), "file:/a").unwrap();
        assert_ne!(a.dir, b.dir);
        let a_dir = a.dir.clone();
        drop(a);
        assert_eq!(claim(root.path(), "file:/a").unwrap().dir, a_dir);
    }

    #[test]
    fn another_stores_leftovers_are_left_for_it() {
        let root = tempfile::tempdir().unwrap();
        let a = claim(root.path(), "file:/a").unwrap();
        fs::write(a.dir.join("00000000000000000001.json"), "{}").unwrap();
        let a_dir = a.dir.clone();
        drop(a);
        let b = claim(root.path(), "file:/b").unwrap();
        assert_ne!(b.dir, a_dir);
        drop(b);
        assert_eq!(claim(root.path(), "file:/a").unwrap().dir, a_dir);
        let recorded = fs::read_to_string(a_dir.join(STORE)).unwrap();
        assert!(!recorded.contains("file:/a"), "{recorded}");
    }
}

//! A Task's push-notification configs: one file per config in the Task's own directory under
//! `<root>/.push/`, each written like a Task file (unique temp file, flush, rename, directory
//! flush) and read like one (no links, no special files, a size cap, checked to hold the config
//! asked for). Spec: `docs/on-disk-format.md`, "Push-notification configs".
//!
//! Configs have no versions and no lock: a save replaces the whole file by a rename, so a reader
//! sees the old config or the new one, and the last rename wins.

use super::error::DirError;
use super::options::Durability;
use super::{DirStore, platform, read, temp};
use crate::id::{self, IdError};
use crate::push_config::{self, MAX_PUSH_CONFIG_BYTES, PUSH_DIR};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How many times a save makes its Task's config directory again when a concurrent delete of
/// the Task removed it before the save's rename. Each retry follows another removal, so only a
/// run of that many deletes of one Task during one save makes it fail.
const SAVE_ATTEMPTS: usize = 16;

/// How many times a Task's delete empties its config directory again when concurrent saves
/// added files to it while it was being emptied (each retry follows another save).
const EMPTY_ATTEMPTS: usize = 16;

impl DirStore {
    /// Saves the push config `config_id` of the Task `task_id`, replacing the one with that id.
    /// `text` must already be checked to be a push config whose `id` is `config_id` (with
    /// [`push_config::check_push_config_text`], or by building it); it is written exactly as
    /// given. The store does not look for the Task itself.
    pub fn save_push_config(
        &self,
        task_id: &str,
        config_id: &str,
        text: &str,
    ) -> Result<(), DirError> {
        let dir = self.push_dir_of(task_id)?;
        let file = dir.join(config_file_name(config_id)?);
        let mut attempt = 1;
        loop {
            self.make_push_dir(&dir)?;
            match temp::replace_by_temp(&dir, &file, text.as_bytes(), self.durability) {
                Ok(()) => return self.flush_push_dir(&dir, Parents::Too),
                // The Task was deleted, its directory with it, since `make_push_dir`: a save
                // after a delete keeps its config, so this one does too.
                Err(DirError::Io { source, .. })
                    if source.kind() == io::ErrorKind::NotFound && attempt < SAVE_ATTEMPTS =>
                {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The push config `config_id` of the Task `task_id` as JSON text, or `None` if it has no
    /// such config. A file that does not hold that config (not a config, another config's id,
    /// over [`MAX_PUSH_CONFIG_BYTES`], not UTF-8, a link or a special file) is
    /// [`DirError::Corrupt`] naming it.
    pub fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<String>, DirError> {
        let dir = self.push_dir_of(task_id)?;
        let file = dir.join(config_file_name(config_id)?);
        let Some((text, _)) = read::read_text_capped(&file, MAX_PUSH_CONFIG_BYTES as u64)? else {
            return Ok(None);
        };
        let stored = checked_config_id(&file, &text)?;
        if stored != config_id {
            return Err(DirError::Corrupt {
                file,
                reason: format!("holds push config {stored:?}, not {config_id:?}"),
            });
        }
        Ok(Some(text))
    }

    /// Every push config of the Task `task_id` as JSON text, by config id ascending (byte
    /// order); empty if it has none. Temp files and names that are not `<name>.json` are
    /// skipped; a config file that cannot be read as the config its name says is an error
    /// naming it, never left out.
    pub fn list_push_configs(&self, task_id: &str) -> Result<Vec<String>, DirError> {
        let configs = self.list_push_config_entries(task_id)?;
        Ok(configs.into_iter().map(|(_, text)| text).collect())
    }

    /// [`DirStore::list_push_configs`] with each config's id: `(config id, JSON text)`.
    pub fn list_push_config_entries(
        &self,
        task_id: &str,
    ) -> Result<Vec<(String, String)>, DirError> {
        let dir = self.push_dir_of(task_id)?;
        let io_err = |source| DirError::Io {
            op: "list",
            file: dir.clone(),
            source,
        };
        let names = match platform::read_names(&dir) {
            Ok(names) => names,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err(e)),
        };
        temp::remove_stale_among(&dir, &names);
        let mut configs = Vec::new();
        for name in names.iter().filter(|n| id::is_task_file_name(n)) {
            let file = dir.join(name);
            let Some((text, _)) = read::read_text_capped(&file, MAX_PUSH_CONFIG_BYTES as u64)?
            else {
                continue; // deleted meanwhile
            };
            let stored = checked_config_id(&file, &text)?;
            if id::encode_id(&stored).ok().as_deref() != Some(name) {
                return Err(DirError::Corrupt {
                    file,
                    reason: format!("holds push config {stored:?}, which belongs in another file"),
                });
            }
            configs.push((stored, text));
        }
        configs.sort_by(|(a, _), (b, _)| a.as_bytes().cmp(b.as_bytes()));
        Ok(configs)
    }

    /// Removes the push config `config_id` of the Task `task_id`: `true` if there was one. The
    /// Task's config directory stays, empty or not.
    pub fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<bool, DirError> {
        let dir = self.push_dir_of(task_id)?;
        let file = dir.join(config_file_name(config_id)?);
        match fs::remove_file(&file) {
            Ok(()) => self.flush_push_dir(&dir, Parents::No).map(|()| true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(DirError::Io {
                op: "delete",
                file,
                source,
            }),
        }
    }

    /// Removes every push config of the Task `task_id`, with its directory (for
    /// [`DirStore::delete`], once the Task file is gone).
    pub(super) fn delete_push_configs(&self, task_id: &str) -> Result<(), DirError> {
        let dir = self.push_dir_of(task_id)?;
        let mut attempt = 1;
        loop {
            let failed = match fs::remove_dir_all(&dir) {
                Ok(()) => return self.sync(&self.root.join(PUSH_DIR)),
                Err(e) => e,
            };
            // Gone, whoever finished the job (a concurrent delete of the same Task, say).
            if fs::symlink_metadata(&dir).is_err_and(|e| e.kind() == io::ErrorKind::NotFound) {
                return Ok(());
            }
            // Still there: a concurrent save put a file in while it was being emptied.
            if attempt == EMPTY_ATTEMPTS {
                return Err(DirError::Io {
                    op: "delete push configs in",
                    file: dir,
                    source: failed,
                });
            }
            attempt += 1;
        }
    }

    /// Removes the temp files older than `older_than` in every Task's config directory (those
    /// of writers that crashed before their rename). Errors on single entries are skipped.
    pub(super) fn sweep_push_temp_files(&self, older_than: Duration, now: SystemTime) -> usize {
        let push_dir = self.root.join(PUSH_DIR);
        let Ok(task_dirs) = platform::read_names(&push_dir) else {
            return 0;
        };
        let mut removed = 0;
        for task_dir in task_dirs.iter().map(|name| push_dir.join(name)) {
            // Never through a link: only the store's own directories are swept.
            if !fs::symlink_metadata(&task_dir).is_ok_and(|m| m.is_dir()) {
                continue;
            }
            let Ok(names) = platform::read_names(&task_dir) else {
                continue;
            };
            for name in &names {
                if temp::remove_if_stale_temp(&task_dir, name, older_than, now) {
                    removed += 1;
                }
            }
        }
        removed
    }

    /// `<root>/.push/<stem>`, where `<stem>` is the Task file's name without `.json`.
    fn push_dir_of(&self, task_id: &str) -> Result<PathBuf, DirError> {
        let name = id::encode_id(task_id).map_err(DirError::InvalidId)?;
        let stem = name.strip_suffix(id::EXTENSION).unwrap_or(&name);
        Ok(self.root.join(PUSH_DIR).join(stem))
    }

    /// Makes the Task's config directory (and `.push`) if missing, private like the root.
    fn make_push_dir(&self, dir: &Path) -> Result<(), DirError> {
        if fs::symlink_metadata(dir).is_ok() {
            return Ok(());
        }
        platform::create_private_dir(dir).map_err(|source| DirError::Io {
            op: "create directory",
            file: dir.to_path_buf(),
            source,
        })
    }

    /// Under full durability, flushes the Task's config directory after a rename or unlink in
    /// it, and after a save `.push` and the root too. Every saver flushes them, not only the
    /// one that made the directories: a saver that finds them made by another, which has not
    /// flushed them yet, must not be acknowledged for a config a power loss would take with
    /// its directory's entry.
    fn flush_push_dir(&self, dir: &Path, parents: Parents) -> Result<(), DirError> {
        self.sync(dir)?;
        if parents == Parents::Too {
            self.sync(&self.root.join(PUSH_DIR))?;
            self.sync(&self.root)?;
        }
        Ok(())
    }

    /// Flushes the directory `dir` under full durability; nothing otherwise.
    fn sync(&self, dir: &Path) -> Result<(), DirError> {
        if self.durability != Durability::Full {
            return Ok(());
        }
        #[cfg(test)]
        self.push_flushes.lock().unwrap().push(dir.to_path_buf());
        platform::sync_dir(dir).map_err(|source| DirError::Io {
            op: "sync directory",
            file: dir.to_path_buf(),
            source,
        })
    }
}

/// Whether a flush of a Task's config directory flushes its parents too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parents {
    Too,
    No,
}

/// The name of the config file of `config_id` in its Task's directory: `<S(C)>.json`.
fn config_file_name(config_id: &str) -> Result<String, DirError> {
    if config_id.is_empty() {
        return Err(DirError::InvalidId(IdError::EmptyConfigId));
    }
    id::encode_id(config_id).map_err(DirError::InvalidId)
}

/// The id of the config file `file` holds, checked: anything else is corrupt.
fn checked_config_id(file: &Path, text: &str) -> Result<String, DirError> {
    push_config::check_push_config_text(text).map_err(|e| DirError::Corrupt {
        file: file.to_path_buf(),
        reason: e.to_string(),
    })
}

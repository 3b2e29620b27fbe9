//! The directory store's unit tests: saves, reads, listings, versions, locks and what crashed
//! or hostile writers leave behind.
//!
//! Shared here: a store over a temporary directory and the names in a directory; the tests are
//! in the submodules, one subject each.

mod listing;
mod locks;
mod push;
mod reads_and_saves;
mod versions;

use super::record::{RECORD_LEN, Record, RecordRead};
use super::stat::{Seen, Stamp};
use super::*;
use std::fs::File;
use std::sync::atomic::Ordering;

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

fn store(dir: &tempfile::TempDir) -> DirStore {
    DirStore::new(dir.path(), Durability::Full)
}

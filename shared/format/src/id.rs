//! Task id → file name.
//!
//! The mapping is injective (two different ids never share a file) and every name it yields is
//! a plain file name inside the store directory: never empty, never `.`/`..`, never hidden
//! (leading `.`, which is reserved for temp files), never containing a separator or NUL, and
//! never longer than [`MAX_FILE_NAME`] bytes.
//!
//! - Bytes `A-Z a-z 0-9 - _ .` are kept as they are, except a leading `.`: `abc-123` →
//!   `abc-123.json`.
//! - Every other byte of the id's UTF-8 (including `%`, `~`, `/`, `\`, NUL and non-ASCII) and a
//!   leading `.` become `%XX` with upper-case hex: `a/b` → `a%2Fb.json`, `a%2Fb` → `a%252Fb.json`.
//! - If that name would exceed [`MAX_FILE_NAME`] bytes, the name becomes a readable prefix of the
//!   encoding, `~`, and the SHA-256 of the id in lower-case hex: `<prefix>~<64 hex>.json`. The
//!   plain encoding never contains `~`, so hashed and plain names cannot collide.

use sha2::{Digest, Sha256};
use std::fmt;

/// The extension of every Task file.
pub const EXTENSION: &str = ".json";
/// The longest file name most file systems accept (ext4, XFS, APFS, NTFS), in bytes.
pub const MAX_FILE_NAME: usize = 255;
/// Length of the readable prefix kept in a hashed name: `prefix + "~" + 64 hex + ".json"` ≤ 255.
const HASHED_PREFIX_MAX: usize = MAX_FILE_NAME - EXTENSION.len() - 1 - 64;

/// Why an id cannot name a Task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdError {
    /// The id is the empty string.
    Empty,
    /// A push config's id is the empty string (it names a config file the way a Task id names
    /// a Task file).
    EmptyConfigId,
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdError::Empty => f.write_str("task id is empty"),
            IdError::EmptyConfigId => f.write_str("push config id is empty"),
        }
    }
}

impl std::error::Error for IdError {}

fn is_plain(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.')
}

/// The file name (with `.json`) that holds the Task with this id.
pub fn encode_id(id: &str) -> Result<String, IdError> {
    if id.is_empty() {
        return Err(IdError::Empty);
    }
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut name = String::with_capacity(id.len() + EXTENSION.len());
    for (i, &byte) in id.as_bytes().iter().enumerate() {
        if is_plain(byte) && !(i == 0 && byte == b'.') {
            name.push(byte as char);
        } else {
            name.push('%');
            name.push(HEX[usize::from(byte >> 4)] as char);
            name.push(HEX[usize::from(byte & 0xF)] as char);
        }
    }
    if name.len() + EXTENSION.len() > MAX_FILE_NAME {
        let mut cut = HASHED_PREFIX_MAX;
        // Never split a `%XX` escape: back up to the start of the escape it falls in.
        if let Some(pos) = name[cut.saturating_sub(2)..cut].rfind('%') {
            cut = cut - 2 + pos;
        }
        name.truncate(cut);
        name.push('~');
        for byte in Sha256::digest(id.as_bytes()) {
            name.push_str(&format!("{byte:02x}"));
        }
    }
    name.push_str(EXTENSION);
    Ok(name)
}

/// The id a plain (not hashed) Task file name encodes, or `None` for anything else: temp files,
/// hashed names, files that are not `.json`, and names that [`encode_id`] would not produce.
pub fn decode_file_name(name: &str) -> Option<String> {
    let stem = name.strip_suffix(EXTENSION)?;
    if stem.is_empty() || stem.starts_with('.') || stem.contains('~') {
        return None;
    }
    let bytes = stem.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = stem.get(i + 1..i + 3)?;
                if hex.bytes().any(|b| b.is_ascii_lowercase()) {
                    return None;
                }
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b if is_plain(b) => {
                out.push(b);
                i += 1;
            }
            _ => return None,
        }
    }
    let id = String::from_utf8(out).ok()?;
    // Only accept the canonical spelling, so that decode is the exact inverse of encode.
    (encode_id(&id).ok()?.as_str() == name).then_some(id)
}

/// Whether a directory entry is a Task file (as opposed to a temp file or something foreign).
pub fn is_task_file_name(name: &str) -> bool {
    name.len() > EXTENSION.len() && name.ends_with(EXTENSION) && !name.starts_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn simple_ids_stay_readable() {
        assert_eq!(encode_id("abc-123").unwrap(), "abc-123.json");
        assert_eq!(encode_id("task_1.v2").unwrap(), "task_1.v2.json");
    }

    #[test]
    fn separators_and_escape_characters_are_distinct() {
        let names: Vec<_> = ["a/b", "a_b", "a%2Fb", "a\\b", "a~b"]
            .iter()
            .map(|id| encode_id(id).unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "a%2Fb.json",
                "a_b.json",
                "a%252Fb.json",
                "a%5Cb.json",
                "a%7Eb.json"
            ]
        );
    }

    #[test]
    fn dot_ids_cannot_name_the_directory_or_a_hidden_file() {
        assert_eq!(encode_id(".").unwrap(), "%2E.json");
        assert_eq!(encode_id("..").unwrap(), "%2E..json");
        assert_eq!(encode_id(".hidden").unwrap(), "%2Ehidden.json");
        assert_eq!(
            encode_id("../../etc/passwd").unwrap(),
            "%2E.%2F..%2Fetc%2Fpasswd.json"
        );
    }

    #[test]
    fn nul_and_non_ascii_are_escaped() {
        assert_eq!(encode_id("a\0b").unwrap(), "a%00b.json");
        assert_eq!(encode_id("é").unwrap(), "%C3%A9.json");
    }

    #[test]
    fn empty_id_is_refused() {
        assert_eq!(encode_id(""), Err(IdError::Empty));
    }

    #[test]
    fn long_ids_are_hashed_within_the_name_limit() {
        let id = "x".repeat(10_000);
        let name = encode_id(&id).unwrap();
        assert_eq!(name.len(), MAX_FILE_NAME);
        assert!(name.starts_with(&"x".repeat(HASHED_PREFIX_MAX)));
        assert_eq!(decode_file_name(&name), None);
        // 250 plain bytes is the longest id that is not hashed.
        assert_eq!(encode_id(&"y".repeat(250)).unwrap().len(), 255);
        assert!(encode_id(&"y".repeat(251)).unwrap().contains('~'));
    }

    #[test]
    fn hashed_prefix_never_splits_an_escape() {
        for pad in 0..3 {
            let id = format!("{}{}", "p".repeat(pad), "/".repeat(200));
            let name = encode_id(&id).unwrap();
            let prefix = name.split('~').next().unwrap();
            assert!(prefix.len() <= HASHED_PREFIX_MAX);
            assert!(prefix.ends_with("%2F") || prefix.ends_with('p'), "{prefix}");
        }
    }

    #[test]
    fn decode_rejects_foreign_names() {
        for name in [
            ".tmp-0123.json",
            "a.txt",
            ".json",
            "a%2fb.json",
            "a%zz.json",
            "a b.json",
            "%61.json",
        ] {
            assert_eq!(decode_file_name(name), None, "{name}");
        }
    }

    fn assert_safe(name: &str) {
        assert!(name.len() <= MAX_FILE_NAME, "{name} is too long");
        assert!(is_task_file_name(name), "{name} is not a task file name");
        assert!(!name.starts_with('.'), "{name} is hidden");
        assert!(
            name.bytes().all(|b| is_plain(b) || b == b'%' || b == b'~'),
            "{name} has an unsafe byte"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn encoding_is_injective(a in any::<String>(), b in any::<String>()) {
            prop_assume!(!a.is_empty() && !b.is_empty() && a != b);
            prop_assert_ne!(encode_id(&a).unwrap(), encode_id(&b).unwrap());
        }

        #[test]
        fn encoding_is_injective_on_confusable_ids(
            a in "[a-c./\\\\%_~2F.]{1,8}",
            b in "[a-c./\\\\%_~2F.]{1,8}",
        ) {
            prop_assume!(a != b);
            prop_assert_ne!(encode_id(&a).unwrap(), encode_id(&b).unwrap());
        }

        #[test]
        fn long_ids_sharing_a_prefix_stay_distinct(prefix in "[a-z%/]{300,400}", a in any::<String>(), b in any::<String>()) {
            prop_assume!(a != b);
            let (a, b) = (format!("{prefix}{a}"), format!("{prefix}{b}"));
            prop_assert_ne!(encode_id(&a).unwrap(), encode_id(&b).unwrap());
        }

        #[test]
        fn names_are_safe(id in any::<String>()) {
            prop_assume!(!id.is_empty());
            assert_safe(&encode_id(&id).unwrap());
        }

        #[test]
        fn long_names_are_safe(id in ".{200,3000}") {
            assert_safe(&encode_id(&id).unwrap());
        }

        #[test]
        fn decode_inverts_encode(id in any::<String>()) {
            prop_assume!(!id.is_empty());
            let name = encode_id(&id).unwrap();
            if !name.contains('~') {
                prop_assert_eq!(decode_file_name(&name), Some(id));
            }
        }
    }
}

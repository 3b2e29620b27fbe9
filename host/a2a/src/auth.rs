//! Bearer tokens, each mapped to an owner, read from a file.
//!
//! The file has one token per line: `<owner> <token>` (blank lines and lines starting with
//! `#` are skipped). An owner is 1 to 64 of `A-Z a-z 0-9 . _ -` (it names a store namespace);
//! a token is 16 to 4096 visible ASCII characters and is unique in the file; one owner may have
//! several tokens. Only SHA-256 digests of the tokens are kept in memory, and a presented token
//! is looked up by its digest, so the lookup's timing says nothing about the tokens.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt;
use std::path::Path;

/// The shortest token accepted.
pub const MIN_TOKEN_LEN: usize = 16;
/// The longest token accepted (and the most of an `Authorization` header looked at).
pub const MAX_TOKEN_LEN: usize = 4096;

/// The known tokens.
#[derive(Clone, Default)]
pub struct Tokens {
    owners: HashMap<[u8; 32], String>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tokens({} tokens)", self.owners.len())
    }
}

/// Why a tokens file was refused: the line, and what is wrong with it (never the token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokensError {
    pub line: usize,
    pub reason: String,
}

impl fmt::Display for TokensError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "tokens file: {}", self.reason)
        } else {
            write!(f, "tokens file, line {}: {}", self.line, self.reason)
        }
    }
}

impl std::error::Error for TokensError {}

/// Whether `name` is a valid owner or tenant name: 1 to 64 of `A-Z a-z 0-9 . _ -`, not
/// starting with a dot.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Tokens {
    /// Reads a tokens file.
    pub fn from_file(path: &Path) -> Result<Tokens, TokensError> {
        let text = std::fs::read_to_string(path).map_err(|e| TokensError {
            line: 0,
            reason: format!("cannot read {}: {e}", path.display()),
        })?;
        Tokens::parse(&text)
    }

    /// Parses a tokens file's text.
    pub fn parse(text: &str) -> Result<Tokens, TokensError> {
        let mut owners = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line_no = i + 1;
            let bad = |reason: &str| TokensError {
                line: line_no,
                reason: reason.to_owned(),
            };
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut fields = line.split_whitespace();
            let (Some(owner), Some(token), None) = (fields.next(), fields.next(), fields.next())
            else {
                return Err(bad("expected `<owner> <token>`"));
            };
            if !valid_name(owner) {
                return Err(bad(
                    "the owner must be 1 to 64 of A-Z a-z 0-9 . _ - (not starting with a dot)",
                ));
            }
            if !(MIN_TOKEN_LEN..=MAX_TOKEN_LEN).contains(&token.len())
                || !token.bytes().all(|b| b.is_ascii_graphic())
            {
                return Err(bad(&format!(
                    "a token must be {MIN_TOKEN_LEN} to {MAX_TOKEN_LEN} visible ASCII characters"
                )));
            }
            if owners.insert(digest(token), owner.to_owned()).is_some() {
                return Err(bad("this token is already on an earlier line"));
            }
        }
        if owners.is_empty() {
            return Err(TokensError {
                line: 0,
                reason: "no tokens in the file".into(),
            });
        }
        Ok(Tokens { owners })
    }

    /// The owner of an `Authorization` header's value (`Bearer <token>`), if the token is
    /// known.
    pub fn owner(&self, authorization: &str) -> Option<&str> {
        let (scheme, token) = authorization.trim().split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let token = token.trim();
        if token.len() > MAX_TOKEN_LEN {
            return None;
        }
        self.owners.get(&digest(token)).map(String::as_str)
    }

    /// Every owner named in the file.
    pub fn owners(&self) -> Vec<String> {
        let mut owners: Vec<String> = self.owners.values().cloned().collect();
        owners.sort();
        owners.dedup();
        owners
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_map_to_owners() {
        let tokens = Tokens::parse(
            "# comment\n\nalice 0123456789abcdef\nbob   fedcba9876543210XYZ\nalice second-token-of-alice\n",
        )
        .unwrap();
        assert_eq!(tokens.owner("Bearer 0123456789abcdef"), Some("alice"));
        assert_eq!(tokens.owner("bearer second-token-of-alice"), Some("alice"));
        assert_eq!(tokens.owner("Bearer fedcba9876543210XYZ"), Some("bob"));
        assert_eq!(tokens.owner("Bearer 0123456789abcdeF"), None);
        assert_eq!(tokens.owner("Basic 0123456789abcdef"), None);
        assert_eq!(tokens.owner("0123456789abcdef"), None);
        assert_eq!(tokens.owners(), ["alice", "bob"]);
    }

    #[test]
    fn bad_files_name_the_line() {
        for (text, line) in [
            ("alice short", 1),
            ("\n../x 0123456789abcdef", 2),
            ("alice 0123456789abcdef extra", 1),
            ("alice 0123456789abcdef\nbob 0123456789abcdef", 2),
            ("alice", 1),
            ("# nothing", 0),
        ] {
            let err = Tokens::parse(text).unwrap_err();
            assert_eq!(err.line, line, "{text:?}: {err}");
            assert!(!err.to_string().contains("0123456789abcdef"), "{err}");
        }
    }
}

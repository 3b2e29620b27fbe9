//! What one logical request came to: done (with what it took besides its time) or a failure,
//! whose kind is counted and whose detail is sampled.

/// Why a logical request failed: a short kind (counted) and the full text (sampled).
pub struct Failure {
    pub kind: String,
    pub detail: String,
}

pub fn fail(kind: impl Into<String>, detail: impl Into<String>) -> Failure {
    Failure {
        kind: kind.into(),
        detail: detail.into(),
    }
}

/// A wrong answer: `kind` names what was wrong (a few fixed kinds, counted), `detail` says how.
pub fn shape(kind: &str, detail: impl Into<String>) -> Failure {
    fail(format!("shape: {kind}"), detail)
}

/// What a successful logical request took besides its time.
#[derive(Default)]
pub struct Done {
    pub task_id: Option<String>,
    /// GetTask calls made to see a sent Task completed (0.3 `send`).
    pub polls: u64,
    /// Events read from a stream.
    pub events: u64,
}

/// At most `n` bytes of `s` (cut at a character boundary, then "…"): for failure details and
/// notes that quote an answer or a log.
pub fn truncate(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_owned();
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_cuts_at_a_character_boundary() {
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("abcdef", 3), "abc…");
        // "é" is two bytes: a cut inside it moves back before it.
        assert_eq!(truncate("aé", 2), "a…");
    }
}

//! Text a component controls (its error messages, the panic message inside a trap, what it
//! writes to stderr, what it answers `configure` with), made safe to show before it reaches a
//! log, a terminal or an A2A client: at most [`MAX_MESSAGE`] bytes, with control characters
//! and the Unicode bidirectional controls escaped, so a component can neither flood the host's
//! output nor forge log lines, move the cursor or clear a terminal.

use std::fmt::Write as _;

/// The most bytes of a component's message that are kept; the rest is cut and counted.
pub const MAX_MESSAGE: usize = 4096;

/// `text` cut to [`MAX_MESSAGE`] bytes (on a character boundary, with a note of how much was
/// cut) and with every control character escaped as Rust escapes it (`\n`, `\u{1b}`).
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_MESSAGE + 40));
    for (at, c) in text.char_indices() {
        if out.len() >= MAX_MESSAGE {
            let _ = write!(out, "… ({} more bytes cut)", text.len() - at);
            return out;
        }
        if c.is_control() || is_bidi_control(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// The invisible characters that reorder how text around them is displayed.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_text_kept() {
        let got = sanitize("ok\x1b[2J\rINFO forged\nnext\u{202e}lmth.exe é ✓");
        assert_eq!(
            got,
            "ok\\u{1b}[2J\\rINFO forged\\nnext\\u{202e}lmth.exe é ✓"
        );
        assert!(!got.chars().any(|c| c.is_control() || is_bidi_control(c)));
    }

    #[test]
    fn long_messages_are_cut_on_a_character_boundary() {
        let long = "é".repeat(1 << 20); // 2 MiB of two-byte characters
        let got = sanitize(&long);
        assert!(got.len() < MAX_MESSAGE + 64, "{}", got.len());
        assert!(got.ends_with("more bytes cut)"), "{got}");
        assert_eq!(sanitize("short"), "short");
    }
}

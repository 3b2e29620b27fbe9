//! What the echo agent does, free of any binding: plain `std`, driven through [`Runtime`] so
//! that it runs natively in unit tests with a recorder in place of the runtime.
//!
//! `toolnexus-agent-tck` compiles this same file as its fallback for messages no scenario
//! claims (one echo, not two drifting copies); it therefore names nothing of either crate.

use std::time::Duration;

/// The text that makes the echo agent ask for input once: a message starting with it.
pub const ASK_PREFIX: &str = "ask:";

/// The question the echo agent asks.
pub const ECHO_QUESTION: &str = "what should I echo?";

/// The name of the reply artifact (the built-in native echo agent's name for it).
pub const REPLY_ARTIFACT_NAME: &str = "reply";

/// Into how many pieces, at most, a reply is cut when it comes with a delay.
pub const PIECES_WITH_DELAY: usize = 4;

/// The longest sleep between two looks at `is-canceled`: a cancel stops a delayed reply within
/// about this long, not only at the next piece.
pub const CANCEL_POLL: Duration = Duration::from_millis(50);

/// The id of the reply artifact in Task `task_id`. One per Task is enough: only the run that
/// echoes creates it, and a Task is echoed once (an `ask:` run creates nothing). Made from the
/// Task id, as the native echo agent does, so both agents' Tasks look alike.
pub fn reply_artifact_id(task_id: &str) -> String {
    format!("{task_id}-reply")
}

/// One piece of the reply, as the artifact update that carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece<'a> {
    pub text: &'a str,
    /// Added to the end of the artifact (every piece but the first).
    pub append: bool,
    /// The reply's last piece.
    pub last_chunk: bool,
}

/// Why a run stops before its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Halt {
    /// The Task was canceled or ended meanwhile.
    Stopped,
    /// The runtime refused an update; the text says why, for the Task's status message.
    Failed(String),
}

/// Sleeping while watching for a cancel: what any waiting agent needs of its runtime.
pub trait Clock {
    /// Whether the Task was canceled or ended since the run began.
    fn is_canceled(&mut self) -> bool;
    /// Sleeps (the component's thread; nothing else runs in the instance meanwhile).
    fn sleep(&mut self, pause: Duration);
}

/// What the echo agent needs of its runtime while it works: the `task` import inside a
/// component, a recorder in tests.
pub trait Runtime: Clock {
    /// Emits one piece of the reply as an artifact update.
    fn emit(&mut self, piece: Piece<'_>) -> Result<(), Halt>;
}

/// How an echo run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The whole reply was emitted.
    Completed,
    /// The message asked for a question first; the next message is echoed.
    InputRequired(&'static str),
    /// The run stopped early.
    Halted(Halt),
}

/// Echoes `text` (the message's text parts joined by newlines): at once as one artifact update,
/// or with a `delay` in up to [`PIECES_WITH_DELAY`] pieces cut at whitespace, each after its
/// share of the delay. A text starting with [`ASK_PREFIX`] asks [`ECHO_QUESTION`] instead.
pub fn echo(text: &str, delay: Duration, runtime: &mut impl Runtime) -> Ending {
    if text.starts_with(ASK_PREFIX) {
        return Ending::InputRequired(ECHO_QUESTION);
    }
    match emit_reply(text, delay, runtime) {
        Ok(()) => Ending::Completed,
        Err(halt) => Ending::Halted(halt),
    }
}

fn emit_reply(text: &str, delay: Duration, runtime: &mut impl Runtime) -> Result<(), Halt> {
    let n = if delay.is_zero() {
        1
    } else {
        PIECES_WITH_DELAY
    };
    let pieces = pieces(text, n);
    let count = pieces.len();
    let pause = delay / u32::try_from(count).unwrap_or(u32::MAX).max(1);
    for (i, text) in pieces.into_iter().enumerate() {
        wait(runtime, pause)?;
        runtime.emit(Piece {
            text,
            append: i > 0,
            last_chunk: i + 1 == count,
        })?;
    }
    Ok(())
}

/// Sleeps `pause` in slices of at most [`CANCEL_POLL`], looking at `is-canceled` before each
/// slice and at the end: [`Halt::Stopped`] as soon as the Task is canceled.
pub fn wait(clock: &mut impl Clock, pause: Duration) -> Result<(), Halt> {
    let mut left = pause;
    loop {
        if clock.is_canceled() {
            return Err(Halt::Stopped);
        }
        if left.is_zero() {
            return Ok(());
        }
        let slice = left.min(CANCEL_POLL);
        clock.sleep(slice);
        left -= slice;
    }
}

/// `text` cut into at most `n` pieces at whitespace (whitespace kept with the piece before),
/// all of it; one piece when there is no whitespace. The native echo agent cuts the same way.
pub fn pieces(text: &str, n: usize) -> Vec<&str> {
    let words: Vec<usize> = text
        .char_indices()
        .filter(|(_, c)| c.is_whitespace())
        .map(|(i, c)| i + c.len_utf8())
        .filter(|&end| end < text.len())
        .collect();
    if words.is_empty() || n <= 1 {
        return vec![text];
    }
    let cuts = n.min(words.len() + 1) - 1;
    let mut out = Vec::with_capacity(cuts + 1);
    let mut start = 0;
    for k in 1..=cuts {
        let end = words[(k * words.len()) / (cuts + 1)];
        if end > start {
            out.push(&text[start..end]);
            start = end;
        }
    }
    out.push(&text[start..]);
    out
}

/// Reads a setting given in milliseconds (`delay-ms=250`), naming the setting when the value is
/// not a whole number of milliseconds.
pub fn parse_millis(name: &str, value: &str) -> Result<Duration, String> {
    value
        .trim()
        .parse::<u64>()
        .map(Duration::from_millis)
        .map_err(|_| format!("{name} must be a whole number of milliseconds, not {value:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what a run does, on a virtual clock.
    #[derive(Default)]
    struct Recorder {
        emitted: Vec<(String, bool, bool)>,
        slept: Duration,
        /// Canceled once this many pieces were emitted.
        cancel_after: Option<usize>,
        /// `emit` answers stopped from this piece on.
        refuse_from: Option<usize>,
    }

    impl Runtime for Recorder {
        fn emit(&mut self, piece: Piece<'_>) -> Result<(), Halt> {
            if self.refuse_from.is_some_and(|n| self.emitted.len() >= n) {
                return Err(Halt::Stopped);
            }
            self.emitted
                .push((piece.text.to_owned(), piece.append, piece.last_chunk));
            Ok(())
        }
    }

    impl Clock for Recorder {
        fn is_canceled(&mut self) -> bool {
            self.cancel_after.is_some_and(|n| self.emitted.len() >= n)
        }
        fn sleep(&mut self, pause: Duration) {
            assert!(
                pause <= CANCEL_POLL,
                "slept {pause:?} without looking at cancels"
            );
            self.slept += pause;
        }
    }

    #[test]
    fn pieces_cover_the_text() {
        for text in ["", "one", "one two", "a b c d e f g h", "x  y\nz é ü"] {
            for n in 1..6 {
                let p = pieces(text, n);
                assert!(p.len() <= n.max(1), "{text:?} {n} {p:?}");
                assert_eq!(p.concat(), text, "{n}");
            }
        }
        assert_eq!(
            pieces("a b c d e f g h", 4),
            ["a b ", "c d ", "e f ", "g h"]
        );
        assert_eq!(pieces("nowhitespace", 4), ["nowhitespace"]);
    }

    #[test]
    fn without_a_delay_the_reply_is_one_last_chunk() {
        let mut r = Recorder::default();
        assert_eq!(
            echo("hello there", Duration::ZERO, &mut r),
            Ending::Completed
        );
        assert_eq!(r.emitted, [("hello there".to_owned(), false, true)]);
        assert_eq!(r.slept, Duration::ZERO);
    }

    #[test]
    fn with_a_delay_four_pieces_spread_over_it() {
        let mut r = Recorder::default();
        let delay = Duration::from_millis(400);
        assert_eq!(echo("a b c d e f g h", delay, &mut r), Ending::Completed);
        let flags: Vec<(bool, bool)> = r.emitted.iter().map(|e| (e.1, e.2)).collect();
        assert_eq!(
            flags,
            [(false, false), (true, false), (true, false), (true, true)]
        );
        let text: String = r.emitted.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(text, "a b c d e f g h");
        assert_eq!(r.slept, delay);
    }

    #[test]
    fn a_delayed_word_is_one_piece() {
        let mut r = Recorder::default();
        assert_eq!(
            echo("word", Duration::from_millis(120), &mut r),
            Ending::Completed
        );
        assert_eq!(r.emitted, [("word".to_owned(), false, true)]);
        assert_eq!(r.slept, Duration::from_millis(120));
    }

    #[test]
    fn ask_asks_and_emits_nothing() {
        let mut r = Recorder::default();
        assert_eq!(
            echo("ask: anything", Duration::from_secs(1), &mut r),
            Ending::InputRequired(ECHO_QUESTION)
        );
        assert!(r.emitted.is_empty());
        assert_eq!(r.slept, Duration::ZERO);
    }

    #[test]
    fn a_cancel_stops_between_pieces() {
        let mut r = Recorder {
            cancel_after: Some(1),
            ..Recorder::default()
        };
        let ending = echo("a b c d e f g h", Duration::from_millis(400), &mut r);
        assert_eq!(ending, Ending::Halted(Halt::Stopped));
        assert_eq!(r.emitted.len(), 1);
        // Noticed before sleeping the next piece's share.
        assert_eq!(r.slept, Duration::from_millis(100));
    }

    #[test]
    fn a_stopped_update_stops_the_reply() {
        let mut r = Recorder {
            refuse_from: Some(2),
            ..Recorder::default()
        };
        let ending = echo("a b c d e f g h", Duration::from_millis(40), &mut r);
        assert_eq!(ending, Ending::Halted(Halt::Stopped));
        assert_eq!(r.emitted.len(), 2);
    }

    #[test]
    fn millis_settings() {
        assert_eq!(
            parse_millis("delay-ms", "250"),
            Ok(Duration::from_millis(250))
        );
        assert_eq!(parse_millis("delay-ms", "0"), Ok(Duration::ZERO));
        let err = parse_millis("delay-ms", "1.5s").unwrap_err();
        assert!(err.contains("delay-ms") && err.contains("1.5s"), "{err}");
        assert!(parse_millis("delay-ms", "-1").is_err());
    }
}

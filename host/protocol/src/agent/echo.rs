//! The native echo agent: replies with the text parts of the message (the built-in agent's
//! behaviour, also built as a component in `guest/agent-echo`).

use crate::agent::model::{Artifact, Message, Part};
use crate::agent::{Agent, EmitError, Outcome, Work};
use std::time::Duration;

/// The text that makes [`EchoAgent`] ask for input once: a message starting with it.
pub const ASK_PREFIX: &str = "ask:";

/// The question [`EchoAgent`] asks.
pub const ECHO_QUESTION: &str = "what should I echo?";

/// The id of the reply artifact of the echo agent, in Task `task_id`.
pub fn echo_artifact_id(task_id: &str) -> String {
    format!("{task_id}-reply")
}

/// Replies with the text parts of the message, as an artifact named `reply`.
///
/// - Without a delay the reply is one artifact update, then `completed`. With a `delay`, the
///   reply comes in up to four pieces spread over it, each an artifact update (the later
///   ones appended, the last one the last chunk); a cancel stops it between pieces.
/// - A message whose text starts with `ask:` gets `input-required` ("what should I echo?");
///   the next message to that Task is echoed.
#[derive(Debug, Clone, Default)]
pub struct EchoAgent {
    /// How long to "think" before the whole answer is in.
    pub delay: Duration,
}

#[async_trait::async_trait]
impl Agent for EchoAgent {
    async fn run(&self, work: &mut Work) -> Result<Outcome, String> {
        let text = work.request().message.text();
        if text.starts_with(ASK_PREFIX) {
            return Ok(Outcome::InputRequired(Some(Message::agent_text(
                ECHO_QUESTION,
            ))));
        }
        let id = echo_artifact_id(&work.request().task_id);
        let pieces = pieces(&text, if self.delay.is_zero() { 1 } else { 4 });
        let pause = self.delay / u32::try_from(pieces.len()).unwrap_or(1).max(1);
        for (i, piece) in pieces.iter().enumerate() {
            wait(work, pause).await?;
            let mut artifact = Artifact::new(&id, vec![Part::text(*piece)]);
            artifact.name = Some("reply".into());
            let last = i + 1 == pieces.len();
            match work.update_artifact(artifact, i > 0, last).await {
                Ok(()) => {}
                Err(EmitError::Stopped) => return Ok(Outcome::Canceled(None)),
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(Outcome::Completed(None))
    }
}

async fn wait(work: &mut Work, pause: Duration) -> Result<(), String> {
    if pause.is_zero() {
        return Ok(());
    }
    tokio::select! {
        () = tokio::time::sleep(pause) => Ok(()),
        () = work.canceled() => Err(EmitError::Stopped.to_string()),
    }
}

/// `text` cut into at most `n` pieces at whitespace (whitespace kept with the piece before),
/// all of it; one piece when there is no whitespace.
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

#[cfg(test)]
mod tests {
    use super::pieces;

    #[test]
    fn pieces_cover_the_text() {
        for text in ["", "one", "one two", "a b c d e f g h", "x  y\nz é ü"] {
            for n in 1..6 {
                let p = pieces(text, n);
                assert!(p.len() <= n.max(1), "{text:?} {n} {p:?}");
                assert_eq!(p.concat(), text, "{n}");
            }
        }
        assert_eq!(pieces("a b c d e f g h", 4).len(), 4);
    }
}

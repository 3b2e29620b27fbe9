//! The agent a runtime plugs in, and the built-in echo agent.

use crate::wire::message_text;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use toolnexus_core::Task;

/// What an agent's run ended with (an `Err(reason)` from [`Agent::run`] fails the Task with
/// that reason as its status message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Done: the Task is saved `completed`, with this last piece of text appended to its reply
    /// artifact in the same save (nothing appended when empty).
    Completed(String),
    /// The agent needs more from the user: the Task is saved `input-required` with this
    /// question as the status message. The user's next message with this Task's id runs the
    /// agent again, with that message.
    InputRequired(String),
}

/// The run of an agent was stopped: the Task became terminal meanwhile (canceled by a client,
/// here or through another replica, or failed by a restart's recovery).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped;

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the task was canceled or ended while the agent worked on it")
    }
}

impl std::error::Error for Stopped {}

/// Where a run's partial output goes: the service saves it through the store and wakes the
/// Task's subscribers.
#[async_trait::async_trait]
pub(crate) trait Sink: Send + Sync {
    async fn append_text(&self, text: &str) -> Result<(), Stopped>;
}

/// One run of an agent on a Task: what it works on, and how it reports progress.
pub struct Work {
    pub(crate) task: Task,
    pub(crate) message: Value,
    pub(crate) cancel: watch::Receiver<bool>,
    pub(crate) sink: Arc<dyn Sink>,
}

impl Work {
    /// The Task as saved `working`, history included.
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// The user's message this run answers (stored form: 0.3 JSON).
    pub fn message(&self) -> &Value {
        &self.message
    }

    /// The text parts of [`Work::message`], joined by newlines.
    pub fn text(&self) -> String {
        message_text(&self.message)
    }

    /// Appends a piece of text to this run's reply artifact, saved through the store at once
    /// and streamed to subscribers as an artifact update. Fails with [`Stopped`] when the Task
    /// was canceled or ended meanwhile: the agent should then stop.
    pub async fn append_text(&self, text: &str) -> Result<(), Stopped> {
        if self.is_canceled() {
            return Err(Stopped);
        }
        self.sink.append_text(text).await
    }

    /// Whether a client canceled the Task (through this server; a cancel through another
    /// replica shows as [`Stopped`] at the next [`Work::append_text`]).
    pub fn is_canceled(&self) -> bool {
        *self.cancel.borrow()
    }

    /// Resolves when a client cancels the Task through this server. For `select!` against
    /// the agent's own work.
    pub async fn canceled(&mut self) {
        // A dropped sender (the run's entry removed) never cancels.
        while !*self.cancel.borrow_and_update() {
            if self.cancel.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// The agent logic a runtime plugs in.
///
/// The server saves the Task `working` before [`Agent::run`] and the outcome after it
/// (`completed`, `input-required` or `failed`), each through the store, unless the Task became
/// terminal meanwhile (a cancel wins). During the run the agent streams partial output with
/// [`Work::append_text`] and watches [`Work::canceled`].
#[async_trait::async_trait]
pub trait Agent: Send + Sync {
    /// Works on `work`'s Task.
    async fn run(&self, work: &mut Work) -> Result<Reply, String>;

    /// Whether this agent picks up, by itself, the Tasks a previous run of the server left
    /// `submitted` or `working` (after a crash, say). If it says so, the startup recovery
    /// leaves those Tasks alone for it; otherwise they are marked `failed`. The server itself
    /// never resumes a Task. The default, and [`EchoAgent`], answer `false`.
    fn can_resume(&self) -> bool {
        false
    }
}

/// The text that makes [`EchoAgent`] ask for input once: a message starting with it.
pub const ASK_PREFIX: &str = "ask:";

/// The question [`EchoAgent`] asks.
pub const ECHO_QUESTION: &str = "what should I echo?";

/// The built-in agent: replies with the text parts of the message.
///
/// - Without a delay the reply is saved whole, with the completion. With a `delay`, the
///   reply comes in up to four pieces spread over it, each appended to
///   the reply artifact (and streamed) as it is ready; a cancel stops it between pieces.
/// - A message whose text starts with `ask:` gets `input-required` ("what should I echo?");
///   the next message to that Task is echoed.
#[derive(Debug, Clone, Default)]
pub struct EchoAgent {
    /// How long to "think" before the whole answer is in.
    pub delay: Duration,
}

#[async_trait::async_trait]
impl Agent for EchoAgent {
    async fn run(&self, work: &mut Work) -> Result<Reply, String> {
        let text = work.text();
        if text.starts_with(ASK_PREFIX) {
            return Ok(Reply::InputRequired(ECHO_QUESTION.into()));
        }
        if self.delay.is_zero() {
            return Ok(Reply::Completed(text));
        }
        let pieces = pieces(&text, 4);
        let pause = self.delay / u32::try_from(pieces.len()).unwrap_or(1).max(1);
        let (last, first) = pieces.split_last().unwrap_or((&"", &[]));
        for piece in first {
            wait(work, pause).await?;
            work.append_text(piece).await.map_err(|e| e.to_string())?;
        }
        wait(work, pause).await?;
        Ok(Reply::Completed((*last).to_owned()))
    }
}

async fn wait(work: &mut Work, pause: Duration) -> Result<(), String> {
    if pause.is_zero() {
        return Ok(());
    }
    tokio::select! {
        () = tokio::time::sleep(pause) => Ok(()),
        () = work.canceled() => Err(Stopped.to_string()),
    }
}

/// `text` cut into at most `n` pieces at whitespace (whitespace kept with the piece before),
/// all of it; one piece when there is no whitespace.
fn pieces(text: &str, n: usize) -> Vec<&str> {
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

//! The agent a runtime plugs in: [`Agent`], the [`Work`] it is given for one run, the updates
//! it emits while it runs, and the [`Outcome`] it ends with. The same shapes as the agent
//! contract for components (`wit/a2a/agent.wit`), whose doc comments are the longer spec.
//!
//! - `model`: parts, messages and artifacts.
//! - `request`: what the run is asked to do.
//! - `echo`: the native echo agent.
//! - `wit_conversions`: the model to and from the agent contract's records, for any bindings.

mod echo;
mod model;
mod request;
mod wit_conversions;

pub use echo::{ASK_PREFIX, ECHO_QUESTION, EchoAgent, echo_artifact_id, pieces};
pub use model::{Artifact, Message, Metadata, Part, PartContent, Role};
pub use request::{CanceledTask, Request};

use crate::wire::message_text;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::watch;
use toolnexus_core::Task;

/// How a run ended (an `Err(reason)` from [`Agent::run`] is [`Outcome::Failed`] with that
/// reason as the status message).
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Done; the message, if any, is the final status message.
    Completed(Option<Message>),
    /// The agent could not do it; the message says why.
    Failed(Option<Message>),
    /// The agent will not do it; the message says why.
    Rejected(Option<Message>),
    /// The agent stopped the Task itself.
    Canceled(Option<Message>),
    /// The agent needs more from the user, asked in the message: the Task is saved
    /// `input-required`, and the user's next message to it runs the agent again.
    InputRequired(Option<Message>),
    /// The agent needs the user to authenticate; as [`Outcome::InputRequired`].
    AuthRequired(Option<Message>),
    /// A direct answer instead of a Task: `SendMessage` answers this message, and the Task
    /// kept for the exchange is saved `completed` with it in its history. Only valid when the
    /// run emitted no update (else the Task is failed).
    Reply(Message),
}

/// Why an update was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmitError {
    /// The Task was canceled or ended meanwhile (here, or through another replica): the
    /// agent should stop.
    Stopped,
    /// The update is malformed; the message says what.
    Invalid(String),
    /// The update went over a limit of the server; the message says which. Nothing of it was
    /// saved.
    Limit(String),
    /// The store failed; nothing was saved.
    Unavailable(String),
}

impl std::fmt::Display for EmitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmitError::Stopped => {
                f.write_str("the task was canceled or ended while the agent worked on it")
            }
            EmitError::Invalid(m) => write!(f, "invalid update: {m}"),
            EmitError::Limit(m) => write!(f, "update over a limit: {m}"),
            EmitError::Unavailable(m) => write!(f, "update not saved: {m}"),
        }
    }
}

impl std::error::Error for EmitError {}

/// Where a run's updates go: the service saves each through the store and sends it to the
/// Task's subscribers.
#[async_trait::async_trait]
pub(crate) trait Sink: Send + Sync {
    async fn update_status(&self, message: Option<Message>) -> Result<(), EmitError>;
    async fn update_artifact(
        &self,
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    ) -> Result<(), EmitError>;
}

/// A run's updates and its cancel signal, apart from [`Work`]: cloneable and `'static`, for an
/// agent (or an adapter, such as the one for agent components) that emits from elsewhere.
#[derive(Clone)]
pub struct Updater {
    sink: Arc<dyn Sink>,
    cancel: watch::Receiver<bool>,
}

impl Updater {
    /// The Task stays `working`, with `message` as its status message: saved, then sent to
    /// subscribers as a status update.
    pub async fn update_status(&self, message: Option<Message>) -> Result<(), EmitError> {
        if self.is_canceled() {
            return Err(EmitError::Stopped);
        }
        self.sink.update_status(message).await
    }

    /// An artifact update: `append` false makes the artifact new (or replaces the one with its
    /// id); `append` true adds its parts to the artifact with its id that exists; `last_chunk`
    /// says it is the artifact's last piece. Saved, then sent to subscribers.
    pub async fn update_artifact(
        &self,
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    ) -> Result<(), EmitError> {
        if self.is_canceled() {
            return Err(EmitError::Stopped);
        }
        self.sink
            .update_artifact(artifact, append, last_chunk)
            .await
    }

    /// Whether a client canceled the Task through this server (a cancel through another
    /// replica shows as [`EmitError::Stopped`] at the next update).
    pub fn is_canceled(&self) -> bool {
        *self.cancel.borrow()
    }

    /// Resolves when a client cancels the Task through this server.
    pub async fn canceled(&mut self) {
        // A dropped sender (the run's entry removed) never cancels.
        while !*self.cancel.borrow_and_update() {
            if self.cancel.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// One run of an agent on a Task: what it is asked, and how it reports progress.
pub struct Work {
    pub(crate) task: Task,
    pub(crate) message: Value,
    pub(crate) request: Request,
    pub(crate) updater: Updater,
}

impl Work {
    pub(crate) fn new(
        task: Task,
        message: Value,
        request: Request,
        sink: Arc<dyn Sink>,
        cancel: watch::Receiver<bool>,
    ) -> Self {
        Work {
            task,
            message,
            request,
            updater: Updater { sink, cancel },
        }
    }

    /// What this run is asked: the message, the history, the request's metadata, accepted
    /// output modes and extensions, and the caller.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// The Task as saved `working`, history included (stored form).
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

    /// This run's updates and cancel signal, to move elsewhere.
    pub fn updater(&self) -> Updater {
        self.updater.clone()
    }

    /// See [`Updater::update_status`].
    pub async fn update_status(&self, message: Option<Message>) -> Result<(), EmitError> {
        self.updater.update_status(message).await
    }

    /// See [`Updater::update_artifact`].
    pub async fn update_artifact(
        &self,
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    ) -> Result<(), EmitError> {
        self.updater
            .update_artifact(artifact, append, last_chunk)
            .await
    }

    /// See [`Updater::is_canceled`].
    pub fn is_canceled(&self) -> bool {
        self.updater.is_canceled()
    }

    /// See [`Updater::canceled`]: for `select!` against the agent's own work.
    pub async fn canceled(&mut self) {
        self.updater.canceled().await
    }
}

/// The agent logic a runtime plugs in.
///
/// The server saves the Task `working` before [`Agent::run`] and the outcome after it, each
/// through the store, unless the Task became terminal meanwhile (a cancel wins). During the
/// run the agent emits status and artifact updates ([`Work::update_status`],
/// [`Work::update_artifact`]): each is saved, then sent to every subscriber in the order
/// emitted.
///
/// A panic in [`Agent::run`] fails the Task ("the agent failed: it panicked"; what it said is
/// logged), as a component's trap does. When the host stops
/// ([`Service::stop_runs`](crate::Service::stop_runs)), a run still going is dropped (the
/// future is not polled again) and its Task saved `failed`.
#[async_trait::async_trait]
pub trait Agent: Send + Sync {
    /// Works on `work`'s Task.
    async fn run(&self, work: &mut Work) -> Result<Outcome, String>;

    /// Called after a client canceled a Task (saved `canceled`), so the agent can release
    /// what it holds outside for it. The default does nothing.
    async fn cancel(&self, _task: &CanceledTask) {}

    /// Whether this agent picks up, by itself, the Tasks a previous run of the server left
    /// `submitted` or `working` (after a crash, say). If it says so, the startup recovery
    /// leaves those Tasks alone for it; otherwise they are marked `failed`. The server itself
    /// never resumes a Task. The default, and [`EchoAgent`], answer `false`.
    fn can_resume(&self) -> bool {
        false
    }
}

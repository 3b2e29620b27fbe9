//! What an agent is asked to do: one message sent to one Task, with what the request carried.

use crate::agent::model::{Message, Metadata};

/// One message sent to one Task, as the agent sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The Task's id (made by the server for a new Task).
    pub task_id: String,
    /// The Task's context id.
    pub context_id: String,
    /// Whether the Task existed before this message (it answers the agent's
    /// `input-required` or `auth-required`).
    pub continued: bool,
    /// The message this run answers: every part, as the client sent it.
    pub message: Message,
    /// The Task's conversation before [`Request::message`], oldest first.
    pub history: Vec<Message>,
    /// The request's `metadata`.
    pub metadata: Option<Metadata>,
    /// The output media types the client accepts (empty: any).
    pub accepted_output_modes: Vec<String>,
    /// The caller, as the server authenticated it.
    pub owner: Option<String>,
    /// The tenant the request named.
    pub tenant: Option<String>,
    /// URIs of the extensions the client asked for (the `A2A-Extensions` header).
    pub extensions: Vec<String>,
}

/// A Task a client canceled, as [`Agent::cancel`](crate::Agent::cancel) is told of it: its ids
/// and whose it is. An agent that keys what it holds outside by something a client chose (the
/// context id) checks that key against [`CanceledTask::owner`] and [`CanceledTask::tenant`]
/// before releasing anything: two owners may choose the same context id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanceledTask {
    /// The Task's id.
    pub task_id: String,
    /// The Task's context id.
    pub context_id: String,
    /// The caller who canceled it, as the server authenticated them: the Task's owner, since
    /// only its owner can reach it (`None` without authentication).
    pub owner: Option<String>,
    /// The tenant the cancel named (`None`: the default namespace).
    pub tenant: Option<String>,
}

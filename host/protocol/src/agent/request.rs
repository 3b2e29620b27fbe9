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

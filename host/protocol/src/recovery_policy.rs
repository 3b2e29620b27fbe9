//! What the server does at startup with the Tasks a previous run left unfinished.

/// What the server does at startup with Tasks a previous run left unfinished (`submitted` or
/// `working`, with a status timestamp before this server started, or none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Recovery {
    /// Mark each of them `failed`, with the status message
    /// [`INTERRUPTED_MESSAGE`](crate::maintenance::INTERRUPTED_MESSAGE), unless it became
    /// terminal meanwhile (a cancel landing concurrently wins). If the agent says it can
    /// resume ([`Agent::can_resume`](crate::Agent::can_resume)), its Tasks are left alone
    /// instead. The default.
    #[default]
    FailInterrupted,
    /// Leave every Task as it is. The choice for replicas sharing a store (see
    /// [`maintenance`](crate::maintenance)).
    Off,
}

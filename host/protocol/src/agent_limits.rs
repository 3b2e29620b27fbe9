//! [`AgentLimits`]: what one run of the agent may emit. Its own file so that the settings
//! (`service_config.rs`) need nothing of the run's code, which needs the service's state.

/// Limits on what one run may emit (a hostile or broken agent meets them, not the store).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentLimits {
    /// The most bytes of one update (its message or artifact as JSON).
    pub max_update_bytes: usize,
    /// The most updates of one run.
    pub max_updates: usize,
    /// The most bytes of a Task an update may leave (as JSON).
    pub max_task_bytes: usize,
}

impl Default for AgentLimits {
    fn default() -> Self {
        AgentLimits {
            max_update_bytes: 4 << 20,
            max_updates: 10_000,
            max_task_bytes: 16 << 20,
        }
    }
}

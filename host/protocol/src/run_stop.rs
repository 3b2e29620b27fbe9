//! Stopping the agents' runs when the host shuts down ([`Service::stop_runs`]).
//!
//! The stop is sticky: from then on `SendMessage` is refused (the background permits are
//! closed: -32000, retry later, nothing saved), and every run in this process, as well as one
//! whose send was taken just before and starts after, ends at once. Its agent's run is
//! dropped and its Task saved `failed` with [`RUN_STOPPED_MESSAGE`] (unless it is terminal
//! already), which its subscribers get as the final event.
//!
//! Why `failed` and not `canceled`: no client asked for a cancel, and the work was not done;
//! `failed` with a message saying why is also what startup recovery makes of a Task a crash
//! left behind, so a client sees the same end whether the server stopped or died. It may send
//! the message again (to this server once it is back, or to another replica).
//!
//! [`Service::stop_runs`]: crate::Service::stop_runs

use crate::service_state::ServiceState;
use tokio::sync::watch;

/// The status message of a Task whose run was stopped because the server stopped.
pub const RUN_STOPPED_MESSAGE: &str =
    "the server stopped before the agent finished; send the message again to retry";

impl ServiceState {
    /// Stops every run here, now and from now on (see the module's documentation).
    pub(crate) fn stop_runs(&self) {
        self.background.close();
        for signal in self.lock_map(&self.cancels).values() {
            signal.send_replace(true);
        }
    }

    /// Whether runs are stopped ([`ServiceState::stop_runs`] was called).
    pub(crate) fn runs_stopped(&self) -> bool {
        self.background.is_closed()
    }

    /// Resolves once the run whose cancel signal is `signal` is to stop for the shutdown: the
    /// signal is raised and runs are stopped. A client's cancel alone raises the signal too,
    /// and leaves the agent to end its run itself, as always.
    pub(crate) async fn stop_requested(&self, signal: &mut watch::Receiver<bool>) {
        loop {
            if *signal.borrow_and_update() && self.runs_stopped() {
                return;
            }
            if signal.changed().await.is_err() {
                // No sender left: nothing can stop this run any more.
                return std::future::pending().await;
            }
        }
    }
}

//! How `tnstore serve` stops: the first SIGINT or SIGTERM asks the server to stop gracefully
//! (what that means is the server's: see the A2A server's and `--component`'s documentation),
//! and once it has, the process exits 0; a second signal exits at once (status 130).
//! `--shutdown-grace` bounds how long the A2A server waits for the agents' runs.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// The future a server is given, ready at the first signal.
pub type Shutdown = Pin<Box<dyn Future<Output = ()> + Send>>;

/// `tnstore serve --shutdown-grace`.
#[derive(clap::Args, Debug)]
pub struct ShutdownArgs {
    /// On SIGTERM or SIGINT the server stops taking connections and gives the agents' runs in
    /// progress this long (e.g. 10s, 1m, 0s) to finish; the runs still going then are stopped,
    /// their Tasks saved failed ("the server stopped before the agent finished; …"), and it
    /// exits 0. A second signal exits at once (status 130).
    // The default is `toolnexus_a2a::DEFAULT_SHUTDOWN_GRACE` (checked by a test below).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_grace)]
    pub shutdown_grace: Duration,
}

fn parse_grace(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("{e} (expected e.g. 10s, 1m, 0s)"))
}

/// Runs the server `serve` makes (given the future that is ready at the first signal) to its
/// end. At the first signal it prints `tnstore: stopping: <stopping>` to stderr; at a second
/// one it exits the process at once with status 130. The signal handlers are installed
/// before `serve` is called, so a signal that comes once the server said it listens is never
/// the default one (which would kill the process).
pub async fn serve_until_signaled<F: Future>(
    serve: impl FnOnce(Shutdown) -> F,
    stopping: &str,
) -> std::io::Result<F::Output> {
    let mut signals = Signals::new()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = serve(Box::pin(async move {
        let _ = stopped.await;
    }));
    tokio::pin!(server);
    tokio::select! {
        done = &mut server => return Ok(done),
        () = signals.next() => {}
    }
    eprintln!("tnstore: stopping: {stopping} (signal again to stop at once)");
    let _ = stop.send(());
    tokio::select! {
        done = &mut server => Ok(done),
        () = signals.next() => {
            eprintln!("tnstore: stopped at once");
            // Agents and handlers may still hold blocking threads, which dropping the runtime
            // would wait for: leave now.
            std::process::exit(130)
        }
    }
}

/// SIGINT (Ctrl-C) and, on Unix, SIGTERM.
struct Signals {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                int: signal(SignalKind::interrupt())?,
                term: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    async fn next(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_grace_is_the_servers() {
        assert_eq!(
            parse_grace("10s"),
            Ok(toolnexus_a2a::DEFAULT_SHUTDOWN_GRACE)
        );
        assert!(parse_grace("soon").is_err());
    }
}

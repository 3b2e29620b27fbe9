//! `tnstore serve --component '<component.wasm>?dir=<dir>&<option>=<value>…'`: serves any
//! `wasi:http` component (one exporting `wasi:http/incoming-handler@0.2.x`) the way
//! `wasmtime serve` does, in the sandbox that store and agent components get, with its limits
//! (`toolnexus_wasm::http_component`; the options are in `docs/wasm-options.md`). Everything
//! is read, compiled and checked before the port is bound, so a bad selector, a missing file or
//! a component that is not an HTTP handler refuses the start, naming the problem.
//!
//! SIGINT or SIGTERM stops it gracefully: no new connections, the requests in progress (and
//! work their components do after responding) run to their end, then it exits 0. A second
//! signal exits at once (status 130).

use crate::{Failure, StderrLog, graceful_stop};
use std::io::Write;
use std::time::Duration;
use toolnexus::StoreError;
use toolnexus::options::redact;
use toolnexus::wasm::http_component::{ServerLimits, http_component_from_selector, serve};

/// The `tnstore serve` flags only the native A2A server has, refused beside `--component` by
/// clap. `--store` is global and has an environment variable, which clap would count too (a
/// variable set for other commands must not stop this one): it is refused by [`run`] when it
/// is on the command line; `--push-outbox`'s variable is left alone the same way.
pub const NATIVE_ONLY: [&str; 33] = [
    "agent",
    "shutdown_grace",
    "echo_delay_ms",
    "max_background_tasks",
    "max_list_bytes",
    "stage_finish_delay_ms",
    "recovery",
    "retain",
    "tokens",
    "tenants",
    "card",
    "public_url",
    "tls_cert",
    "tls_key",
    "push_allow",
    "push_key_file",
    "push_timeout",
    "push_attempts",
    "push_backoff",
    "push_concurrency",
    "push_concurrency_per_namespace",
    "push_concurrency_per_destination",
    "push_max_queued",
    "push_max_queued_per_namespace",
    "push_max_queued_per_destination",
    "push_max_payload_bytes",
    "push_require_https",
    "no_push",
    "max_tasks_per_owner",
    "max_bytes_per_owner",
    "max_streams_per_owner",
    "max_streams_per_task",
    "max_stream_backlog_bytes",
];

/// The server's connection settings, from `tnstore serve`'s flags.
pub struct ConnectionFlags {
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
    pub insecure_no_auth: bool,
    /// Whether `--store` was given on the command line.
    pub store_given: bool,
}

/// Serves the component `selector` names on `addr` until a signal (see the module's
/// documentation).
pub async fn run(selector: String, addr: String, flags: ConnectionFlags) -> Result<(), Failure> {
    if flags.store_given {
        return Err(Failure::Usage(
            "--store cannot be used with --component: the component keeps its own data, in \
             its dir="
                .into(),
        ));
    }
    let _ = tracing::subscriber::set_global_default(ComponentLog);
    // Compiling takes a moment: off the async workers.
    let component = tokio::task::spawn_blocking(move || {
        http_component_from_selector(&selector).and_then(|builder| builder.build())
    })
    .await
    .map_err(|e| Failure::Store(format!("--component: {e}")))?
    .map_err(refused)?;
    let (listener, local) = crate::listen(&addr).await?;
    if !local.ip().is_loopback() && !flags.insecure_no_auth {
        return Err(Failure::Usage(format!(
            "refusing to serve {local}: the host puts no authentication in front of the \
             component, so anyone who reaches the port reaches it. Listen on a loopback address \
             (127.0.0.1:PORT) behind a proxy that authenticates, or pass --insecure-no-auth"
        )));
    }
    let limits = ServerLimits {
        header_read_timeout: flags.header_read_timeout,
        stall_timeout: flags.idle_timeout,
        body_read_timeout: flags.body_read_timeout,
        max_connections: flags.max_connections,
    };
    let name = component.name().to_owned();
    graceful_stop::serve_until_signaled(
        |shutdown| async move {
            {
                let mut out = std::io::stdout().lock();
                writeln!(out, "listening on http://{local}/ with component {name}")
                    .and_then(|()| out.flush())
                    .map_err(|e| Failure::Store(format!("cannot write output: {e}")))?;
            }
            serve(listener, component, limits, shutdown).await;
            Ok(())
        },
        "finishing the requests in progress",
    )
    .await
    .map_err(|e| Failure::Store(format!("signals: {e}")))?
}

/// Why the component cannot be served, in this command's words (the errors' own speak of
/// stores): a bad selector is a usage error (exit 2), a component that cannot be loaded or a
/// directory that cannot be made a failure of the component (exit 3), as for `--store`.
fn refused(error: StoreError) -> Failure {
    match error {
        StoreError::InvalidSelector { selector, reason } => Failure::Usage(format!(
            "--component: invalid component selector {:?}: {reason}",
            redact(&selector)
        )),
        StoreError::Load { component, reason } => {
            Failure::Store(format!("--component: cannot load {component}: {reason}"))
        }
        other => Failure::Store(format!("--component: {other}")),
    }
}

/// `tnstore serve`'s log, plus the component's forwarded stderr (`stderr=log`, logged at INFO
/// under the target `toolnexus::component`) and the server's notes on failed requests.
struct ComponentLog;

impl tracing::Subscriber for ComponentLog {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        let level = *metadata.level();
        level <= tracing::Level::WARN
            || (level <= tracing::Level::INFO
                && matches!(
                    metadata.target(),
                    "toolnexus::component" | "toolnexus::http_component"
                ))
    }
    fn new_span(&self, attributes: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        StderrLog.new_span(attributes)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        StderrLog.event(event)
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

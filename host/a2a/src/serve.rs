//! Serving on a listener: startup recovery, background retention, then the connections, until
//! a graceful stop.

use crate::config::ServerConfig;
use crate::router::router_and_service;
use crate::tls::TlsIdentity;
use crate::{conn, maintenance};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use toolnexus_a2a_protocol::{Service, SingleStore, Stores};
use toolnexus_core::TaskStore;

/// How long the connections still open once the runs are over get to deliver their last
/// bytes (the final events of the streams among them) before they are dropped.
const LAST_WRITES: Duration = Duration::from_secs(2);

/// Serves A2A on `listener` until the process ends (or the future is dropped, which stops
/// accepting), with every Task in `store`, within the limits of `config`. For a graceful stop
/// (the agents' runs finished or stopped, no Task left `working`), use
/// [`serve_stores_with_shutdown`].
///
/// Before it accepts a connection it runs the startup recovery ([`ServerConfig::recovery`]);
/// clients that connect meanwhile wait in the listen backlog. With [`ServerConfig::retain`]
/// it also runs retention in the background until the future ends.
///
/// With [`HttpConfig::tls`](crate::HttpConfig::tls) it serves HTTPS. The agent card advertises
/// [`ServerConfig::public_url`], else `http://ADDR/` (`https://ADDR/` with TLS) for the
/// listener's address.
///
/// Errors if the listener's address cannot be read, and (kind `InvalidInput`, before anything
/// is served) if the listener is on an address other than loopback and no public URL is set:
/// a card advertising `0.0.0.0` or an internal address sends clients nowhere. Accept errors
/// (such as running out of file descriptors) are logged and retried after a short pause.
pub async fn serve(
    listener: tokio::net::TcpListener,
    store: Arc<dyn TaskStore>,
    config: ServerConfig,
) -> std::io::Result<()> {
    serve_stores(listener, Arc::new(SingleStore(store)), config).await
}

/// [`serve`](crate::serve) over the namespaces of `stores`: the root store, and one per tenant and owner.
pub async fn serve_stores(
    listener: tokio::net::TcpListener,
    stores: Arc<dyn Stores>,
    config: ServerConfig,
) -> std::io::Result<()> {
    serve_stores_then(listener, stores, config, || Ok(())).await
}

/// [`serve_stores`], calling `ready` once the startup recovery is done, just before the first
/// connection is accepted: the moment to tell the world the server is up (`tnstore serve`
/// prints `listening on …` there). An error from `ready` ends serving with that error.
///
/// The start that recovery measures against is taken before recovery runs, so a Task that a
/// client creates (through another replica, say) after `ready` was called is never taken for
/// one this server's predecessor left behind.
pub async fn serve_stores_then(
    listener: tokio::net::TcpListener,
    stores: Arc<dyn Stores>,
    config: ServerConfig,
    ready: impl FnOnce() -> std::io::Result<()>,
) -> std::io::Result<()> {
    serve_stores_with_shutdown(listener, stores, config, ready, std::future::pending()).await
}

/// [`serve_stores_then`] until `shutdown` is ready, then a graceful stop, after which it
/// returns `Ok(())`:
///
/// 1. the listener closes (new clients are refused) and every connection closes once it has
///    answered the request it is handling (an idle kept-alive one at once); open event
///    streams go on;
/// 2. the agents' runs in progress get [`ServerConfig::shutdown_grace`] to finish, as do the
///    requests being handled (a blocking `SendMessage` waits for its run);
/// 3. then `SendMessage` is refused and the runs still going are stopped: each agent's run is
///    dropped and its Task saved `failed` with
///    [`RUN_STOPPED_MESSAGE`](crate::RUN_STOPPED_MESSAGE), its subscribers getting that as
///    their final event ([`Service::stop_runs`]); no Task this server runs is left `working`;
/// 4. once every run has saved its outcome (the push sender told of each save, which it
///    queues in its outbox under the save), the event streams still open (on Tasks that run
///    nowhere here) end cleanly, and the connections get two seconds to deliver their last
///    bytes before they are dropped.
///
/// Retention stops with it. Dropping the future instead stops everything at once.
pub async fn serve_stores_with_shutdown(
    listener: tokio::net::TcpListener,
    stores: Arc<dyn Stores>,
    config: ServerConfig,
    ready: impl FnOnce() -> std::io::Result<()>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let started = maintenance::now();
    let url = advertised_url(listener.local_addr()?, &config)?;
    let limits = conn::Limits {
        header_read_timeout: config.http.header_read_timeout,
        idle_timeout: config.http.idle_timeout,
        max_connections: config.http.max_connections,
    };
    let mut namespaced = Vec::new();
    for ns in config.namespaces() {
        match stores.store(ns.as_deref()).await {
            Ok(store) => namespaced.push((ns, store)),
            Err(e) => tracing::warn!(target: "toolnexus::server", namespace = ?ns, error = %e,
                "cannot open a namespace for recovery and retention"),
        }
    }
    for (ns, store) in &namespaced {
        maintenance::recover_namespace_at_startup(
            &**store,
            ns.as_deref(),
            config.recovery,
            &config.service,
            started,
        )
        .await;
    }
    let _retention: Vec<AbortOnDrop> = match config.retain {
        None => Vec::new(),
        Some(retain) => namespaced
            .iter()
            .map(|(_, store)| {
                AbortOnDrop(tokio::spawn(maintenance::retention(
                    Arc::clone(store),
                    retain,
                )))
            })
            .collect(),
    };
    ready()?;
    let tls = config.http.tls.as_ref().map(TlsIdentity::acceptor);
    let grace = config.shutdown_grace;
    let (router, service) = router_and_service(stores, config, url);
    let connections = conn::run(listener, router, limits, tls, shutdown).await;
    tracing::info!(target: "toolnexus::server", runs = service.background_running(), ?grace,
        "stopping: no new connections; the runs in progress get the grace to finish");
    if tokio::time::timeout(grace, settled(&connections, &service))
        .await
        .is_err()
    {
        tracing::warn!(target: "toolnexus::server", runs = service.background_running(),
            "stopping: the grace is over; the runs still going are stopped");
    }
    service.stop_runs();
    settled(&connections, &service).await;
    connections.end_streams();
    if tokio::time::timeout(LAST_WRITES, connections.closed())
        .await
        .is_err()
    {
        tracing::debug!(target: "toolnexus::server",
            "stopping: connections still writing are dropped");
    }
    tracing::info!(target: "toolnexus::server", "stopped");
    Ok(())
}

/// Ready once no request is being handled and no agent run is in progress (together: a
/// request being handled may start a run, and a run ends a blocking send's wait).
async fn settled(connections: &conn::Connections, service: &Service) {
    loop {
        connections.requests_idle().await;
        service.background_idle().await;
        if connections.requests_in_progress() == 0 && service.background_running() == 0 {
            return;
        }
    }
}

/// The base URL the card advertises: the public URL, else the listener's own address when that
/// is loopback (reachable as written from the same machine).
fn advertised_url(local: SocketAddr, config: &ServerConfig) -> std::io::Result<String> {
    if let Some(url) = &config.public_url {
        return Ok(url.to_string());
    }
    let scheme = if config.http.tls.is_some() {
        "https"
    } else {
        "http"
    };
    if !local.ip().is_loopback() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "listening on {local}, not a loopback address, with no public URL: the agent \
                 card would send clients to {scheme}://{local}/. Give the URL clients reach \
                 (tnstore serve --public-url https://agent.example.com/; \
                 ServerConfig::public_url)"
            ),
        ));
    }
    Ok(format!("{scheme}://{local}/"))
}

/// A background task that ends with its owner.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

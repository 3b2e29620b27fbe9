//! Serving on a listener: startup recovery, background retention, then the connections.

use crate::config::ServerConfig;
use crate::router::router_stores;
use crate::tls::TlsIdentity;
use crate::{conn, maintenance};
use std::net::SocketAddr;
use std::sync::Arc;
use toolnexus_a2a_protocol::{SingleStore, Stores};
use toolnexus_core::TaskStore;

/// Serves A2A on `listener` until the process ends (or the future is dropped, which stops
/// accepting), with every Task in `store`, within the limits of `config`.
///
/// Before it accepts a connection it runs the startup recovery ([`ServerConfig::recovery`]);
/// clients that connect meanwhile wait in the listen backlog. With [`ServerConfig::retain`]
/// it also runs retention in the background until the future ends.
///
/// With [`ServerConfig::tls`] it serves HTTPS. The agent card advertises
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
    let started = maintenance::now();
    let url = advertised_url(listener.local_addr()?, &config)?;
    let limits = conn::Limits {
        header_read_timeout: config.header_read_timeout,
        idle_timeout: config.idle_timeout,
        max_connections: config.max_connections,
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
        maintenance::recover_namespace_at_startup(&**store, ns.as_deref(), &config, started).await;
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
    let tls = config.tls.as_ref().map(TlsIdentity::acceptor);
    conn::run(listener, router_stores(stores, config, url), limits, tls).await
}

/// The base URL the card advertises: the public URL, else the listener's own address when that
/// is loopback (reachable as written from the same machine).
fn advertised_url(local: SocketAddr, config: &ServerConfig) -> std::io::Result<String> {
    if let Some(url) = &config.public_url {
        return Ok(url.to_string());
    }
    let scheme = if config.tls.is_some() {
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

//! Serving on a listener: startup recovery, background retention, then the connections.

use crate::config::ServerConfig;
use crate::router::router_stores;
use crate::{conn, maintenance};
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
/// Errors only if the listener's address cannot be read. Accept errors (such as running out
/// of file descriptors) are logged and retried after a short pause.
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
    let url = format!("http://{}/", listener.local_addr()?);
    let limits = conn::Limits {
        header_read_timeout: config.header_read_timeout,
        idle_timeout: config.idle_timeout,
        max_connections: config.max_connections,
    };
    let mut namespaced = Vec::new();
    for ns in config.namespaces() {
        match stores.store(ns.as_deref()).await {
            Ok(store) => namespaced.push(store),
            Err(e) => tracing::warn!(target: "toolnexus::server", namespace = ?ns, error = %e,
                "cannot open a namespace for recovery and retention"),
        }
    }
    for store in &namespaced {
        maintenance::recover_at_startup(&**store, &config, started).await;
    }
    let _retention: Vec<AbortOnDrop> = match config.retain {
        None => Vec::new(),
        Some(retain) => namespaced
            .iter()
            .map(|store| {
                AbortOnDrop(tokio::spawn(maintenance::retention(
                    Arc::clone(store),
                    retain,
                )))
            })
            .collect(),
    };
    ready()?;
    conn::run(listener, router_stores(stores, config, url), limits).await
}

/// A background task that ends with its owner.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

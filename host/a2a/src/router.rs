//! The routes, over a store or a [`Stores`] of namespaces, for [`serve`](crate::serve) or an
//! application of your own.

use crate::agent_card::{Cards, agent_card};
use crate::app_state::AppState;
use crate::config::ServerConfig;
use crate::http_json::rest;
use crate::jsonrpc::json_rpc;
use crate::request_id::with_request_id;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use futures_util::future::BoxFuture;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use toolnexus_a2a_protocol::{Service, SingleStore, Spawn, Stores};
use toolnexus_core::TaskStore;

struct TokioSpawn;

impl Spawn for TokioSpawn {
    fn spawn(&self, future: BoxFuture<'static, ()>) {
        tokio::spawn(future);
    }
}

/// The routes, for embedding in a larger axum application. `url` is the base URL as clients
/// should see it (the JSON-RPC endpoint and the root of the HTTP+JSON routes; it goes on the
/// agent card).
pub fn router(store: Arc<dyn TaskStore>, config: ServerConfig, url: String) -> Router {
    router_stores(Arc::new(SingleStore(store)), config, url)
}

/// [`router`] over the namespaces of `stores`.
pub fn router_stores(stores: Arc<dyn Stores>, config: ServerConfig, url: String) -> Router {
    router_and_service(stores, config, url).0
}

/// The routes over `stores`, and the protocol [`Service`] behind them (which
/// [`serve`](crate::serve) keeps, so that a graceful stop can wait for the agents' runs and
/// stop the ones that outlast it).
pub(crate) fn router_and_service(
    stores: Arc<dyn Stores>,
    config: ServerConfig,
    url: String,
) -> (Router, Service) {
    let limit = config.http.max_body_bytes;
    // The card (the operator's part from `config.card`, the server's from `url`, tenants and
    // tokens), and the output modes it declares, which `acceptedOutputModes` must admit.
    let cards = Cards::new(&config, &url);
    let mut service = config.service.clone();
    service.output_modes = cards.output_modes;
    let service = Service::new(stores, service, Arc::new(TokioSpawn));
    let state = Arc::new(AppState {
        service: service.clone(),
        config,
        cards: cards.entities,
        // Whole seconds, as HTTP dates carry them, so `If-Modified-Since` compares exactly.
        card_modified: SystemTime::UNIX_EPOCH
            + Duration::from_secs(
                SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
            ),
    });
    let router = Router::new()
        .route("/.well-known/agent-card.json", get(agent_card))
        .route("/.well-known/agent.json", get(agent_card))
        .route("/", post(json_rpc))
        .fallback(rest)
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn(with_request_id))
        .with_state(state);
    (router, service)
}

//! The router a request is answered by: `tnstore serve`'s own ([`toolnexus_a2a::router`]) over
//! the composed store and agent, with the settings a component can take from its environment.

use crate::agent::ImportedAgent;
use crate::store::ImportedStore;
use std::sync::Arc;
use toolnexus_a2a::owner_limits::OwnerLimits;
use toolnexus_a2a::{DEFAULT_MAX_BODY_BYTES, HttpConfig, ServerConfig, ServiceConfig};

/// The largest request body the router takes (its own limit answers 413 above it).
pub const MAX_BODY_BYTES: usize = DEFAULT_MAX_BODY_BYTES;

/// The card's URL when the environment does not name one (`A2A_PUBLIC_URL`): the URL the
/// client used, from its `Host` (the request's authority).
fn public_url(authority: &str) -> String {
    match std::env::var("A2A_PUBLIC_URL") {
        Ok(url) if !url.is_empty() => {
            if url.ends_with('/') {
                url
            } else {
                format!("{url}/")
            }
        }
        _ if authority.is_empty() => "http://localhost/".to_owned(),
        _ => format!("http://{authority}/"),
    }
}

/// The router for one request that reached `authority`.
pub fn router(authority: &str) -> axum::Router {
    let mut config = ServerConfig {
        service: ServiceConfig {
            agent: Arc::new(ImportedAgent),
            // Each request has an instance of its own, which knows nothing of the last: a
            // bound on an owner's Tasks or bytes would count the whole store on every new
            // Task. Streams and their backlog stay bounded (they live within the request).
            owner_limits: OwnerLimits {
                max_tasks_per_owner: u64::MAX,
                max_bytes_per_owner: u64::MAX,
                ..OwnerLimits::default()
            },
            ..ServiceConfig::default()
        },
        http: HttpConfig {
            max_body_bytes: MAX_BODY_BYTES,
            ..HttpConfig::default()
        },
        ..ServerConfig::default()
    };
    if let Ok(name) = std::env::var("A2A_AGENT_NAME") {
        config.name = name;
    }
    if let Ok(description) = std::env::var("A2A_AGENT_DESCRIPTION") {
        config.description = description;
    }
    toolnexus_a2a::router(Arc::new(ImportedStore), config, public_url(authority))
}

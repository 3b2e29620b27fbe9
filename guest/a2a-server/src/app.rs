//! The router a request is answered by: `tnstore serve`'s own ([`toolnexus_a2a::router`]) over
//! the composed store and agent, with the settings a component can take from its environment.

use crate::agent::ImportedAgent;
use crate::store::ImportedStore;
use std::sync::Arc;
use toolnexus_a2a::{DEFAULT_MAX_BODY_BYTES, ServerConfig};

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
        agent: Arc::new(ImportedAgent),
        max_body_bytes: MAX_BODY_BYTES,
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

//! The agent card: made once per router from the operator's part ([`ServerConfig::card`]) and
//! the server's (URL, tenants, tokens), and its route: the card for the client's version, with
//! HTTP caching.

use crate::app_state::{AppState, CardEntities, CardEntity, CardPair};
use crate::config::ServerConfig;
use crate::request_context::json_response;
use crate::version_header::requested_version;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::sync::Arc;
use toolnexus_a2a_protocol::Version;
use toolnexus_a2a_protocol::card::{Endpoint, card_json, echo_description};

/// The cards of a router, and the output modes the card declares (what
/// `acceptedOutputModes` must admit: `ServiceConfig::output_modes`).
pub(crate) struct Cards {
    pub(crate) entities: CardEntities,
    pub(crate) output_modes: Vec<String>,
}

impl Cards {
    /// The cards of a router serving at `url` (the base URL clients reach).
    pub(crate) fn new(config: &ServerConfig, url: &str) -> Cards {
        let (about, output_modes) = match &config.card {
            Some(card) => (card.members().clone(), card.output_modes()),
            None => {
                let modes = config.service.output_modes.clone();
                let about = echo_description(
                    &config.name,
                    &config.description,
                    env!("CARGO_PKG_VERSION"),
                    &modes,
                );
                (about, modes)
            }
        };
        let tenants = config.tenants();
        let pair = |push_notifications| {
            let endpoint = Endpoint {
                url,
                tenants: &tenants,
                bearer_auth: config.tokens.is_some(),
                push_notifications,
            };
            CardPair {
                v1: card_entity(&card_json(&about, &endpoint, false)),
                compat: card_entity(&card_json(&about, &endpoint, true)),
            }
        };
        Cards {
            entities: CardEntities {
                without_push: pair(false),
                with_push: config.service.push.as_ref().map(|_| pair(true)),
            },
            output_modes,
        }
    }
}

/// A card's text and its entity tag (a digest of the text).
pub(crate) fn card_entity(card: &Value) -> CardEntity {
    use sha2::{Digest, Sha256};
    let text = card.to_string();
    let digest = Sha256::digest(text.as_bytes());
    let tag: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    (text, format!("\"{tag}\""))
}

/// How long clients may cache the agent card.
pub(crate) const CARD_MAX_AGE: &str = "public, max-age=300";

/// The agent card: the pure 1.0 card to a client that says it speaks 1.0 (`A2A-Version`),
/// else the 1.0 card with the 0.3 fields beside it; with an `ETag`, a `Last-Modified` and a
/// `Cache-Control`, and 304 to an `If-None-Match` that names the current tag or, without
/// `If-None-Match`, to an `If-Modified-Since` not before the card was made (RFC 9110 §13.2.2).
pub(crate) async fn agent_card(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let v1 = matches!(requested_version(&request), Some(Ok(Version::V1_0)));
    let cards = match &state.cards.with_push {
        Some(with_push) if state.service.push_offered().await => with_push,
        _ => &state.cards.without_push,
    };
    let (text, tag) = if v1 { &cards.v1 } else { &cards.compat };
    let header_text = |name| request.headers().get(name).and_then(|v| v.to_str().ok());
    let unchanged = match header_text(header::IF_NONE_MATCH) {
        Some(tags) => tags
            .split(',')
            .any(|t| t.trim() == "*" || t.trim().trim_start_matches("W/") == tag),
        // An unparsable date is ignored, as RFC 9110 says.
        None => header_text(header::IF_MODIFIED_SINCE)
            .and_then(|date| httpdate::parse_http_date(date).ok())
            .is_some_and(|since| since >= state.card_modified),
    };
    let mut response = if unchanged {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        json_response(StatusCode::OK, text.clone())
    };
    let headers = response.headers_mut();
    if let Ok(tag) = HeaderValue::from_str(tag) {
        headers.insert(header::ETAG, tag);
    }
    if let Ok(date) = HeaderValue::from_str(&httpdate::fmt_http_date(state.card_modified)) {
        headers.insert(header::LAST_MODIFIED, date);
    }
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(CARD_MAX_AGE),
    );
    headers.insert(header::VARY, HeaderValue::from_static("a2a-version"));
    response
}

//! What every handler of one router shares.

use crate::config::ServerConfig;
use std::time::SystemTime;
use toolnexus_a2a_protocol::Service;

pub(crate) struct AppState {
    pub(crate) service: Service,
    pub(crate) config: ServerConfig,
    /// The cards served, each with its `ETag`.
    pub(crate) cards: CardEntities,
    /// When the cards were made (the router's creation, to the second): their `Last-Modified`.
    pub(crate) card_modified: SystemTime,
}

/// A card's text and its entity tag.
pub(crate) type CardEntity = (String, String);

/// The cards of a router: for 1.0 clients, and with the 0.3 fields beside them (for clients
/// that send no version), each as served while push notifications are off and, when a notifier
/// is set, as served once they are offered (only the store knows which, so it is asked when a
/// card is served).
pub(crate) struct CardEntities {
    pub(crate) without_push: CardPair,
    pub(crate) with_push: Option<CardPair>,
}

/// One card in both forms.
pub(crate) struct CardPair {
    pub(crate) v1: CardEntity,
    pub(crate) compat: CardEntity,
}

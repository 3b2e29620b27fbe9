//! What every handler of one router shares.

use crate::config::ServerConfig;
use std::time::SystemTime;
use toolnexus_a2a_protocol::Service;

pub(crate) struct AppState {
    pub(crate) service: Service,
    pub(crate) config: ServerConfig,
    /// The card for 1.0 clients, and with the 0.3 fields beside it, each with its `ETag`.
    pub(crate) card_v1: (String, String),
    pub(crate) card_compat: (String, String),
    /// When the cards were made (the router's creation, to the second): their `Last-Modified`.
    pub(crate) card_modified: SystemTime,
}

//! The server's settings ([`ServerConfig`]): the protocol service's, the HTTP side's, and the
//! card, authentication and maintenance settings of its own.

use crate::auth::Tokens;
use crate::card_file::OperatorCard;
use crate::http_config::HttpConfig;
use crate::public_url::PublicUrl;
use std::sync::Arc;
use std::time::Duration;
use toolnexus_a2a_protocol::maintenance::Recovery;
use toolnexus_a2a_protocol::{Scope, ServiceConfig};

/// Default of [`ServerConfig::shutdown_grace`].
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How the server presents itself, what it accepts, and its limits.
///
/// Build it with `..Default::default()` (and the same in [`service`](Self::service) and
/// [`http`](Self::http)) so new fields keep their defaults. A [`router`](crate::router)
/// embedded in an application of your own takes the service settings, the card and the tokens,
/// and of the HTTP settings those [`HttpConfig`] names; recovery, retention and the graceful
/// stop are [`serve`](crate::serve)'s.
#[derive(Clone)]
pub struct ServerConfig {
    /// What the protocol service does and allows: the agent and what one run of it may emit,
    /// the tenants, the push-notification sender, the limits per owner, in progress and per
    /// list answer, how often the store is read again ([`ServiceConfig`], defaults there).
    /// Its `output_modes` are the echo card's; with an operator [`card`](Self::card), the
    /// card's output modes replace them.
    pub service: ServiceConfig,
    /// What the HTTP side accepts: TLS, deadlines, connections, body size ([`HttpConfig`],
    /// defaults there).
    pub http: HttpConfig,
    /// The agent's name on its card, unless [`card`](Self::card) gives one.
    pub name: String,
    /// The agent's description on its card, unless [`card`](Self::card) gives one.
    pub description: String,
    /// The operator's part of the agent card: name, description, version, provider, skills,
    /// input and output modes, icon and documentation links (`tnstore serve --card FILE`,
    /// [`OperatorCard::from_file`]). None (the default): the echo agent's card, from `name`,
    /// `description` and the service's `output_modes` (default `text/plain`). Its output modes
    /// are what a request's `acceptedOutputModes` must admit. The server writes the rest of the
    /// card itself.
    pub card: Option<OperatorCard>,
    /// The base URL the card advertises for every interface: where clients reach the server
    /// (`https://agent.example.com/`, a reverse proxy's address). None (the default):
    /// [`serve`](crate::serve) advertises the address it listens on, `http://ADDR/`
    /// (`https://ADDR/` with [`HttpConfig::tls`]), and refuses a listener on an address other
    /// than loopback, where that URL would not be one clients can use. A
    /// [`router`](crate::router) advertises the URL it is given.
    pub public_url: Option<PublicUrl>,
    /// Bearer tokens, each mapped to an owner (default none: no authentication). With them,
    /// every request but the agent card needs `Authorization: Bearer <token>` (else HTTP 401),
    /// and each owner's Tasks are in the owner's own store namespace.
    pub tokens: Option<Arc<Tokens>>,
    /// What [`serve`](crate::serve) does, before it accepts anything, with Tasks a previous run
    /// left `submitted` or `working` (default [`Recovery::FailInterrupted`]). Over a store
    /// shared by several live replicas use [`Recovery::Off`]. A [`router`](crate::router)
    /// embedded elsewhere runs nothing by itself: call
    /// [`maintenance::recover_at_startup`](crate::maintenance::recover_at_startup).
    pub recovery: Recovery,
    /// Keep terminal Tasks this long (by status timestamp), then delete them:
    /// [`serve`](crate::serve) runs [`maintenance::retention`](crate::maintenance::retention)
    /// in the background. `None` (the default) keeps every Task.
    pub retain: Option<Duration>,
    /// When [`serve_stores_with_shutdown`](crate::serve_stores_with_shutdown) is told to stop:
    /// how long the agents' runs in progress get to finish (default 10 s). The runs still going
    /// then are stopped, each Task saved `failed` with
    /// [`RUN_STOPPED_MESSAGE`](crate::RUN_STOPPED_MESSAGE). Zero stops them at once.
    pub shutdown_grace: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            service: ServiceConfig::default(),
            http: HttpConfig::default(),
            name: "toolnexus echo agent".into(),
            description: "Echoes the text it is sent; every Task lives in a toolnexus task store."
                .into(),
            card: None,
            public_url: None,
            tokens: None,
            recovery: Recovery::default(),
            retain: None,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
        }
    }
}

impl ServerConfig {
    /// The tenants of [`ServiceConfig::tenants`], in name order: the order of their interfaces
    /// on the card, and of the namespaces recovery and retention walk.
    pub(crate) fn tenants(&self) -> Vec<String> {
        let mut tenants: Vec<String> = self.service.tenants.iter().cloned().collect();
        tenants.sort();
        tenants
    }

    /// Every namespace requests can reach: the root (`None`) without tokens, each owner's with
    /// them, and each of those in each tenant. Recovery and retention walk all of them.
    pub fn namespaces(&self) -> Vec<Option<String>> {
        let owners: Vec<Option<String>> = match &self.tokens {
            None => vec![None],
            Some(tokens) => tokens.owners().into_iter().map(Some).collect(),
        };
        let mut out = Vec::new();
        for tenant in std::iter::once(None).chain(self.tenants().into_iter().map(Some)) {
            for owner in &owners {
                out.push(
                    Scope {
                        tenant: tenant.clone(),
                        owner: owner.clone(),
                    }
                    .namespace(),
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_cover_tenants_and_owners() {
        let tokens = Tokens::parse("alice 0123456789abcdef\nbob 0123456789abcdeX").unwrap();
        let config = ServerConfig {
            service: ServiceConfig {
                tenants: ["beta".to_owned(), "acme".to_owned()].into(),
                ..Default::default()
            },
            tokens: Some(Arc::new(tokens)),
            ..Default::default()
        };
        assert_eq!(
            config.namespaces(),
            [
                Some("o.alice".to_string()),
                Some("o.bob".into()),
                Some("t.acme/o.alice".into()),
                Some("t.acme/o.bob".into()),
                Some("t.beta/o.alice".into()),
                Some("t.beta/o.bob".into())
            ]
        );
        assert_eq!(ServerConfig::default().namespaces(), [None::<String>]);
    }
}

//! The check of a request's destination, before anything is sent: scheme, host against the
//! allow-list, then the host's own name resolution and every address it returns. The addresses
//! returned are the only ones the sender connects to, so what the resolver says later (DNS
//! rebinding) never matters.

use crate::address::{AddressClass, canonical, classify};
use crate::allow_list::{AllowList, Reach};
use crate::destination::{Destination, DestinationError, Host};
use hyper::http::Uri;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use tokio::time::Instant;

/// Why a request was not sent. A component sees `HTTP-request-denied` for every policy
/// refusal (`toolnexus_wasm::outgoing_http`); the reason goes to the host's log.
#[derive(Debug)]
pub enum Refusal {
    /// The scheme is not `http` or `https`.
    Scheme(String),
    /// The URI has no usable host.
    Host(String),
    /// No `allow-hosts` entry names this host and port.
    NotAllowed(Destination),
    /// The host is allowed, but (it resolves to) an address its entry does not let it reach.
    Address {
        destination: Destination,
        ip: IpAddr,
        class: AddressClass,
    },
    /// Name resolution took longer than the connect timeout.
    DnsTimeout(Destination),
    /// Name resolution failed.
    Dns(Destination, std::io::Error),
    /// The name resolved to no address.
    NoAddress(Destination),
}

impl Refusal {
    /// Whether this is the policy saying no (as opposed to resolution failing).
    pub fn is_denial(&self) -> bool {
        matches!(
            self,
            Refusal::Scheme(_) | Refusal::NotAllowed(_) | Refusal::Address { .. }
        )
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Scheme(s) => write!(f, "scheme {s:?} is not http or https"),
            Refusal::Host(h) => write!(f, "host {h:?} is not a DNS name or IP address"),
            Refusal::NotAllowed(d) => write!(f, "{d} is not in allow-hosts"),
            Refusal::Address {
                destination,
                ip,
                class,
            } => match &destination.host {
                Host::Ip(_) => write!(f, "{destination} is {class}"),
                Host::Name(_) => write!(
                    f,
                    "{destination} resolves to {ip}, {class}; list the address, or the name as \
                     internal:<name>, in allow-hosts to allow it"
                ),
            },
            Refusal::DnsTimeout(d) => write!(f, "resolving {d} timed out"),
            Refusal::Dns(d, e) => write!(f, "resolving {d} failed: {e}"),
            Refusal::NoAddress(d) => write!(f, "{d} resolves to no address"),
        }
    }
}

impl std::error::Error for Refusal {}

/// Where a request to `uri` may connect: its destination and the checked addresses, in the
/// resolver's order. Resolution must finish by `resolve_by`.
pub async fn check_destination(
    allow: &AllowList,
    uri: &Uri,
    resolve_by: Instant,
) -> Result<(Destination, Vec<SocketAddr>), Refusal> {
    check_destination_or(allow, None, uri, resolve_by).await
}

/// [`check_destination`], where a destination no entry names may still reach what `unlisted`
/// permits (`None`: it is refused, as for agents). Push notifications use
/// `Some(Reach::Public)`: any public webhook, and the list only widens that.
pub async fn check_destination_or(
    allow: &AllowList,
    unlisted: Option<Reach>,
    uri: &Uri,
    resolve_by: Instant,
) -> Result<(Destination, Vec<SocketAddr>), Refusal> {
    let destination = Destination::of_uri(uri).map_err(|e| match e {
        DestinationError::Scheme(s) => Refusal::Scheme(s),
        DestinationError::Host(h) => Refusal::Host(h),
    })?;
    let reach = allow
        .reach(&destination.host, destination.port)
        .or(unlisted)
        .ok_or_else(|| Refusal::NotAllowed(destination.clone()))?;
    let addresses: Vec<SocketAddr> = match &destination.host {
        Host::Ip(ip) => vec![SocketAddr::new(*ip, destination.port)],
        Host::Name(name) => {
            let lookup = tokio::net::lookup_host((name.as_str(), destination.port));
            let found = match tokio::time::timeout_at(resolve_by, lookup).await {
                Err(_) => Err(None),
                Ok(Err(e)) => Err(Some(e)),
                Ok(Ok(found)) => Ok(found
                    .map(|a| SocketAddr::new(canonical(a.ip()), a.port()))
                    .collect()),
            };
            match found {
                Ok(found) => found,
                Err(None) => return Err(Refusal::DnsTimeout(destination)),
                Err(Some(e)) => return Err(Refusal::Dns(destination, e)),
            }
        }
    };
    if addresses.is_empty() {
        return Err(Refusal::NoAddress(destination));
    }
    // Every address, not just the first: a name that answers one public and one internal
    // address is refused, whichever the connection would have tried first.
    if let Some(bad) = addresses.iter().find(|a| !reach.permits(a.ip())) {
        return Err(Refusal::Address {
            ip: bad.ip(),
            class: classify(bad.ip()),
            destination,
        });
    }
    Ok((destination, addresses))
}

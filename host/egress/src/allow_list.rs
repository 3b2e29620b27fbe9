//! The operator's `allow-hosts` list: which destinations a guest may send HTTP requests to, and
//! whether a destination may be an internal address. The syntax, one entry per comma:
//!
//! - `api.example.com` or `api.example.com:443`: that name (any port, or that port), only
//!   while it resolves to public addresses;
//! - `*.example.com`: any name under `example.com` (not `example.com` itself), likewise public;
//! - `203.0.113.7:8080`, `127.0.0.1:8080`, `[::1]:8080`: that literal IP address, whatever
//!   class it is (this is how a loopback or private service is allowed);
//! - `internal:model.lan:8080`: that name, and it may resolve to loopback, private, link-local
//!   or CGNAT addresses (never cloud metadata, unspecified, multicast or broadcast ones).

use crate::address::{AddressClass, classify};
use crate::destination::{Host, dns_name, ends_in_a_number};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The marker of a name allowed to resolve to internal addresses.
pub const INTERNAL_PREFIX: &str = "internal:";

/// What an entry names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// Exactly this name.
    Name(String),
    /// Any name ending in `.` + this suffix.
    Subdomains(String),
    /// Exactly this address.
    Ip(IpAddr),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    pattern: Pattern,
    /// `None`: any port.
    port: Option<u16>,
    internal: bool,
}

/// Which addresses a destination the list allows may connect to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Only public addresses (a name entry).
    Public,
    /// Public and internal addresses, not metadata or non-unicast ones (an `internal:` entry).
    Internal,
    /// This literal address, whatever it is (an IP entry).
    Literal(IpAddr),
}

impl Reach {
    /// Whether a resolved (canonical) address may be connected to.
    pub fn permits(self, ip: IpAddr) -> bool {
        let class = classify(ip);
        match self {
            Reach::Public => class == AddressClass::Public,
            Reach::Internal => class.reachable_by_internal_name(),
            Reach::Literal(allowed) => allowed == ip,
        }
    }
}

/// The parsed `allow-hosts` option. Empty (the default) allows nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    entries: Vec<Entry>,
}

/// An `allow-hosts` entry that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowHostsError {
    /// The entry as written.
    pub entry: String,
    pub problem: AllowHostsProblem,
}

/// What is wrong with an `allow-hosts` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllowHostsProblem {
    /// Nothing between two commas.
    Empty,
    /// A URL (scheme or path) where a host is expected.
    NotAHost,
    /// The port is not a number from 1 to 65535.
    BadPort,
    /// The host is not a DNS name, `*.` + a DNS name, or an IP address.
    BadHost,
    /// An IPv4 address spelled other than as four decimal bytes (`127.1`, `0x7f000001`): write
    /// the dotted quad, so the list says plainly what it allows.
    IpSpelling,
    /// An IPv6 address without brackets.
    UnbracketedIpv6,
    /// The unspecified, a multicast or the broadcast address: no HTTP server is there.
    NotUnicast,
    /// `internal:` before an IP address or a wildcard: an IP entry already allows that address,
    /// and a wildcard cannot be internal.
    InternalNotAName,
}

impl fmt::Display for AllowHostsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.problem {
            AllowHostsProblem::Empty => "an empty entry (two commas in a row, or one at an end)",
            AllowHostsProblem::NotAHost => "a URL; give host or host:port, without scheme or path",
            AllowHostsProblem::BadPort => "a bad port; a port is a number from 1 to 65535",
            AllowHostsProblem::BadHost => "not a DNS name, *.name, IPv4 address or [IPv6] address",
            AllowHostsProblem::IpSpelling => {
                "an IPv4 address spelled unusually; write it as four decimal numbers, like 10.0.0.1"
            }
            AllowHostsProblem::UnbracketedIpv6 => {
                "an IPv6 address without brackets; write [::1] or [::1]:8080"
            }
            AllowHostsProblem::NotUnicast => {
                "the unspecified, a multicast or the broadcast address, where no server listens"
            }
            AllowHostsProblem::InternalNotAName => {
                "\"internal:\" before an IP address or a wildcard; it marks a single name \
                 (an IP entry is allowed whatever its address)"
            }
        };
        write!(f, "allow-hosts entry {:?} is {why}", self.entry)
    }
}

impl std::error::Error for AllowHostsError {}

impl AllowList {
    /// Parses the option text: entries separated by commas, spaces around them ignored. Empty
    /// text is the empty list.
    pub fn parse(text: &str) -> Result<AllowList, AllowHostsError> {
        if text.trim().is_empty() {
            return Ok(AllowList::default());
        }
        let entries = text
            .split(',')
            .map(|raw| {
                let raw = raw.trim();
                parse_entry(raw).map_err(|problem| AllowHostsError {
                    entry: raw.to_owned(),
                    problem,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(AllowList { entries })
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// What a request to `host:port` may reach, or `None` when no entry allows it. Of several
    /// entries matching a name, an `internal:` one wins.
    pub fn reach(&self, host: &Host, port: u16) -> Option<Reach> {
        let mut found = None;
        for entry in &self.entries {
            if entry.port.is_some_and(|p| p != port) {
                continue;
            }
            match (&entry.pattern, host) {
                (Pattern::Ip(allowed), Host::Ip(ip)) if allowed == ip => {
                    return Some(Reach::Literal(*ip));
                }
                (Pattern::Name(allowed), Host::Name(name)) if allowed == name => {}
                (Pattern::Subdomains(suffix), Host::Name(name))
                    if name
                        .strip_suffix(suffix.as_str())
                        .is_some_and(|head| head.len() > 1 && head.ends_with('.')) => {}
                _ => continue,
            }
            if entry.internal {
                return Some(Reach::Internal);
            }
            found = Some(Reach::Public);
        }
        found
    }
}

fn parse_entry(raw: &str) -> Result<Entry, AllowHostsProblem> {
    if raw.is_empty() {
        return Err(AllowHostsProblem::Empty);
    }
    if raw.contains("://") || raw.contains('/') {
        return Err(AllowHostsProblem::NotAHost);
    }
    let (internal, rest) = match raw.get(..INTERNAL_PREFIX.len()) {
        Some(head) if head.eq_ignore_ascii_case(INTERNAL_PREFIX) => {
            (true, &raw[INTERNAL_PREFIX.len()..])
        }
        _ => (false, raw),
    };
    let (host, port) = split_port(rest)?;
    let pattern = parse_pattern(host)?;
    if internal && !matches!(pattern, Pattern::Name(_)) {
        return Err(AllowHostsProblem::InternalNotAName);
    }
    Ok(Entry {
        pattern,
        port,
        internal,
    })
}

/// `host` and the port after its last `:`, minding brackets and bare IPv6 addresses.
fn split_port(text: &str) -> Result<(&str, Option<u16>), AllowHostsProblem> {
    let (host, port) = if text.starts_with('[') {
        match text.find(']') {
            Some(end) => match &text[end + 1..] {
                "" => (text, None),
                tail => (
                    &text[..=end],
                    Some(tail.strip_prefix(':').ok_or(AllowHostsProblem::BadHost)?),
                ),
            },
            None => return Err(AllowHostsProblem::BadHost),
        }
    } else if text.matches(':').count() > 1 {
        return Err(if text.parse::<Ipv6Addr>().is_ok() {
            AllowHostsProblem::UnbracketedIpv6
        } else {
            AllowHostsProblem::BadHost
        });
    } else {
        match text.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    let port = match port {
        None => None,
        // Digits only: `u16`'s parser also takes a leading `+`.
        Some(p) if p.bytes().all(|b| b.is_ascii_digit()) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or(AllowHostsProblem::BadPort)?,
        ),
        Some(_) => return Err(AllowHostsProblem::BadPort),
    };
    Ok((host, port))
}

fn parse_pattern(host: &str) -> Result<Pattern, AllowHostsProblem> {
    if let Some(inner) = host.strip_prefix('[') {
        let v6: Ipv6Addr = inner
            .strip_suffix(']')
            .and_then(|t| t.parse().ok())
            .ok_or(AllowHostsProblem::BadHost)?;
        return unicast(IpAddr::V6(v6)).map(|ip| Pattern::Ip(crate::address::canonical(ip)));
    }
    if let Some(suffix) = host.strip_prefix("*.") {
        return dns_name(suffix)
            .filter(|s| !ends_in_a_number(s))
            .map(Pattern::Subdomains)
            .ok_or(AllowHostsProblem::BadHost);
    }
    if ends_in_a_number(host) {
        // Only the plain dotted quad; `Ipv4Addr`'s parser refuses every other spelling.
        return match host.parse::<Ipv4Addr>() {
            Ok(v4) => unicast(IpAddr::V4(v4)).map(Pattern::Ip),
            Err(_) => Err(AllowHostsProblem::IpSpelling),
        };
    }
    dns_name(host)
        .map(Pattern::Name)
        .ok_or(AllowHostsProblem::BadHost)
}

fn unicast(ip: IpAddr) -> Result<IpAddr, AllowHostsProblem> {
    match classify(ip) {
        AddressClass::Unspecified | AddressClass::Multicast | AddressClass::Broadcast => {
            Err(AllowHostsProblem::NotUnicast)
        }
        _ => Ok(ip),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> Host {
        Host::Name(n.into())
    }

    fn ip(t: &str) -> Host {
        Host::Ip(t.parse().unwrap())
    }

    fn problem(text: &str) -> AllowHostsProblem {
        AllowList::parse(text).unwrap_err().problem
    }

    #[test]
    fn empty_text_allows_nothing() {
        for text in ["", "  "] {
            let list = AllowList::parse(text).unwrap();
            assert!(list.is_empty());
            assert_eq!(list.reach(&name("example.com"), 443), None);
            assert_eq!(list.reach(&ip("127.0.0.1"), 80), None);
        }
    }

    #[test]
    fn names_with_and_without_ports() {
        let list = AllowList::parse("api.example.com, Other.Example.org.:8443").unwrap();
        assert_eq!(
            list.reach(&name("api.example.com"), 443),
            Some(Reach::Public)
        );
        assert_eq!(
            list.reach(&name("api.example.com"), 8080),
            Some(Reach::Public)
        );
        assert_eq!(
            list.reach(&name("other.example.org"), 8443),
            Some(Reach::Public)
        );
        assert_eq!(list.reach(&name("other.example.org"), 443), None);
        assert_eq!(list.reach(&name("example.com"), 443), None);
        assert_eq!(list.reach(&name("evil-api.example.com"), 443), None);
    }

    #[test]
    fn wildcards_match_subdomains_only() {
        let list = AllowList::parse("*.example.com:443").unwrap();
        assert_eq!(list.reach(&name("a.example.com"), 443), Some(Reach::Public));
        assert_eq!(
            list.reach(&name("a.b.example.com"), 443),
            Some(Reach::Public)
        );
        assert_eq!(list.reach(&name("example.com"), 443), None);
        assert_eq!(list.reach(&name("badexample.com"), 443), None);
        assert_eq!(list.reach(&name("a.example.com"), 80), None);
    }

    #[test]
    fn ip_entries_allow_that_literal_address() {
        let list = AllowList::parse("127.0.0.1:8080,[::1],[::ffff:10.0.0.1]:80").unwrap();
        let loopback = "127.0.0.1".parse().unwrap();
        assert_eq!(
            list.reach(&ip("127.0.0.1"), 8080),
            Some(Reach::Literal(loopback))
        );
        assert_eq!(list.reach(&ip("127.0.0.1"), 8081), None);
        assert_eq!(list.reach(&ip("127.0.0.2"), 8080), None);
        assert!(list.reach(&ip("::1"), 1).is_some());
        assert!(
            list.reach(&ip("10.0.0.1"), 80).is_some(),
            "mapped entry is canonical"
        );
        // An IP entry is not a name: `localhost` is not 127.0.0.1 to the list.
        assert_eq!(list.reach(&name("localhost"), 8080), None);
    }

    #[test]
    fn internal_names() {
        let list = AllowList::parse("localhost:8080,internal:LOCALHOST:9090").unwrap();
        assert_eq!(list.reach(&name("localhost"), 8080), Some(Reach::Public));
        assert_eq!(list.reach(&name("localhost"), 9090), Some(Reach::Internal));
        let both = AllowList::parse("model.lan,internal:model.lan").unwrap();
        assert_eq!(both.reach(&name("model.lan"), 1), Some(Reach::Internal));
    }

    #[test]
    fn reach_permits() {
        let v = |t: &str| t.parse::<IpAddr>().unwrap();
        assert!(Reach::Public.permits(v("8.8.8.8")));
        assert!(!Reach::Public.permits(v("127.0.0.1")));
        assert!(!Reach::Public.permits(v("10.1.1.1")));
        assert!(Reach::Internal.permits(v("127.0.0.1")));
        assert!(Reach::Internal.permits(v("8.8.8.8")));
        assert!(!Reach::Internal.permits(v("169.254.169.254")));
        assert!(!Reach::Internal.permits(v("0.0.0.0")));
        assert!(Reach::Literal(v("169.254.169.254")).permits(v("169.254.169.254")));
        assert!(!Reach::Literal(v("127.0.0.1")).permits(v("127.0.0.2")));
    }

    #[test]
    fn bad_entries_are_named_with_their_problem() {
        use AllowHostsProblem::*;
        let cases = [
            ("a.com,,b.com", Empty),
            ("a.com,", Empty),
            ("https://api.example.com", NotAHost),
            ("api.example.com/v1", NotAHost),
            ("api.example.com:0", BadPort),
            ("api.example.com:65536", BadPort),
            ("api.example.com:http", BadPort),
            ("api.example.com:", BadPort),
            ("api.example.com:+80", BadPort),
            ("exa mple.com", BadHost),
            ("*", BadHost),
            ("*.1.2", BadHost),
            ("a.*.com", BadHost),
            ("[::1", BadHost),
            ("[::1]x", BadHost),
            ("127.1", IpSpelling),
            ("2130706433", IpSpelling),
            ("0x7f.0.0.1:80", IpSpelling),
            ("0177.0.0.1", IpSpelling),
            ("::1", UnbracketedIpv6),
            ("fd00:ec2::254", UnbracketedIpv6),
            ("0.0.0.0:80", NotUnicast),
            ("[::]:80", NotUnicast),
            ("224.0.0.1", NotUnicast),
            ("255.255.255.255", NotUnicast),
            ("[ff02::1]", NotUnicast),
            ("internal:127.0.0.1", InternalNotAName),
            ("internal:[::1]:80", InternalNotAName),
            ("internal:*.lan", InternalNotAName),
        ];
        for (text, expected) in cases {
            assert_eq!(problem(text), expected, "{text}");
        }
        let err = AllowList::parse("good.com, bad host").unwrap_err();
        assert_eq!(err.entry, "bad host");
        assert!(err.to_string().contains("\"bad host\""), "{err}");
    }
}

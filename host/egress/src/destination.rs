//! Where a request goes: the scheme, host and port of its URI, the host read the way a browser
//! reads it. Numeric spellings of IPv4 addresses (`2130706433`, `0x7f.1`, `0177.0.0.1`,
//! `127.1`) are IP literals here, as the WHATWG URL standard (and so the `url` crate a guest may
//! use) makes them, never names: a name goes to the resolver, and the system resolver
//! (`getaddrinfo`) reads the same spellings as addresses too.

use crate::address::canonical;
use hyper::http::Uri;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The host part of a destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// A DNS name, lowercase, without a trailing dot.
    Name(String),
    /// An IP literal; an IPv4-mapped IPv6 address is given as the IPv4 address it reaches.
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// The scheme, host and port a request is addressed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// `https` (else `http`).
    pub tls: bool,
    pub host: Host,
    /// The URI's port, or the scheme's default (80, 443).
    pub port: u16,
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "https" } else { "http" };
        write!(f, "{scheme}://{}:{}", self.host, self.port)
    }
}

/// Why a URI names no destination this host sends to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DestinationError {
    /// Not `http` or `https` (or no scheme).
    Scheme(String),
    /// No host, or one that is neither a DNS name nor an IP address.
    Host(String),
}

impl fmt::Display for DestinationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DestinationError::Scheme(s) => write!(f, "scheme {s:?} is not http or https"),
            DestinationError::Host(h) => write!(f, "host {h:?} is not a DNS name or IP address"),
        }
    }
}

impl std::error::Error for DestinationError {}

impl Destination {
    /// The destination of an absolute `http`/`https` URI.
    pub fn of_uri(uri: &Uri) -> Result<Destination, DestinationError> {
        let tls = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("https") => true,
            Some(s) if s.eq_ignore_ascii_case("http") => false,
            other => return Err(DestinationError::Scheme(other.unwrap_or("").to_owned())),
        };
        let host_text = uri.host().unwrap_or("");
        let host = parse_host(host_text).ok_or_else(|| DestinationError::Host(host_text.into()))?;
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        Ok(Destination { tls, host, port })
    }
}

/// A URI host (`[v6]`, an IPv4 address in any numeric spelling, or a DNS name), or `None` when
/// it is none of them.
pub fn parse_host(text: &str) -> Option<Host> {
    if let Some(inner) = text.strip_prefix('[') {
        let v6: Ipv6Addr = inner.strip_suffix(']')?.parse().ok()?;
        return Some(Host::Ip(canonical(IpAddr::V6(v6))));
    }
    if ends_in_a_number(text) {
        return lenient_ipv4(text).map(|v4| Host::Ip(IpAddr::V4(v4)));
    }
    dns_name(text).map(Host::Name)
}

/// A DNS name (letters, digits, `-`, `_`; labels of 1 to 63; at most 253 in all), lowercase and
/// without its trailing dot.
pub fn dns_name(text: &str) -> Option<String> {
    let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
    let label_ok = |l: &str| {
        (1..=63).contains(&l.len())
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    (name.len() <= 253 && name.split('.').all(label_ok)).then_some(name)
}

/// The WHATWG URL "ends in a number" check: the last label (ignoring one trailing dot) is all
/// digits or `0x` hex. Such a host is an IPv4 address or invalid, never a name.
pub fn ends_in_a_number(text: &str) -> bool {
    let text = text.strip_suffix('.').unwrap_or(text);
    let last = text.rsplit('.').next().unwrap_or("");
    if !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    last.strip_prefix("0x")
        .or_else(|| last.strip_prefix("0X"))
        .is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The WHATWG URL IPv4 parser: one to four parts, each decimal, octal (leading `0`) or hex
/// (`0x`); the last part fills the remaining bytes.
pub fn lenient_ipv4(text: &str) -> Option<Ipv4Addr> {
    let text = text.strip_suffix('.').unwrap_or(text);
    let parts: Vec<&str> = text.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let numbers: Vec<u64> = parts
        .iter()
        .map(|p| ipv4_number(p))
        .collect::<Option<_>>()?;
    let (last, leading) = numbers.split_last()?;
    if leading.iter().any(|n| *n > 255) || *last >= 1u64 << (8 * (5 - numbers.len())) {
        return None;
    }
    let mut value = *last;
    for (i, n) in leading.iter().enumerate() {
        value += n << (8 * (3 - i));
    }
    u32::try_from(value).ok().map(Ipv4Addr::from)
}

fn ipv4_number(part: &str) -> Option<u64> {
    if part.is_empty() {
        return None;
    }
    let (digits, radix) =
        if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (hex, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (part, 10)
        };
    if digits.is_empty() {
        return Some(0);
    }
    // Longer than any valid part: refuse before it overflows.
    if digits.len() > 12 {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dest(uri: &str) -> Result<Destination, DestinationError> {
        Destination::of_uri(&uri.parse::<Uri>().unwrap())
    }

    fn ip(text: &str) -> Host {
        Host::Ip(text.parse().unwrap())
    }

    #[test]
    fn scheme_host_and_default_ports() {
        assert_eq!(
            dest("https://API.Example.com./v1").unwrap(),
            Destination {
                tls: true,
                host: Host::Name("api.example.com".into()),
                port: 443
            }
        );
        assert_eq!(dest("http://example.com/").unwrap().port, 80);
        assert_eq!(dest("http://example.com:8080/").unwrap().port, 8080);
        assert_eq!(dest("http://user@example.com:81/").unwrap().port, 81);
    }

    #[test]
    fn only_http_and_https() {
        for uri in ["ftp://example.com/", "ws://example.com/", "/relative"] {
            let parsed = uri.parse::<Uri>().unwrap();
            assert!(
                matches!(
                    Destination::of_uri(&parsed),
                    Err(DestinationError::Scheme(_))
                ),
                "{uri}"
            );
        }
    }

    #[test]
    fn ip_literals_in_every_spelling() {
        let cases = [
            ("http://127.0.0.1/", "127.0.0.1"),
            ("http://2130706433/", "127.0.0.1"),
            ("http://0x7f000001/", "127.0.0.1"),
            ("http://0x7f.1/", "127.0.0.1"),
            ("http://0177.0.0.1/", "127.0.0.1"),
            ("http://127.1/", "127.0.0.1"),
            ("http://127.0.1/", "127.0.0.1"),
            ("http://0/", "0.0.0.0"),
            ("http://0.0.0.0/", "0.0.0.0"),
            ("http://169.254.169.254./", "169.254.169.254"),
            ("http://0xA9FEA9FE/", "169.254.169.254"),
            ("http://[::1]:8080/", "::1"),
            ("http://[::]/", "::"),
            ("http://[::ffff:127.0.0.1]/", "127.0.0.1"),
            ("http://[::ffff:7f00:1]/", "127.0.0.1"),
            ("http://[::ffff:a9fe:a9fe]/", "169.254.169.254"),
            ("http://[fd00:ec2::254]/", "fd00:ec2::254"),
        ];
        for (uri, expected) in cases {
            assert_eq!(dest(uri).unwrap().host, ip(expected), "{uri}");
        }
    }

    #[test]
    fn hosts_that_end_in_a_number_but_are_no_address_are_invalid() {
        for host in [
            "256.0.0.1",
            "1.2.3.4.5",
            "4294967296",
            "0x1.0x100.1",
            "1..2",
            "09",
        ] {
            assert_eq!(parse_host(host), None, "{host}");
        }
        assert_eq!(
            parse_host("1.2.3.com"),
            Some(Host::Name("1.2.3.com".into()))
        );
        assert_eq!(parse_host("0xz"), Some(Host::Name("0xz".into())));
    }

    #[test]
    fn names_must_be_dns_names() {
        for host in [
            "",
            "a..b",
            "exa mple.com",
            "ex%61mple.com",
            "[::1",
            "[fe80::1%25eth0]",
        ] {
            assert_eq!(parse_host(host), None, "{host:?}");
        }
        assert_eq!(parse_host(&"a".repeat(64)), None);
        assert_eq!(
            parse_host("LocalHost"),
            Some(Host::Name("localhost".into()))
        );
    }
}

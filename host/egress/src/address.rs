//! Which IP addresses a guest's request may reach without the operator naming them: the
//! classification behind the SSRF rules of `docs/outgoing-http.md`. Pure functions over
//! `std::net` addresses; addresses that embed an IPv4 address (IPv4-mapped, IPv4-compatible,
//! NAT64, 6to4) are judged by the address they embed, since that is where the packets go.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What kind of destination an address is. Only [`AddressClass::Public`] is reachable through
/// an allow-list entry that names a host; every other class needs an entry naming the literal
/// address (or, except for the last four classes, a name marked `internal:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddressClass {
    /// A globally routed unicast address.
    Public,
    /// This host: `127.0.0.0/8`, `::1`.
    Loopback,
    /// A private network: RFC 1918 (`10/8`, `172.16/12`, `192.168/16`), unique-local
    /// `fc00::/7`, the deprecated site-local `fec0::/10`, local-use NAT64 `64:ff9b:1::/48`.
    Private,
    /// Carrier-grade NAT space, `100.64.0.0/10`.
    SharedAddressSpace,
    /// Link-local: `169.254.0.0/16`, `fe80::/10`.
    LinkLocal,
    /// Not routable on the Internet: `192.0.0.0/24`, documentation, benchmarking, `240/4`,
    /// discard-only `100::/64`, Teredo `2001::/32` (its embedded address cannot be checked).
    Reserved,
    /// A cloud provider's instance metadata service (credentials live there): `169.254.169.254`,
    /// `169.254.170.2`, `169.254.170.23`, `100.100.100.200`, `192.0.0.192`, `168.63.129.16`,
    /// `fd00:ec2::254`, `fd00:ec2::23`.
    CloudMetadata,
    /// `0.0.0.0/8` and `::`: "this host" when connected to.
    Unspecified,
    /// `224.0.0.0/4` and `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
}

impl AddressClass {
    /// Whether a name the operator marked `internal:` may resolve to this class. Metadata,
    /// unspecified, multicast and broadcast addresses are no HTTP server an operator means by a
    /// name: only an entry naming the literal address reaches them.
    pub fn reachable_by_internal_name(self) -> bool {
        !matches!(
            self,
            AddressClass::CloudMetadata
                | AddressClass::Unspecified
                | AddressClass::Multicast
                | AddressClass::Broadcast
        )
    }
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddressClass::Public => "a public address",
            AddressClass::Loopback => "a loopback address",
            AddressClass::Private => "a private-network address",
            AddressClass::SharedAddressSpace => "a carrier-grade NAT address",
            AddressClass::LinkLocal => "a link-local address",
            AddressClass::Reserved => "a reserved address",
            AddressClass::CloudMetadata => "a cloud metadata address",
            AddressClass::Unspecified => "the unspecified address",
            AddressClass::Multicast => "a multicast address",
            AddressClass::Broadcast => "the broadcast address",
        })
    }
}

/// The address packets to `ip` actually reach when it is an IPv6 form of an IPv4 address
/// (`::ffff:a.b.c.d`, which a dual-stack socket connects to as IPv4); anything else unchanged.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// The class of `ip`.
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

const CLOUD_METADATA_V4: [Ipv4Addr; 6] = [
    Ipv4Addr::new(169, 254, 169, 254), // AWS, GCP, Azure, OpenStack, …
    Ipv4Addr::new(169, 254, 170, 2),   // AWS ECS task metadata
    Ipv4Addr::new(169, 254, 170, 23),  // AWS EKS Pod Identity agent
    Ipv4Addr::new(100, 100, 100, 200), // Alibaba Cloud
    Ipv4Addr::new(192, 0, 0, 192),     // Oracle Cloud
    Ipv4Addr::new(168, 63, 129, 16),   // Azure WireServer (a public address)
];

const CLOUD_METADATA_V6: [Ipv6Addr; 2] = [
    Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254), // AWS
    Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0023), // AWS EKS Pod Identity agent
];

/// The class of an IPv4 address.
pub fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    if CLOUD_METADATA_V4.contains(&ip) {
        return AddressClass::CloudMetadata;
    }
    let [a, b, c, _] = ip.octets();
    match (a, b, c) {
        (0, _, _) => AddressClass::Unspecified,
        (127, _, _) => AddressClass::Loopback,
        (10, _, _) => AddressClass::Private,
        (172, 16..=31, _) => AddressClass::Private,
        (192, 168, _) => AddressClass::Private,
        (100, 64..=127, _) => AddressClass::SharedAddressSpace,
        (169, 254, _) => AddressClass::LinkLocal,
        (192, 0, 0) | (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => AddressClass::Reserved,
        (198, 18..=19, _) => AddressClass::Reserved,
        (224..=239, _, _) => AddressClass::Multicast,
        _ if ip == Ipv4Addr::BROADCAST => AddressClass::Broadcast,
        (240..=255, _, _) => AddressClass::Reserved,
        _ => AddressClass::Public,
    }
}

/// The class of an IPv6 address.
pub fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    if CLOUD_METADATA_V6.contains(&ip) {
        return AddressClass::CloudMetadata;
    }
    if ip.is_unspecified() {
        return AddressClass::Unspecified;
    }
    if ip.is_loopback() {
        return AddressClass::Loopback;
    }
    if let Some(v4) = embedded_v4(ip) {
        return classify_v4(v4);
    }
    let s = ip.segments();
    match s[0] {
        0xfc00..=0xfdff => return AddressClass::Private,
        0xfe80..=0xfebf => return AddressClass::LinkLocal,
        0xfec0..=0xfeff => return AddressClass::Private,
        0xff00..=0xffff => return AddressClass::Multicast,
        _ => {}
    }
    match (s[0], s[1], s[2]) {
        (0x0064, 0xff9b, 0x0001) => AddressClass::Private, // local-use NAT64, RFC 8215
        (0x2001, 0x0db8, _) => AddressClass::Reserved,     // documentation
        (0x2001, 0x0000, _) => AddressClass::Reserved,     // Teredo
        (0x2001, 0x0002, 0x0000) => AddressClass::Reserved, // benchmarking
        (0x0100, 0x0000, 0x0000) if s[3] == 0 => AddressClass::Reserved, // discard-only
        // The rest of ::/8 that embeds no IPv4 address is not routable.
        (0x0000, _, _) => AddressClass::Reserved,
        _ => AddressClass::Public,
    }
}

/// The IPv4 address an IPv6 address carries to, when it is one of the forms that do:
/// IPv4-mapped `::ffff:0:0/96`, the deprecated IPv4-compatible `::/96` (but `::` and `::1`),
/// well-known NAT64 `64:ff9b::/96`, and 6to4 `2002::/16`.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(low),
        [0, 0, 0, 0, 0, 0, _, _] => Some(low),
        [0x0064, 0xff9b, 0, 0, 0, 0, _, _] => Some(low),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(text: &str) -> AddressClass {
        classify(text.parse().unwrap())
    }

    #[test]
    fn ipv4_ranges() {
        use AddressClass::*;
        let cases = [
            ("0.0.0.0", Unspecified),
            ("0.1.2.3", Unspecified),
            ("127.0.0.1", Loopback),
            ("127.255.255.254", Loopback),
            ("10.0.0.1", Private),
            ("10.255.255.255", Private),
            ("172.15.255.255", Public),
            ("172.16.0.1", Private),
            ("172.31.255.255", Private),
            ("172.32.0.0", Public),
            ("192.168.1.1", Private),
            ("192.169.0.1", Public),
            ("100.63.255.255", Public),
            ("100.64.0.1", SharedAddressSpace),
            ("100.127.255.255", SharedAddressSpace),
            ("100.128.0.0", Public),
            ("169.254.0.1", LinkLocal),
            ("169.254.169.254", CloudMetadata),
            ("169.254.170.2", CloudMetadata),
            ("100.100.100.200", CloudMetadata),
            ("192.0.0.192", CloudMetadata),
            ("169.254.170.23", CloudMetadata),
            ("168.63.129.16", CloudMetadata),
            ("168.63.129.17", Public),
            ("fd00:ec2::23", CloudMetadata),
            ("192.0.0.8", Reserved),
            ("192.0.2.1", Reserved),
            ("198.51.100.7", Reserved),
            ("203.0.113.9", Reserved),
            ("198.18.0.1", Reserved),
            ("198.20.0.1", Public),
            ("224.0.0.1", Multicast),
            ("239.255.255.255", Multicast),
            ("240.0.0.1", Reserved),
            ("255.255.255.254", Reserved),
            ("255.255.255.255", Broadcast),
            ("8.8.8.8", Public),
            ("1.1.1.1", Public),
            ("93.184.216.34", Public),
        ];
        for (text, expected) in cases {
            assert_eq!(class(text), expected, "{text}");
        }
    }

    #[test]
    fn ipv6_ranges() {
        use AddressClass::*;
        let cases = [
            ("::", Unspecified),
            ("::1", Loopback),
            ("fc00::1", Private),
            ("fd12:3456::1", Private),
            ("fd00:ec2::254", CloudMetadata),
            ("fd00:ec2::253", Private),
            ("fe80::1", LinkLocal),
            ("febf::1", LinkLocal),
            ("fec0::1", Private),
            ("ff02::1", Multicast),
            ("ff05::2", Multicast),
            ("2001:db8::1", Reserved),
            ("2001::1", Reserved),
            ("2001:2::1", Reserved),
            ("100::1", Reserved),
            ("64:ff9b:1::1", Private),
            ("::2:0:0:1", Reserved),
            ("2606:4700:4700::1111", Public),
            ("2001:4860:4860::8888", Public),
        ];
        for (text, expected) in cases {
            assert_eq!(class(text), expected, "{text}");
        }
    }

    #[test]
    fn ipv6_forms_of_ipv4_addresses_are_judged_by_the_ipv4_address() {
        use AddressClass::*;
        let cases = [
            // IPv4-mapped
            ("::ffff:127.0.0.1", Loopback),
            ("::ffff:7f00:1", Loopback),
            ("::ffff:0.0.0.0", Unspecified),
            ("::ffff:10.1.2.3", Private),
            ("::ffff:169.254.169.254", CloudMetadata),
            ("::ffff:a9fe:a9fe", CloudMetadata),
            ("::ffff:100.64.0.1", SharedAddressSpace),
            ("::ffff:255.255.255.255", Broadcast),
            ("::ffff:8.8.8.8", Public),
            // IPv4-compatible (deprecated, still parsed and routed by some stacks)
            ("::127.0.0.1", Loopback),
            ("::169.254.169.254", CloudMetadata),
            ("::192.168.0.1", Private),
            ("::8.8.8.8", Public),
            // NAT64 well-known prefix
            ("64:ff9b::127.0.0.1", Loopback),
            ("64:ff9b::a9fe:a9fe", CloudMetadata),
            ("64:ff9b::8.8.8.8", Public),
            // 6to4
            ("2002:7f00:1::", Loopback),
            ("2002:a9fe:a9fe::1", CloudMetadata),
            ("2002:0808:0808::1", Public),
        ];
        for (text, expected) in cases {
            assert_eq!(class(text), expected, "{text}");
        }
    }

    #[test]
    fn canonical_unmaps_ipv4_mapped_addresses_only() {
        let canon = |t: &str| canonical(t.parse().unwrap());
        assert_eq!(
            canon("::ffff:127.0.0.1"),
            "127.0.0.1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            canon("::127.0.0.1"),
            "::127.0.0.1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(canon("::1"), "::1".parse::<IpAddr>().unwrap());
        assert_eq!(canon("10.0.0.1"), "10.0.0.1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn internal_names_never_reach_metadata_or_non_unicast_addresses() {
        for text in [
            "169.254.169.254",
            "fd00:ec2::254",
            "0.0.0.0",
            "::",
            "224.0.0.1",
            "255.255.255.255",
        ] {
            assert!(!class(text).reachable_by_internal_name(), "{text}");
        }
        for text in [
            "127.0.0.1",
            "::1",
            "10.0.0.1",
            "fd12::1",
            "169.254.1.1",
            "100.64.0.1",
        ] {
            assert!(class(text).reachable_by_internal_name(), "{text}");
        }
    }
}

//! Which addresses are public: the one pure decision shared by the egress proxy (a network
//! grant reaches public addresses only) and `aria-tools`' SSRF guard for `web_fetch`.
//!
//! Addresses are classified by [`classify_ip`] with an allowlist for IPv6 (only global unicast
//! `2000::/3` outside the special blocks is public) and a blocklist of the special IPv4 blocks.
//! IPv6 forms that carry an IPv4 address (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`,
//! NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged by the IPv4 address inside.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What kind of network an address belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddrClass {
    /// Reachable on the internet: the only class fetched by default.
    Public,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// RFC 1918: `10/8`, `172.16/12`, `192.168/16`.
    Private,
    /// Carrier-grade NAT shared address space `100.64.0.0/10`.
    SharedAddressSpace,
    /// IPv6 unique local addresses `fc00::/7`.
    UniqueLocal,
    /// `169.254.0.0/16`, `fe80::/10`.
    LinkLocal,
    /// A cloud instance-metadata endpoint (`169.254.169.254`, `169.254.170.2`,
    /// `100.100.100.200`, `fd00:ec2::254`): credentials live there.
    CloudMetadata,
    /// `0.0.0.0/8`, `::` (on Linux a connection to `0.0.0.0` reaches this machine).
    Unspecified,
    /// `224.0.0.0/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// `192.0.2/24`, `198.51.100/24`, `203.0.113/24`, `2001:db8::/32`, `3fff::/20`.
    Documentation,
    /// Anything else that is not a public unicast address: `240/4`, benchmarking, IETF
    /// protocol blocks, Teredo, discard, deprecated site-local, unallocated IPv6.
    Reserved,
}

impl AddrClass {
    /// A short description for refusal messages.
    pub fn describe(self) -> &'static str {
        match self {
            AddrClass::Public => "a public address",
            AddrClass::Loopback => "a loopback address (this machine)",
            AddrClass::Private => "a private network address (RFC 1918)",
            AddrClass::SharedAddressSpace => "a carrier-grade NAT address (100.64.0.0/10)",
            AddrClass::UniqueLocal => "an IPv6 unique local address (fc00::/7)",
            AddrClass::LinkLocal => "a link-local address",
            AddrClass::CloudMetadata => "a cloud instance-metadata endpoint",
            AddrClass::Unspecified => "the unspecified address (it reaches this machine)",
            AddrClass::Multicast => "a multicast address",
            AddrClass::Broadcast => "the broadcast address",
            AddrClass::Documentation => "a documentation-only address",
            AddrClass::Reserved => "a reserved or special-purpose address",
        }
    }

    /// Whether a user may allow this class for their own network (`allow_private` or an
    /// allowed host). The others are never fetched: nothing legitimate is served there.
    pub fn is_local_network(self) -> bool {
        matches!(
            self,
            AddrClass::Loopback
                | AddrClass::Private
                | AddrClass::SharedAddressSpace
                | AddrClass::UniqueLocal
                | AddrClass::LinkLocal
        )
    }
}

/// The class of `ip`, judging IPv6 forms that embed an IPv4 address by that address.
pub fn classify_ip(ip: IpAddr) -> AddrClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

/// Whether `ip` is inside `net/prefix`.
pub(crate) fn in_v4(ip: u32, net: [u8; 4], prefix: u32) -> bool {
    let net = u32::from_be_bytes(net);
    let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix) };
    ip & mask == net & mask
}

fn classify_v4(ip: Ipv4Addr) -> AddrClass {
    const METADATA: [[u8; 4]; 3] = [[169, 254, 169, 254], [169, 254, 170, 2], [100, 100, 100, 200]];
    /// Checked in order: the metadata addresses first, as they sit inside wider blocks.
    const BLOCKS: &[([u8; 4], u32, AddrClass)] = &[
        ([0, 0, 0, 0], 8, AddrClass::Unspecified),
        ([10, 0, 0, 0], 8, AddrClass::Private),
        ([100, 64, 0, 0], 10, AddrClass::SharedAddressSpace),
        ([127, 0, 0, 0], 8, AddrClass::Loopback),
        ([169, 254, 0, 0], 16, AddrClass::LinkLocal),
        ([172, 16, 0, 0], 12, AddrClass::Private),
        ([192, 0, 0, 0], 24, AddrClass::Reserved),
        ([192, 0, 2, 0], 24, AddrClass::Documentation),
        ([192, 88, 99, 0], 24, AddrClass::Reserved),
        ([192, 168, 0, 0], 16, AddrClass::Private),
        ([198, 18, 0, 0], 15, AddrClass::Reserved),
        ([198, 51, 100, 0], 24, AddrClass::Documentation),
        ([203, 0, 113, 0], 24, AddrClass::Documentation),
        ([224, 0, 0, 0], 4, AddrClass::Multicast),
        ([255, 255, 255, 255], 32, AddrClass::Broadcast),
        ([240, 0, 0, 0], 4, AddrClass::Reserved),
    ];
    if METADATA.contains(&ip.octets()) {
        return AddrClass::CloudMetadata;
    }
    let bits = u32::from(ip);
    BLOCKS
        .iter()
        .find(|(net, prefix, _)| in_v4(bits, *net, *prefix))
        .map_or(AddrClass::Public, |(_, _, class)| *class)
}

/// Whether `ip` is inside `net/prefix`.
pub(crate) fn in_v6(ip: u128, net: u128, prefix: u32) -> bool {
    let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - prefix) };
    ip & mask == net & mask
}

fn classify_v6(ip: Ipv6Addr) -> AddrClass {
    let bits = u128::from(ip);
    let low_v4 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    if bits == 0 {
        return AddrClass::Unspecified;
    }
    if bits == 1 {
        return AddrClass::Loopback;
    }
    if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        return AddrClass::CloudMetadata;
    }
    // IPv4-mapped ::ffff:0:0/96 and the deprecated IPv4-compatible ::/96.
    if in_v6(bits, 0xffff_0000_0000, 96) || in_v6(bits, 0, 96) {
        return classify_v4(low_v4);
    }
    // NAT64 well-known prefix 64:ff9b::/96: the gateway connects to the embedded address.
    if in_v6(bits, 0x0064_ff9b << 96, 96) {
        return classify_v4(low_v4);
    }
    // 6to4 2002::/16 carries an IPv4 address in bits 16..48.
    if in_v6(bits, 0x2002 << 112, 16) {
        let embedded = Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32);
        return classify_v4(embedded);
    }
    const BLOCKS: &[(u128, u32, AddrClass)] = &[
        (0xff << 120, 8, AddrClass::Multicast),
        (0xfe80 << 112, 10, AddrClass::LinkLocal),
        (0xfec0 << 112, 10, AddrClass::Reserved),
        (0xfc << 120, 7, AddrClass::UniqueLocal),
        (0x2001_0db8 << 96, 32, AddrClass::Documentation),
        (0x3fff << 112, 20, AddrClass::Documentation),
        // IETF protocol assignments: Teredo 2001::/32, benchmarking, ORCHID, ...
        (0x2001 << 112, 23, AddrClass::Reserved),
    ];
    if let Some((_, _, class)) = BLOCKS.iter().find(|(net, p, _)| in_v6(bits, *net, *p)) {
        return *class;
    }
    // Only global unicast 2000::/3 is public; the rest is unallocated or special.
    if in_v6(bits, 0x2 << 124, 3) { AddrClass::Public } else { AddrClass::Reserved }
}

/// This machine's interface addresses (a connection to any of them reaches ARIA's own
/// services even when the address is public). Empty when they cannot be listed.
pub(crate) fn own_addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: `list` is a valid out pointer; on success the kernel-provided list is freed below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return out;
    }
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, not yet freed.
        let entry = unsafe { &*cur };
        if !entry.ifa_addr.is_null() {
            // SAFETY: ifa_addr is non-null and points to a sockaddr of the family it names;
            // the casts below read only the structure that family uses.
            let family = i32::from(unsafe { (*entry.ifa_addr).sa_family });
            if family == libc::AF_INET {
                // SAFETY: an AF_INET address is a sockaddr_in.
                let sin = unsafe { &*(entry.ifa_addr as *const libc::sockaddr_in) };
                out.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr))));
            } else if family == libc::AF_INET6 {
                // SAFETY: an AF_INET6 address is a sockaddr_in6.
                let sin6 = unsafe { &*(entry.ifa_addr as *const libc::sockaddr_in6) };
                out.push(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)));
            }
        }
        cur = entry.ifa_next;
    }
    // SAFETY: freeing the list getifaddrs allocated, once, after the last use of its nodes.
    unsafe { libc::freeifaddrs(list) };
    out
}

//! Property tests for the SSRF guard: an IPv4 address in a refused range is refused however the
//! URL spells it, and a public one is fetched as the very address it spells.

use std::net::Ipv4Addr;

use aria_tools::{AddrClass, SsrfPolicy, SsrfRefusal, classify_ip};
use proptest::prelude::*;

/// Refused IPv4 blocks: (network, prefix length).
const REFUSED: &[([u8; 4], u32)] = &[
    ([0, 0, 0, 0], 8),
    ([10, 0, 0, 0], 8),
    ([100, 64, 0, 0], 10),
    ([127, 0, 0, 0], 8),
    ([169, 254, 0, 0], 16),
    ([172, 16, 0, 0], 12),
    ([192, 0, 0, 0], 24),
    ([192, 0, 2, 0], 24),
    ([192, 168, 0, 0], 16),
    ([198, 18, 0, 0], 15),
    ([198, 51, 100, 0], 24),
    ([203, 0, 113, 0], 24),
    ([224, 0, 0, 0], 4),
    ([240, 0, 0, 0], 4),
];

fn refused_ip() -> impl Strategy<Value = Ipv4Addr> {
    (prop::sample::select(REFUSED), any::<u32>()).prop_map(|((net, prefix), host)| {
        let mask = u32::MAX << (32 - prefix);
        Ipv4Addr::from((u32::from_be_bytes(net) & mask) | (host & !mask))
    })
}

fn public_ip() -> impl Strategy<Value = Ipv4Addr> {
    any::<u32>()
        .prop_map(Ipv4Addr::from)
        .prop_filter("public", |ip| classify_ip((*ip).into()) == AddrClass::Public)
}

/// One number in the radix the style asks for (WHATWG: `0x` hex, leading `0` octal).
fn number(n: u32, style: u8) -> String {
    match style % 4 {
        0 => n.to_string(),
        1 => format!("0x{n:x}"),
        2 => format!("0X{n:X}"),
        _ => format!("0{n:o}"),
    }
}

/// Every spelling of an IPv4 host the guard must see through.
fn spell(ip: Ipv4Addr, form: u8, style: u8) -> String {
    let [a, b, c, d] = ip.octets();
    let n = u32::from(ip);
    let (a, b, c, d) = (u32::from(a), u32::from(b), u32::from(c), u32::from(d));
    let s = |x: u32, i: u8| number(x, style.wrapping_add(i));
    match form % 13 {
        0 => format!("{a}.{b}.{c}.{d}"),
        1 => number(n, style),
        2 => format!("{}.{}.{}.{}", s(a, 0), s(b, 1), s(c, 2), s(d, 3)),
        3 => format!("{}.{}", s(a, 0), s(n & 0x00ff_ffff, 1)),
        4 => format!("{}.{}.{}", s(a, 0), s(b, 1), s(n & 0xffff, 2)),
        5 => format!("{a}.{b}.{c}.{d}."),
        6 => format!("[::ffff:{a}.{b}.{c}.{d}]"),
        7 => format!("[::ffff:{:x}:{:x}]", n >> 16, n & 0xffff),
        8 => format!("[0:0:0:0:0:FFFF:{a}.{b}.{c}.{d}]"),
        9 => format!("[64:ff9b::{a}.{b}.{c}.{d}]"),
        10 => format!("[2002:{:x}:{:x}::1]", n >> 16, n & 0xffff),
        11 => {
            // Percent-encoded digits: decoded before the address is parsed.
            let dotted = format!("{a}.{b}.{c}.{d}");
            dotted.bytes().map(|ch| format!("%{ch:02X}")).collect()
        }
        _ => {
            // The deprecated IPv4-compatible form; ::0.0.0.x are :: and ::1 themselves.
            format!("[::{a}.{b}.{c}.{d}]")
        }
    }
}

fn url(host: &str, decoration: u8) -> String {
    match decoration % 4 {
        0 => format!("http://{host}/"),
        1 => format!("https://{host}:8443/latest/meta-data?x=1"),
        2 => format!("HTTP://{host}"),
        _ => format!("http://{host}:80/#frag"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn a_refused_ipv4_is_refused_in_every_spelling(
        ip in refused_ip(), form in any::<u8>(), style in any::<u8>(), deco in any::<u8>()
    ) {
        let input = url(&spell(ip, form, style), deco);
        match SsrfPolicy::public_only().check_url(&input) {
            Err(SsrfRefusal::Address { class, .. }) => {
                prop_assert_ne!(class, AddrClass::Public, "{}", input);
            }
            other => prop_assert!(false, "{input} ({ip}) was not refused as an address: {other:?}"),
        }
        // Allowing the local network never opens the special blocks.
        let lan = SsrfPolicy::public_only().allow_private(true).check_url(&input);
        let class = classify_ip(ip.into());
        // `[::0.0.0.0]` and `[::0.0.0.1]` are `::` and `::1` themselves.
        let compatible_special = form % 13 == 12 && u32::from(ip) < 2;
        prop_assume!(!compatible_special);
        prop_assert_eq!(lan.is_ok(), class.is_local_network(), "{} {:?}", input, class);
    }

    #[test]
    fn a_public_ipv4_is_fetched_as_the_address_it_spells(
        ip in public_ip(), form in 0u8..6, style in any::<u8>()
    ) {
        let input = url(&spell(ip, form, style), 0);
        let parsed = SsrfPolicy::public_only().check_url(&input);
        prop_assert!(parsed.is_ok(), "{input}: {parsed:?}");
        let host = parsed.unwrap().host_str().map(str::to_owned);
        prop_assert_eq!(host, Some(ip.to_string()));
    }
}

//! The SSRF guard's verdicts, as a table: URL text, what DNS answered (for host names), verdict.

use std::net::IpAddr;

use pretty_assertions::assert_eq;

use super::*;

/// What the guard must say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum V {
    Fetch,
    Class(AddrClass),
    Scheme,
    Credentials,
    LocalName,
    Unparsable,
    NoAddresses,
}

fn verdict(policy: &SsrfPolicy, url: &str, dns: &[&str]) -> V {
    let parsed = match policy.check_url(url) {
        Ok(u) => u,
        Err(e) => return refusal(e),
    };
    let Some(Host::Domain(name)) = parsed.host() else { return V::Fetch };
    let addrs: Vec<IpAddr> = dns.iter().map(|a| a.parse().unwrap()).collect();
    match policy.check_resolved(name, &addrs) {
        Ok(()) => V::Fetch,
        Err(e) => refusal(e),
    }
}

fn refusal(e: SsrfRefusal) -> V {
    match e {
        SsrfRefusal::Unparsable { .. } | SsrfRefusal::NoHost => V::Unparsable,
        SsrfRefusal::Scheme { .. } => V::Scheme,
        SsrfRefusal::Credentials => V::Credentials,
        SsrfRefusal::LocalName { .. } => V::LocalName,
        SsrfRefusal::Address { class, .. } => V::Class(class),
        SsrfRefusal::NoAddresses { .. } => V::NoAddresses,
    }
}

use AddrClass::*;

/// The default policy (public only).
const TABLE: &[(&str, &[&str], V)] = &[
    // Public pages.
    ("https://example.org/", &["93.184.215.14"], V::Fetch),
    (
        "http://example.org:8080/a?b=c",
        &["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
        V::Fetch,
    ),
    ("http://8.8.8.8/", &[], V::Fetch),
    ("http://[2606:4700:4700::1111]/", &[], V::Fetch),
    ("http://100.63.255.255/", &[], V::Fetch),
    ("http://100.128.0.0/", &[], V::Fetch),
    ("http://172.32.0.1/", &[], V::Fetch),
    ("http://172.15.255.255/", &[], V::Fetch),
    // 6to4 of a public address is public.
    ("http://[2002:0808:0808::1]/", &[], V::Fetch),
    // Loopback in every spelling.
    ("http://127.0.0.1/", &[], V::Class(Loopback)),
    ("http://127.255.255.254:8080/", &[], V::Class(Loopback)),
    ("http://2130706433/", &[], V::Class(Loopback)),
    ("http://0x7f000001/", &[], V::Class(Loopback)),
    ("http://0x7f.1/", &[], V::Class(Loopback)),
    ("http://0177.0.0.1/", &[], V::Class(Loopback)),
    ("http://017700000001/", &[], V::Class(Loopback)),
    ("http://127.1/", &[], V::Class(Loopback)),
    ("http://127.0.1/", &[], V::Class(Loopback)),
    ("http://0x7f.0x0.0x0.0x1/", &[], V::Class(Loopback)),
    ("http://[::1]/", &[], V::Class(Loopback)),
    ("http://[0:0:0:0:0:0:0:1]/", &[], V::Class(Loopback)),
    ("http://[::ffff:127.0.0.1]/", &[], V::Class(Loopback)),
    ("http://[::ffff:7f00:1]/", &[], V::Class(Loopback)),
    ("http://[::127.0.0.1]/", &[], V::Class(Loopback)),
    ("http://[64:ff9b::127.0.0.1]/", &[], V::Class(Loopback)),
    ("http://[2002:7f00:0001::]/", &[], V::Class(Loopback)),
    ("http://localhost/", &[], V::LocalName),
    ("http://LOCALHOST./", &[], V::LocalName),
    ("http://app.localhost:3000/", &[], V::LocalName),
    ("http://127.0.0.1.nip.io/", &["127.0.0.1"], V::Class(Loopback)),
    // Private networks.
    ("http://10.0.0.1/", &[], V::Class(Private)),
    ("http://012.0.0.1/", &[], V::Class(Private)),
    ("http://167772161/", &[], V::Class(Private)),
    ("http://172.16.0.1/", &[], V::Class(Private)),
    ("http://172.31.255.255/", &[], V::Class(Private)),
    ("http://192.168.1.1/", &[], V::Class(Private)),
    ("http://0xc0.0xa8.1.1/", &[], V::Class(Private)),
    ("http://[::ffff:192.168.1.1]/", &[], V::Class(Private)),
    ("http://100.64.0.1/", &[], V::Class(SharedAddressSpace)),
    ("http://100.127.255.254/", &[], V::Class(SharedAddressSpace)),
    ("http://[fc00::1]/", &[], V::Class(UniqueLocal)),
    ("http://[fd12:3456::1]/", &[], V::Class(UniqueLocal)),
    // Link-local and cloud metadata.
    ("http://169.254.1.1/", &[], V::Class(LinkLocal)),
    ("http://[fe80::1]/", &[], V::Class(LinkLocal)),
    ("http://169.254.169.254/latest/meta-data/", &[], V::Class(CloudMetadata)),
    ("http://2852039166/", &[], V::Class(CloudMetadata)),
    ("http://[::ffff:a9fe:a9fe]/", &[], V::Class(CloudMetadata)),
    ("http://169.254.170.2/v2/credentials", &[], V::Class(CloudMetadata)),
    ("http://100.100.100.200/", &[], V::Class(CloudMetadata)),
    ("http://[fd00:ec2::254]/", &[], V::Class(CloudMetadata)),
    ("http://metadata.google.internal/", &["169.254.169.254"], V::Class(CloudMetadata)),
    // Unspecified, multicast, broadcast, documentation, reserved.
    ("http://0.0.0.0/", &[], V::Class(Unspecified)),
    ("http://0/", &[], V::Class(Unspecified)),
    ("http://0.1.2.3/", &[], V::Class(Unspecified)),
    ("http://[::]/", &[], V::Class(Unspecified)),
    ("http://224.0.0.1/", &[], V::Class(Multicast)),
    ("http://239.255.255.250/", &[], V::Class(Multicast)),
    ("http://[ff02::1]/", &[], V::Class(Multicast)),
    ("http://255.255.255.255/", &[], V::Class(Broadcast)),
    ("http://192.0.2.1/", &[], V::Class(Documentation)),
    ("http://198.51.100.7/", &[], V::Class(Documentation)),
    ("http://203.0.113.9/", &[], V::Class(Documentation)),
    ("http://[2001:db8::1]/", &[], V::Class(Documentation)),
    ("http://240.0.0.1/", &[], V::Class(Reserved)),
    ("http://198.18.0.1/", &[], V::Class(Reserved)),
    ("http://192.0.0.8/", &[], V::Class(Reserved)),
    ("http://[2001::1]/", &[], V::Class(Reserved)),
    ("http://[100::1]/", &[], V::Class(Reserved)),
    ("http://[fec0::1]/", &[], V::Class(Reserved)),
    ("http://[4000::1]/", &[], V::Class(Reserved)),
    // DNS answers: every one must be public (a mixed answer is how rebinding starts).
    ("http://rebind.example/", &["93.184.215.14", "10.0.0.5"], V::Class(Private)),
    ("http://rebind6.example/", &["93.184.215.14", "::ffff:127.0.0.1"], V::Class(Loopback)),
    ("http://nothing.example/", &[], V::NoAddresses),
    // Not http(s), credentials, nonsense.
    ("file:///etc/passwd", &[], V::Scheme),
    ("ftp://example.org/", &[], V::Scheme),
    ("gopher://127.0.0.1:6379/_INFO", &[], V::Scheme),
    ("javascript:alert(1)", &[], V::Scheme),
    ("https://user:pass@example.org/", &[], V::Credentials),
    ("https://token@example.org/", &[], V::Credentials),
    ("http://256.0.0.1/", &[], V::Unparsable),
    ("http://1.2.3.4.5/", &[], V::Unparsable),
    ("example.org/page", &[], V::Unparsable),
    ("http://[::1/", &[], V::Unparsable),
];

#[test]
fn the_default_policy_fetches_public_addresses_only() {
    let policy = SsrfPolicy::public_only();
    let mut wrong = Vec::new();
    for (url, dns, expected) in TABLE {
        let got = verdict(&policy, url, dns);
        if got != *expected {
            wrong.push(format!("{url} {dns:?}: expected {expected:?}, got {got:?}"));
        }
    }
    assert!(TABLE.len() >= 30);
    assert_eq!(wrong, Vec::<String>::new());
}

#[test]
fn allow_private_opens_local_networks_but_not_metadata_or_special_addresses() {
    let policy = SsrfPolicy::public_only().allow_private(true);
    let cases: &[(&str, &[&str], V)] = &[
        ("http://127.0.0.1:8080/", &[], V::Fetch),
        ("http://localhost/", &["127.0.0.1", "::1"], V::Fetch),
        ("http://10.1.2.3/", &[], V::Fetch),
        ("http://[fd00::5]/", &[], V::Fetch),
        ("http://[fe80::1]/", &[], V::Fetch),
        ("http://nas.lan/", &["192.168.1.20"], V::Fetch),
        ("http://169.254.169.254/", &[], V::Class(CloudMetadata)),
        ("http://0.0.0.0/", &[], V::Class(Unspecified)),
        ("http://224.0.0.1/", &[], V::Class(Multicast)),
        ("http://192.0.2.1/", &[], V::Class(Documentation)),
        ("https://u:p@10.1.2.3/", &[], V::Credentials),
    ];
    for (url, dns, expected) in cases {
        assert_eq!(verdict(&policy, url, dns), *expected, "{url}");
    }
}

#[test]
fn allowed_hosts_open_exactly_what_they_name() {
    let policy = SsrfPolicy::public_only()
        .allow_host("127.0.0.1")
        .unwrap()
        .allow_host("NAS.lan.")
        .unwrap()
        .allow_host("192.168.7.0/24")
        .unwrap();
    let cases: &[(&str, &[&str], V)] = &[
        ("http://127.0.0.1:9/", &[], V::Fetch),
        ("http://[::ffff:127.0.0.1]:9/", &[], V::Fetch),
        // An allowed loopback address allows the name localhost (it resolves there).
        ("http://localhost:9/", &["127.0.0.1"], V::Fetch),
        ("http://localhost:9/", &["::1"], V::Class(Loopback)),
        ("http://127.0.0.2/", &[], V::Class(Loopback)),
        ("http://nas.lan/", &["10.9.9.9"], V::Fetch),
        ("http://other.lan/", &["10.9.9.9"], V::Class(Private)),
        ("http://192.168.7.42/", &[], V::Fetch),
        ("http://192.168.8.1/", &[], V::Class(Private)),
        // A name cannot open the never-fetched classes.
        ("http://nas.lan/", &["169.254.169.254"], V::Class(CloudMetadata)),
        ("http://nas.lan/", &["0.0.0.0"], V::Class(Unspecified)),
    ];
    for (url, dns, expected) in cases {
        assert_eq!(verdict(&policy, url, dns), *expected, "{url} {dns:?}");
    }
    assert_eq!(policy.allowed_hosts(), ["127.0.0.1/32", "nas.lan", "192.168.7.0/24"]);
    // An explicit metadata address is an explicit choice.
    let metadata = SsrfPolicy::public_only().allow_host("169.254.169.254").unwrap();
    assert_eq!(verdict(&metadata, "http://169.254.169.254/", &[]), V::Fetch);
}

#[test]
fn bad_allowed_host_entries_are_errors_that_say_why() {
    for (entry, reason) in [
        ("", "it is empty"),
        ("10.0.0.0/33", "the prefix is longer than the address"),
        ("10.0.0.0/x", "the prefix is not a number"),
        ("nas.lan/24", "a block needs an IP address before the /"),
        ("http://nas.lan", "a host name has only letters, digits, '-' and dots"),
        ("a..b", "a host name has only letters, digits, '-' and dots"),
    ] {
        let err = SsrfPolicy::public_only().allow_host(entry).unwrap_err();
        assert_eq!(err.reason, reason, "{entry:?}");
        assert!(err.to_string().contains("CIDR"), "{err}");
    }
    assert!(SsrfPolicy::public_only().allow_host("[::1]").is_ok());
    assert!(SsrfPolicy::public_only().allow_host("fd00::/8").is_ok());
}

#[test]
fn refusals_explain_what_to_do() {
    let policy = SsrfPolicy::public_only();
    let e = policy.check_url("http://10.0.0.1/").unwrap_err();
    assert_eq!(
        e.to_string(),
        "10.0.0.1 resolves to 10.0.0.1, a private network address (RFC 1918); web_fetch fetches \
         public addresses only (a user can allow their own network with web_fetch's allowed hosts)"
    );
    let e = policy.check_url("http://169.254.169.254/").unwrap_err();
    assert_eq!(
        e.to_string(),
        "169.254.169.254 resolves to 169.254.169.254, a cloud instance-metadata endpoint; \
         web_fetch fetches public addresses only"
    );
    let e = policy.check_url("https://a:b@example.org").unwrap_err();
    assert!(e.to_string().contains("credentials"), "{e}");
}

#[test]
fn classification_covers_block_edges() {
    let cases = [
        ("9.255.255.255", Public),
        ("10.0.0.0", Private),
        ("10.255.255.255", Private),
        ("11.0.0.0", Public),
        ("126.255.255.255", Public),
        ("128.0.0.0", Public),
        ("169.253.255.255", Public),
        ("169.255.0.0", Public),
        ("192.167.255.255", Public),
        ("192.169.0.0", Public),
        ("198.17.255.255", Public),
        ("198.20.0.0", Public),
        ("223.255.255.255", Public),
        ("239.255.255.255", Multicast),
        ("255.255.255.254", Reserved),
        ("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Reserved),
        ("2000::", Public),
        ("2001:200::", Public),
        ("2001:1ff::", Reserved),
        ("3ffe::", Public),
        ("3fff:fff::", Documentation),
        ("fbff::", Reserved),
        ("fdff::", UniqueLocal),
        ("fe7f::", Reserved),
        ("febf::", LinkLocal),
    ];
    for (ip, class) in cases {
        assert_eq!(classify_ip(ip.parse().unwrap()), class, "{ip}");
    }
}

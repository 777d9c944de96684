//! The egress policy's verdicts: addresses, hosts, grants and request parsing.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use pretty_assertions::assert_eq;

use super::proxy::{Request, parse_head};
use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn only_public_addresses_pass() {
    let p = EgressPolicy::default();
    let refused = [
        "127.0.0.1",
        "127.255.0.9",
        "0.0.0.0",
        "10.0.0.1",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "100.64.0.1",
        "100.127.255.255",
        "169.254.169.254",
        "169.254.1.1",
        "224.0.0.1",
        "255.255.255.255",
        "::",
        "::1",
        "fc00::1",
        "fd12:3456::1",
        "fe80::1",
        "ff02::1",
        // IPv4 inside IPv6: mapped, compatible, NAT64, 6to4.
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "::ffff:192.168.0.1",
        "::127.0.0.1",
        "64:ff9b::a00:1",
        "64:ff9b::7f00:1",
        "2002:c0a8:0101::1",
        "2002:7f00:0001::1",
    ];
    for a in refused {
        assert!(p.address_refusal(ip(a), 443, &[]).is_some(), "{a} passed");
    }
    for a in ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8", "172.32.0.1"] {
        assert_eq!(p.address_refusal(ip(a), 443, &[]), None, "{a}");
    }
}

#[test]
fn this_machines_own_addresses_are_refused_even_when_public() {
    let p = EgressPolicy::default();
    let own = [ip("203.0.114.7"), ip("2a01:4f8::7")];
    let why = p.address_refusal(ip("203.0.114.7"), 80, &own).unwrap();
    assert!(why.contains("this machine"), "{why}");
    assert!(p.address_refusal(ip("::ffff:203.0.114.7"), 80, &own).is_some());
    assert!(p.address_refusal(ip("2a01:4f8::7"), 80, &own).is_some());
    assert_eq!(p.address_refusal(ip("203.0.114.8"), 80, &own), None);
}

#[test]
fn the_test_hook_opens_only_the_named_loopback_ports() {
    let p = EgressPolicy { loopback_ports_as_public: vec![8080], ..EgressPolicy::default() };
    assert_eq!(p.address_refusal(ip("127.0.0.1"), 8080, &[]), None);
    assert_eq!(p.address_refusal(ip("::ffff:127.0.0.1"), 8080, &[]), None);
    assert!(p.address_refusal(ip("127.0.0.1"), 8081, &[]).is_some());
    assert!(p.address_refusal(ip("::1"), 8080, &[]).is_some());
    assert!(p.address_refusal(ip("10.0.0.1"), 8080, &[]).is_some());
}

#[test]
fn own_addresses_include_loopback() {
    let own = own_addresses();
    assert!(own.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)), "{own:?}");
}

#[test]
fn host_lists_match_names_and_subdomains() {
    let p = EgressPolicy {
        hosts: NetworkGrant::Hosts(vec!["PyPI.org.".into(), "*.pythonhosted.org".into()]).hosts(),
        ..EgressPolicy::default()
    };
    for h in ["pypi.org", "PYPI.ORG", "pypi.org.", "files.pythonhosted.org", "a.b.pythonhosted.org"]
    {
        assert!(p.host_allowed(h), "{h}");
    }
    for h in ["evil-pypi.org", "pypi.org.evil.com", "pythonhosted.org", "xpythonhosted.org", ""] {
        assert!(!p.host_allowed(h), "{h}");
    }
    assert!(EgressPolicy::default().host_allowed("anything.example"));
}

#[test]
fn grants_read_as_bool_or_list() {
    #[derive(serde::Deserialize)]
    struct T {
        network: NetworkGrant,
    }
    let parse = |s: &str| serde_json::from_str::<T>(s).map(|t| t.network);
    assert_eq!(parse(r#"{"network": true}"#).unwrap(), NetworkGrant::Flag(true));
    assert_eq!(parse(r#"{"network": false}"#).unwrap(), NetworkGrant::Flag(false));
    let list = parse(r#"{"network": ["pypi.org"]}"#).unwrap();
    assert!(list.granted());
    assert_eq!(list.hosts(), Some(vec!["pypi.org".to_owned()]));
    assert!(parse(r#"{"network": "yes"}"#).is_err());
    assert!(!NetworkGrant::default().granted());
    assert_eq!(NetworkGrant::Flag(true).hosts(), None);
}

#[test]
fn grant_lists_are_validated() {
    let ok = |v: &[&str]| NetworkGrant::Hosts(v.iter().map(|s| (*s).to_owned()).collect());
    assert!(ok(&["pypi.org", "*.example.com", "1.2.3.4", "::1"]).validate().is_ok());
    for bad in [&[][..], &["http://pypi.org"], &["*"], &["a b"], &["pypi.org/simple"], &[""]] {
        assert!(ok(bad).validate().is_err(), "{bad:?}");
    }
    assert!(NetworkGrant::Flag(true).validate().is_ok());
}

#[test]
fn connect_requests_name_host_and_port() {
    let r = parse_head(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n").unwrap();
    assert_eq!(
        r,
        Request {
            method: "CONNECT".into(),
            host: "pypi.org".into(),
            port: 443,
            forward_head: None
        }
    );
    let r = parse_head(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!((r.host.as_str(), r.port), ("::1", 8443));
    for bad in [
        &b"CONNECT pypi.org HTTP/1.1\r\n\r\n"[..],
        b"CONNECT user@pypi.org:443 HTTP/1.1\r\n\r\n",
        b"CONNECT pypi.org:0 HTTP/1.1\r\n\r\n",
        b"CONNECT [::1:443 HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET https://pypi.org/ HTTP/1.1\r\n\r\n",
        b"GET http://pypi.org/ SPDY/3\r\n\r\n",
    ] {
        assert!(parse_head(bad).is_err(), "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn plain_requests_are_rewritten_to_origin_form() {
    let head = b"GET http://Example.org:8080/a?b=c HTTP/1.1\r\nHost: example.org:8080\r\n\
                 Proxy-Connection: keep-alive\r\nProxy-Authorization: x\r\nAccept: */*\r\n\r\n";
    let r = parse_head(head).unwrap();
    assert_eq!((r.method.as_str(), r.host.as_str(), r.port), ("GET", "example.org", 8080));
    let sent = String::from_utf8(r.forward_head.unwrap()).unwrap();
    assert_eq!(
        sent,
        "GET /a?b=c HTTP/1.1\r\nHost: example.org:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    let r = parse_head(b"POST http://example.org?q HTTP/1.0\r\n\r\n").unwrap();
    assert_eq!(r.port, 80);
    assert!(String::from_utf8(r.forward_head.unwrap()).unwrap().starts_with("POST /?q HTTP/1.0"));
    let r = parse_head(b"GET http://[2001:db8::1]/ HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!(r.host, Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1).to_string());
}

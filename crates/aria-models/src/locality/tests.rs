use std::collections::HashMap;
use std::net::SocketAddr;

use super::*;

/// Answers from a table; every other name does not resolve. Never touches the network.
struct Fake(HashMap<&'static str, Vec<&'static str>>);

impl Resolve for Fake {
    fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        match self.0.get(host) {
            Some(ips) => {
                Ok(ips.iter().map(|ip| SocketAddr::new(ip.parse().unwrap(), port)).collect())
            }
            None => Err(std::io::Error::new(std::io::ErrorKind::NotFound, "no such host")),
        }
    }
}

fn fake() -> Fake {
    Fake(HashMap::from([
        ("localhost", vec!["127.0.0.1", "::1"]),
        ("127.0.0.1.nip.io", vec!["127.0.0.1"]),
        ("127.0.0.1.evil.example", vec!["203.0.113.7"]),
        ("half.example", vec!["127.0.0.1", "198.51.100.2"]),
        ("otherhost", vec!["198.51.100.9"]),
        ("empty.example", vec![]),
    ]))
}

fn local(url: &str) -> bool {
    judge(url, &fake()).is_local()
}

#[test]
fn loopback_addresses_in_any_spelling_are_local() {
    for url in [
        "http://127.0.0.1:11434",
        "http://127.0.0.1/v1",
        "http://127.9.8.7:8080/v1",
        "http://[::1]:8080/v1",
        "http://0x7f.1/v1",
        "http://0x7f000001/v1",
        "http://2130706433/v1",
        "http://0177.0.0.1/v1",
        "http://127.1:9000/",
        "http://[::ffff:127.0.0.1]/v1",
        "HTTP://LOCALHOST:8080/v1",
        "http://user:pw@127.0.0.1/v1",
    ] {
        assert!(local(url), "{url}");
    }
}

#[test]
fn the_host_after_the_user_info_is_the_one_that_counts() {
    for url in [
        "http://127.0.0.1@otherhost/v1",
        "http://127.0.0.1:11434@otherhost/v1",
        "http://localhost@otherhost:8080/v1",
        "http://[::1]@otherhost/v1",
        "http://127.0.0.1%40@otherhost/v1",
    ] {
        assert_eq!(
            judge(url, &fake()),
            Locality::Remote { why: "otherhost resolves to 198.51.100.9".into() },
            "{url}"
        );
    }
}

#[test]
fn names_count_by_every_address_they_resolve_to() {
    let nip = judge("http://127.0.0.1.nip.io:8000/v1", &fake());
    let pin = nip.pin().expect("a local name is pinned");
    assert_eq!(pin.host, "127.0.0.1.nip.io");
    assert_eq!(pin.addrs, vec!["127.0.0.1:8000".parse::<SocketAddr>().unwrap()]);
    assert!(!local("http://127.0.0.1.evil.example/v1"), "a loopback-looking name elsewhere");
    assert!(!local("http://half.example/v1"), "one address elsewhere is enough");
    assert!(!local("http://nowhere.invalid/v1"), "a name that does not resolve");
    assert!(!local("http://empty.example/v1"));
    let both = judge("http://localhost:11434", &fake());
    assert_eq!(both.pin().map(|p| p.addrs.len()), Some(2), "{both:?}");
}

#[test]
fn unspecified_private_and_public_addresses_are_remote() {
    for url in [
        "http://0.0.0.0:11434",
        "http://[::]:11434",
        "http://0:11434",
        "http://192.168.1.20:11434",
        "http://10.0.0.1/v1",
        "https://api.openai.com/v1",
        "http://otherhost:11434",
        "not a url",
        "unix:/run/ollama.sock",
    ] {
        assert!(!local(url), "{url}");
    }
}

#[test]
fn a_resolver_that_is_not_asked_for_addresses_is_not_asked() {
    struct Refuses;
    impl Resolve for Refuses {
        fn resolve(&self, host: &str, _port: u16) -> std::io::Result<Vec<SocketAddr>> {
            panic!("asked to resolve {host}")
        }
    }
    assert!(judge("http://127.0.0.1:1/v1", &Refuses).is_local());
    assert!(!judge("http://203.0.113.1/v1", &Refuses).is_local());
}

/// A resolver that answers loopback once and another address after (a DNS rebinding).
#[derive(Default)]
struct Rebinding(std::sync::atomic::AtomicUsize);

impl Resolve for Rebinding {
    fn resolve(&self, _host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let ip = if n == 0 { "127.0.0.1" } else { "203.0.113.66" };
        Ok(vec![SocketAddr::new(ip.parse().unwrap(), port)])
    }
}

#[tokio::test]
async fn a_server_judged_local_is_reached_at_the_checked_address_only() {
    let mock = aria_testkit::mock::Mock::new(vec![]).models(vec!["m1".into()]).serve();
    let port = mock.addr().port();
    let rebinding = Rebinding::default();
    // A name that does not exist anywhere: only the pin can take the request to the mock.
    let config = crate::OpenAiConfig::new(format!("http://model.aria-test.invalid:{port}/v1"));
    let provider = crate::OpenAiProvider::judged(config, &rebinding).unwrap();
    assert!(provider.locality().is_local(), "{:?}", provider.locality());
    assert_eq!(provider.list_models().await.unwrap(), vec!["m1".to_owned()]);
    assert_eq!(rebinding.0.load(std::sync::atomic::Ordering::SeqCst), 1, "resolved once");
    // Not judged: remote.
    let plain = crate::OpenAiProvider::new(crate::OpenAiConfig::new(mock.base_url())).unwrap();
    assert!(!plain.locality().is_local());
}

#[test]
fn an_ollama_server_counts_by_its_address_too() {
    let judged = |url: &str| {
        let config = crate::OllamaConfig::new(url);
        crate::OllamaProvider::judged(config, &fake()).unwrap().locality().is_local()
    };
    assert!(judged("http://127.0.0.1:11434"));
    assert!(judged("http://localhost:11434"));
    assert!(!judged("http://otherhost:11434"));
    assert!(!judged("http://0.0.0.0:11434"));
}

#[test]
fn ollama_host_values_are_judged_by_the_url_they_become() {
    let judged = |value: &str| judge(&crate::OllamaConfig::host_url(value), &fake()).is_local();
    // `0.0.0.0` is how a server listens on every interface; Ollama's clients (and ARIA's)
    // connect to it as 127.0.0.1, which is what is judged.
    assert!(judged("0.0.0.0"));
    assert!(judged("0.0.0.0:9999"));
    assert!(judged("127.0.0.1"));
    assert!(judged("localhost:11434"));
    assert!(!judged("otherhost:11434"));
    assert!(!judged("otherhost"));
    assert!(!judged("http://127.0.0.1@otherhost:11434"));
    assert!(!judged("198.51.100.4"));
}

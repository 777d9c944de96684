//! The SSRF guard: which URLs `web_fetch` may request, and which addresses it may connect to.
//!
//! A URL passes in two stages. [`SsrfPolicy::check_url`] judges the text: only `http`/`https`,
//! no credentials (`user:pass@`), and a host that is not a local name (`localhost`,
//! `*.localhost`). The WHATWG parser behind [`Url`] turns the odd IPv4 spellings
//! (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`) into the address they mean before anything
//! here looks at them, so an IP literal is judged as the address the connection would reach.
//! A host name is then resolved by the caller and every answer goes through
//! [`SsrfPolicy::check_resolved`]; the caller must connect only to the addresses that passed
//! (web_fetch does this with a DNS resolver that *is* the check, so a second DNS answer cannot
//! rebind the name to a private address between check and connect).
//!
//! Addresses are classified by [`classify_ip`], which lives in `aria-sandbox` (the egress proxy
//! for network grants makes the same decision): an allowlist for IPv6 (only global unicast
//! `2000::/3` outside the special blocks is public) and a blocklist of the special IPv4 blocks.
//! IPv6 forms that carry an IPv4 address (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`,
//! NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged by the IPv4 address inside.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use reqwest::Url;
use url::Host;

pub use aria_sandbox::{AddrClass, classify_ip};

fn in_v4(ip: u32, net: [u8; 4], prefix: u32) -> bool {
    let net = u32::from_be_bytes(net);
    let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix) };
    ip & mask == net & mask
}

fn in_v6(ip: u128, net: u128, prefix: u32) -> bool {
    let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - prefix) };
    ip & mask == net & mask
}

/// Why a URL or an address is not fetched. Every message says what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SsrfRefusal {
    #[error("{url:?} is not a valid URL ({reason}); give a full http:// or https:// URL")]
    Unparsable { url: String, reason: String },
    #[error("only http:// and https:// URLs can be fetched, not {scheme}:")]
    Scheme { scheme: String },
    #[error(
        "the URL contains credentials (user:password@); ARIA does not send credentials in URLs \
         — fetch a public page without them"
    )]
    Credentials,
    #[error("the URL has no host name; give a full URL such as https://example.org/")]
    NoHost,
    #[error(
        "{host} names this machine; web_fetch fetches public pages only (a user can allow \
         their own hosts with web_fetch's allowed hosts)"
    )]
    LocalName { host: String },
    #[error(
        "{host} resolves to {addr}, {}; web_fetch fetches public addresses only{}",
        class.describe(),
        if class.is_local_network() {
            " (a user can allow their own network with web_fetch's allowed hosts)"
        } else {
            ""
        }
    )]
    Address { host: String, addr: IpAddr, class: AddrClass },
    #[error("{host} did not resolve to any address; check the host name")]
    NoAddresses { host: String },
}

/// A host the user allowed to resolve to their own network.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Allowed {
    /// A host name, lowercase, without a trailing dot.
    Name(String),
    /// An address block: any host resolving inside it.
    Net { net: IpAddr, prefix: u32 },
}

impl fmt::Display for Allowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Allowed::Name(n) => f.write_str(n),
            Allowed::Net { net, prefix } => write!(f, "{net}/{prefix}"),
        }
    }
}

/// An allowed-hosts entry that could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the allowed web host {entry:?} is not a host name, an IP address or a CIDR block such as \
     192.168.1.0/24 ({reason})"
)]
pub struct AllowedHostError {
    pub entry: String,
    pub reason: &'static str,
}

/// Which hosts and addresses `web_fetch` may reach. The default reaches public addresses only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SsrfPolicy {
    allow_private: bool,
    allowed: Vec<Allowed>,
}

impl SsrfPolicy {
    /// Public addresses only (the default).
    pub fn public_only() -> Self {
        SsrfPolicy::default()
    }

    /// Also reach any local network (loopback, RFC 1918, CGNAT, ULA, link-local). Cloud
    /// metadata, unspecified, multicast, broadcast, documentation and reserved addresses stay
    /// refused.
    pub fn allow_private(mut self, allow: bool) -> Self {
        self.allow_private = allow;
        self
    }

    /// Lets one host reach the local network: a host name (`nas.lan`, `localhost`), an IP
    /// address (`127.0.0.1`, `::1`) or a CIDR block (`192.168.1.0/24`). An address or block
    /// allows any name resolving into it; a name allows whatever it resolves to, except the
    /// classes that are never fetched. An address or block that names a cloud metadata
    /// endpoint explicitly allows it too.
    pub fn allow_host(mut self, entry: &str) -> Result<Self, AllowedHostError> {
        self.allowed.push(parse_allowed(entry)?);
        Ok(self)
    }

    /// Whether any local network may be reached (for descriptions).
    pub fn allows_local_network(&self) -> bool {
        self.allow_private || !self.allowed.is_empty()
    }

    /// The allowed-host entries as the user wrote them (normalised).
    pub fn allowed_hosts(&self) -> Vec<String> {
        self.allowed.iter().map(ToString::to_string).collect()
    }

    /// Judges the URL text: scheme, credentials, local names, and an IP-literal host's
    /// address. A host name still has to be resolved and passed to [`Self::check_resolved`].
    pub fn check_url(&self, input: &str) -> Result<Url, SsrfRefusal> {
        let url = Url::parse(input.trim()).map_err(|e| SsrfRefusal::Unparsable {
            url: input.to_owned(),
            reason: e.to_string(),
        })?;
        self.check_parsed(&url)?;
        Ok(url)
    }

    /// [`Self::check_url`] for a URL already parsed (a redirect target).
    pub fn check_parsed(&self, url: &Url) -> Result<(), SsrfRefusal> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(SsrfRefusal::Scheme { scheme: url.scheme().to_owned() });
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(SsrfRefusal::Credentials);
        }
        match url.host() {
            None => Err(SsrfRefusal::NoHost),
            Some(Host::Ipv4(v4)) => self.check_addr(&v4.to_string(), IpAddr::V4(v4)),
            Some(Host::Ipv6(v6)) => self.check_addr(&v6.to_string(), IpAddr::V6(v6)),
            Some(Host::Domain(name)) => {
                let name = normal_name(name);
                if name.is_empty() {
                    return Err(SsrfRefusal::NoHost);
                }
                let local = name == "localhost" || name.ends_with(".localhost");
                if local && !self.allow_private && !self.name_allowed(&name) {
                    // An allowed loopback address also allows the name `localhost`.
                    let loopback =
                        [IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V6(Ipv6Addr::LOCALHOST)];
                    if !loopback.iter().any(|ip| self.net_allows(*ip)) {
                        return Err(SsrfRefusal::LocalName { host: name });
                    }
                }
                Ok(())
            }
        }
    }

    /// Judges one address `host` resolved to (or an IP-literal host).
    pub fn check_addr(&self, host: &str, addr: IpAddr) -> Result<(), SsrfRefusal> {
        let class = classify_ip(addr);
        let allowed = match class {
            AddrClass::Public => true,
            c if c.is_local_network() => {
                self.allow_private || self.name_allowed(&normal_name(host)) || self.net_allows(addr)
            }
            AddrClass::CloudMetadata => self.net_allows(addr),
            _ => false,
        };
        if allowed {
            Ok(())
        } else {
            Err(SsrfRefusal::Address { host: host.to_owned(), addr, class })
        }
    }

    /// Judges every address a host name resolved to: all must pass (one private answer among
    /// public ones is how DNS rebinding starts), and there must be at least one.
    pub fn check_resolved(&self, host: &str, addrs: &[IpAddr]) -> Result<(), SsrfRefusal> {
        if addrs.is_empty() {
            return Err(SsrfRefusal::NoAddresses { host: host.to_owned() });
        }
        addrs.iter().try_for_each(|addr| self.check_addr(host, *addr))
    }

    fn name_allowed(&self, name: &str) -> bool {
        self.allowed.iter().any(|a| matches!(a, Allowed::Name(n) if n == name))
    }

    fn net_allows(&self, addr: IpAddr) -> bool {
        self.allowed.iter().any(|a| match (a, addr) {
            (Allowed::Net { net: IpAddr::V4(n), prefix }, IpAddr::V4(ip)) => {
                in_v4(u32::from(ip), n.octets(), *prefix)
            }
            (Allowed::Net { net: IpAddr::V6(n), prefix }, IpAddr::V6(ip)) => {
                in_v6(u128::from(ip), u128::from(*n), *prefix)
            }
            // `::ffff:127.0.0.1` is allowed where 127.0.0.1 is.
            (Allowed::Net { net: IpAddr::V4(n), prefix }, IpAddr::V6(ip)) => {
                ip.to_ipv4_mapped().is_some_and(|v4| in_v4(u32::from(v4), n.octets(), *prefix))
            }
            _ => false,
        })
    }
}

/// Lowercase, without brackets or a trailing dot.
fn normal_name(host: &str) -> String {
    host.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.').to_ascii_lowercase()
}

fn parse_allowed(entry: &str) -> Result<Allowed, AllowedHostError> {
    let err = |reason| AllowedHostError { entry: entry.to_owned(), reason };
    let text = entry.trim();
    if text.is_empty() {
        return Err(err("it is empty"));
    }
    let (addr, prefix) = text.split_once('/').map_or((text, None), |(a, p)| (a, Some(p)));
    if let Ok(ip) = normal_name(addr).parse::<IpAddr>() {
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p.parse::<u32>().map_err(|_| err("the prefix is not a number"))?,
            None => max,
        };
        if prefix > max {
            return Err(err("the prefix is longer than the address"));
        }
        return Ok(Allowed::Net { net: ip, prefix });
    }
    if prefix.is_some_and(|p| p.parse::<u32>().is_ok()) {
        return Err(err("a block needs an IP address before the /"));
    }
    let name = normal_name(text);
    let valid = name
        .split('.')
        .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    if !valid {
        return Err(err("a host name has only letters, digits, '-' and dots"));
    }
    Ok(Allowed::Name(name))
}

#[cfg(test)]
mod tests;

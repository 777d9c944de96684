//! Whether a model server runs on this machine: the one decision that lets private memories
//! reach it (in a prompt, or to be embedded).
//!
//! Decided by address, never by spelling. The URL is parsed as a browser and reqwest parse it
//! (so `http://127.0.0.1@otherhost/` is `otherhost`, with `127.0.0.1` as its user name, and
//! `0x7f.1` or `2130706433` are `127.0.0.1`), and its host is then:
//! - an IP address: local when it is a loopback address (`127.0.0.0/8`, `::1`, or `127.x`
//!   mapped into IPv6). `0.0.0.0` and `::` are not: they name no machine, and a request to them
//!   goes wherever the system routes it;
//! - a name: resolved, and local only when it resolves to at least one address and every one
//!   of them is loopback. A name that does not resolve, or resolves to any other address even
//!   once, is remote.
//!
//! A server judged local is reached only at the addresses that were checked: the client pins
//! the name to them ([`Pin`], reqwest's `resolve_to_addrs`) and uses no proxy, so a DNS answer
//! that changes between the check and the call (a rebinding attack) cannot move the request
//! off this machine. The resolver is a parameter ([`Resolve`]) so tests never touch the network.

use std::fmt;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// Turns a host name into addresses.
pub trait Resolve: Send + Sync {
    /// Every address `host` resolves to (the port is carried along); an error when it does not
    /// resolve.
    fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>>;
}

/// The system's resolver (`getaddrinfo`: `/etc/hosts`, then DNS).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        Ok((host, port).to_socket_addrs()?.collect())
    }
}

/// A host name and the loopback addresses a client must connect to for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    pub host: String,
    pub addrs: Vec<SocketAddr>,
}

/// Where a server runs.
#[derive(Clone, PartialEq, Eq)]
pub enum Locality {
    /// On this machine. `pin` is set when the host is a name: connect only to its addresses.
    Local { pin: Option<Pin> },
    /// Anywhere else, or unknown; `why` says which.
    Remote { why: String },
}

impl fmt::Debug for Locality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Locality::Local { pin } => f.debug_struct("Local").field("pin", pin).finish(),
            Locality::Remote { why } => write!(f, "Remote({why})"),
        }
    }
}

impl Locality {
    pub fn is_local(&self) -> bool {
        matches!(self, Locality::Local { .. })
    }

    /// The addresses to pin a client to, for a local server reached by name.
    pub fn pin(&self) -> Option<&Pin> {
        match self {
            Locality::Local { pin } => pin.as_ref(),
            Locality::Remote { .. } => None,
        }
    }
}

fn loopback(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

/// Where the server at `url` runs (see the module's rules). A URL that does not parse, or has
/// no host, is remote.
pub fn judge(url: &str, resolver: &dyn Resolve) -> Locality {
    let parsed = match reqwest::Url::parse(url.trim()) {
        Ok(u) => u,
        Err(e) => return Locality::Remote { why: format!("{url:?} is not a URL ({e})") },
    };
    let port = parsed.port_or_known_default().unwrap_or(80);
    let remote = |why: String| Locality::Remote { why };
    // The URL parser has already turned every IPv4 spelling (`0x7f.1`, `2130706433`, `127.1`)
    // into its dotted form, so a host that does not parse as an address is a name.
    let Some(host) = parsed.host_str() else {
        return remote(format!("{url:?} names no host"));
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return if loopback(ip) {
            Locality::Local { pin: None }
        } else {
            remote(format!("{ip} is not a loopback address"))
        };
    }
    let addrs = match resolver.resolve(bare, port) {
        Ok(a) if !a.is_empty() => a,
        Ok(_) => return remote(format!("{bare} resolves to no address")),
        Err(e) => return remote(format!("{bare} does not resolve ({e})")),
    };
    match addrs.iter().find(|a| !loopback(a.ip())) {
        Some(other) => remote(format!("{bare} resolves to {}", other.ip())),
        None => Locality::Local { pin: Some(Pin { host: bare.to_owned(), addrs }) },
    }
}

#[cfg(test)]
mod tests;

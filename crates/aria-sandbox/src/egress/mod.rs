//! The egress path for a network grant: a granted program gets the internet, never this
//! machine.
//!
//! A granted child runs in its own network namespace, like an ungranted one, but with the
//! loopback interface up and one TCP listener on `127.0.0.1:`[`EGRESS_PORT`] inside it. The
//! keeper (see `child`) makes that listener in the child's namespace and passes it to ARIA over
//! a socket pair (`SCM_RIGHTS`); a socket keeps the namespace it was made in, so ARIA accepts
//! connections from inside the sandbox while its proxy threads connect out from the host's
//! namespace. The namespace has no other interface and no route: the proxy is the only way
//! out, whatever the program does (`HTTP_PROXY` and friends only tell well-behaved clients
//! where it is).
//!
//! The proxy ([`proxy`]) speaks `CONNECT host:port` (HTTPS and any TLS) and absolute-form
//! `http://` requests. It resolves each host itself, refuses unless *every* answer is a public
//! address ([`classify_ip`]) and not one of this machine's own interface addresses, and
//! connects to the address it checked (pinned: no second resolution). A grant may name its
//! hosts ([`EgressPolicy::hosts`]); other hosts are refused. Every destination is recorded as an
//! [`EgressRecord`] (host, port, address, bytes each way, verdict), never the payload.

mod addr;
pub(crate) mod netns;
pub(crate) mod proxy;

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub(crate) use addr::own_addresses;
pub use addr::{AddrClass, classify_ip};

/// The port of the egress proxy inside a granted child's network namespace (each child has its
/// own namespace, so every child uses the same port).
pub const EGRESS_PORT: u16 = 3128;

/// What a network grant allows, as written in a plugin manifest, an MCP server's config or a
/// command profile: `network = true`, `network = false`, or `network = ["pypi.org",
/// "*.pythonhosted.org"]` (granted, to these hosts only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum NetworkGrant {
    Flag(bool),
    Hosts(Vec<String>),
}

impl Default for NetworkGrant {
    fn default() -> Self {
        NetworkGrant::Flag(false)
    }
}

impl NetworkGrant {
    /// Whether the program may reach the network at all.
    pub fn granted(&self) -> bool {
        match self {
            NetworkGrant::Flag(b) => *b,
            NetworkGrant::Hosts(_) => true,
        }
    }

    /// The hosts the grant is limited to; `None` when any public host may be reached.
    pub fn hosts(&self) -> Option<Vec<String>> {
        match self {
            NetworkGrant::Flag(_) => None,
            NetworkGrant::Hosts(h) => Some(h.iter().map(|h| normal_host(h)).collect()),
        }
    }

    /// Checks every host entry: a host name (`pypi.org`), a wildcard for its subdomains
    /// (`*.example.com`) or an IP address. The message says which entry and what to write.
    pub fn validate(&self) -> Result<(), String> {
        let NetworkGrant::Hosts(hosts) = self else { return Ok(()) };
        if hosts.is_empty() {
            return Err("network = []: name at least one host, or write network = false".into());
        }
        for entry in hosts {
            let host = normal_host(entry);
            let name = host.strip_prefix("*.").unwrap_or(&host);
            let valid = host.parse::<IpAddr>().is_ok()
                || (!name.is_empty()
                    && name.split('.').all(|l| {
                        !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                    }));
            if !valid {
                return Err(format!(
                    "network = [{entry:?}]: give host names such as \"pypi.org\", wildcards such \
                     as \"*.example.com\" or IP addresses"
                ));
            }
        }
        Ok(())
    }
}

/// Called with every egress record as its connection ends (refusals at once).
pub type EgressHook = Arc<dyn Fn(&EgressRecord) + Send + Sync>;

/// Where a granted program may connect through the egress proxy. Used only when
/// [`crate::SpawnSpec::network`] is set.
#[derive(Clone, Default)]
pub struct EgressPolicy {
    /// The hosts the program may reach: exact names (case-insensitive, no trailing dot),
    /// `*.example.com` for any subdomain of `example.com`, or IP literals. `None`: any host
    /// whose addresses are all public.
    pub hosts: Option<Vec<String>>,
    /// Called with each [`EgressRecord`] as it is made (they are also on the run's
    /// [`crate::Outcome`] and logged through `tracing`).
    pub on_record: Option<EgressHook>,
    /// Tests only: connections to `127.0.0.1` on these ports are treated as public, so a test
    /// can stand a loopback server in for the internet. Never set from configuration.
    #[doc(hidden)]
    pub loopback_ports_as_public: Vec<u16>,
}

impl fmt::Debug for EgressPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EgressPolicy")
            .field("hosts", &self.hosts)
            .field("on_record", &self.on_record.as_ref().map(|_| "<hook>"))
            .field("loopback_ports_as_public", &self.loopback_ports_as_public)
            .finish()
    }
}

impl EgressPolicy {
    /// The policy of a grant as configured.
    pub fn from_grant(grant: &NetworkGrant) -> Self {
        EgressPolicy { hosts: grant.hosts(), ..EgressPolicy::default() }
    }

    /// Whether the host (as the program named it) is on the list; always with no list.
    pub fn host_allowed(&self, host: &str) -> bool {
        let Some(list) = &self.hosts else { return true };
        let host = normal_host(host);
        list.iter().any(|pattern| match pattern.strip_prefix("*.") {
            Some(domain) => {
                host.len() > domain.len() + 1
                    && host.ends_with(domain)
                    && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
            }
            None => *pattern == host,
        })
    }

    /// Why the proxy refuses to connect to `ip:port`, or `None` when it may. `own` are this
    /// machine's interface addresses.
    pub fn address_refusal(&self, ip: IpAddr, port: u16, own: &[IpAddr]) -> Option<String> {
        let canonical = ip.to_canonical();
        if canonical == IpAddr::from([127, 0, 0, 1])
            && self.loopback_ports_as_public.contains(&port)
        {
            return None;
        }
        let class = classify_ip(ip);
        if class != AddrClass::Public {
            return Some(format!("{ip} is {}", class.describe()));
        }
        if own.iter().any(|o| o.to_canonical() == canonical) {
            return Some(format!("{ip} is an address of this machine"));
        }
        None
    }
}

/// Lowercase, without brackets or a trailing dot.
fn normal_host(host: &str) -> String {
    host.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// One destination a granted program asked the egress proxy for. The payload is never kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EgressRecord {
    /// `CONNECT`, or the HTTP method of a plain proxied request.
    pub method: String,
    /// The host as the program named it.
    pub host: String,
    pub port: u16,
    /// The address connected to (or the one refused); `None` when refused before resolving.
    pub addr: Option<IpAddr>,
    /// Bytes from the program to the destination (for plain HTTP, including the request head).
    pub bytes_up: u64,
    /// Bytes from the destination to the program.
    pub bytes_down: u64,
    pub allowed: bool,
    /// Why the request was refused or failed.
    pub reason: Option<String>,
}

#[cfg(test)]
mod tests;

//! `[server]`: where `aria serve` listens and how it protects the listener.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// The address `aria serve` listens on without `--listen`: loopback, so nothing off this
/// machine reaches it unless the user says so.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// `[server]` as written.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawServer {
    /// `ADDR:PORT`; loopback by default. Any other address needs a token and `--insecure`.
    pub listen: Option<String>,
    /// Origins besides the daemon's own that may make state-changing requests (a proxy's
    /// public name, e.g. `https://aria.tailnet.ts.net`).
    pub allowed_origins: Option<Vec<String>>,
    /// Requests per minute per client address (0: no limit).
    pub rate_limit_per_minute: Option<u32>,
    /// How long a stopping daemon waits for runs in flight before it stops them (they stay
    /// resumable).
    pub shutdown_grace_secs: Option<u64>,
    /// How often the status collector looks at the daemon (health, resources, metrics), in
    /// seconds (default 15).
    pub status_interval_secs: Option<u64>,
    /// `token` (default): every request needs a credential, on loopback too. `none`: no
    /// credentials, for a single-user container; refused unless `aria serve --insecure`.
    pub auth: Option<String>,
    /// Days a web login lasts without being used (default 7).
    pub session_idle_days: Option<u64>,
}

/// Whether the daemon asks for credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ServerAuth {
    /// The API token, a scoped token or a web login on every request.
    #[default]
    Token,
    /// Nothing: anyone who can reach the listener uses ARIA.
    None,
}

/// `[server]`, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub allowed_origins: Vec<String>,
    pub rate_limit_per_minute: u32,
    pub shutdown_grace_secs: u64,
    pub status_interval_secs: u64,
    pub auth: ServerAuth,
    pub session_idle_days: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        resolve_server(RawServer::default()).unwrap_or(ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            allowed_origins: Vec::new(),
            rate_limit_per_minute: 600,
            shutdown_grace_secs: 10,
            status_interval_secs: 15,
            auth: ServerAuth::Token,
            session_idle_days: 7,
        })
    }
}

impl ServerConfig {
    pub fn to_raw(&self) -> RawServer {
        RawServer {
            listen: Some(self.listen.to_string()),
            allowed_origins: Some(self.allowed_origins.clone()),
            rate_limit_per_minute: Some(self.rate_limit_per_minute),
            shutdown_grace_secs: Some(self.shutdown_grace_secs),
            status_interval_secs: Some(self.status_interval_secs),
            auth: Some(
                match self.auth {
                    ServerAuth::Token => "token",
                    ServerAuth::None => "none",
                }
                .to_owned(),
            ),
            session_idle_days: Some(self.session_idle_days),
        }
    }
}

/// An `ADDR:PORT` for the listener, with a message that says what is wrong.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    text.trim().parse::<SocketAddr>().map_err(|_| {
        format!(
            "`{text}` is not ADDR:PORT; write an IP address and a port, e.g. 127.0.0.1:8080 or \
             [::1]:8080"
        )
    })
}

pub fn resolve_server(raw: RawServer) -> Result<ServerConfig, ConfigError> {
    let listen = parse_listen(raw.listen.as_deref().unwrap_or(DEFAULT_LISTEN))
        .map_err(|e| ConfigError::Invalid(format!("[server] listen: {e}")))?;
    let allowed_origins = raw.allowed_origins.unwrap_or_default();
    for origin in &allowed_origins {
        let ok = (origin.starts_with("http://") || origin.starts_with("https://"))
            && !origin.trim_end_matches('/').contains(['?', '#'])
            && origin.splitn(4, '/').nth(3).is_none_or(str::is_empty);
        if !ok {
            return Err(ConfigError::Invalid(format!(
                "[server] allowed_origins: `{origin}` is not an origin; write scheme://host[:port] \
                 with nothing after it, e.g. https://aria.example.ts.net"
            )));
        }
    }
    let status_interval_secs = raw.status_interval_secs.unwrap_or(15);
    if !(1..=3_600).contains(&status_interval_secs) {
        return Err(ConfigError::Invalid(format!(
            "[server] status_interval_secs = {status_interval_secs}: give 1 to 3600 seconds \
             (default 15)"
        )));
    }
    let auth = match raw.auth.as_deref().unwrap_or("token") {
        "token" => ServerAuth::Token,
        "none" => ServerAuth::None,
        other => {
            return Err(ConfigError::Invalid(format!(
                "[server] auth = \"{other}\": write \"token\" (the default: every request \
                 needs a credential) or \"none\" (no credentials; needs aria serve --insecure)"
            )));
        }
    };
    let session_idle_days = raw.session_idle_days.unwrap_or(7);
    if !(1..=365).contains(&session_idle_days) {
        return Err(ConfigError::Invalid(format!(
            "[server] session_idle_days = {session_idle_days}: give 1 to 365 days (default 7)"
        )));
    }
    Ok(ServerConfig {
        auth,
        session_idle_days,
        listen,
        allowed_origins: allowed_origins
            .into_iter()
            .map(|o| o.trim_end_matches('/').to_owned())
            .collect(),
        rate_limit_per_minute: raw.rate_limit_per_minute.unwrap_or(600),
        shutdown_grace_secs: raw.shutdown_grace_secs.unwrap_or(10),
        status_interval_secs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_loopback_8080_and_bad_values_say_how_to_fix_them() {
        let d = resolve_server(RawServer::default()).unwrap();
        assert_eq!(d.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(d.rate_limit_per_minute, 600);
        let bad =
            resolve_server(RawServer { listen: Some("localhost".into()), ..Default::default() })
                .unwrap_err()
                .to_string();
        assert!(bad.contains("[server] listen") && bad.contains("127.0.0.1:8080"), "{bad}");
        let origin = resolve_server(RawServer {
            allowed_origins: Some(vec!["https://a.example/path".into()]),
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
        assert!(origin.contains("not an origin"), "{origin}");
        let fine = resolve_server(RawServer {
            allowed_origins: Some(vec!["https://a.example:8443/".into()]),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(fine.allowed_origins, ["https://a.example:8443"]);
    }
}

//! The daemon's outgoing HTTP clients (the Telegram Bot API, OpenTelemetry export): one place
//! that installs rustls's crypto provider, sets timeouts and the user agent, and ignores
//! proxies for a loopback address (a proxy would not reach it).

use std::time::Duration;

/// Whether `url` points at this machine.
pub(crate) fn is_loopback(url: &reqwest::Url) -> bool {
    url.host_str().is_some_and(|h| {
        h == "localhost"
            || h.trim_matches(['[', ']'])
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    })
}

/// A client for `url`: `connect` to connect, `total` (if any) for a whole request.
pub(crate) fn client_for(
    url: &reqwest::Url,
    connect: Duration,
    total: Option<Duration>,
) -> Result<reqwest::Client, String> {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
    });
    let mut builder = reqwest::Client::builder()
        .connect_timeout(connect)
        .user_agent(concat!("aria/", env!("CARGO_PKG_VERSION")));
    if let Some(total) = total {
        builder = builder.timeout(total);
    }
    if is_loopback(url) {
        builder = builder.no_proxy();
    }
    builder.build().map_err(|e| format!("cannot build the HTTP client: {e}"))
}

//! `web_fetch {url}`: fetches one web page and returns it as readable text.
//!
//! Every URL, the first and each redirect target, passes the [`SsrfPolicy`] before a request
//! is made; redirects are followed here, never by the HTTP client, so no hop escapes the
//! check. Host names are resolved by [`GuardedResolver`], the client's only DNS resolver: it
//! checks every address it returns, so the connection goes to an address that passed and a
//! second DNS answer cannot rebind the name to a private one. Proxies from the environment are
//! ignored (a proxy would resolve names itself). The body is read up to [`MAX_BODY_BYTES`],
//! HTML becomes text with `html2text`, non-text content types are refused, and the text is cut
//! at [`MAX_FETCH_CHARS`] characters with a note saying so.

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{CONTENT_TYPE, LOCATION};
use serde_json::{Value, json};

use crate::guard::secrets::SecretRedactor;
use crate::guard::ssrf::{SsrfPolicy, SsrfRefusal};

/// How long one fetch may take in all (every redirect and the body).
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(15);

/// Redirects followed at most.
pub const MAX_REDIRECTS: usize = 5;

/// Bytes of a response body read at most; the rest is not downloaded.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// Characters of text returned at most.
pub const MAX_FETCH_CHARS: usize = 10_000;

/// Column width HTML is laid out in.
const TEXT_WIDTH: usize = 100;

/// Fetches a public web page as text. Tier: read (a GET changes nothing on this machine).
#[derive(Debug)]
pub struct WebFetch {
    policy: Arc<SsrfPolicy>,
    timeout: Duration,
    max_chars: usize,
    client: OnceLock<Result<reqwest::Client, String>>,
    redactor: OnceLock<SecretRedactor>,
    spec: ToolSpec,
}

impl WebFetch {
    /// The tool's name: a public contract.
    pub const NAME: &'static str = "web_fetch";

    /// A fetcher that reaches what `policy` allows ([`SsrfPolicy::public_only`] by default).
    pub fn new(policy: SsrfPolicy) -> Self {
        let spec = spec(&policy, DEFAULT_FETCH_TIMEOUT, MAX_FETCH_CHARS);
        WebFetch {
            policy: Arc::new(policy),
            timeout: DEFAULT_FETCH_TIMEOUT,
            max_chars: MAX_FETCH_CHARS,
            client: OnceLock::new(),
            redactor: OnceLock::new(),
            spec,
        }
    }

    /// Changes the time limit of one fetch (default [`DEFAULT_FETCH_TIMEOUT`]).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self.client = OnceLock::new();
        self.spec = spec(&self.policy, timeout, self.max_chars);
        self
    }

    /// Changes how many characters of text are returned (default [`MAX_FETCH_CHARS`]).
    pub fn with_max_chars(mut self, max_chars: usize) -> Self {
        self.max_chars = max_chars;
        self.spec = spec(&self.policy, self.timeout, max_chars);
        self
    }

    /// The client, built on first use: no redirects, no proxy, DNS through the guard.
    fn client(&self) -> Result<&reqwest::Client, ToolError> {
        let built = self.client.get_or_init(|| build_client(&self.policy, self.timeout));
        built.as_ref().map_err(|e| ToolError::failed(e.clone()))
    }

    /// Refuses a URL that carries a secret (a token in the query string, say): web pages
    /// are not where secrets go. High-entropy strings alone are not refused (URLs are full of
    /// ids and hashes).
    fn check_secrets(&self, url: &Url) -> Result<(), ToolError> {
        let redactor = self.redactor.get_or_init(|| SecretRedactor::new(Vec::new()));
        let report = redactor.redact_report(url.as_str());
        match report.kinds.iter().find(|k| **k != "high_entropy") {
            Some(kind) => Err(ToolError::refused(format!(
                "the URL contains what looks like a secret ({kind}); ARIA does not send secrets \
                 to web servers — fetch the page without it"
            ))),
            None => Ok(()),
        }
    }
}

/// Installs ring as rustls's process-wide crypto provider (reqwest is built without one). If
/// another part of the process installed one first, that one is kept. Every HTTP client of
/// ARIA's built on the workspace's reqwest calls this first.
pub fn ensure_crypto_provider() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
    });
}

fn build_client(policy: &Arc<SsrfPolicy>, timeout: Duration) -> Result<reqwest::Client, String> {
    ensure_crypto_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(GuardedResolver { policy: Arc::clone(policy) })
        .connect_timeout(timeout)
        .user_agent(concat!("aria/", env!("CARGO_PKG_VERSION"), " (web_fetch)"))
        .build()
        .map_err(|e| format!("web_fetch could not build its HTTP client: {e}"))
}

fn spec(policy: &SsrfPolicy, timeout: Duration, max_chars: usize) -> ToolSpec {
    let reach = if policy.allows_local_network() {
        "public web pages and the local hosts the user allowed"
    } else {
        "public web pages only (no localhost, private or link-local addresses)"
    };
    ToolSpec {
        name: WebFetch::NAME.to_owned(),
        description: format!(
            "Fetch a web page with GET and return its text (HTML converted to plain text, links \
             listed at the end). http:// and https:// only; {reach}. Follows up to \
             {MAX_REDIRECTS} redirects, each checked; stops after {} s; returns at most \
             {max_chars} characters. Non-text content (images, PDFs, archives) is refused.",
            timeout.as_secs_f64()
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "url": {
                    "type": "string",
                    "description": "The full URL, e.g. \"https://www.rust-lang.org/\"."
                }
            },
            "required": ["url"],
            "additionalProperties": false
        }),
    }
}

fn url_arg(args: &Value) -> Result<String, ToolError> {
    let usage = "web_fetch takes one argument, \"url\": the full http:// or https:// URL";
    let Some(map) = args.as_object() else {
        return Err(ToolError::failed(format!("the arguments are not a JSON object; {usage}")));
    };
    if let Some(unknown) = map.keys().find(|k| k.as_str() != "url") {
        return Err(ToolError::failed(format!("unknown argument \"{unknown}\"; {usage}")));
    }
    match map.get("url") {
        Some(Value::String(u)) => Ok(u.clone()),
        Some(_) => Err(ToolError::failed(format!("\"url\" must be a string; {usage}"))),
        None => Err(ToolError::failed(format!("the argument \"url\" is missing; {usage}"))),
    }
}

impl Tool for WebFetch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// A GET changes nothing on this machine. What the URL itself could leak is limited by
    /// the outbound filter (the model never sees secrets) and [`WebFetch::check_secrets`].
    fn tier(&self, args: &Value) -> Tier {
        match url_arg(args) {
            Ok(_) => Tier::Read,
            Err(_) => Tier::Blocked,
        }
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let input = url_arg(&args)?;
            let url = self.policy.check_url(&input).map_err(refusal)?;
            self.check_secrets(&url)?;
            if ctx.dry_run {
                return Ok(ToolOutput::text(format!(
                    "dry run (tier read): nothing was fetched\nwould fetch: GET {url} (the \
                     host's addresses are checked when fetching; up to {MAX_REDIRECTS} \
                     redirects, each checked)\n"
                ))
                .with_details(json!({"url": url.as_str(), "dry_run": true})));
            }
            let timeout = self.timeout;
            match tokio::time::timeout(timeout, self.fetch(url.clone())).await {
                Ok(result) => result,
                Err(_) => Err(ToolError::failed(format!(
                    "fetching {url} timed out after {} s; the server is slow or not answering, \
                     try again later or another URL",
                    timeout.as_secs_f64()
                ))),
            }
        })
    }
}

fn refusal(e: SsrfRefusal) -> ToolError {
    ToolError::refused(e.to_string())
}

/// A page's text and what is known about it.
struct Page {
    final_url: Url,
    redirects: Vec<String>,
    status: u16,
    content_type: String,
    body: Vec<u8>,
    body_cut: bool,
}

impl WebFetch {
    async fn fetch(&self, first: Url) -> Result<ToolOutput, ToolError> {
        let page = self.follow(first).await?;
        let (text, html) = to_text(&page)?;
        let total = text.chars().count();
        let mut content = format!(
            "URL: {}\nstatus: {}\ncontent-type: {}\n\n",
            page.final_url, page.status, page.content_type
        );
        match text.char_indices().nth(self.max_chars) {
            Some((cut, _)) => {
                content.push_str(&text[..cut]);
                content.push_str(&format!(
                    "\n[truncated: showing the first {} of {total} characters]\n",
                    self.max_chars
                ));
            }
            None => content.push_str(&text),
        }
        if page.body_cut {
            content.push_str(&format!(
                "[the page is larger than {} MB; only its beginning was read]\n",
                MAX_BODY_BYTES / (1024 * 1024)
            ));
        }
        let details = json!({
            "url": page.final_url.as_str(),
            "redirects": page.redirects,
            "status": page.status,
            "content_type": page.content_type,
            "html": html,
            "body_bytes": page.body.len(),
            "body_truncated": page.body_cut,
            "chars": total,
            "truncated": total > self.max_chars,
        });
        Ok(ToolOutput::text(content).with_details(details))
    }

    /// Sends GETs, following redirects by hand with every target checked, and reads the body.
    async fn follow(&self, first: Url) -> Result<Page, ToolError> {
        let client = self.client()?;
        let mut url = first;
        let mut redirects = Vec::new();
        loop {
            let response = client.get(url.clone()).send().await.map_err(|e| transport(&e, &url))?;
            let status = response.status();
            let location = response.headers().get(LOCATION).and_then(|v| v.to_str().ok());
            if let (true, Some(location)) = (status.is_redirection(), location) {
                if redirects.len() >= MAX_REDIRECTS {
                    return Err(ToolError::failed(format!(
                        "{url} redirected more than {MAX_REDIRECTS} times; fetch the final URL \
                         directly if you know it"
                    )));
                }
                let next = url.join(location).map_err(|e| {
                    ToolError::failed(format!(
                        "{url} redirected to an invalid URL {location:?} ({e})"
                    ))
                })?;
                self.policy.check_parsed(&next).map_err(|e| {
                    ToolError::refused(format!("{url} redirected to {next}, which is refused: {e}"))
                })?;
                self.check_secrets(&next)?;
                redirects.push(next.to_string());
                url = next;
                continue;
            }
            if !status.is_success() {
                return Err(ToolError::failed(format!(
                    "{url} answered HTTP {status}; check the URL, or try another page"
                )));
            }
            let content_type = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .trim()
                .to_owned();
            if !content_type.is_empty() && !is_text_type(&content_type) {
                return Err(ToolError::refused(format!(
                    "{url} is {content_type}, not text; web_fetch returns web pages and text \
                     only (HTML, plain text, JSON, XML)"
                )));
            }
            let (body, body_cut) = read_capped(response, MAX_BODY_BYTES, &url).await?;
            return Ok(Page {
                final_url: url,
                redirects,
                status: status.as_u16(),
                content_type,
                body,
                body_cut,
            });
        }
    }
}

/// Reads at most `cap` bytes of the body; says whether more was left unread.
async fn read_capped(
    mut response: reqwest::Response,
    cap: usize,
    url: &Url,
) -> Result<(Vec<u8>, bool), ToolError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| transport(&e, url))? {
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// `text/*`, and the structured text types a page may be served as.
fn is_text_type(content_type: &str) -> bool {
    let mime = essence(content_type);
    mime.starts_with("text/")
        || mime.ends_with("+xml")
        || mime.ends_with("+json")
        || matches!(
            mime.as_str(),
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
                | "application/x-www-form-urlencoded"
        )
}

/// `text/html; charset=utf-8` → `text/html`.
fn essence(content_type: &str) -> String {
    content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

/// The `charset` parameter, lowercase.
fn charset(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches('"').to_ascii_lowercase())
    })
}

/// The body as text; HTML laid out as plain text. Also says whether it was HTML.
fn to_text(page: &Page) -> Result<(String, bool), ToolError> {
    let head = &page.body[..page.body.len().min(1024)];
    let mime = essence(&page.content_type);
    if page.content_type.is_empty() && head.contains(&0) {
        return Err(ToolError::refused(format!(
            "{} sent binary content without a content type; web_fetch returns text only",
            page.final_url
        )));
    }
    let decoded = match charset(&page.content_type).as_deref() {
        // Latin-1 maps byte for byte; windows-1252 differs only in rarely used 0x80..0x9f.
        Some("iso-8859-1" | "latin1" | "windows-1252" | "us-ascii") => {
            page.body.iter().map(|b| char::from(*b)).collect()
        }
        _ => String::from_utf8_lossy(&page.body).into_owned(),
    };
    let sniffed_html = page.content_type.is_empty() && looks_like_html(&decoded);
    let html = matches!(mime.as_str(), "text/html" | "application/xhtml+xml") || sniffed_html;
    if !html {
        return Ok((decoded, false));
    }
    let text = html2text::from_read(decoded.as_bytes(), TEXT_WIDTH).map_err(|e| {
        ToolError::failed(format!("{} could not be converted to text: {e}", page.final_url))
    })?;
    Ok((absolute_links(&tidy(&text), &page.final_url), true))
}

/// html2text lists links as `[1]: href` at the end; relative ones are made absolute against
/// the page's URL so they can be fetched in turn.
fn absolute_links(text: &str, base: &Url) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let reference = line.strip_prefix('[').and_then(|rest| rest.split_once("]: "));
        match reference {
            Some((n, href)) if n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty() => {
                match base.join(href) {
                    Ok(url) => out.push_str(&format!("[{n}]: {url}")),
                    Err(_) => out.push_str(line),
                }
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

fn looks_like_html(text: &str) -> bool {
    let start: String = text.trim_start().chars().take(15).collect::<String>().to_ascii_lowercase();
    start.starts_with("<!doctype html") || start.starts_with("<html")
}

/// Trailing spaces off, runs of blank lines down to one.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines().map(str::trim_end) {
        blank = if line.is_empty() { blank + 1 } else { 0 };
        if blank <= 1 {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.trim_matches('\n').to_owned() + "\n"
}

/// A transport failure: a refusal from the guarded resolver stays a refusal.
fn transport(err: &reqwest::Error, url: &Url) -> ToolError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(r) = e.downcast_ref::<SsrfRefusal>() {
            return ToolError::refused(r.to_string());
        }
        source = e.source();
    }
    let mut chain = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(e) = source {
        chain.push_str(&format!(": {e}"));
        source = e.source();
    }
    let what = if err.is_connect() {
        "could not connect"
    } else if err.is_timeout() {
        "timed out"
    } else {
        "failed"
    };
    ToolError::failed(format!("fetching {url} {what} ({chain}); check the URL or try again later"))
}

/// The HTTP client's DNS resolver: resolves with the system resolver and hands the client only
/// answers that pass the policy — all of them must, or the name is refused.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    policy: Arc<SsrfPolicy>,
}

impl GuardedResolver {
    pub fn new(policy: Arc<SsrfPolicy>) -> Self {
        GuardedResolver { policy }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = Arc::clone(&self.policy);
        let host = name.as_str().to_owned();
        Box::pin(resolve_checked(policy, host))
    }
}

async fn resolve_checked(
    policy: Arc<SsrfPolicy>,
    host: String,
) -> Result<Addrs, Box<dyn std::error::Error + Send + Sync>> {
    let addrs: Vec<std::net::SocketAddr> =
        tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
    let ips: Vec<IpAddr> = addrs.iter().map(|a| a.ip()).collect();
    policy.check_resolved(&host, &ips)?;
    let addrs: Addrs = Box::new(addrs.into_iter());
    Ok(addrs)
}

#[cfg(test)]
mod tests;

//! `web_fetch` against a loopback HTTP/1.1 server started in the test, through the `Tool`
//! contract. Loopback is reachable only because the tests allow 127.0.0.1 explicitly.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::outcome::{failed, refused};
use aria_api::{Tier, Tool, ToolContext, ToolError, ToolOutput};
use aria_tools::{SsrfPolicy, WebFetch};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The server: its port and how many requests it has seen.
struct Server {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

const PAGE: &str = "<!DOCTYPE html><html><head><title>Test page</title>\
    <style>body { color: red }</style><script>var hidden = 1;</script></head>\
    <body><h1>Hello from ARIA</h1><p>First &amp; <b>bold</b> paragraph.</p>\
    <ul><li>one</li><li>two</li></ul><a href=\"/next\">next page</a></body></html>";

fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut head =
        format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

fn route(path: &str) -> Option<Vec<u8>> {
    let html = [("Content-Type", "text/html; charset=utf-8")];
    Some(match path {
        "/page" => response("200 OK", &html, PAGE.as_bytes()),
        "/long" => {
            let body = "abcdefghij".repeat(5_000);
            response("200 OK", &[("Content-Type", "text/plain")], body.as_bytes())
        }
        "/huge" => {
            let body = "x".repeat(3 * 1024 * 1024);
            response("200 OK", &[("Content-Type", "text/plain")], body.as_bytes())
        }
        "/image" => {
            response("200 OK", &[("Content-Type", "image/png")], b"\x89PNG\r\n\x1a\n\0\0\0")
        }
        "/missing" => response("404 Not Found", &html, b"<p>no</p>"),
        "/redirect-relative" => response("302 Found", &[("Location", "/page")], b""),
        "/redirect-private" => response("302 Found", &[("Location", "http://10.0.0.1/admin")], b""),
        "/redirect-metadata" => response(
            "301 Moved Permanently",
            &[("Location", "http://[::ffff:169.254.169.254]/latest/meta-data/")],
            b"",
        ),
        "/redirect-decimal" => {
            response("307 Temporary Redirect", &[("Location", "http://2130706434/")], b"")
        }
        "/redirect-file" => response("302 Found", &[("Location", "file:///etc/passwd")], b""),
        "/loop" => response("302 Found", &[("Location", "/loop")], b""),
        "/hang" => return None,
        _ => response("404 Not Found", &[], b""),
    })
}

async fn serve_one(mut stream: TcpStream, hits: Arc<AtomicUsize>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    hits.fetch_add(1, Ordering::SeqCst);
    let head = String::from_utf8_lossy(&buf);
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    match route(&path) {
        Some(bytes) => {
            let _ = stream.write_all(&bytes).await;
            let _ = stream.shutdown().await;
        }
        // Never answer; hold the connection open until the client gives up.
        None => tokio::time::sleep(Duration::from_secs(60)).await,
    }
}

async fn server() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve_one(stream, Arc::clone(&counter)));
        }
    });
    Server { port, hits }
}

fn loopback_allowed() -> WebFetch {
    WebFetch::new(SsrfPolicy::public_only().allow_host("127.0.0.1").unwrap())
}

async fn fetch(tool: &WebFetch, url: &str) -> Result<ToolOutput, ToolError> {
    tool.call(json!({ "url": url }), &ToolContext::default()).await
}

#[tokio::test]
async fn html_becomes_readable_text() {
    let s = server().await;
    let out = fetch(&loopback_allowed(), &s.url("/page")).await.unwrap();
    let text = &out.content;
    assert!(
        text.starts_with(&format!(
            "URL: {}\nstatus: 200\ncontent-type: text/html; charset=utf-8\n\n",
            s.url("/page")
        )),
        "{text}"
    );
    for want in [
        "# Hello from ARIA",
        "First & **bold** paragraph.",
        "* one",
        "* two",
        "[next page][1]",
        "[1]: http://127.0.0.1:",
    ] {
        assert!(text.contains(want), "missing {want:?} in {text}");
    }
    assert!(text.contains(&format!("[1]: {}\n", s.url("/next"))), "links are absolute: {text}");
    for unwanted in ["<h1>", "<p>", "&amp;", "var hidden", "color: red"] {
        assert!(!text.contains(unwanted), "{unwanted:?} left in {text}");
    }
    assert_eq!(out.details["html"], json!(true));
    assert_eq!(out.details["truncated"], json!(false));
}

#[tokio::test]
async fn long_text_is_cut_at_ten_thousand_characters_and_says_so() {
    let s = server().await;
    let out = fetch(&loopback_allowed(), &s.url("/long")).await.unwrap();
    let body = out.content.split_once("\n\n").unwrap().1;
    let (kept, note) = body.split_once("\n[truncated").unwrap();
    assert_eq!(kept.chars().count(), 10_000);
    assert_eq!(note, ": showing the first 10000 of 50000 characters]\n");
    assert_eq!(out.details["truncated"], json!(true));
    // A body over 2 MB is not downloaded whole.
    let out = fetch(&loopback_allowed(), &s.url("/huge")).await.unwrap();
    assert_eq!(out.details["body_bytes"], json!(2 * 1024 * 1024));
    assert_eq!(out.details["body_truncated"], json!(true));
    assert!(
        out.content.contains("only its beginning was read"),
        "{}",
        &out.content[out.content.len() - 200..]
    );
}

#[tokio::test]
async fn redirects_are_followed_and_each_target_is_checked() {
    let s = server().await;
    let tool = loopback_allowed();
    let out = fetch(&tool, &s.url("/redirect-relative")).await.unwrap();
    assert!(out.content.contains("Hello from ARIA"));
    assert_eq!(out.details["redirects"], json!([s.url("/page")]));

    let before = s.hits.load(Ordering::SeqCst);
    let reason = refused(fetch(&tool, &s.url("/redirect-private")).await);
    assert!(
        reason.contains("redirected to http://10.0.0.1/admin, which is refused")
            && reason.contains("private network"),
        "{reason}"
    );
    let reason = refused(fetch(&tool, &s.url("/redirect-metadata")).await);
    assert!(reason.contains("cloud instance-metadata"), "{reason}");
    // 2130706434 is 127.0.0.2: loopback, but not the allowed 127.0.0.1.
    let reason = refused(fetch(&tool, &s.url("/redirect-decimal")).await);
    assert!(reason.contains("127.0.0.2") && reason.contains("loopback"), "{reason}");
    let reason = refused(fetch(&tool, &s.url("/redirect-file")).await);
    assert!(reason.contains("only http:// and https://"), "{reason}");
    // Only the redirecting requests reached the server; no refused target was requested.
    assert_eq!(s.hits.load(Ordering::SeqCst) - before, 4);

    let message = failed(fetch(&tool, &s.url("/loop")).await);
    assert!(message.contains("redirected more than 5 times"), "{message}");
}

#[tokio::test]
async fn a_silent_server_times_out() {
    let s = server().await;
    let tool = loopback_allowed().with_timeout(Duration::from_millis(300));
    let message = failed(fetch(&tool, &s.url("/hang")).await);
    assert!(message.contains("timed out after 0.3 s"), "{message}");
}

#[tokio::test]
async fn non_text_and_errors_are_refused_or_failed_clearly() {
    let s = server().await;
    let tool = loopback_allowed();
    let reason = refused(fetch(&tool, &s.url("/image")).await);
    assert!(reason.contains("is image/png, not text"), "{reason}");
    let message = failed(fetch(&tool, &s.url("/missing")).await);
    assert!(message.contains("HTTP 404 Not Found"), "{message}");
}

#[tokio::test]
async fn without_the_allowance_loopback_is_refused_before_any_request() {
    let s = server().await;
    let tool = WebFetch::new(SsrfPolicy::public_only());
    for url in [
        s.url("/page"),
        format!("http://localhost:{}/page", s.port),
        format!("http://2130706433:{}/page", s.port),
        format!("http://0x7f.1:{}/page", s.port),
        format!("http://[::ffff:127.0.0.1]:{}/page", s.port),
        format!("http://[::1]:{}/page", s.port),
    ] {
        let reason = refused(fetch(&tool, &url).await);
        assert!(reason.contains("public"), "{url}: {reason}");
    }
    assert_eq!(s.hits.load(Ordering::SeqCst), 0, "a refused URL reached the server");
}

#[tokio::test]
async fn an_allowed_name_goes_through_the_guarded_resolver() {
    let s = server().await;
    let tool = WebFetch::new(SsrfPolicy::public_only().allow_host("localhost").unwrap());
    let out = fetch(&tool, &format!("http://localhost:{}/page", s.port)).await.unwrap();
    assert!(out.content.contains("Hello from ARIA"));
}

#[tokio::test]
async fn credentials_and_secrets_in_urls_are_refused_and_dry_run_fetches_nothing() {
    let s = server().await;
    let tool = loopback_allowed();
    let reason =
        refused(fetch(&tool, &format!("http://user:pass@127.0.0.1:{}/page", s.port)).await);
    assert!(reason.contains("credentials"), "{reason}");
    let token = format!("ghp_{}", "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5");
    let reason = refused(fetch(&tool, &s.url(&format!("/page?token={token}"))).await);
    assert!(reason.contains("looks like a secret"), "{reason}");
    assert!(!reason.contains(&token), "the refusal repeats the secret: {reason}");

    let ctx = ToolContext { dry_run: true, ..ToolContext::default() };
    let out = tool.call(json!({"url": s.url("/page")}), &ctx).await.unwrap();
    assert!(
        out.content.starts_with(&format!(
            "dry run (tier read): nothing was fetched\nwould fetch: GET {}",
            s.url("/page")
        )),
        "{}",
        out.content
    );
    assert_eq!(s.hits.load(Ordering::SeqCst), 0);
}

#[test]
fn tier_is_read_and_the_description_says_what_is_reachable() {
    let tool = WebFetch::new(SsrfPolicy::public_only());
    assert_eq!(tool.tier(&json!({"url": "https://example.org/"})), Tier::Read);
    assert_eq!(tool.tier(&json!({"link": "x"})), Tier::Blocked);
    assert!(
        tool.spec().description.contains("public web pages only"),
        "{}",
        tool.spec().description
    );
    assert!(loopback_allowed().spec().description.contains("local hosts the user allowed"));
}

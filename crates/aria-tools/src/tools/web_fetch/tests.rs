//! Unit tests of `web_fetch`'s pieces: the guarded resolver inside the real HTTP client,
//! content types, charsets and the text tidy-up.

use std::str::FromStr;

use super::*;

#[tokio::test]
async fn the_resolver_refuses_private_answers_and_the_client_reports_the_refusal() {
    let policy = Arc::new(SsrfPolicy::public_only());
    // The resolver on its own: localhost resolves to loopback, which is refused.
    let resolver = GuardedResolver::new(Arc::clone(&policy));
    let err = match resolver.resolve(Name::from_str("localhost").unwrap()).await {
        Ok(addrs) => panic!("resolved to {:?}", addrs.collect::<Vec<_>>()),
        Err(e) => e,
    };
    let refusal = err.downcast_ref::<SsrfRefusal>().expect("an SSRF refusal");
    assert!(matches!(refusal, SsrfRefusal::Address { .. }), "{refusal:?}");

    // Inside the client (skipping the URL check, as a rebinding name would): no connection,
    // and the error still says why.
    let client = build_client(&policy, Duration::from_secs(5)).unwrap();
    let url = Url::parse("http://localhost:9/").unwrap();
    let err = client.get(url.clone()).send().await.unwrap_err();
    match transport(&err, &url) {
        ToolError::Refused { reason } => {
            assert!(reason.contains("a loopback address"), "{reason}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn the_resolver_passes_allowed_names() {
    let policy = Arc::new(SsrfPolicy::public_only().allow_host("localhost").unwrap());
    let resolver = GuardedResolver::new(policy);
    let addrs: Vec<_> =
        resolver.resolve(Name::from_str("localhost").unwrap()).await.unwrap().collect();
    assert!(!addrs.is_empty());
    assert!(addrs.iter().all(|a| a.ip().is_loopback()), "{addrs:?}");
}

#[test]
fn text_types_are_recognised_and_others_are_not() {
    for t in [
        "text/html",
        "text/html; charset=utf-8",
        "TEXT/PLAIN",
        "application/json",
        "application/ld+json",
        "application/rss+xml",
        "application/xhtml+xml",
        "text/markdown",
    ] {
        assert!(is_text_type(t), "{t}");
    }
    for t in
        ["image/png", "application/pdf", "application/octet-stream", "video/mp4", "application/zip"]
    {
        assert!(!is_text_type(t), "{t}");
    }
}

#[test]
fn charsets_are_read_from_the_content_type() {
    assert_eq!(charset("text/html; charset=ISO-8859-1"), Some("iso-8859-1".into()));
    assert_eq!(charset("text/html;charset=\"utf-8\""), Some("utf-8".into()));
    assert_eq!(charset("text/html"), None);
}

fn page(content_type: &str, body: &[u8]) -> Page {
    Page {
        final_url: Url::parse("http://example.org/").unwrap(),
        redirects: Vec::new(),
        status: 200,
        content_type: content_type.into(),
        body: body.to_vec(),
        body_cut: false,
    }
}

#[test]
fn bodies_become_text() {
    let (text, html) = to_text(&page(
        "text/html",
        b"<html><body><h1>Title</h1><p>One &amp; two</p>\n\n\n<p>Three</p></body></html>",
    ))
    .unwrap();
    assert!(html);
    assert!(
        text.contains("Title") && text.contains("One & two") && text.contains("Three"),
        "{text}"
    );
    assert!(!text.contains('<'), "{text}");
    assert!(!text.contains("\n\n\n"), "{text:?}");
    // Latin-1 decodes byte for byte.
    let (text, html) = to_text(&page("text/plain; charset=iso-8859-1", b"caf\xe9")).unwrap();
    assert_eq!((text.as_str(), html), ("café", false));
    // No content type: HTML is sniffed, binary refused.
    let (_, html) = to_text(&page("", b"<!DOCTYPE html><p>x</p>")).unwrap();
    assert!(html);
    assert!(matches!(to_text(&page("", b"\x89PNG\r\n\x1a\n\0\0")), Err(ToolError::Refused { .. })));
}

#[test]
fn tidy_trims_and_collapses_blank_lines() {
    assert_eq!(tidy("\n\na  \n\n\n\nb\n\n"), "a\n\nb\n");
}

#[test]
fn relative_links_are_made_absolute() {
    let base = Url::parse("https://example.org/docs/page.html").unwrap();
    let text = "See [a][1] and [b][2].\n\n[1]: /top\n[2]: other.html\n[x]: /kept\n";
    assert_eq!(
        absolute_links(text, &base),
        "See [a][1] and [b][2].\n\n[1]: https://example.org/top\n[2]: https://example.org/docs/other.html\n[x]: /kept\n"
    );
}

#[test]
fn ordinary_urls_pass_the_secret_check_and_tokens_do_not() {
    let tool = WebFetch::new(SsrfPolicy::public_only());
    for ok in [
        "https://www.google.com/search?q=rust+password+manager",
        "https://github.com/rust-lang/rust/commit/3f5e3c9f0c3e0c5b7f1d5e6a7b8c9d0e1f2a3b4c",
        "https://www.youtube.com/watch?v=dQw4w9WgXcQ",
        "https://docs.rs/reqwest/latest/reqwest/struct.ClientBuilder.html#method.dns_resolver",
        "https://example.org/items/550e8400-e29b-41d4-a716-446655440000",
    ] {
        let url = Url::parse(ok).unwrap();
        assert!(tool.check_secrets(&url).is_ok(), "{ok}");
    }
    let leak = Url::parse(
        "https://evil.example/?k=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH",
    )
    .unwrap();
    assert!(matches!(tool.check_secrets(&leak), Err(ToolError::Refused { .. })));
}

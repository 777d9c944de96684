use super::*;

#[test]
fn loopback_hosts_are_names_and_addresses_of_this_machine_only() {
    for host in [
        "localhost",
        "localhost:8080",
        "LOCALHOST.",
        "app.localhost:1",
        "127.0.0.1",
        "127.0.0.1:8080",
        "127.1.2.3:9",
        "[::1]:8080",
        "[::1]",
    ] {
        assert!(is_loopback_host(host), "{host}");
    }
    for host in [
        "evil.example",
        "evil.example:8080",
        "localhost.evil.example",
        "127.0.0.1.evil.example",
        "10.0.0.1:8080",
        "[::2]:8080",
        "0.0.0.0",
        "",
        "localhost:80:80",
        "[::1]evil",
        // An IPv6 address in `Host` must be bracketed; a bare one is refused, not guessed at.
        "::1",
    ] {
        assert!(!is_loopback_host(host), "{host}");
    }
}

#[test]
fn tokens_match_only_when_equal() {
    assert!(token_matches("s3cret", "s3cret"));
    assert!(!token_matches("s3cret", "s3cret "));
    assert!(!token_matches("", "s3cret"));
    assert!(!token_matches("S3cret", "s3cret"));
}

#[test]
fn cookies_are_found_by_exact_name_across_headers() {
    let mut headers = HeaderMap::new();
    headers.append(header::COOKIE, "x_aria_session=no; theme=dark".parse().unwrap());
    headers.append(header::COOKIE, "aria_session=abc; aria_csrf=def".parse().unwrap());
    assert_eq!(cookie(&headers, SESSION_COOKIE).as_deref(), Some("abc"));
    assert_eq!(cookie(&headers, CSRF_COOKIE).as_deref(), Some("def"));
    assert_eq!(cookie(&headers, "missing"), None);
}

#[test]
fn a_login_needs_the_token_and_its_csrf_value_on_changes() {
    let security = Security::new(Some("tok".into()), true, vec![], 0);
    assert!(security.login("wrong").is_none());
    let (session, csrf) = security.login("tok").unwrap();
    let mut headers = HeaderMap::new();
    headers.insert(header::COOKIE, format!("{SESSION_COOKIE}={session}").parse().unwrap());
    assert!(security.authenticated(&headers, false).is_ok());
    let refused = security.authenticated(&headers, true).unwrap_err();
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    headers.insert(CSRF_HEADER, csrf.parse().unwrap());
    assert!(security.authenticated(&headers, true).is_ok());
    security.logout(&headers);
    assert_eq!(
        security.authenticated(&headers, false).unwrap_err().status,
        StatusCode::UNAUTHORIZED
    );
}

#[test]
fn bearer_tokens_are_checked_and_no_token_means_open() {
    let open = Security::new(None, true, vec![], 0);
    assert!(open.authenticated(&HeaderMap::new(), true).is_ok());
    let closed = Security::new(Some("tok".into()), false, vec![], 0);
    let mut headers = HeaderMap::new();
    assert_eq!(closed.authenticated(&headers, false).unwrap_err().code, "unauthorized");
    headers.insert(header::AUTHORIZATION, "Bearer nope".parse().unwrap());
    assert_eq!(closed.authenticated(&headers, false).unwrap_err().code, "unauthorized");
    headers.insert(header::AUTHORIZATION, "bearer tok".parse().unwrap());
    assert!(closed.authenticated(&headers, true).is_ok());
}

#[test]
fn the_rate_limit_empties_a_bucket_per_client() {
    let security = Security::new(None, true, vec![], 3);
    let a = IpAddr::from([127, 0, 0, 1]);
    let b = IpAddr::from([127, 0, 0, 2]);
    assert!((0..3).all(|_| security.admit(&security.buckets, a)));
    assert!(!security.admit(&security.buckets, a));
    assert!(security.admit(&security.buckets, b), "another client has its own bucket");
    let unlimited = Security::new(None, true, vec![], 0);
    assert!((0..10_000).all(|_| unlimited.admit(&unlimited.buckets, a)));
}

#[test]
fn each_scope_reaches_only_its_own_routes() {
    use Method as M;
    let cases: &[(Scope, &Method, &str, bool, bool)] = &[
        (Scope::Read, &M::GET, "/api/v1/memories", false, true),
        (Scope::Read, &M::POST, "/api/v1/conversations", false, false),
        (Scope::Read, &M::GET, "/api/v1/ws", true, false),
        (Scope::Read, &M::POST, "/mcp", false, false),
        (Scope::Chat, &M::POST, "/api/v1/conversations", false, true),
        (Scope::Chat, &M::POST, "/api/v1/conversations/x/messages", false, true),
        (Scope::Chat, &M::POST, "/api/v1/runs/x/cancel", false, true),
        (Scope::Chat, &M::GET, "/api/v1/ws", true, true),
        (Scope::Chat, &M::POST, "/v1/chat/completions", false, true),
        (Scope::Chat, &M::POST, "/api/v1/approvals/x", false, false),
        (Scope::Chat, &M::POST, "/api/v1/schedules", false, false),
        (Scope::Chat, &M::PATCH, "/api/v1/memories/x", false, false),
        (Scope::Chat, &M::POST, "/api/v1/login-codes", false, false),
        (Scope::Mcp, &M::POST, "/mcp", false, true),
        (Scope::Mcp, &M::GET, "/api/v1/memories", false, false),
        (Scope::Admin, &M::POST, "/api/v1/approvals/x", false, true),
    ];
    for (scope, method, path, upgrade, allowed) in cases {
        assert_eq!(scope.permits(method, path, *upgrade), *allowed, "{scope:?} {method} {path}");
    }
    assert_eq!(Scope::parse("chat"), Some(Scope::Chat));
    assert_eq!(Scope::parse("root"), None);
}

#[test]
fn a_login_code_works_once_and_logins_end_when_idle() {
    let security = Security::new(Some("tok".into()), true, vec![], 0);
    let code = security.issue_login_code().unwrap();
    assert!(security.redeem_login_code("not-the-code").is_none());
    let (session, _) = security.redeem_login_code(&code).unwrap();
    assert!(security.redeem_login_code(&code).is_none(), "spent");
    let mut headers = HeaderMap::new();
    headers.insert(header::COOKIE, format!("{SESSION_COOKIE}={session}").parse().unwrap());
    assert_eq!(security.identify(&headers, false).unwrap(), Identity::web_session());
    let idle = Security::new(Some("tok".into()), true, vec![], 0)
        .with_session_idle(Duration::from_millis(1));
    let code = idle.issue_login_code().unwrap();
    let (session, _) = idle.redeem_login_code(&code).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let mut headers = HeaderMap::new();
    headers.insert(header::COOKIE, format!("{SESSION_COOKIE}={session}").parse().unwrap());
    assert_eq!(idle.identify(&headers, false).unwrap_err().code, "unauthorized");
    assert!(
        Security::new(None, true, vec![], 0).issue_login_code().is_none(),
        "nothing to log in to"
    );
}

#[test]
fn a_scoped_token_is_its_own_identity() {
    let security = Security::new(Some("owner".into()), true, vec![], 0).with_tokens(Arc::new(
        |given: &str| (given == "scoped").then(|| ("ci".to_owned(), Scope::Read)),
    ));
    let with = |token: &str| {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
        security.identify(&headers, true)
    };
    assert_eq!(with("owner").unwrap(), Identity::owner());
    let scoped = with("scoped").unwrap();
    assert_eq!(
        (scoped.label.as_str(), scoped.scope, scoped.person),
        ("api:token ci", Scope::Read, false)
    );
    assert_eq!(with("other").unwrap_err().code, "unauthorized");
}

//! The daemon's HTTP contract, end to end through the real binary: SSE event order, approvals
//! answered over HTTP (approve and deny), a second follower, cancel, errors and the listener's
//! protections.

use std::time::Duration;

use aria_testkit::openai_mock::{MockOpenAi, MockTurn};
use serde_json::json;

use super::daemon::{Daemon, Events, message_events, new_conversation};
use super::harness::{Aria, code, text};

#[test]
fn a_streamed_answer_says_started_states_text_usage_then_done_and_matches_the_store() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("file_read", r#"{"path":"notes.txt"}"#),
        MockTurn::text("The code is 4242."),
    ])
    .serve();
    let daemon = Daemon::start(&aria, &mock.base_url(), &[]);
    let conversation = new_conversation(&daemon);
    let mut events = message_events(&daemon, &conversation, "What is the code in notes.txt?");
    let events = events.rest().to_vec();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"state"));
    assert_eq!(events[0].1["state"], "started");
    let at = |name: &str| {
        names.iter().position(|n| *n == name).unwrap_or_else(|| panic!("{name} in {names:?}"))
    };
    assert!(at("tool_call") < at("tool_result") && at("tool_result") < at("text"), "{names:?}");
    assert_eq!(&names[names.len() - 2..], ["usage", "done"], "{names:?}");
    let call = &events[at("tool_call")].1;
    assert_eq!((call["name"].clone(), call["tier"].clone()), (json!("file_read"), json!("read")));
    assert!(events[at("tool_result")].1["summary"].as_str().unwrap().contains("4242"));
    let text: String = events
        .iter()
        .filter(|(n, _)| n == "text")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "The code is 4242.");
    let done = &events.last().unwrap().1;
    assert_eq!(
        (done["state"].clone(), done["answer"].clone()),
        (json!("done"), json!("The code is 4242."))
    );
    let session = done["session_id"].as_str().unwrap();
    let (status, run) = daemon.json("GET", &format!("/api/v1/runs/{session}"), None);
    assert_eq!(status, 200);
    assert_eq!(run["state"], "done");
    assert!(run["audit"].as_array().unwrap().iter().any(|r| r["kind"] == "session.start"), "{run}");
    let (_, detail) = daemon.json("GET", &format!("/api/v1/conversations/{conversation}"), None);
    assert_eq!(detail["title"], "What is the code in notes.txt?");
    let roles: Vec<&str> = detail["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    let tool = &detail["messages"][2]["content"];
    assert!(
        !tool.as_str().unwrap().contains("<<tool_output"),
        "fence markers are not shown: {tool}"
    );
}

#[test]
fn an_irreversible_call_asks_the_page_and_is_approved_or_denied_over_http() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("python_run", r#"{"code":"print(6*7)"}"#),
        MockTurn::text("It ran."),
        MockTurn::tool_call("python_run", r#"{"code":"print(1)"}"#),
        MockTurn::text("It was denied."),
    ])
    .serve();
    // Memory extraction after a turn would take the script's next turn.
    let daemon = Daemon::start_without_extraction(&aria, &mock.base_url());
    let conversation = new_conversation(&daemon);

    let mut events = message_events(&daemon, &conversation, "compute 6*7 in python");
    let asked = events.next_named("approval");
    assert_eq!(
        (asked["tool"].clone(), asked["tier"].clone()),
        (json!("python_run"), json!("irreversible"))
    );
    let id = asked["id"].as_str().unwrap();
    let (_, pending) = daemon.json("GET", "/api/v1/approvals", None);
    assert_eq!(pending["items"][0]["id"], *id, "{pending}");
    // A second page follows the same run and hears the same question.
    let session = asked["session_id"].as_str().unwrap();
    let mut second = Events::get(&daemon, &format!("/api/v1/runs/{session}/events"));
    assert_eq!(second.next_named("approval")["id"], *id);
    // The credential that started the run is the client waiting: it may not approve.
    let (status, own) = daemon.json(
        "POST",
        &format!("/api/v1/approvals/{id}"),
        Some(&json!({"decision": "approve"})),
    );
    assert_eq!((status, own["error"]["code"].clone()), (403, json!("forbidden")), "{own}");
    // A person's web login may.
    let (cookie, csrf) = daemon.web_login(&daemon.login_link());
    let person = [("Cookie", cookie.as_str()), ("X-CSRF-Token", csrf.as_str())];
    let (status, answered) = daemon.request(
        "POST",
        &format!("/api/v1/approvals/{id}"),
        Some(&json!({"decision": "approve"})),
        &person,
    );
    let answered: serde_json::Value = serde_json::from_str(&answered).unwrap();
    assert_eq!((status, answered["status"].clone()), (200, json!("approved")), "{answered}");
    assert_eq!(answered["answered_by"], "web:session", "who answered is recorded");
    let result = events.next_named("tool_result");
    assert_ne!(result["outcome"], "denied", "{result}");
    assert_eq!(events.next_named("done")["answer"], "It ran.");
    second.next_named("done");
    let (status, twice) = daemon.request(
        "POST",
        &format!("/api/v1/approvals/{id}"),
        Some(&json!({"decision": "deny"})),
        &person,
    );
    assert_eq!(status, 409, "{twice}");

    let mut events = message_events(&daemon, &conversation, "now print 1");
    let asked = events.next_named("approval");
    let id = asked["id"].as_str().unwrap();
    let (status, _) = daemon.request(
        "POST",
        &format!("/api/v1/approvals/{id}"),
        Some(&json!({"decision": "deny"})),
        &person,
    );
    assert_eq!(status, 200);
    let result = events.next_named("tool_result");
    assert_eq!(result["outcome"], "denied", "{result}");
    assert_eq!(events.next_named("done")["state"], "done");
    let (status, bad) =
        daemon.json("POST", "/api/v1/approvals/nope", Some(&json!({"decision": "maybe"})));
    assert_eq!((status, bad["error"]["code"].clone()), (400, json!("bad_request")), "{bad}");
}

#[test]
fn a_run_in_flight_is_cancelled_and_its_conversation_cannot_be_deleted_meanwhile() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![MockTurn::Stall]).serve();
    let daemon = Daemon::start(&aria, &mock.base_url(), &[]);
    let conversation = new_conversation(&daemon);
    let mut events = message_events(&daemon, &conversation, "hello");
    let started = events.next_named("state");
    let session = started["session_id"].as_str().unwrap().to_owned();
    assert!(mock.wait_for_hits_blocking(1, Duration::from_secs(20)));
    let (status, busy) =
        daemon.json("DELETE", &format!("/api/v1/conversations/{conversation}"), None);
    assert_eq!((status, busy["error"]["code"].clone()), (409, json!("conflict")));
    let (status, _) = daemon.json("POST", &format!("/api/v1/runs/{session}/cancel"), None);
    assert_eq!(status, 202);
    assert_eq!(events.next_named("done")["state"], "cancelled");
    let (status, _) = daemon.json("POST", &format!("/api/v1/runs/{session}/cancel"), None);
    assert_eq!(status, 409, "not running any more");
    let (status, _) = daemon.json("DELETE", &format!("/api/v1/conversations/{conversation}"), None);
    assert_eq!(status, 204);
    let (status, gone) = daemon.json("GET", &format!("/api/v1/conversations/{conversation}"), None);
    assert_eq!((status, gone["error"]["code"].clone()), (404, json!("not_found")));
    let verify = aria.run(&mock.base_url(), &["audit", "verify"]);
    assert_eq!(code(&verify), 0, "{}", text(&verify.stdout));
}

/// A request (method, path, body, headers) and the status and error code it must get.
type Case<'a> = (&'a str, String, Option<String>, Vec<(&'a str, &'a str)>, u16, &'a str);

#[test]
fn bad_requests_get_the_error_shape_and_never_a_500() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![]).serve();
    let daemon = Daemon::start(&aria, &mock.base_url(), &[]);
    let conversation = new_conversation(&daemon);
    let messages = format!("/api/v1/conversations/{conversation}/messages");
    let own_https = format!("https://{}", daemon.address);
    let cases: Vec<Case> = vec![
        (
            "POST",
            messages.clone(),
            Some("{not json".into()),
            vec![("Content-Type", "application/json")],
            400,
            "bad_request",
        ),
        (
            "POST",
            messages.clone(),
            Some(r#"{"content": 5}"#.into()),
            vec![("Content-Type", "application/json")],
            400,
            "bad_request",
        ),
        (
            "POST",
            messages.clone(),
            Some(r#"{"content": "  "}"#.into()),
            vec![("Content-Type", "application/json")],
            400,
            "bad_request",
        ),
        (
            "POST",
            messages.clone(),
            Some(r#"{"content": "x"}"#.into()),
            vec![("Content-Type", "text/plain")],
            415,
            "unsupported_media_type",
        ),
        (
            "POST",
            "/api/v1/conversations/nope/messages".into(),
            Some(r#"{"content": "x"}"#.into()),
            vec![("Content-Type", "application/json")],
            404,
            "not_found",
        ),
        ("GET", "/api/v1/runs/nope".into(), None, vec![], 404, "not_found"),
        ("GET", "/api/v1/nothing".into(), None, vec![], 404, "not_found"),
        ("DELETE", "/api/v1/health".into(), None, vec![], 405, "method_not_allowed"),
        ("GET", "/api/v1/runs?limit=-1".into(), None, vec![], 400, "bad_request"),
        (
            "PATCH",
            format!("/api/v1/conversations/{conversation}"),
            Some(r#"{"name": "x"}"#.into()),
            vec![("Content-Type", "application/json")],
            400,
            "bad_request",
        ),
        (
            "POST",
            messages.clone(),
            Some(format!(r#"{{"content": "{}"}}"#, "a".repeat(1_100_000))),
            vec![("Content-Type", "application/json")],
            413,
            "payload_too_large",
        ),
        (
            "GET",
            "/api/v1/health".into(),
            None,
            vec![("Host", "attacker.example")],
            403,
            "forbidden",
        ),
        (
            "POST",
            "/api/v1/conversations".into(),
            Some("{}".into()),
            vec![("Content-Type", "application/json"), ("Origin", "https://attacker.example")],
            403,
            "forbidden",
        ),
        (
            "POST",
            "/api/v1/conversations".into(),
            Some("{}".into()),
            vec![("Content-Type", "application/json"), ("Origin", "null")],
            403,
            "forbidden",
        ),
        (
            "POST",
            "/api/v1/conversations".into(),
            Some("{}".into()),
            vec![("Content-Type", "application/json"), ("Sec-Fetch-Site", "cross-site")],
            403,
            "forbidden",
        ),
        // Another site's page may not even read (nor spend the rate limit).
        (
            "GET",
            "/api/v1/tools".into(),
            None,
            vec![("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "no-cors")],
            403,
            "forbidden",
        ),
        (
            "GET",
            "/api/v1/health".into(),
            None,
            vec![("Host", "localhost"), ("Host", "evil.example")],
            403,
            "forbidden",
        ),
        (
            "GET",
            "http://evil.example/api/v1/health".into(),
            None,
            vec![("Host", "localhost")],
            403,
            "forbidden",
        ),
        (
            "POST",
            "/api/v1/conversations".into(),
            Some("{}".into()),
            vec![("Content-Type", "application/json"), ("Origin", &own_https)],
            403,
            "forbidden",
        ),
    ];
    for (method, path, body, headers, status, code_name) in cases {
        let (got, raw) = daemon.request_raw(method, &path, body.as_deref(), &headers);
        let value: serde_json::Value = serde_json::from_str(&raw).unwrap_or_default();
        assert_eq!(got, status, "{method} {path} {headers:?}: {raw}");
        assert_eq!(value["error"]["code"], code_name, "{method} {path}: {raw}");
        assert!(!value["error"]["message"].as_str().unwrap_or("").is_empty(), "{raw}");
        assert!(value["error"]["hint"].is_string(), "{raw}");
    }
    // The page's own origin is fine.
    let own = format!("http://{}", daemon.address);
    let (status, _) = daemon.request_raw(
        "POST",
        "/api/v1/conversations",
        Some("{}"),
        &[("Content-Type", "application/json"), ("Origin", &own)],
    );
    assert_eq!(status, 201);
}

#[test]
fn a_client_that_never_finishes_its_request_head_is_disconnected() {
    use std::io::{Read, Write};
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![]).serve();
    let daemon = Daemon::start(&aria, &mock.base_url(), &[]);
    let mut slow = std::net::TcpStream::connect(&daemon.address).unwrap();
    slow.write_all(b"GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\n").unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let started = std::time::Instant::now();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(25), "closed after {waited:?}");
    // Meanwhile others are served as usual.
    assert_eq!(daemon.request("GET", "/api/v1/health", None, &[]).0, 200);
}

/// The web page shows an approval question as the server renders it for every channel: the
/// whole call, hidden characters as their code points.
#[test]
fn the_page_gets_the_whole_call_with_hidden_characters_shown() {
    let aria = Aria::new();
    let padding = "x".repeat(5_000);
    let code = format!("print('{padding}') # \u{202E}end ; rm -rf important");
    let arguments = json!({ "code": code }).to_string();
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("python_run", &arguments),
        MockTurn::text("Not run."),
    ])
    .serve();
    let daemon = Daemon::start_without_extraction(&aria, &mock.base_url());
    let conversation = new_conversation(&daemon);
    let mut events = message_events(&daemon, &conversation, "run it");
    let asked = events.next_named("approval");
    let shown = asked["shown"].as_str().expect("the question carries its rendering");
    assert!(shown.contains(&padding), "nothing is cut");
    assert!(shown.contains("# ⟨U+202E⟩end ; rm -rf important"), "{}", &shown[shown.len() - 80..]);
    assert!(!shown.contains('\u{202E}'));
    let id = asked["id"].as_str().unwrap();
    let (status, _) = daemon.answer_as_person(id, "deny");
    assert_eq!(status, 200);
}

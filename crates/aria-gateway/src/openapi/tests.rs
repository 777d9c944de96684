use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;
use crate::security;

fn doc() -> Value {
    serde_json::to_value(document()).expect("the document serializes")
}

/// Every operation as `(METHOD, path, operation)`.
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("a path item") {
            out.push((method.to_uppercase(), path.clone(), operation.clone()));
        }
    }
    out
}

#[test]
fn every_operation_documents_what_the_layers_in_front_of_it_answer() {
    let doc = doc();
    let all = operations(&doc);
    assert!(all.len() > 30, "{} operations", all.len());
    for (method, path, operation) in &all {
        let statuses: Vec<&str> = operation["responses"]
            .as_object()
            .expect("responses")
            .keys()
            .map(|k| k.as_str())
            .collect();
        let has = |status: &str| statuses.contains(&status);
        let public = security::public(&method.parse().expect("a method"), path);
        // (A public operation may answer 401 itself: the login, to a wrong token.)
        assert!(public || has("401"), "{method} {path}: 401 when the token is missing");
        assert!(has("403"), "{method} {path}: the Host/Origin checks answer 403");
        assert_eq!(
            has("429"),
            !(method == "GET" && path == "/api/v1/health"),
            "{method} {path}: 429 from the rate limit"
        );
        if ["POST", "PUT", "PATCH"].contains(&method.as_str()) {
            assert!(has("415"), "{method} {path}: a body that is not JSON is a 415");
        }
        if operation.get("requestBody").is_some() {
            assert!(has("400") && has("413"), "{method} {path}: a bad or huge body");
        }
        let expected = if path.starts_with("/v1/") { "OpenAiErrorBody" } else { "ErrorBody" };
        for (status, response) in operation["responses"].as_object().expect("responses") {
            if status.starts_with('4') || status.starts_with('5') {
                assert_eq!(
                    response["content"]["application/json"]["schema"]["$ref"],
                    json!(format!("#/components/schemas/{expected}")),
                    "{method} {path} {status}"
                );
            }
        }
    }
}

#[test]
fn the_token_is_documented_where_it_is_needed() {
    let doc = doc();
    assert_eq!(doc["components"]["securitySchemes"][BEARER]["scheme"], json!("bearer"));
    for (method, path, operation) in operations(&doc) {
        let public = security::public(&method.parse().expect("a method"), &path);
        let expected = if public { json!([{}]) } else { json!([{ BEARER: [] }]) };
        assert_eq!(operation["security"], expected, "{method} {path}");
    }
}

#[test]
fn every_pattern_is_the_not_blank_one_or_an_agent_name() {
    fn patterns(v: &Value, found: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                if let Some(Value::String(p)) = map.get("pattern") {
                    found.push(p.clone());
                }
                map.values().for_each(|v| patterns(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| patterns(v, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    patterns(&doc(), &mut found);
    // Message content, memory content (new and edited), search text.
    assert!(found.iter().filter(|p| *p == NOT_BLANK).count() >= 4, "{found:?}");
    // Besides it, only the agents' plain-ASCII name and choice patterns (the same in every
    // regular-expression dialect a client may check them with).
    let agents = [
        "^[a-z0-9_-]{1,32}$",
        "^([a-z0-9_-]{1,32})?$",
        "^(governed|supervised|read_only)$",
        "^(shared|own)$",
        "^(local|ollama|openai|anthropic)/.*[^ ].*$",
        "^((local|ollama|openai|anthropic)/.*[^ ].*)?$",
    ];
    for p in found {
        assert!(p == NOT_BLANK || agents.contains(&p.as_str()), "{p}");
    }
}

#[test]
fn not_blank_is_what_trim_calls_white_space() {
    // Every character `str::trim` removes is in the pattern's class, and nothing else: checked
    // over the Basic Multilingual Plane (all of Unicode's White_Space is in it).
    let class = NOT_BLANK.strip_prefix("[^").and_then(|c| c.strip_suffix(']')).expect("a class");
    let mut listed = Vec::new();
    let mut rest = class;
    while !rest.is_empty() {
        let (c, tail) = one_char(rest);
        if let Some(after) = tail.strip_prefix('-') {
            let (end, tail) = one_char(after);
            listed.extend((c as u32..=end as u32).filter_map(char::from_u32));
            rest = tail;
        } else {
            listed.push(c);
            rest = tail;
        }
    }
    let white: Vec<char> =
        (0..=0xFFFFu32).filter_map(char::from_u32).filter(|c| c.is_whitespace()).collect();
    listed.sort_unstable();
    assert_eq!(listed, white);
}

/// One character of a regex class: itself, or an escape (`\t`, `\x0B`, `\u00A0`, …).
fn one_char(s: &str) -> (char, &str) {
    let Some(escape) = s.strip_prefix('\\') else {
        let c = s.chars().next().expect("a character");
        return (c, &s[c.len_utf8()..]);
    };
    let hex = |digits: &str| {
        char::from_u32(u32::from_str_radix(digits, 16).expect("hex")).expect("a char")
    };
    match escape.as_bytes()[0] {
        b't' => ('\t', &escape[1..]),
        b'n' => ('\n', &escape[1..]),
        b'f' => ('\u{c}', &escape[1..]),
        b'r' => ('\r', &escape[1..]),
        b'x' => (hex(&escape[1..3]), &escape[3..]),
        b'u' => (hex(&escape[1..5]), &escape[5..]),
        other => panic!("unexpected escape \\{}", other as char),
    }
}

#[test]
fn bodies_that_may_be_left_out_are_optional() {
    let doc = doc();
    for (method, path) in [
        ("post", "/api/v1/conversations"),
        ("post", "/api/v1/runs/{id}/resume"),
        ("post", "/api/v1/snapshots/{id}/rollback"),
    ] {
        let body = &doc["paths"][path][method]["requestBody"];
        assert!(body.is_object(), "{method} {path} documents its body");
        assert_ne!(body["required"], json!(true), "{method} {path}: the body may be left out");
    }
    assert_eq!(doc["paths"]["/api/v1/memories"]["post"]["requestBody"]["required"], json!(true));
}

#[test]
fn streamed_answers_are_documented_as_event_streams() {
    let doc = doc();
    for (method, path) in [
        ("post", "/api/v1/conversations/{id}/messages"),
        ("post", "/api/v1/runs/{id}/resume"),
        ("get", "/api/v1/runs/{id}/events"),
        ("get", "/api/v1/notifications/events"),
        ("post", "/v1/chat/completions"),
    ] {
        let content = &doc["paths"][path][method]["responses"]["200"]["content"];
        assert!(content["text/event-stream"].is_object(), "{method} {path}: {content}");
    }
}

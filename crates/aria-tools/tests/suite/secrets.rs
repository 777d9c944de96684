//! `SecretRedactor`: one example per kind of secret, plus the things it must leave alone.

use std::borrow::Cow;

use aria_api::Redact;
use aria_tools::SecretRedactor;
use pretty_assertions::assert_eq;

fn redactor() -> SecretRedactor {
    SecretRedactor::new(Vec::new())
}

/// Asserts that `secret` inside `line` disappears and `[REDACTED:kind]` appears in its place.
#[track_caller]
fn assert_redacted(line: &str, secret: &str, kind: &str) {
    assert!(line.contains(secret), "bad test: {line:?} does not contain {secret:?}");
    let out = redactor().redact(line);
    assert!(!out.contains(secret), "{kind}: secret survived in {out:?}");
    assert_eq!(out, line.replace(secret, &format!("[REDACTED:{kind}]")), "{kind}");
}

#[test]
fn openai_keys() {
    let k = "sk-abcdEFGH1234ijklMNOP5678qrstUVWX9012yzab3456";
    assert_redacted(&format!("key is {k} ok"), k, "openai_key");
    let k = "sk-proj-Ab3_dEf-9hIjKlMnOpQrStUvWxYz0123456789AbCdEf";
    assert_redacted(&format!("OPENAI={k}"), k, "openai_key");
}

#[test]
fn anthropic_keys() {
    let k = "sk-ant-api03-Abc123_def456-GHI789jklMNO012pqrSTU345vwx";
    assert_redacted(&format!("anthropic {k}"), k, "anthropic_key");
}

#[test]
fn github_tokens() {
    for k in [
        "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
        "gho_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
        "ghu_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
        "ghs_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
        "ghr_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRS",
    ] {
        assert_redacted(&format!("git clone https://{k}@github.com/o/r"), k, "github_token");
    }
}

#[test]
fn gitlab_slack_stripe() {
    let k = "glpat-x1Y2z3A4b5C6d7E8f9G0";
    assert_redacted(&format!("token {k}"), k, "gitlab_token");
    let k = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx";
    assert_redacted(&format!("slack {k}"), k, "slack_token");
    let k = "xoxp-1234567890-abcdefghij";
    assert_redacted(&format!("slack {k}"), k, "slack_token");
    let k = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
    assert_redacted(&format!("stripe {k}"), k, "stripe_key");
    let k = "rk_live_51H8abcDEFghiJKLmnoPQRstu";
    assert_redacted(&format!("stripe {k}"), k, "stripe_key");
}

#[test]
fn aws_keys() {
    let k = "AKIA2OGYBAH6TQ3LWXPZ";
    assert_redacted(&format!("id={k},"), k, "aws_access_key_id");
    let k = "ASIAY34FZKBOKMUTVV7A";
    assert_redacted(k, k, "aws_access_key_id");
    let s = "q3Vd8Rk2Zt/Hm9Lp4Wx+Jc7Nb1Ys6Gf0Ea5Ku2Ti";
    assert_redacted(&format!("aws_secret_access_key = {s}"), s, "aws_secret_access_key");
    assert_redacted(&format!("AWS_SECRET_ACCESS_KEY={s}"), s, "aws_secret_access_key");
}

#[test]
fn google_and_telegram() {
    let k = "AIzaSyA1b2C3d4E5f6G7h8I9j0K_L-m3N4o5P6q";
    assert_eq!(k.len(), 39);
    assert_redacted(&format!("https://maps.example/api?k={k}&q=x"), k, "google_api_key");
    let k = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawq";
    assert_redacted(&format!("https://api.telegram.org/bot{k}/getMe"), k, "telegram_bot_token");
}

#[test]
fn jwts() {
    let k = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    assert_redacted(&format!("cookie: session={k}; path=/"), k, "jwt");
    let unsigned = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.";
    assert_redacted(&format!("t {unsigned} end"), unsigned, "jwt");
}

#[test]
fn pem_private_key_blocks_are_removed_whole() {
    let block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu\nq8rBw4lTr2bSZa+ZvQ==\n-----END RSA PRIVATE KEY-----";
    assert_redacted(&format!("before\n{block}\nafter"), block, "pem_private_key");
    let block = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----";
    assert_redacted(&format!("{block}\n"), block, "pem_private_key");
    let block =
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----";
    assert_redacted(block, block, "pem_private_key");
}

#[test]
fn a_truncated_pem_block_is_removed_to_the_end() {
    let text =
        "log: -----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yBn\n(output truncated)";
    let out = redactor().redact(text);
    assert_eq!(out, "log: [REDACTED:pem_private_key]");
}

#[test]
fn public_keys_and_certificates_are_left_alone() {
    let text = "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE\n-----END CERTIFICATE-----\n-----BEGIN PUBLIC KEY-----\nMFkwEwYH\n-----END PUBLIC KEY-----";
    assert!(matches!(redactor().redact(text), Cow::Borrowed(_)));
}

#[test]
fn authorization_headers_keep_the_scheme() {
    let out = redactor().redact("Authorization: Bearer abc.def-ghi_123456");
    assert_eq!(out, "Authorization: Bearer [REDACTED:bearer_token]");
    let out = redactor().redact(r#"-H "authorization: bearer tok_live_abcdef123456""#);
    assert_eq!(out, r#"-H "authorization: bearer [REDACTED:bearer_token]""#);
    let out = redactor().redact(r#"{"Authorization": "Basic dXNlcjpwYXNzd29yZA=="}"#);
    assert_eq!(out, r#"{"Authorization": "Basic [REDACTED:bearer_token]"}"#);
}

#[test]
fn env_assignments_redact_the_value_only() {
    let cases = [
        ("DB_PASSWORD=hunter2", "DB_PASSWORD=[REDACTED:env_secret]"),
        ("export API_TOKEN='abc def 9Xq'", "export API_TOKEN='[REDACTED:env_secret]'"),
        (r#"  client_secret = "s3cr3t-value""#, r#"  client_secret = "[REDACTED:env_secret]""#),
        ("MY_PASSWD: letmein", "MY_PASSWD: [REDACTED:env_secret]"),
        ("  password: hunter2  ", "  password: [REDACTED:env_secret]  "),
        ("SECRET_KEY = 'django-insecure-7x#k2!q9'", "SECRET_KEY = '[REDACTED:env_secret]'"),
        (
            r#"{"api_key": "abc123xyz", "user": "bob"}"#,
            r#"{"api_key": "[REDACTED:env_secret]", "user": "bob"}"#,
        ),
        (
            "GET /x?access_token=abc123Xy9&page=2",
            "GET /x?access_token=[REDACTED:env_secret]&page=2",
        ),
        ("a=1 SECRET_KEY=zQ8v-Lk2m b=2", "a=1 SECRET_KEY=[REDACTED:env_secret] b=2"),
    ];
    for (input, want) in cases {
        assert_eq!(redactor().redact(input), want, "{input}");
    }
}

#[test]
fn source_code_that_mentions_secrets_is_left_alone() {
    // file_read output passes through the redactor: code must stay readable.
    let texts = [
        "let token = get_token();",
        "api_key = os.environ[\"OPENAI_API_KEY\"]",
        "let token = self.token;",
        "pub api_key: Option<String>,",
        "    api_key: String,",
        "fn set_token(token: &str) -> bool {",
        "if password == expected {",
        "token := newToken()",
        "SECRET_KEY=$SECRET_KEY",
        "API_TOKEN=${API_TOKEN:-}",
        "headers[\"Authorization\"] = f\"Bearer {token}\"",
        "match Token::new(x) {",
        "api_key: str = field(default=None)",
        "const MAX_TOKENS = 4096;",
        "OPENAI_API_KEY=<your key here>",
        "usage: prompt_tokens=1520 completion_tokens=88 total_tokens=1608",
        r#"{"max_tokens": 4096, "api_key": null, "use_token": true}"#,
    ];
    for t in texts {
        let out = redactor().redact(t);
        assert!(matches!(out, Cow::Borrowed(_)), "{t:?} was changed to {out:?}");
    }
}

#[test]
fn a_token_inside_an_assignment_key_is_redacted_too() {
    // Found by the fixed-point property: the env rule's key part used to be skipped over.
    let out = redactor().redact("KEYsk-sk-a0aAa0aAa0AAA00aghp_=KEY");
    // (`KEY` itself is too short to be a secret.)
    assert_eq!(out, "KEYsk-[REDACTED:openai_key]=KEY");
    let out = redactor().redact("ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8-token: x(");
    assert!(out.starts_with("[REDACTED:github_token]"), "{out}");
}

#[test]
fn env_assignment_of_a_known_key_kind_uses_the_value_only() {
    let k = "sk-abcdEFGH1234ijklMNOP5678qrstUVWX9012yzab3456";
    let text = format!("OPENAI_API_KEY={k}\nnext line");
    let out = redactor().redact(&text);
    assert!(!out.contains(k), "{out}");
    assert!(out.starts_with("OPENAI_API_KEY=[REDACTED:"), "{out}");
    assert!(out.ends_with("]\nnext line"), "{out}");
}

#[test]
fn known_values_are_redacted_literally() {
    let r = SecretRedactor::new(vec![
        "my-very-private-value".into(),
        "a.b*c+d(e)[f]".into(), // regex metacharacters must be literal
        "short".into(),         // under 8 characters: ignored
        "  padded-secret-1  \n".into(),
        String::new(),
    ]);
    assert_eq!(r.redact("x my-very-private-value y"), "x [REDACTED:known] y");
    assert_eq!(r.redact("a.b*c+d(e)[f]"), "[REDACTED:known]");
    assert!(matches!(r.redact("aXb*c+d(e)[f]"), Cow::Borrowed(_)));
    assert!(matches!(r.redact("short and sweet"), Cow::Borrowed(_)));
    assert_eq!(r.redact("padded-secret-1"), "[REDACTED:known]");
}

#[test]
fn a_known_value_containing_another_is_redacted_whole() {
    let r = SecretRedactor::new(vec!["abcdefgh".into(), "abcdefgh-longer-one".into()]);
    assert_eq!(r.redact("v=abcdefgh-longer-one."), "v=[REDACTED:known].");
}

#[test]
fn debug_output_never_shows_known_values() {
    let r = SecretRedactor::new(vec!["my-very-private-value".into()]);
    let dbg = format!("{r:?}");
    assert!(!dbg.contains("my-very-private-value"), "{dbg}");
    assert!(dbg.contains("SecretRedactor"), "{dbg}");
}

#[test]
fn ordinary_text_is_borrowed_unchanged() {
    let texts = [
        "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
        "e83c5163316f89bfbde7d9ab23ca2e25604af290 refs/heads/main",
        "request id 550e8400-e29b-41d4-a716-446655440000 done",
        "The token was valid and the password policy requires 12 characters.",
        "primary keys and foreign keys; the secret to success",
        "risk-assessment-framework-for-2024-and-beyond",
        "sk-learn is a library",
        "ask-me-anything-about-this-thing-really",
        "PASSWORD=",
        "base64: SGVsbG8gV29ybGQhIFRoaXMgaXMgbm90IGEgc2VjcmV0Lg==",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "größe ✓ 日本語のテキスト",
        "",
    ];
    for t in texts {
        let out = redactor().redact(t);
        assert!(matches!(out, Cow::Borrowed(_)), "{t:?} was changed to {out:?}");
    }
}

#[test]
fn redaction_is_idempotent() {
    let text = "DB_PASSWORD=hunter2 and ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 and Authorization: Bearer abcdefgh12345";
    let once = redactor().redact(text).into_owned();
    let twice = redactor().redact(&once);
    assert!(matches!(twice, Cow::Borrowed(_)), "{once} -> {twice}");
}

#[test]
fn it_works_through_redact_json() {
    let mut v = serde_json::json!({"cmd": "curl -H 'Authorization: Bearer abcdefgh12345'", "n": 1});
    aria_api::redact_json(&redactor(), &mut v);
    assert_eq!(v["cmd"], "curl -H 'Authorization: Bearer [REDACTED:bearer_token]'");
}

//! The outbound filter's wider net: webhooks, URL credentials, more `.env` names, cloud
//! tokens, and high-entropy tokens — and the look-alikes it must leave be.

use std::borrow::Cow;

use aria_api::Redact;
use aria_tools::{SecretRedactor, shannon_entropy};
use pretty_assertions::assert_eq;

fn redactor() -> SecretRedactor {
    SecretRedactor::new(Vec::new())
}

#[track_caller]
fn assert_redacted(line: &str, secret: &str, kind: &str) {
    assert!(line.contains(secret), "bad test: {line:?} does not contain {secret:?}");
    let out = redactor().redact(line);
    assert!(!out.contains(secret), "{kind}: secret survived in {out:?}");
    assert_eq!(out, line.replace(secret, &format!("[REDACTED:{kind}]")), "{kind}");
}

#[track_caller]
fn assert_untouched(text: &str) {
    let out = redactor().redact(text);
    assert!(matches!(out, Cow::Borrowed(_)), "{text:?} was changed to {out:?}");
}

#[test]
fn slack_webhooks() {
    let hook = "https://hooks.slack.com/services/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";
    assert_redacted(&format!("curl -X POST {hook} -d @msg.json"), hook, "slack_webhook");
}

#[test]
fn urls_with_embedded_credentials_lose_the_password_only() {
    let cases = [
        (
            "DATABASE_URL=postgres://app:s3cr3t-Pa55@db.internal:5432/prod",
            "DATABASE_URL=postgres://app:[REDACTED:url_credentials]@db.internal:5432/prod",
        ),
        (
            "fetching https://alice:correct-horse@example.com/repo.git",
            "fetching https://alice:[REDACTED:url_credentials]@example.com/repo.git",
        ),
        (
            "redis://:hunter2hunter2@cache:6379/0",
            "redis://:[REDACTED:url_credentials]@cache:6379/0",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(redactor().redact(input), want, "{input}");
    }
    // A user name alone, ssh-style remotes and ports are not credentials.
    assert_untouched("git@github.com:owner/repo.git and ssh://git@example.com/x");
    assert_untouched("https://bob@example.com/profile and http://localhost:8080/api");
}

#[test]
fn aws_secret_keys_in_json_and_credentials_files() {
    let s = "q3Vd8Rk2Zt/Hm9Lp4Wx+Jc7Nb1Ys6Gf0Ea5Ku2Ti";
    assert_redacted(&format!(r#""SecretAccessKey": "{s}","#), s, "aws_secret_access_key");
    assert_redacted(&format!("aws_secret_access_key={s}\n"), s, "aws_secret_access_key");
}

#[test]
fn more_token_formats() {
    let k = "ya29.a0AfH6SMBx3fG7hJkLmN0pQrStUvWxYz1234567890";
    assert_redacted(&format!("access token {k} expires"), k, "google_oauth_token");
    let k = "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";
    assert_redacted(&format!("//registry.npmjs.org/:_authToken {k}"), k, "npm_token");
    let k = "hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh";
    assert_redacted(&format!("HF: {k}"), k, "huggingface_token");
    let block = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0yTZQBCAC7\n-----END PGP PRIVATE KEY BLOCK-----";
    assert_redacted(&format!("x\n{block}\ny"), block, "pem_private_key");
    let k = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz";
    assert_redacted(&format!("GH={k}"), k, "github_token");
}

#[test]
fn more_env_names_for_secrets() {
    let cases = [
        ("DB_PASS=hunter22", "DB_PASS=[REDACTED:env_secret]"),
        ("MYSQL_PWD=abc123xyz", "MYSQL_PWD=[REDACTED:env_secret]"),
        ("PASSWORD=Tr0ub4dor#3!", "PASSWORD=[REDACTED:env_secret]"),
        ("API_KEY=abcdef123456", "API_KEY=[REDACTED:env_secret]"),
        ("SECRET=xyzzy-plugh-42", "SECRET=[REDACTED:env_secret]"),
        ("TOKEN=abc-def-123", "TOKEN=[REDACTED:env_secret]"),
        (
            "GOOGLE_CREDENTIALS='{\"type\":\"service_account\",\"k\":1}'",
            "GOOGLE_CREDENTIALS='[REDACTED:env_secret]'",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(redactor().redact(input), want, "{input}");
    }
    // `pass` and `pwd` count only as a whole part of the name.
    assert_untouched("compass=north bypass_cache=yes");
    assert_untouched("cd $PWD && ls; passthrough = enabled");
}

/// A 64-character token drawn from a base62 alphabet without any known prefix.
const RANDOM_64: &str = "q8Zt3LmX0vKp7RwB2nYc9HdJ4sFg6TaE1uQiW5oNzVkGxMbCy0rDhSlPjAeUf3Ik";

#[test]
fn high_entropy_tokens_are_redacted() {
    assert!(shannon_entropy(RANDOM_64.as_bytes()) > 4.5);
    assert_redacted(&format!("session cookie: {RANDOM_64}; Path=/"), RANDOM_64, "high_entropy");
    let longer = format!("{RANDOM_64}{RANDOM_64}");
    assert_redacted(&format!("x-api-key {longer}\n"), &longer, "high_entropy");
}

#[test]
fn hashes_uuids_and_encoded_media_are_not_secrets() {
    let texts = [
        // git SHAs, sha256 and sha512 digests in hex: at most 4 bits per character.
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "sha256: 3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b",
        "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
        "ids 123e4567-e89b-12d3-a456-426614174000 f47ac10b-58cc-4372-a567-0e02b2c3d479",
        // Subresource integrity (npm lockfiles), Go sums.
        r#""integrity": "sha512-Fq3vN1x9XfT0rPKz8w2gYhL4mS6aD7cE5bJ0uQiW3oNzVkGxMbCy1rDhSlPjAeUf2Ik9Zt8LmX4vKp7RwB5nYc6Hd==","#,
        "golang.org/x/text v0.3.7 h1:olpwvP2KacW1ZWvsR7uQhoyTYvKAupfQrRGBFM352Gk=",
        // A long identifier without digits.
        "AbstractSingletonProxyFactoryBeanDefinitionRegistryPostProcessorConfigurationAdapter",
    ];
    for t in texts {
        assert_untouched(t);
    }
}

/// A digest in uppercase hex that happens to start like a Square token (`EAAA` + 60
/// characters) is a digest; a Square token mixes cases.
#[test]
fn an_uppercase_digest_is_not_taken_for_a_token_of_the_same_shape() {
    assert_untouched("sha256: EAAA0A0AA00AAA0000000A0A0AAA0A000A0A0A00AAAAAAA0A0AAA00B00AB1CAA");
    let token = "EAAAl3kYqWnZ8vR2pXc7TgH4sJ9bM1dF6aK0eL5uQyNwVzB3rC8tG2hP7jS4mD1x";
    assert_eq!(token.len(), 64);
    assert_redacted(&format!("SQUARE {token} done"), token, "square_token");
    // A hex token with its header around it stays a token.
    let hex = "950463b7dee343e1c022869e619a6bcccc0c3dfd";
    assert_redacted(&format!("Authorization: Token {hex}"), hex, "bearer_token");
}

/// A hex value is no hash when a password's name is assigned it: `pw:` and `psk:` say password
/// and pre-shared key, and a config line `bindpw <value>` is nslcd's password.
#[test]
fn a_hex_value_assigned_to_a_short_secret_name_is_redacted() {
    const HEX: &str = "000a00aa0aaaaaa0a00aaaaaaa00aab015dc2b0c";
    for text in [format!("pw:{HEX}"), format!("psk: {HEX}"), format!("bindpw {HEX}")] {
        let out = SecretRedactor::new(Vec::new()).redact(&text).into_owned();
        assert!(!out.contains(HEX), "{text} -> {out}");
    }
    // As parts of longer words they name nothing, on a line of their own too.
    assert_untouched(&format!("pwa:{HEX}"));
    assert_untouched(&format!("path:{HEX}"));
    assert_untouched(&format!("pwa {HEX}"));
    assert_untouched(&format!("tokenizer {HEX}"));
    assert_untouched("pwa 000aaa00-0aa8-1a21-ba1f-bbce050d3a40");
}

#[test]
fn data_uris_public_keys_and_certificates_are_not_secrets() {
    let png =
        format!("![logo](data:image/png;base64,iVBORw0KGgo{RANDOM_64}{RANDOM_64}AAAASUVORK5CYII=)");
    assert_untouched(&png);
    let font = format!(
        "src: url(data:font/woff2;charset=utf-8;base64,d09GMgAB{RANDOM_64}) format('woff2');"
    );
    assert_untouched(&font);
    let ssh = format!("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5{RANDOM_64} user@host");
    assert_untouched(&ssh);
    let rsa = format!("github.com ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{RANDOM_64}{RANDOM_64}");
    assert_untouched(&rsa);
    let cert = format!(
        "-----BEGIN CERTIFICATE-----\n{RANDOM_64}\n{}\nAbC=\n-----END CERTIFICATE-----\n",
        RANDOM_64.chars().rev().collect::<String>()
    );
    assert_untouched(&cert);
}

#[test]
fn multi_line_base64_blobs_are_encoded_data_not_a_secret() {
    let line: String = RANDOM_64.chars().chain(RANDOM_64.chars().take(12)).collect();
    let rev: String = line.chars().rev().collect();
    let mime = format!("Content-Transfer-Encoding: base64\n\n{line}\n{rev}\n{line}\nQQ==\n");
    assert_untouched(&mime);
}

#[test]
fn a_high_entropy_token_next_to_a_known_kind_is_still_caught() {
    let text = format!("GITHUB ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 then {RANDOM_64}");
    let out = redactor().redact(&text);
    assert_eq!(out, "GITHUB [REDACTED:github_token] then [REDACTED:high_entropy]");
}

#[test]
fn findings_name_the_kinds_in_order() {
    let text = format!("DB_PASS=hunter22 and AKIA2OGYBAH6TQ3LWXPZ and {RANDOM_64}");
    let report = redactor().redact_report(&text);
    assert_eq!(report.kinds, vec!["env_secret", "aws_access_key_id", "high_entropy"]);
    assert_eq!(
        report.text,
        "DB_PASS=[REDACTED:env_secret] and [REDACTED:aws_access_key_id] and [REDACTED:high_entropy]"
    );
    let clean = redactor().redact_report("nothing to see here");
    assert!(clean.kinds.is_empty() && matches!(clean.text, Cow::Borrowed(_)));
}

#[test]
fn entropy_figures() {
    assert_eq!(shannon_entropy(b""), 0.0);
    assert_eq!(shannon_entropy(b"aaaa"), 0.0);
    assert!((shannon_entropy(b"abcd") - 2.0).abs() < 1e-9);
    assert!((shannon_entropy(b"0123456789abcdef") - 4.0).abs() < 1e-9);
}

#[test]
fn ordinary_prose_and_code_pass_untouched() {
    let texts = [
        "The deployment finished in 42 seconds; see https://docs.example.com/guide#setup for more.",
        "fn main() { let password_hash = hash(&input); println!(\"{}\", password_hash.len()); }",
        "import { createHash } from 'crypto'; const digest = createHash('sha256').update(buf).digest('hex');",
        "| name | type | default |\n|------|------|---------|\n| timeout | u64 | 30 |",
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt.",
        "/usr/lib/x86_64-linux-gnu/libssl.so.3 => /lib/x86_64-linux-gnu/libssl.so.3 (0x00007f8a)",
        "node_modules/@babel/helper-module-transforms/lib/index.js:123:45",
    ];
    for t in texts {
        assert_untouched(t);
    }
}

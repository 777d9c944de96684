//! Property tests for `SecretRedactor`.

use std::borrow::Cow;

use aria_api::Redact;
use aria_tools::SecretRedactor;
use proptest::prelude::*;

/// A lower-case word that does not name a secret: `key: <40 hex digits>` is an assignment the
/// filter must redact (GitHub's classic tokens were 40 hex digits), not a hash among words. The
/// short names (`pw: <hash>` is a password) count as whole words, and a line `…pw <value>` is a
/// password setting (nslcd's `bindpw`).
fn plain_word() -> impl Strategy<Value = String> {
    const NAMES: [&str; 8] =
        ["key", "token", "secret", "passw", "credential", "pass", "pwd", "auth"];
    const WHOLE_NAMES: [&str; 3] = ["pat", "pw", "psk"];
    "[a-z]{1,10}".prop_filter("names a secret", |w| {
        !NAMES.iter().any(|n| w.contains(n))
            && !WHOLE_NAMES.contains(&w.as_str())
            && !w.ends_with("pw")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn a_known_value_never_survives(
        prefix in "\\PC{0,40}",
        suffix in "\\PC{0,40}",
        secret in "[A-Za-z0-9_\\-\\.\\+/=]{8,40}",
    ) {
        let r = SecretRedactor::new(vec![secret.clone()]);
        let text = format!("{prefix}{secret}{suffix}");
        let out = r.redact(&text);
        prop_assert!(!out.contains(&secret), "{text:?} -> {out:?}");
    }

    #[test]
    fn borrowed_means_unchanged_and_never_panics(text in "\\PC{0,200}") {
        let r = SecretRedactor::new(vec!["sekrit-value-42".into()]);
        match r.redact(&text) {
            Cow::Borrowed(b) => prop_assert_eq!(b, text.as_str()),
            Cow::Owned(o) => prop_assert_ne!(o, text),
        }
    }

    #[test]
    fn redaction_is_a_fixed_point(
        text in "(\\PC|=|KEY|_KEY=|TOKEN| |sk-|ghp_|ghp_[A-Za-z0-9]{36}|[A-Za-z0-9]{8}){0,30}"
    ) {
        let r = SecretRedactor::new(vec!["sekrit-value-42".into()]);
        let once = r.redact(&text).into_owned();
        let twice = r.redact(&once);
        prop_assert!(matches!(twice, Cow::Borrowed(_)), "{text:?} -> {once:?} -> {twice:?}");
    }
}

/// Tokens in the shapes the vendors issue them, each with the kind the filter must report.
fn vendor_token() -> impl Strategy<Value = (String, &'static str)> {
    prop_oneof![
        "AKIA[A-Z0-9]{16}".prop_map(|t| (t, "aws_access_key_id")),
        "gh[pousr]_[A-Za-z0-9]{36}".prop_map(|t| (t, "github_token")),
        "github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}".prop_map(|t| (t, "github_token")),
        "glpat-[A-Za-z0-9_-]{20}".prop_map(|t| (t, "gitlab_token")),
        "xox[abprs]-[0-9]{10,12}-[A-Za-z0-9]{10,24}".prop_map(|t| (t, "slack_token")),
        "[sr]k_live_[A-Za-z0-9]{24,99}".prop_map(|t| (t, "stripe_key")),
        "sk-ant-api03-[A-Za-z0-9_-]{40,90}".prop_map(|t| (t, "anthropic_key")),
        "sk-(proj-)?[A-Za-z0-9]{20}[0-9][A-Za-z0-9_-]{19,60}".prop_map(|t| (t, "openai_key")),
        "AIza[0-9A-Za-z_-]{35}".prop_map(|t| (t, "google_api_key")),
        "eyJ[A-Za-z0-9_-]{10,30}\\.eyJ[A-Za-z0-9_-]{10,40}\\.[A-Za-z0-9_-]{20,43}"
            .prop_map(|t| (t, "jwt")),
        "[A-Za-z0-9]{40}[0-9][A-Za-z0-9]{40}".prop_map(|t| (t, "high_entropy")),
    ]
}

/// Git SHAs, sha256 digests and UUIDs, upper or lower case.
fn hash_like() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9a-f]{40}",
        "[0-9a-f]{64}",
        "[0-9A-F]{64}",
        "[0-9a-f]{128}",
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn a_generated_vendor_token_in_random_text_is_redacted(
        prefix in "\\PC{0,40}",
        suffix in "\\PC{0,40}",
        left in "[ \n\t,;(\"']",
        right in "[ \n\t,;)\"']",
        (token, kind) in vendor_token(),
    ) {
        let text = format!("{prefix}{left}{token}{right}{suffix}");
        let report = SecretRedactor::new(Vec::new()).redact_report(&text);
        let tail = &token[token.len() - 16..];
        prop_assert!(!report.text.contains(tail), "{text:?} -> {:?}", report.text);
        prop_assert!(!report.kinds.is_empty());
        // Alone between separators, the token is reported as its own kind.
        let alone_text = format!("{left}{token}{right}");
        let alone = SecretRedactor::new(Vec::new()).redact_report(&alone_text);
        prop_assert_eq!(alone.kinds, vec![kind]);
    }

    #[test]
    fn hashes_and_uuids_among_words_are_left_alone(
        parts in prop::collection::vec(prop_oneof![hash_like(), plain_word()], 1..20),
        sep in "[ \n,;:]",
    ) {
        let text = parts.join(&sep);
        let out = SecretRedactor::new(Vec::new()).redact(&text);
        prop_assert!(matches!(out, Cow::Borrowed(_)), "{text:?} -> {out:?}");
    }
}

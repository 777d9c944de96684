//! The built-in secret patterns, in priority order (earlier wins when two start at the same
//! place). Kept apart from the matching code so the list can be read and reviewed on its own.
//!
//! Conventions inside a pattern:
//! - `(?P<VALUE>…)` marks the part to replace; without one the whole match is replaced. Several
//!   `VALUE` groups are alternatives; for [`Check::EnvValue`] the last one is the unquoted form.
//! - `(?P<KEYQ>…)` and `(?P<SEP>…)` expose the closing quote of a key and the separator to the
//!   `.env` check.
//! - Word boundaries are ASCII (`(?-u:\b)`) so the lazy DFA never falls back to a slower engine
//!   on non-ASCII text, and classes are spelled out (`[0-9]`, not `\d`).

/// A second look, in code, at a match (the regex crate has no look-around).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    None,
    /// The match must contain an ASCII digit (real keys do; `sk-some-hyphenated-words` does not).
    HasDigit,
    /// `.env`-style assignment: the value must look like a literal, not like code.
    EnvValue,
}

#[derive(Debug)]
pub(crate) struct Rule {
    /// Goes into `[REDACTED:kind]`.
    pub(crate) kind: &'static str,
    pub(crate) pattern: &'static str,
    pub(crate) check: Check,
}

/// Every match of a [`Check::EnvValue`] rule lies on one line and its name contains one of
/// these, ASCII case-insensitively (or a non-ASCII case variant of `k`/`s`, `K` and `ſ`, which the
/// redactor checks for separately). The redactor runs the rule's regex only on lines that
/// contain one: keep this list in step with the names in the `env_secret` pattern.
pub(crate) const ENV_KEYWORDS: &[&str] = &["key", "token", "secret", "pass", "pwd", "credential"];

pub(crate) const RULES: &[Rule] = &[
    Rule {
        // The whole block; a block cut off by truncation is removed to the end of the text.
        kind: "pem_private_key",
        pattern: r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\z)",
        check: Check::None,
    },
    Rule {
        kind: "anthropic_key",
        pattern: r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20,}",
        check: Check::HasDigit,
    },
    Rule {
        // Legacy `sk-…`, project `sk-proj-…`, service-account and admin keys.
        kind: "openai_key",
        pattern: r"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        check: Check::HasDigit,
    },
    Rule {
        kind: "github_token",
        pattern: r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
        check: Check::None,
    },
    Rule { kind: "gitlab_token", pattern: r"(?-u:\b)glpat-[A-Za-z0-9_-]{20,}", check: Check::None },
    Rule {
        kind: "slack_token",
        pattern: r"(?-u:\b)xox[abprs]-[A-Za-z0-9-]{10,}",
        check: Check::None,
    },
    Rule {
        // Incoming webhooks: the URL itself is the credential.
        kind: "slack_webhook",
        pattern: r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}",
        check: Check::None,
    },
    Rule {
        kind: "stripe_key",
        pattern: r"(?-u:\b)[rs]k_(?:live|test)_[A-Za-z0-9]{16,}",
        check: Check::None,
    },
    Rule {
        kind: "aws_access_key_id",
        pattern: r"(?-u:\b)(?:AKIA|ASIA)[A-Z0-9]{16}(?-u:\b)",
        check: Check::None,
    },
    Rule {
        kind: "aws_secret_access_key",
        // `aws_secret_access_key = …` (credentials file, env) and `"SecretAccessKey": "…"` (JSON
        // from `aws sts`).
        pattern: r#"(?i:(?:aws_?)?secret_?access_?key)["']?[ \t]*[:=][ \t]*["']?(?P<VALUE>[A-Za-z0-9/+=]{40})"#,
        check: Check::None,
    },
    Rule { kind: "google_api_key", pattern: r"(?-u:\b)AIza[0-9A-Za-z_-]{35,}", check: Check::None },
    Rule {
        kind: "google_oauth_token",
        pattern: r"(?-u:\b)ya29\.[0-9A-Za-z_-]{20,}",
        check: Check::None,
    },
    Rule { kind: "npm_token", pattern: r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)", check: Check::None },
    Rule {
        kind: "huggingface_token",
        pattern: r"(?-u:\b)hf_[A-Za-z0-9]{34,}(?-u:\b)",
        check: Check::None,
    },
    Rule {
        // `123456789:AA…` (35 characters after the colon, starting `AA`); also inside
        // `/bot<token>/` URLs, where no word boundary precedes the digits. Two hex digests
        // around a colon are not a token (found by a property test).
        kind: "telegram_bot_token",
        pattern: r"(?:bot|(?-u:\b))(?P<VALUE>[0-9]{8,10}:AA[A-Za-z0-9_-]{33,})",
        check: Check::None,
    },
    Rule {
        // header.payload.signature; the signature may be empty (`alg: none`).
        kind: "jwt",
        pattern: r"(?-u:\b)eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",
        check: Check::None,
    },
    Rule {
        // scheme://user:password@host: only the password goes. A user alone (`git@…`,
        // `https://bob@…`) and `host:port` are not credentials.
        kind: "url_credentials",
        pattern: r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/?#@\[\]"'<>]{0,128}:(?P<VALUE>[^\s/?#@\[\]"'<>]{1,256})@"#,
        check: Check::None,
    },
    Rule {
        // `Authorization: Bearer …` (also Basic/token/Bot), header or JSON; the scheme is kept.
        kind: "bearer_token",
        pattern: r#"(?i:authorization)["']?[ \t]*[:=][ \t]*["']?(?i:bearer|basic|token|bot)[ \t]+(?P<VALUE>[A-Za-z0-9._~+/=-]+)"#,
        check: Check::None,
    },
    Rule {
        // NAME=value, NAME: value, "name": "value" where NAME mentions a key, token, secret,
        // password or credential, or has `pass`/`pwd` as a whole part (`DB_PASS`, `MYSQL_PWD`,
        // not `compass`). Only the value is replaced.
        kind: "env_secret",
        pattern: r#"(?-u:\b)(?i:[A-Za-z0-9_.-]*(?:key|token|secret|password|passwd|credential)[A-Za-z0-9_.-]*|(?:[A-Za-z0-9_.-]*[_.-])?(?:pass|pwd)(?:[_.-][A-Za-z0-9_.-]*)?)(?P<KEYQ>["']?)[ \t]*(?P<SEP>[:=])[ \t]*(?:"(?P<VALUE>[^"\n]*)"|'(?P<VALUE>[^'\n]*)'|(?P<VALUE>[^\s"',;&(){}\[\]<>]+))"#,
        check: Check::EnvValue,
    },
];

//! The second look at a candidate secret, in code: is the value a placeholder, and does the
//! name it is assigned to make it a secret? (A keyword near the value, the value's
//! format and an entropy floor together; known placeholders refused.)
//!
//! Names come in four strengths ([`Strength`]): a password (`DB_PASSWORD`, `pwd`), a secret
//! (`api_key`, `client_secret`, `authToken`), a weak key (`key`, `cache_key`: the word is in
//! the name but most values are not secrets), and not a secret at all (`token_type`,
//! `password_file`, `api_key_env`: the name describes something *about* a secret). The weaker
//! the name, the more random a value must look.

use crate::guard::entropy::shannon_entropy;

/// How strongly a name says its value is a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Strength {
    NotSecret,
    Weak,
    Secret,
    Password,
}

/// Last parts of a name that describe something about a secret rather than hold one.
const ABOUT: &[&str] = &[
    "file",
    "files",
    "path",
    "dir",
    "url",
    "uri",
    "name",
    "names",
    "type",
    "types",
    "size",
    "len",
    "length",
    "count",
    "max",
    "min",
    "env",
    "var",
    "field",
    "column",
    "prefix",
    "suffix",
    "header",
    "format",
    "mode",
    "policy",
    "expiry",
    "expires",
    "expiration",
    "ttl",
    "timeout",
    "required",
    "enabled",
    "enable",
    "endpoint",
    "location",
    "label",
    "hint",
    "id",
    "ids",
    "index",
    "at",
    "version",
    "algorithm",
    "alg",
    "kind",
    "usage",
    "limit",
    "limits",
    "number",
    "prompt",
    "message",
    "msg",
    "text",
    "help",
    "placeholder",
    "title",
    "description",
    "error",
    "errors",
    "regex",
    "pattern",
    "rotation",
    "length",
    "hash",
    "hashed",
    "reset",
    "policy",
    "store",
    "manager",
    "provider",
    "source",
    "ref",
    "arn",
    "region",
    "scope",
    "scopes",
    "audience",
    "issuer",
    "strength",
    "rules",
    "less",
    "visible",
    "visibility",
    "input",
    "form",
    "changed",
    "updated",
    "created",
    "digest",
    "id_token_hint",
];

/// Parts of a name that say its value is public or a pointer, not a secret: public and
/// publishable keys, site keys, page and continuation tokens, token and key addresses,
/// fingerprints, key server lookups, a pre-shared key's identity (`VAPID_PUBLIC_KEY`,
/// `nextPageToken`, `tokenAddress`, `ssh_key_fingerprint`, `--recv-keys`, `psk_identity`).
const PUBLIC_PARTS: &[&str] = &[
    "public",
    "publishable",
    "pub",
    "site",
    "next",
    "page",
    "continuation",
    "cursor",
    "address",
    "fingerprint",
    "recv",
    "keyserver",
    "identity",
];

/// A `key` with one of these right before it is a secret's name (`apikey`, `secret_key`).
const KEY_QUALIFIERS: &[&str] = &[
    "api",
    "access",
    "secret",
    "private",
    "auth",
    "app",
    "client",
    "master",
    "encryption",
    "signing",
    "sign",
    "license",
    "licence",
    "sdk",
    "write",
    "admin",
    "service",
    "account",
    "session",
    "server",
    "storage",
    "subscription",
    "consumer",
    "webhook",
    "hmac",
    "jwt",
    "encrypt",
    "crypt",
    "rest",
    "user",
    "dev",
    "product",
    "mgmt",
    "management",
    "ingest",
    "integration",
    "partner",
    "merchant",
    "project",
    "publish",
    "push",
    "shared",
    "live",
    "prod",
];

/// Splits a name into lowercase parts at `_ . - :` and camelCase humps.
fn parts(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// How strongly `name` says its value is a secret.
pub(crate) fn strength(name: &str) -> Strength {
    // The regex's `(?i)` matches the Kelvin sign as `k` and the long s as `s`; so does this.
    let folded: String = name
        .chars()
        .map(|c| match c {
            '\u{212A}' => 'k',
            '\u{17F}' => 's',
            c => c,
        })
        .collect();
    let parts = parts(&folded);
    let Some(last) = parts.last() else { return Strength::NotSecret };
    if ABOUT.contains(&last.as_str()) && parts.len() > 1 {
        return Strength::NotSecret;
    }
    let joined: String = parts.concat();
    let has = |w: &str| joined.contains(w);
    if parts.iter().any(|p| PUBLIC_PARTS.contains(&p.as_str()))
        && !(has("secret") || has("private") || has("passw") || has("passphrase"))
    {
        return Strength::NotSecret;
    }
    if has("password") || has("passwd") || has("passphrase") {
        return Strength::Password;
    }
    // Password settings of programs, spelt as one word.
    if parts.iter().any(|p| {
        matches!(
            p.as_str(),
            "requirepass" | "masterauth" | "storepass" | "keypass" | "bindpw" | "remotepass"
        )
    }) {
        return Strength::Password;
    }
    // `psk` is a Wi-Fi or IPsec pre-shared key, a password by another name. `pw` and `psk`
    // count only as the last part: `PW_TEST_…` is Playwright's, `psk_identity` a user name.
    if parts.iter().any(|p| matches!(p.as_str(), "pass" | "pwd" | "pword"))
        || matches!(last.as_str(), "pw" | "psk")
    {
        return Strength::Password;
    }
    if parts.iter().any(|p| p == "pat") {
        return Strength::Secret; // a personal access token (`AZURE_DEVOPS_PAT`)
    }
    if has("secret") || has("token") || has("credential") || has("apikey") {
        return Strength::Secret;
    }
    if last == "auth" || parts.iter().any(|p| p == "authkey") {
        return Strength::Secret;
    }
    if has("key") {
        let qualified =
            parts.windows(2).any(|w| {
                w[1].starts_with("key") && KEY_QUALIFIERS.iter().any(|q| w[0].ends_with(q))
            }) || parts.iter().any(|p| {
                p.len() > 3
                    && p.ends_with("key")
                    && KEY_QUALIFIERS.iter().any(|q| p.strip_suffix("key") == Some(q))
            }) || parts
                .windows(2)
                .any(|w| w[0] == "key" && matches!(w[1].as_str(), "data" | "secret"));
        return if qualified { Strength::Secret } else { Strength::Weak };
    }
    Strength::NotSecret
}

/// Words that mark a value as a stand-in for a secret, not one (lowercase).
const PLACEHOLDER_WORDS: &[&str] = &[
    "xxxx",
    "example",
    "sample",
    "dummy",
    "placeholder",
    "your_",
    "your-",
    "yourkey",
    "yourtoken",
    "yoursecret",
    "yourpass",
    "yourapi",
    "changeme",
    "change_me",
    "change-me",
    "changeit",
    "replace",
    "insert",
    "redacted",
    "foobar",
    "<",
    ">",
    "${",
    "{{",
    "...",
    "\u{2026}",
    "****",
    "####",
    "notreal",
    "not_real",
    "not-a-real",
    "not-real",
    "lorem",
    "ipsum",
];

/// Short words that mark a stand-in only when set off by a separator or an end (`test-key`,
/// `token_here`): inside a random token they occur by chance.
const PLACEHOLDER_SHORT: &[&str] = &["test", "here", "todo", "fixme", "mock", "fake", "demo"];

/// Whether `word` occurs in `lower` with a non-alphanumeric character or an end on one side.
fn delimited(lower: &str, word: &str) -> bool {
    let bytes = lower.as_bytes();
    lower.match_indices(word).any(|(at, w)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + w.len()).copied();
        let edge = |b: Option<u8>| b.is_none_or(|b| !b.is_ascii_alphanumeric());
        edge(before) || edge(after)
    })
}

/// Whole values that are well-known defaults or stand-ins (lowercase).
const PLACEHOLDER_VALUES: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "changeme",
    "admin",
    "root",
    "postgres",
    "mysql",
    "guest",
    "default",
    "none",
    "null",
    "nil",
    "empty",
    "value",
    "string",
    "str",
    "test",
    "demo",
    "qwerty",
    "123456",
    "1234567",
    "12345678",
    "123456789",
    "pass",
    "pwd",
    "apikey",
    "api_key",
    "key",
    "foo",
    "bar",
    "baz",
    "user",
    "username",
    "secret123",
    "password123",
    "password1",
    "p@ssw0rd",
    "p@ssword",
    "letmein123",
    "s3cr3t",
    "mypassword",
    "mysecret",
    "supersecret",
    "topsecret",
    "hidden",
    "private",
    "required",
    "optional",
    "undefined",
    "unknown",
    "tbd",
    "sa",
    "sys",
    "oracle",
    "redis",
    "rabbitmq",
    "minio",
    "minioadmin",
    "elastic",
    "kibana",
];

/// Whether a token-shaped `value` is a stand-in: a placeholder word, or too few distinct
/// characters to be random (`AIzaaaaaaa…`, `0000…`). Stripe's `sk_test_`/`rk_test_` prefix
/// is a real key's mode, not a placeholder.
pub(crate) fn is_placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let lower = lower.replacen("_test_", "_", 1).replacen("-test-", "-", 1);
    if PLACEHOLDER_WORDS.iter().any(|w| lower.contains(w))
        || PLACEHOLDER_SHORT.iter().any(|w| delimited(&lower, w))
    {
        return true;
    }
    low_diversity(value.as_bytes())
}

/// Whether a value a vendor's key pattern matched is a stand-in: low in diversity, or made of
/// stand-in words with little else (`sk-ant-xxxxxxxx…`, `ghp_your_token_here`). A long random
/// key that happens to contain one such word (`…a0XxXxB7…`) is still a key: what is left once
/// the words are taken out decides.
pub(crate) fn is_vendor_placeholder(value: &str) -> bool {
    if low_diversity(value.as_bytes()) {
        return true;
    }
    if !is_placeholder(value) {
        return false;
    }
    let mut rest = value.to_ascii_lowercase();
    for word in PLACEHOLDER_WORDS.iter().chain(PLACEHOLDER_SHORT) {
        rest = rest.replace(word, "");
    }
    rest.bytes().filter(u8::is_ascii_alphanumeric).count() < VENDOR_RANDOM_MIN
}

/// Random characters a vendor key keeps besides stand-in words to count as a real key.
const VENDOR_RANDOM_MIN: usize = 24;

/// Too few distinct characters for a random value, or one character filling half of it.
fn low_diversity(v: &[u8]) -> bool {
    if v.len() < 8 {
        return false;
    }
    let mut counts = [0u32; 256];
    for &b in v {
        counts[usize::from(b)] += 1;
    }
    let distinct = counts.iter().filter(|&&c| c > 0).count();
    let top = counts.iter().copied().max().unwrap_or(0) as usize;
    distinct <= 3 || (v.len() >= 12 && distinct <= 5) || top * 2 > v.len()
}

/// Runs of the alphabet or of digits a person types as a stand-in (`12345678`, `abcdefgh`).
fn is_sequential(lower: &str) -> bool {
    ["12345678", "abcdefgh", "23456789", "qwertyui", "asdfghjk"].iter().any(|s| lower.contains(s))
}

/// A file-system path (`/etc/ssl/key.pem`, `./secrets/x`), not a value.
fn is_path(v: &str) -> bool {
    if v.starts_with("./") || v.starts_with("../") || v.starts_with("~/") {
        return true;
    }
    let Some(rest) = v.strip_prefix('/') else { return false };
    let segs: Vec<&str> = rest.split('/').collect();
    segs.len() >= 2
        && segs.iter().all(|s| !s.is_empty())
        && segs.iter().any(|s| s.len() >= 3 && s.bytes().all(|b| b.is_ascii_lowercase()))
}

/// Whether `value`, assigned to a name of strength `strength`, is a literal secret. `quoted`:
/// it was written in quotes (an unquoted bare word in code is more often a variable).
pub(crate) fn value_is_secret(strength: Strength, name: &str, value: &str, quoted: bool) -> bool {
    if strength == Strength::NotSecret
        || value.is_empty()
        || value.starts_with(['$', '<'])
        || is_placeholder(value)
    {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    if PLACEHOLDER_VALUES.contains(&lower.as_str()) || is_sequential(&lower) {
        return false;
    }
    let squash = |s: &str| -> String {
        s.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
    };
    if squash(value) == squash(name) || value.contains("://") || is_path(value) {
        return false;
    }
    let len = value.chars().count();
    let digits = value.bytes().any(|b| b.is_ascii_digit());
    let letters = value.bytes().any(|b| b.is_ascii_alphabetic());
    let only_digits = !letters && value.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    let word_like =
        value.bytes().all(|b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'-' | b'.'));
    let camel = !quoted
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && value.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
        && value.bytes().any(|b| b.is_ascii_uppercase())
        && !digits
        && camel_words(value);
    if camel || (value.contains(' ') && (value.ends_with(':') || value.ends_with('?'))) {
        return false; // newPassword, "Enter password:"
    }
    let entropy = shannon_entropy(value.as_bytes());
    match strength {
        Strength::NotSecret => false,
        Strength::Password => len >= 6 && !(only_digits && len < 8) && entropy >= 2.0,
        Strength::Secret => {
            if len < 8 || only_digits || entropy < 2.8 {
                return false;
            }
            if word_like {
                // Letters only: a random one is long, high-entropy and has no separators.
                let separated = value.bytes().any(|b| matches!(b, b'_' | b'-' | b'.'));
                return !separated && len >= 20 && entropy >= 3.5;
            }
            true
        }
        // A name that does not say secret (`pwa`, `tokenizer`) next to a digest or a UUID is
        // a digest or a UUID.
        Strength::Weak => {
            len >= 16
                && digits
                && letters
                && entropy >= 3.2
                && !value.contains(' ')
                && !is_hex_digest(value)
                && !is_uuid(value)
        }
    }
}

/// Whether mixed-case letters read as camelCase words (`userPasswordHash`, `getHTTPClient`):
/// at most one run of three or more capitals (an acronym), and at most one lowercase letter
/// standing alone between capitals. Letters in random case have several of either
/// (`diNecKOOrHEDYMIuoe…`, `qXbTrWmZ…`).
fn camel_words(v: &str) -> bool {
    let mut runs: Vec<(bool, usize)> = Vec::new();
    for b in v.bytes().filter(u8::is_ascii_alphabetic) {
        let upper = b.is_ascii_uppercase();
        match runs.last_mut() {
            Some((case, len)) if *case == upper => *len += 1,
            _ => runs.push((upper, 1)),
        }
    }
    let last = runs.len().saturating_sub(1);
    let acronyms = runs.iter().filter(|&&(upper, len)| upper && len >= 3).count();
    let lone = runs.iter().enumerate().filter(|&(i, &(upper, len))| !upper && len == 1 && i < last);
    acronyms <= 1 && lone.count() <= 1
}

/// A UUID (`8-4-4-4-12` hex digits, one case).
fn is_uuid(v: &str) -> bool {
    v.split('-').map(str::len).eq([8, 4, 4, 4, 12])
        && one_case_hex(v.bytes().filter(|&b| b != b'-'))
}

/// Every byte is a hex digit, the letters all lowercase or all uppercase.
fn one_case_hex(bytes: impl Iterator<Item = u8> + Clone) -> bool {
    let within = |letters: std::ops::RangeInclusive<u8>| {
        bytes.clone().all(|b| b.is_ascii_digit() || letters.contains(&b))
    };
    within(b'a'..=b'f') || within(b'A'..=b'F')
}

/// An MD5, a git SHA or a sha256/sha512 digest in one case of hex: not a token, even where a
/// token format allows only those characters (Square's `EAAA` + 60 characters takes an
/// uppercase sha256 that starts with `EAAA`; a real one mixes cases), and not a secret after a
/// name that does not say secret.
pub(crate) fn is_hex_digest(v: &str) -> bool {
    matches!(v.len(), 32 | 40 | 64 | 128) && one_case_hex(v.bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        use Strength::*;
        for (name, want) in [
            ("DB_PASSWORD", Password),
            ("MYSQL_PWD", Password),
            ("pass", Password),
            ("compass", NotSecret),
            ("api_key", Secret),
            ("apiKey", Secret),
            ("OPENAI_API_KEY", Secret),
            ("awsSecretAccessKey", Secret),
            ("client-key-data", Secret),
            ("AccountKey", Secret),
            ("SEGMENT_WRITE_KEY", Secret),
            ("GITHUB_TOKEN", Secret),
            ("_auth", Secret),
            ("key", Weak),
            ("cache_key", Weak),
            ("monkey", Weak),
            ("token_type", NotSecret),
            ("password_file", NotSecret),
            ("api_key_env", NotSecret),
            ("TOKEN_URL", NotSecret),
            ("secret_name", NotSecret),
            ("author", NotSecret),
            ("AZURE_DEVOPS_PAT", Secret),
            ("path", NotSecret),
        ] {
            assert_eq!(strength(name), want, "{name}");
        }
    }

    #[test]
    fn placeholders() {
        for v in [
            "AKIAIOSFODNN7EXAMPLE",
            "AIzaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "sk-xxxxxxxxxxxxxxxxxxxxxxxx",
            "your-api-key-here",
            "<token>",
            "${VAR}",
            "changeme",
            "dummy-token",
            "sk-...",
            "00000000000000000",
        ] {
            assert!(is_placeholder(v), "{v}");
        }
        for v in ["sk_test_4eC39HqLyjWDarjtT1zdp7dc", "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"] {
            assert!(!is_placeholder(v), "{v}");
        }
    }

    #[test]
    fn values() {
        use Strength::*;
        assert!(value_is_secret(Password, "password", "hunter22", false));
        assert!(!value_is_secret(Password, "password", "password", false));
        assert!(!value_is_secret(Password, "password", "newPassword", false));
        // Identifiers in code keep being identifiers, acronyms included ...
        for v in ["userPasswordHash", "getHTTPClient", "parseJWTToken", "isHTTPSEnabled", "dbPwd"] {
            assert!(!value_is_secret(Password, "password", v, false), "{v}");
        }
        // ... but letters in random case are no identifier, however long.
        for v in ["diNecKOOrHEDYMIuoeBEIXgyXKECFKDl", "qXbTrWmZkPvYnLsQ", "hGtRwQzXcVbNmKjL"] {
            assert!(value_is_secret(Password, "password", v, false), "{v}");
        }
        assert!(value_is_secret(Secret, "api_key", "3f2a9c0e7b1d4f6a8c2e0b9d7f5a3c1e", true));
        assert!(!value_is_secret(Secret, "api_key", "created_at", true));
        assert!(!value_is_secret(Secret, "api_key", "1234567890", true));
        assert!(!value_is_secret(Secret, "key_file", "/etc/ssl/private/server.key", false));
        assert!(value_is_secret(Secret, "LOGZIO_TOKEN", "qwhdkzmpbnvlreoiuytxacsfgjqkzmwe", false));
        assert!(!value_is_secret(Weak, "key", "value", true));
        assert!(value_is_secret(Weak, "key", "q8Zt3LmX0vKp7RwB2nYc", true));
    }
}

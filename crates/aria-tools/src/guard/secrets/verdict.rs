//! The second look at a pattern match, in code (the regex crate has no look-around): whether
//! what a rule matched is a secret to replace, judged by the rule's [`Check`].

use regex::Captures;

use super::secret_judge::{
    Strength, is_hex_digest, is_placeholder, is_vendor_placeholder, strength, value_is_secret,
};
use super::{Check, Slots};

#[derive(Clone, Copy)]
pub(super) enum Verdict {
    /// Replace `text[start..end]`.
    Redact(usize, usize),
    /// Not a secret; continue searching at this byte offset.
    Skip(usize),
}

pub(super) fn judge(
    text: &str,
    caps: &Captures<'_>,
    slots: &Slots,
    whole: regex::Match<'_>,
) -> Verdict {
    // The first value group that took part, and whether it is the last (unquoted) alternative.
    let (value, unquoted) =
        match slots.values.iter().enumerate().find_map(|(i, g)| caps.get(*g).map(|m| (i, m))) {
            Some((i, m)) => (m, slots.values.len() > 1 && i + 1 == slots.values.len()),
            None => (whole, false),
        };
    let name = slots.name(caps);
    let ok = match slots.check {
        Check::None => true,
        // A token format matched alone that is a one-case hex digest is the digest; with
        // context around it (`Authorization: Token <40 hex>`) it is a token.
        Check::Token => {
            let digest_alone = value.range() == whole.range() && is_hex_digest(value.as_str());
            !is_vendor_placeholder(value.as_str()) && !digest_alone
        }
        Check::Cookie => {
            !is_vendor_placeholder(value.as_str()) && !value.as_str().starts_with("eyJ")
        }
        Check::HasDigit => {
            whole.as_str().bytes().any(|b| b.is_ascii_digit())
                && !is_vendor_placeholder(value.as_str())
        }
        Check::UrlPassword => url_password_is_secret(name.unwrap_or(""), value.as_str()),
        Check::EnvValue => env_value_is_secret(text, caps, slots, whole, value, unquoted),
        Check::Prose => {
            let (name, v) = (name.unwrap_or("password"), value.as_str());
            // Names the judge does not know as words of their own (`PGPASS`, `requirepass`,
            // `bindpw`, `masterauth`, `…_authtok`) still say password.
            let lower = name.to_ascii_lowercase();
            let floor =
                if lower.contains("pass") || lower.ends_with("pw") || lower.ends_with("authtok") {
                    Strength::Password
                } else if lower.ends_with("auth") {
                    Strength::Secret
                } else {
                    Strength::Weak
                };
            v.len() >= 8
                && v.bytes().any(|b| b.is_ascii_digit())
                && v.bytes().any(|b| b.is_ascii_alphabetic())
                && value_is_secret(strength(name).max(floor), name, v, false)
        }
        Check::Named | Check::Nearby => {
            let name = name.unwrap_or("password");
            value_is_secret(strength(name), name, value.as_str(), !unquoted)
        }
    };
    if ok && !value.as_str().is_empty() && !value.as_str().starts_with("[REDACTED") {
        Verdict::Redact(value.start(), value.end())
    } else {
        Verdict::Skip(value.start())
    }
}

/// The password of `scheme://user:password@`: a secret unless it is a placeholder, a
/// well-known default or the user name again.
fn url_password_is_secret(user: &str, password: &str) -> bool {
    // `%40…` is a percent-encoded first character; `%DB_PASS%` a Windows variable.
    let encoded =
        password.as_bytes().get(1..3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
            && !password.ends_with('%');
    if password == user
        || password.starts_with(['$', '{'])
        || (password.starts_with('%') && !encoded)
    {
        return false;
    }
    // `host:8080/path/@x`: a port and a path, not a password (the form that lets `/`, `?`,
    // `#` into a password reads them so).
    if let Some(at) = password.find(['/', '?', '#'])
        && password[..at].bytes().all(|b| b.is_ascii_digit())
    {
        return false;
    }
    let generic = value_is_secret(Strength::Password, "password", password, true);
    // Short passwords count here (the URL says what they are), unless they are stand-ins.
    generic || (password.len() >= 3 && !is_placeholder(password) && !is_default(password))
}

fn is_default(v: &str) -> bool {
    matches!(
        v.to_ascii_lowercase().as_str(),
        "password"
            | "pass"
            | "secret"
            | "postgres"
            | "root"
            | "admin"
            | "guest"
            | "mysql"
            | "test"
            | "changeme"
            | "pwd"
            | "passwd"
            | "redis"
            | "rabbitmq"
            | "user"
            | "example"
    )
}

/// Second look at `NAME=value` / `"name": value`: is `value` a literal secret, or code?
fn env_value_is_secret(
    text: &str,
    caps: &Captures<'_>,
    slots: &Slots,
    whole: regex::Match<'_>,
    value: regex::Match<'_>,
    unquoted: bool,
) -> bool {
    let v = value.as_str();
    if v.starts_with(['$', '<', '%']) {
        return false; // ${VAR}, <placeholder>, %(name)s
    }
    if text[..whole.start()].ends_with("[REDACTED:") {
        return false; // `[REDACTED:api_key] = …`: our own marker, not an index assignment
    }
    let name = slots.name(caps).unwrap_or("");
    if !unquoted {
        return value_is_secret(strength(name), name, v, true);
    }
    if v.starts_with(['=', '>', ':']) || v.bytes().all(|b| b == b'*') {
        return false; // ==, =>, :=, ::, masked
    }
    let lower = v.to_ascii_lowercase();
    if matches!(lower.as_str(), "true" | "false" | "null" | "none" | "nil" | "undefined")
        || is_number(v)
        || is_dotted_identifier(v)
    {
        return false;
    }
    if text[value.end()..].starts_with(['(', '[', '{', '<']) {
        return false; // a call or an index: get_token(), environ["X"]
    }
    let colon = slots.separator.and_then(|g| caps.get(g)).is_some_and(|m| m.as_str() == ":");
    let key_quoted =
        slots.key_quote.and_then(|g| caps.get(g)).is_some_and(|m| !m.as_str().is_empty());
    if colon && !key_quoted {
        // YAML `password: x` only: alone on its line (a `# comment` may follow), or an entry
        // of a flow mapping (`{user: app, password: x}`). `fn f(token: &str)`, `api_key:
        // String,` and `x: str = ...` are code.
        let line_start = text[..whole.start()].rfind('\n').map_or(0, |i| i + 1);
        let before = text[line_start..whole.start()].trim();
        let after_end = text[value.end()..].find('\n').map_or(text.len(), |i| value.end() + i);
        let after = &text[value.end()..after_end];
        let rest = after.trim_start();
        let flow = before.contains('{') && (before.ends_with('{') || before.ends_with(','));
        let ends_line = rest.is_empty() || (rest.starts_with('#') && rest.len() < after.len());
        let alone = (before.is_empty() || before == "-") && ends_line;
        // A log line that ends `… with password: x`: a password name as a word of its own,
        // the value last on the line.
        let logged = ends_line
            && strength(name) == Strength::Password
            && text[..whole.start()].ends_with([' ', '\t']);
        if !(alone || logged || (flow && rest.starts_with(['}', ',']))) {
            return false;
        }
    }
    value_is_secret(strength(name), name, v, false)
}

pub(super) fn is_number(v: &str) -> bool {
    let v = v.strip_prefix('-').unwrap_or(v);
    !v.is_empty()
        && v.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && v.bytes().any(|b| b.is_ascii_digit())
}

pub(super) fn is_dotted_identifier(v: &str) -> bool {
    let mut parts = 0;
    for part in v.split('.') {
        let mut chars = part.chars();
        let starts_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !starts_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return false;
        }
        parts += 1;
    }
    parts >= 2
}

//! Canonical JSON: the one byte representation of a JSON value that the audit chain hashes.
//!
//! - Objects: keys sorted by their UTF-8 bytes (memcmp order), each key once.
//! - No whitespace anywhere.
//! - Strings: the bytes as they are, except `"` → `\"`, `\` → `\\`, U+0008 → `\b`,
//!   U+0009 → `\t`, U+000A → `\n`, U+000C → `\f`, U+000D → `\r`, and every other byte below
//!   0x20 → `\u00XX` with lowercase hex. Nothing else is escaped (not `/`, not DEL, not
//!   non-ASCII). This is exactly what `serde_json` writes.
//! - Numbers: as `serde_json` prints them: integers in decimal, floats in the shortest form
//!   that parses back to the same `f64` (`1.0`, `0.1`, `1e+300`, `-2.5e-8`).
//! - `true`, `false`, `null`.
//!
//! The serializer is ours rather than `serde_json::to_string` because `serde_json`'s map order
//! depends on a cargo feature (`preserve_order`) that any crate in the build may switch on.

use serde_json::Value;

/// The canonical JSON text of `value`.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::with_capacity(128);
    write_canonical_json(&mut out, value);
    // Every byte written is ASCII or copied from a `&str` in runs that start and end at ASCII
    // bytes, so the buffer is valid UTF-8; the lossy branch cannot be taken.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Appends the canonical JSON text of `value` to `out`.
pub fn write_canonical_json(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::String(s) => write_json_string(out, s.as_bytes()),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical_json(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json_string(out, key.as_bytes());
                out.push(b':');
                write_canonical_json(out, item);
            }
            out.push(b'}');
        }
    }
}

/// Appends `s` as a quoted JSON string with the escapes above. Works on bytes so the verifier
/// can hash a column a tamperer filled with invalid UTF-8 (bytes ≥ 0x80 pass through).
pub(crate) fn write_json_string(out: &mut Vec<u8>, s: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    // Fast path: most strings (ids, hashes, times, kinds) need no escape at all.
    if !s.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\') {
        out.extend_from_slice(s);
        out.push(b'"');
        return;
    }
    let mut start = 0;
    for (i, &b) in s.iter().enumerate() {
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            0x09 => b't',
            0x0a => b'n',
            0x0c => b'f',
            0x0d => b'r',
            0x00..=0x1f => b'u',
            _ => continue,
        };
        out.extend_from_slice(&s[start..i]);
        start = i + 1;
        if short == b'u' {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.push(b'\\');
            out.push(short);
        }
    }
    out.extend_from_slice(&s[start..]);
    out.push(b'"');
}

/// Appends `n` in decimal.
pub(crate) fn write_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        // `n % 10` is below 10, so the cast is exact.
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests;

//! High-entropy tokens: random-looking secrets that no named format catches, found by their
//! Shannon entropy (more than 4.5 bits per character over 64 characters or more).
//!
//! A *token* is a run of the characters secrets are written in — letters, digits, `+ / _ -` —
//! with any `=` padding at its end. A token of 64 or more characters is a secret when its
//! entropy, over the whole token or over some 64-character window of it, exceeds
//! [`ENTROPY_THRESHOLD`] bits per character, and it contains both a letter and a digit.
//!
//! Hex digests (git SHAs, sha256) and UUIDs cannot reach the threshold: 16 symbols carry at
//! most 4 bits. What can, and is not a secret, is skipped by name: `data:…;base64,` payloads,
//! subresource-integrity hashes (`sha512-…`), SSH public keys (`ssh-ed25519 AAAA…`), the body of
//! a public PEM block (certificates, public keys) and lines of a multi-line base64 block (a MIME
//! attachment, an embedded file): a secret is one token, not a wall of them.

/// Bits per character above which a long token counts as random: more than hex can carry (4),
/// so digests and UUIDs never count.
pub const ENTROPY_THRESHOLD: f64 = 4.5;
/// The shortest token judged by entropy (a string of n characters has at most log2 n bits per
/// character, so shorter tokens say too little).
pub const ENTROPY_MIN_LEN: usize = 64;

const WINDOW: usize = ENTROPY_MIN_LEN;

/// Shannon entropy of `bytes` in bits per byte (0 for empty input).
pub fn shannon_entropy(bytes: &[u8]) -> f64 {
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    let n = bytes.len() as f64;
    counts.iter().filter(|&&c| c > 0).map(|&c| c as f64 / n).map(|p| -p * p.log2()).sum()
}

/// Is `b` a character a token is written in (`=` only as padding, handled by the caller)?
const fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'_' | b'-')
}

const TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = is_token_byte(i as u8);
        i += 1;
    }
    t
};

/// Byte ranges of high-entropy tokens in `text`, in order.
pub(crate) fn find_high_entropy(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut public_blocks: Option<Vec<(usize, usize)>> = None;
    let mut i = 0;
    while i < bytes.len() {
        if !TOKEN[usize::from(bytes[i])] {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && TOKEN[usize::from(bytes[i])] {
            i += 1;
        }
        while i < bytes.len() && bytes[i] == b'=' {
            i += 1;
        }
        let end = i;
        if end - start < ENTROPY_MIN_LEN {
            continue;
        }
        let token = &bytes[start..end];
        if !is_random(token) || is_known_encoding(text, start, end) {
            continue;
        }
        let blocks = public_blocks.get_or_insert_with(|| public_pem_blocks(text));
        if blocks.iter().any(|&(s, e)| s <= start && end <= e) || is_blob_line(bytes, start, end) {
            continue;
        }
        found.push((start, end));
    }
    found
}

/// Letters and digits both, and over the threshold on the whole or on some 64-byte window.
fn is_random(token: &[u8]) -> bool {
    let has_digit = token.iter().any(u8::is_ascii_digit);
    let has_letter = token.iter().any(u8::is_ascii_alphabetic);
    if !has_digit || !has_letter {
        return false;
    }
    if shannon_entropy(token) > ENTROPY_THRESHOLD {
        return true;
    }
    max_window_entropy(token) > ENTROPY_THRESHOLD
}

/// The highest entropy of any `WINDOW`-byte window, updated in O(1) per step:
/// H = log2(W) - (Σ c·log2 c) / W over the symbol counts c of the window.
fn max_window_entropy(token: &[u8]) -> f64 {
    if token.len() <= WINDOW {
        return shannon_entropy(token);
    }
    let c_log_c = |c: u32| if c == 0 { 0.0 } else { c as f64 * (c as f64).log2() };
    let mut counts = [0u32; 256];
    let mut sum = 0.0;
    let bump = |counts: &mut [u32; 256], sum: &mut f64, b: u8, up: bool| {
        let c = &mut counts[usize::from(b)];
        *sum -= c_log_c(*c);
        *c = if up { *c + 1 } else { c.saturating_sub(1) };
        *sum += c_log_c(*c);
    };
    for &b in &token[..WINDOW] {
        bump(&mut counts, &mut sum, b, true);
    }
    let w = WINDOW as f64;
    let mut best = w.log2() - sum / w;
    for k in WINDOW..token.len() {
        bump(&mut counts, &mut sum, token[k], true);
        bump(&mut counts, &mut sum, token[k - WINDOW], false);
        best = best.max(w.log2() - sum / w);
    }
    best
}

/// A data URI payload, a subresource-integrity hash, or the key of an SSH public key line.
fn is_known_encoding(text: &str, start: usize, end: usize) -> bool {
    let before = &text[..start];
    let token = &text[start..end];
    if before.ends_with("base64,") {
        return true;
    }
    if ["sha1-", "sha256-", "sha384-", "sha512-"].iter().any(|p| token.starts_with(p)) {
        return true;
    }
    if token.starts_with("AAAA") {
        let word = before.trim_end_matches([' ', '\t']);
        // The word after the last blank, which may be more than one byte (a no-break space).
        let from = word.char_indices().rev().find(|(_, c)| c.is_whitespace());
        let word = &word[from.map_or(0, |(i, c)| i + c.len_utf8())..];
        return ["ssh-", "ecdsa-", "sk-ssh-", "sk-ecdsa-"].iter().any(|p| word.starts_with(p));
    }
    false
}

/// Ranges of PEM blocks that are not private keys (certificates, public keys, CSRs). Private
/// key blocks are removed whole by the pattern pass before this runs.
fn public_pem_blocks(text: &str) -> Vec<(usize, usize)> {
    let mut blocks = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("-----BEGIN ") {
        let begin = from + at;
        let Some(end_at) = text[begin..].find("-----END ") else {
            blocks.push((begin, text.len()));
            break;
        };
        let end = begin + end_at;
        let label = &text[begin..text[begin..].find('\n').map_or(end, |n| begin + n).min(end)];
        if !label.contains("PRIVATE") {
            blocks.push((begin, end));
        }
        from = end + "-----END ".len();
    }
    blocks
}

/// The token fills its line, and the line above or below is another full-line token of at
/// least 60 bytes: a line of an encoded block, not a lone secret.
fn is_blob_line(bytes: &[u8], start: usize, end: usize) -> bool {
    let line_start = bytes[..start].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line_end = bytes[end..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| end + i);
    let blank = |s: &[u8]| s.iter().all(|b| b.is_ascii_whitespace());
    if !blank(&bytes[line_start..start]) || !blank(&bytes[end..line_end]) {
        return false;
    }
    let full_token_line = |line: &[u8]| {
        let t = line.trim_ascii();
        t.len() >= 60 && t.iter().all(|&b| TOKEN[usize::from(b)] || b == b'=')
    };
    let prev = (line_start > 0).then(|| {
        let s = bytes[..line_start - 1].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        &bytes[s..line_start - 1]
    });
    let next = (line_end < bytes.len()).then(|| {
        let rest = &bytes[line_end + 1..];
        &rest[..rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())]
    });
    prev.is_some_and(full_token_line) || next.is_some_and(full_token_line)
}

#[cfg(test)]
mod tests {
    /// Found by fuzzing: a multi-byte blank (no-break space) before an `AAAA…` token cut the
    /// text inside that character and panicked.
    #[test]
    fn a_multi_byte_blank_before_an_aaaa_token_is_not_cut_inside() {
        let token =
            "AAAAB3NzaC1yc2EAAAADAQABgQC7x9Kp2mQ4vL8rT3wZ6yN1sF5hJ0dGuVbXcWeRtYiOpLkJhGfDsqZxCvBnM";
        for blank in ['\u{a0}', '\u{3000}', '\u{2003}'] {
            let text = format!("ssh-rsa{blank}{token}");
            let _ = find_high_entropy(&text);
            let text = format!("x{blank}ssh-rsa {token}");
            assert!(find_high_entropy(&text).is_empty(), "{text:?}");
        }
    }

    use super::*;

    #[test]
    fn window_entropy_matches_the_direct_figure() {
        let token: Vec<u8> = (0..200u32).map(|i| b"abcdefgh0123"[(i * i % 12) as usize]).collect();
        let direct = token.windows(WINDOW).map(shannon_entropy).fold(0.0, f64::max);
        assert!((max_window_entropy(&token) - direct).abs() < 1e-9);
    }

    #[test]
    fn a_random_window_inside_a_dull_token_is_found() {
        let mut token = vec![b'a'; 300];
        token[100..164]
            .copy_from_slice(b"q8Zt3LmX0vKp7RwB2nYc9HdJ4sFg6TaE1uQiW5oNzVkGxMbCy0rDhSlPjAeUf3Ik");
        assert!(shannon_entropy(&token) < ENTROPY_THRESHOLD);
        assert!(is_random(&token));
    }

    #[test]
    fn paths_and_identifiers_stay_under_the_threshold() {
        for t in [
            "src/components/dashboard/widgets/charts/BarChart2/index_and_more_stuff",
            "snake_case_identifiers_joined_together_with_numbers_123_and_more_words",
            "--enable-feature-flag-number-42-for-the-experimental-build-pipeline-x",
        ] {
            assert!(find_high_entropy(t).is_empty(), "{t}");
        }
    }

    #[test]
    fn an_unterminated_public_block_still_counts() {
        let text = "-----BEGIN CERTIFICATE-----\nabc";
        assert_eq!(public_pem_blocks(text), vec![(0, text.len())]);
    }
}

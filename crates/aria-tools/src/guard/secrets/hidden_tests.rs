//! Secrets with hidden characters inside: a zero-width space, word joiner,
//! byte-order mark, soft hyphen, zero-width non-joiner, direction mark, variation selector or
//! bidi control inside a key used to take it past every pattern whole. Each is tried at several
//! places in several token formats and in a configured value.

use std::borrow::Cow;

use aria_api::Redact;
use proptest::prelude::*;

use super::SecretRedactor;
use crate::guard::invisible;

/// Hidden characters an attacker (or a copy from a web page) may put inside a key.
const HIDDEN: &[char] = &[
    '\u{200B}',  // zero-width space
    '\u{2060}',  // word joiner
    '\u{FEFF}',  // zero-width no-break space / byte-order mark
    '\u{00AD}',  // soft hyphen
    '\u{200C}',  // zero-width non-joiner
    '\u{200D}',  // zero-width joiner
    '\u{200E}',  // left-to-right mark
    '\u{200F}',  // right-to-left mark
    '\u{061C}',  // Arabic letter mark
    '\u{202E}',  // right-to-left override
    '\u{2066}',  // left-to-right isolate
    '\u{2063}',  // invisible separator
    '\u{180E}',  // Mongolian vowel separator
    '\u{034F}',  // combining grapheme joiner
    '\u{FE0F}',  // variation selector 16
    '\u{FE00}',  // variation selector 1
    '\u{E0100}', // variation selector 17
    '\u{E01EF}', // variation selector 256
    '\u{E0001}', // language tag
    '\u{1D173}', // musical symbol begin beam
];

const OPENAI: &str = "sk-proj-Ab3dEf9hIjKlMnOpQrStUvWxYz0123456789AbCdEf";
const GITHUB: &str = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8";
const AWS: &str = "AKIA2OGYBAH6TQ3LWXPZ";
const ANTHROPIC: &str = "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa";
const SLACK: &str = "xoxb-1234567890-abcdefghijKLMN";
/// What a configured `OPENAI_API_KEY` might hold; no pattern matches it, only the known value.
const CONFIGURED: &str = "opaque.Configured.Value.4242";

fn redactor() -> SecretRedactor {
    SecretRedactor::new(vec![CONFIGURED.to_owned()])
}

/// `token` with `hidden` inserted before the character at `at`.
fn split(token: &str, at: usize, hidden: char) -> String {
    let (a, b) = token.split_at(at);
    format!("{a}{hidden}{b}")
}

/// No visible trace of `token` in `out`: neither it whole (once hidden characters are dropped)
/// nor either half around the place it was split.
fn assert_gone(out: &str, token: &str, at: usize, input: &str) {
    let seen = invisible::reveal(out).unwrap_or_else(|| out.to_owned());
    assert!(!seen.contains(token), "{input:?} -> {out:?}");
    let (head, tail) = token.split_at(at);
    for half in [head, tail] {
        if half.len() >= 12 {
            assert!(!seen.contains(half), "{half:?} survived: {input:?} -> {out:?}");
        }
    }
    assert!(out.contains("[REDACTED:"), "{input:?} -> {out:?}");
}

#[test]
fn every_hidden_character_at_several_places_in_every_format_is_redacted() {
    let r = redactor();
    for token in [OPENAI, GITHUB, AWS, ANTHROPIC, SLACK, CONFIGURED] {
        let places = [1, 3, token.len() / 2, token.len() - 1];
        for &hidden in HIDDEN {
            for at in places {
                let secret = split(token, at, hidden);
                for input in [
                    secret.clone(),
                    format!("export OPENAI_API_KEY={secret}\n"),
                    format!("the key is \"{secret}\", keep it safe"),
                ] {
                    let out = r.redact(&input);
                    assert_gone(&out, token, at, &input);
                }
            }
        }
    }
}

#[test]
fn several_hidden_characters_at_once_and_the_kind_is_reported() {
    let r = redactor();
    let mangled: String = GITHUB.chars().flat_map(|c| [c, '\u{200B}']).collect();
    let report = r.redact_report(&mangled);
    assert_eq!(report.kinds, vec!["github_token"]);
    assert_eq!(report.text, "[REDACTED:github_token]");
    let known = format!("value: {}", split(CONFIGURED, 6, '\u{2060}'));
    let report = r.redact_report(&known);
    assert_eq!(report.kinds, vec!["known"]);
    assert_eq!(report.text, "value: [REDACTED:known]");
}

#[test]
fn a_key_spelled_in_tag_characters_is_redacted() {
    let tags: String =
        GITHUB.chars().map(|c| char::from_u32(0xE0000 + c as u32).unwrap()).collect();
    let text = format!("Nice weather.{tags}");
    let out = redactor().redact(&text);
    assert_eq!(out, "Nice weather.[REDACTED:github_token]");
}

#[test]
fn a_hidden_character_that_joins_a_key_to_the_word_before_it_does_not_hide_either() {
    // Dropping U+200B would glue "x" to "ghp_…" (no word boundary left); the key is found in
    // the text as given, and the split OpenAI key in the normalised text.
    let input = format!("x\u{200B}{GITHUB} and {}", split(OPENAI, 20, '\u{2060}'));
    let out = redactor().redact(&input);
    assert_eq!(out, "x[REDACTED:github_token] and [REDACTED:openai_key]");
}

#[test]
fn text_without_secrets_keeps_its_hidden_characters_and_is_borrowed() {
    let r = redactor();
    for text in [
        "Ig\u{200B}nore this word split",
        "family 👨\u{200D}👩\u{200D}👧 ❤\u{FE0F}",
        "\u{FEFF}a file with a byte-order mark",
        "soft\u{00AD}hyphen",
    ] {
        assert!(matches!(r.redact(text), Cow::Borrowed(t) if t == text), "{text:?}");
    }
    // A secret elsewhere in the text: found in the text as given, hidden characters kept.
    let text = format!("ok\u{200B}ay {GITHUB}");
    assert_eq!(r.redact(&text), "ok\u{200B}ay [REDACTED:github_token]");
}

#[test]
fn a_configured_value_holding_a_hidden_character_is_found_in_both_spellings() {
    let r = SecretRedactor::new(vec![split(CONFIGURED, 4, '\u{200B}')]);
    assert_eq!(r.redact(&format!("a {CONFIGURED} b")), "a [REDACTED:known] b");
    let as_configured = format!("a {} b", split(CONFIGURED, 4, '\u{200B}'));
    assert_eq!(r.redact(&as_configured), "a [REDACTED:known] b");
}

fn hidden_char() -> impl Strategy<Value = char> {
    prop::sample::select(HIDDEN)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    /// Any number of hidden characters anywhere in a key, with text around it: nothing of the
    /// key is left, and redacting again changes nothing.
    #[test]
    fn hidden_characters_anywhere_never_let_a_key_through(
        token in prop::sample::select(&[OPENAI, GITHUB, AWS, ANTHROPIC, SLACK, CONFIGURED][..]),
        inserts in prop::collection::vec((0usize..64, hidden_char()), 1..6),
        before in "[a-z ]{0,8}",
        after in "([ .,;\n][a-z .,;]{0,7})?",
    ) {
        let mut key: Vec<char> = token.chars().collect();
        let mut places: Vec<usize> = Vec::new();
        for (at, c) in inserts {
            let at = 1 + at % (key.len() - 1);
            key.insert(at, c);
            places.push(at);
        }
        let key: String = key.into_iter().collect();
        let input = format!("{before} {key}{after}");
        let r = redactor();
        let out = r.redact(&input).into_owned();
        let seen = invisible::reveal(&out).unwrap_or_else(|| out.clone());
        prop_assert!(!seen.contains(token), "{:?} -> {:?}", input, out);
        prop_assert!(!seen.contains(&token[token.len() - 8..]), "{:?} -> {:?}", input, out);
        prop_assert_eq!(r.redact(&out).into_owned(), out);
    }
}

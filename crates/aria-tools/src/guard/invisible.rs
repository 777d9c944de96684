//! Invisible Unicode: characters a person does not see but a model reads (or that split a word
//! so a filter does not). They are removed before the injection rules run, so
//! "ig\u{200B}nore previous instructions" is seen as written; Unicode tag characters (U+E0000 …
//! U+E007F, "ASCII smuggling") are decoded into a visible note instead, so no data is lost.
//!
//! Legitimate uses stay: a byte-order mark at the very start, joiners between two non-ASCII
//! characters (emoji sequences, Persian and Indic scripts), variation selectors U+FE00–FE0F
//! after a non-ASCII character (emoji presentation) or in a keycap (`1\u{FE0F}\u{20E3}`), and
//! the tag sequences of subdivision flags (after U+1F3F4).
//!
//! The secret redactor needs a stricter view: [`reveal`] removes *every* hidden character
//! ([`is_hidden`]: Unicode format characters, category Cf, and default-ignorable code points,
//! which include the soft hyphen and all variation selectors) and decodes tag characters in
//! place, so that a key split by one of them is seen whole.

use std::borrow::Cow;

/// The text with invisible characters removed, and where something suspicious was.
#[derive(Debug)]
pub(crate) struct Cleaned<'a> {
    pub(crate) text: Cow<'a, str>,
    /// Byte ranges in `text` of suspicious invisible content: empty ranges where characters
    /// were removed, or the range of a note that shows decoded tag characters.
    pub(crate) suspicious: Vec<(usize, usize)>,
    /// How many characters were removed or decoded.
    pub(crate) removed: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Visible,
    /// Removed; suspicious when it splits an ASCII word or comes in a run.
    Invisible,
    /// Bidirectional overrides and isolates ("Trojan Source"): removed, always suspicious.
    Bidi,
    /// Zero-width (non-)joiners and direction marks: kept between two non-ASCII characters.
    Joiner,
    /// Unicode tag characters: decoded into a note.
    Tag,
    /// Variation selectors U+FE00–FE0F: kept after a non-ASCII character or in a keycap.
    Selector,
}

fn class(c: char) -> Class {
    match c {
        '\u{200C}' | '\u{200D}' | '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{115F}'
        | '\u{1160}' => Class::Joiner,
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => Class::Bidi,
        '\u{E0000}'..='\u{E007F}' => Class::Tag,
        '\u{FE00}'..='\u{FE0F}' => Class::Selector,
        // Prepended concatenation marks (the Arabic number sign, ...) are format characters
        // that are drawn: they stay for the model. The redactor's view removes them too.
        '\u{0600}'..='\u{0605}'
        | '\u{06DD}'
        | '\u{070F}'
        | '\u{0890}'..='\u{0891}'
        | '\u{08E2}'
        | '\u{110BD}'
        | '\u{110CD}' => Class::Visible,
        c if is_hidden(c) => Class::Invisible,
        _ => Class::Visible,
    }
}

/// Whether `c` is hidden from a reader: a Unicode format character (general category Cf:
/// zero-width space and joiners, direction marks and bidi controls, word joiner, invisible
/// operators, byte-order mark, tag characters, ...) or a default-ignorable code point (soft
/// hyphen, combining grapheme joiner, Hangul fillers, Mongolian and all other variation
/// selectors, U+E0000–E0FFF). Unicode 15.1.
pub(crate) fn is_hidden(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{0600}'..='\u{0605}'
            | '\u{061C}'
            | '\u{06DD}'
            | '\u{070F}'
            | '\u{0890}'..='\u{0891}'
            | '\u{08E2}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFFB}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// Whether `b` starts the UTF-8 encoding of some [`is_hidden`] character (U+00AD: C2, U+034F:
/// CD, U+06xx/U+070F: D8/DB/DC, U+08xx: E0, U+1xxx: E1, U+2xxx: E2, U+3164: E3, U+FxxX: EF,
/// planes 1 and 14: F0/F3).
fn may_start_hidden(b: u8) -> bool {
    matches!(b, 0xC2 | 0xCD | 0xD8 | 0xDB | 0xDC | 0xE0 | 0xE1 | 0xE2 | 0xE3 | 0xEF | 0xF0 | 0xF3)
}

/// The byte offset of the first [`is_hidden`] character in `text`. ASCII text is skipped 32
/// bytes at a time; elsewhere only the lead bytes that can start one are decoded.
pub(crate) fn first_hidden(text: &str) -> Option<usize> {
    first_where(text, is_hidden)
}

/// The byte offset of the first character in `text` that is [`is_hidden`] or has a
/// [`folded`] form, as quickly as [`first_hidden`] (every such character starts with one of
/// the same lead bytes).
pub(crate) fn first_disguised(text: &str) -> Option<usize> {
    first_where(text, |c| is_hidden(c) || folded(c).is_some())
}

/// The printable ASCII character that `c` is a compatibility look-alike of, as NFKC would
/// read it: fullwidth forms (`ｇｈｐ＿`, `＝`, `：`), the space characters other than U+0020
/// (no-break, ideographic, en/em and the other typographic spaces), and the mathematical
/// alphanumeric symbols (bold, italic, script, double-struck ... letters and digits). A model
/// reads all of these as the ASCII they look like; the secret patterns only know ASCII.
pub(crate) fn folded(c: char) -> Option<char> {
    let u = c as u32;
    let ascii = match u {
        0xFF01..=0xFF5E => u - 0xFEE0,
        0x00A0 | 0x1680 | 0x2000..=0x200A | 0x202F | 0x205F | 0x3000 => 0x20,
        // 13 alphabets of 52 letters (A–Z, a–z) from U+1D400, then digits in five styles.
        0x1D400..=0x1D6A3 => {
            let i = (u - 0x1D400) % 52;
            if i < 26 { u32::from(b'A') + i } else { u32::from(b'a') + i - 26 }
        }
        0x1D7CE..=0x1D7FF => u32::from(b'0') + (u - 0x1D7CE) % 10,
        _ => return None,
    };
    char::from_u32(ascii)
}

fn first_where(text: &str, wanted: impl Fn(char) -> bool) -> Option<usize> {
    if text.is_ascii() {
        return None;
    }
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let end = (at + 32).min(bytes.len());
        if bytes[at..end].is_ascii() {
            at = end;
            continue;
        }
        for i in at..end {
            // `text` is valid UTF-8 and a lead byte starts a character, so `i` is a boundary.
            if may_start_hidden(bytes[i]) && text[i..].chars().next().is_some_and(&wanted) {
                return Some(i);
            }
        }
        at = end;
    }
    None
}

/// `text` as the secret redactor judges it: every [`is_hidden`] character removed, and tag
/// characters U+E0020–E007E replaced by the ASCII they encode ("ASCII smuggling" is read by
/// models). `None` when there is nothing hidden, which is the common case and allocates nothing.
pub(crate) fn reveal(text: &str) -> Option<String> {
    let first = first_hidden(text)?;
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..first]);
    out.extend(text[first..].chars().filter_map(revealed));
    Some(out)
}

/// What [`reveal`] makes of one character: itself, the ASCII a tag character encodes, or
/// nothing for any other hidden character.
pub(crate) fn revealed(c: char) -> Option<char> {
    if !is_hidden(c) {
        return Some(c);
    }
    if ('\u{E0020}'..='\u{E007E}').contains(&c) {
        return char::from_u32(c as u32 - 0xE0000);
    }
    None
}

/// Runs of this many invisible characters are suspicious wherever they are (bits encoded as
/// zero-width characters).
const SUSPICIOUS_RUN: usize = 4;

pub(crate) fn clean(text: &str) -> Cleaned<'_> {
    // Fast path: every character that is not `Visible` is hidden.
    if first_hidden(text).is_none() {
        return Cleaned { text: Cow::Borrowed(text), suspicious: Vec::new(), removed: 0 };
    }
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = String::with_capacity(text.len());
    let mut suspicious = Vec::new();
    let mut removed = 0;
    let mut changed = false;
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        let kind = class(c);
        if kind == Class::Visible {
            out.push(c);
            i += 1;
            continue;
        }
        // A run of non-visible characters of any kind.
        let run_start = i;
        while i < chars.len() && class(chars[i].1) != Class::Visible {
            i += 1;
        }
        let run = &chars[run_start..i];
        let before = out.chars().next_back();
        let after = chars.get(i).map(|&(_, c)| c);
        if let Some(kept) = legitimate(run, at, before, after) {
            changed |= kept.chars().count() != run.len();
            out.push_str(&kept);
            continue;
        }
        changed = true;
        removed += run.len();
        let tags: String = run
            .iter()
            .filter(|(_, c)| class(*c) == Class::Tag)
            .filter_map(|(_, c)| char::from_u32(*c as u32 - 0xE0000))
            .filter(|c| c.is_ascii_graphic() || *c == ' ')
            .collect();
        let splits_word = before.is_some_and(|b| b.is_ascii_alphanumeric())
            && after.is_some_and(|a| a.is_ascii_alphanumeric());
        let bidi = run.iter().any(|(_, c)| class(*c) == Class::Bidi);
        if !tags.is_empty() {
            let start = out.len();
            out.push_str(&format!(
                "[ARIA: hidden text in invisible Unicode tag characters: \"{tags}\"]"
            ));
            suspicious.push((start, out.len()));
        } else if splits_word || bidi || run.len() >= SUSPICIOUS_RUN {
            suspicious.push((out.len(), out.len()));
        }
    }
    if !changed {
        return Cleaned { text: Cow::Borrowed(text), suspicious, removed };
    }
    Cleaned { text: Cow::Owned(out), suspicious, removed }
}

/// What to keep of a run of non-visible characters, if it is a legitimate use.
fn legitimate(
    run: &[(usize, char)],
    at: usize,
    before: Option<char>,
    after: Option<char>,
) -> Option<String> {
    let all = |k: Class| run.iter().all(|(_, c)| class(*c) == k);
    if at == 0 && run.len() == 1 && run[0].1 == '\u{FEFF}' {
        // A byte-order mark at the start: dropped silently.
        return Some(String::new());
    }
    let non_ascii = |c: Option<char>| c.is_some_and(|c| !c.is_ascii());
    let joins = |k: Class| matches!(k, Class::Joiner | Class::Selector);
    // Emoji sequences (`👨\u{200D}👩`, `❤\u{FE0F}\u{200D}🔥`, `❤\u{FE0F}`) and joiners inside
    // non-Latin scripts: only ever next to non-ASCII characters, so no ASCII word is split.
    if run.len() <= 3
        && run.iter().all(|(_, c)| joins(class(*c)))
        && non_ascii(before)
        && (non_ascii(after) || all(Class::Selector))
    {
        return Some(run.iter().map(|(_, c)| *c).collect());
    }
    if before == Some('\u{1F3F4}') && is_flag_tag_sequence(run) {
        return Some(run.iter().map(|(_, c)| *c).collect());
    }
    // A keycap: `1\u{FE0F}\u{20E3}`.
    let keycap_base = before.is_some_and(|b| b.is_ascii_digit() || b == '#' || b == '*');
    if run.len() == 1 && all(Class::Selector) && keycap_base && after == Some('\u{20E3}') {
        return Some(run.iter().map(|(_, c)| *c).collect());
    }
    None
}

/// A subdivision flag's tags: one to six lower-case letters or digits, then CANCEL TAG
/// (`\u{1F3F4}` + "gbsct" + U+E007F is Scotland's). Anything longer or else is hidden text.
fn is_flag_tag_sequence(run: &[(usize, char)]) -> bool {
    let Some(((_, last), body)) = run.split_last() else { return false };
    *last == '\u{E007F}'
        && (1..=6).contains(&body.len())
        && body
            .iter()
            .all(|(_, c)| matches!(*c, '\u{E0030}'..='\u{E0039}' | '\u{E0061}'..='\u{E007A}'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed() {
        let c = clean("hello — naïve café ✓ 日本");
        assert!(matches!(c.text, Cow::Borrowed(_)) && c.suspicious.is_empty());
    }

    #[test]
    fn a_zero_width_space_between_words_is_removed_quietly() {
        let c = clean("end of line.\u{200B} Next");
        assert_eq!(c.text, "end of line. Next");
        assert!(c.suspicious.is_empty());
        assert_eq!(c.removed, 1);
    }

    #[test]
    fn bidi_overrides_are_always_suspicious() {
        let c = clean("access = \"user\u{202E} \u{2066}// admin\u{2069}\"");
        assert_eq!(c.text, "access = \"user // admin\"");
        assert_eq!(c.suspicious.len(), 3);
    }

    #[test]
    fn a_leading_bom_and_flag_tags_are_legitimate() {
        let c = clean("\u{FEFF}title");
        assert_eq!(c.text, "title");
        assert!(c.suspicious.is_empty());
        let scotland = "\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}";
        let c = clean(scotland);
        assert_eq!(c.text, scotland);
    }

    #[test]
    fn emoji_sequences_keycaps_and_scripts_keep_their_joiners_and_selectors() {
        for text in [
            "family 👨\u{200D}👩\u{200D}👧 and a heart ❤\u{FE0F}.",
            "heart on fire ❤\u{FE0F}\u{200D}🔥",
            "keycap 1\u{FE0F}\u{20E3}",
            "Persian می\u{200C}خواهم",
        ] {
            let c = clean(text);
            assert_eq!(c.text, text);
            assert!(c.suspicious.is_empty(), "{text:?}");
        }
    }

    #[test]
    fn selectors_and_fillers_inside_ascii_words_are_removed() {
        for hidden in ['\u{FE0F}', '\u{FE00}', '\u{E0100}', '\u{034F}', '\u{3164}', '\u{180B}'] {
            let text = format!("ig{hidden}nore");
            let c = clean(&text);
            assert_eq!(c.text, "ignore", "{:?}", hidden);
            assert_eq!(c.suspicious.len(), 1, "{:?}", hidden);
        }
    }

    #[test]
    fn long_or_odd_tag_runs_after_a_black_flag_are_not_a_flag() {
        let tags: String =
            "sk-proj-hidden".chars().map(|c| char::from_u32(0xE0000 + c as u32).unwrap()).collect();
        let text = format!("\u{1F3F4}{tags}\u{E007F}");
        let c = clean(&text);
        assert!(c.text.contains("sk-proj-hidden"), "{}", c.text);
    }

    #[test]
    fn hidden_characters_are_format_characters_and_default_ignorables() {
        for c in [
            '\u{00AD}',
            '\u{200B}',
            '\u{200C}',
            '\u{200D}',
            '\u{200E}',
            '\u{200F}',
            '\u{202E}',
            '\u{2060}',
            '\u{2066}',
            '\u{FEFF}',
            '\u{FE00}',
            '\u{FE0F}',
            '\u{E0001}',
            '\u{E0041}',
            '\u{E0100}',
            '\u{E01EF}',
            '\u{1D173}',
            '\u{061C}',
            '\u{180E}',
            '\u{FFF9}',
        ] {
            assert!(is_hidden(c), "{:?}", c);
        }
        for c in ['a', ' ', '\n', '\u{00A0}', 'é', '—', '✓', '日', '\u{20E3}', '\u{1F525}'] {
            assert!(!is_hidden(c), "{:?}", c);
        }
        // Every character `may_start_hidden` has to catch really starts with one of its bytes.
        for cp in 0..=0x10FFFF_u32 {
            if let Some(c) = char::from_u32(cp).filter(|c| is_hidden(*c)) {
                let mut buf = [0; 4];
                assert!(may_start_hidden(c.encode_utf8(&mut buf).as_bytes()[0]), "U+{cp:04X}");
            }
        }
    }

    #[test]
    fn reveal_removes_everything_hidden_and_decodes_tags_in_place() {
        assert_eq!(reveal("plain ascii"), None);
        assert_eq!(reveal("naïve café — ✓ 日本"), None);
        assert_eq!(reveal("a\u{200B}b\u{FE0F}c\u{00AD}d").as_deref(), Some("abcd"));
        let tags: String =
            "ghp_x".chars().map(|c| char::from_u32(0xE0000 + c as u32).unwrap()).collect();
        assert_eq!(reveal(&format!("key: {tags}\u{E007F}!")).as_deref(), Some("key: ghp_x!"));
        // Legitimate joiners go too: the view is for judging, not for showing.
        assert_eq!(reveal("👨\u{200D}👩").as_deref(), Some("👨👩"));
        // The hidden character found after a long ASCII prefix and among other non-ASCII text.
        let long = format!("{}é—{}\u{2060}x", "a".repeat(100), "b".repeat(40));
        assert_eq!(first_hidden(&long), Some(100 + 2 + 3 + 40));
    }
}

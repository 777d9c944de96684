//! Invisible Unicode: characters a person does not see but a model reads (or that split a word
//! so a filter does not). They are removed before the injection rules run, so
//! "ig\u{200B}nore previous instructions" is seen as written; Unicode tag characters (U+E0000 …
//! U+E007F, "ASCII smuggling") are decoded into a visible note instead, so no data is lost.
//!
//! Legitimate uses stay: a byte-order mark at the very start, joiners between two non-ASCII
//! characters (emoji sequences, Persian and Indic scripts), variation selectors U+FE00–FE0F
//! (emoji presentation), and the tag sequences of subdivision flags (after U+1F3F4).

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
}

fn class(c: char) -> Class {
    match c {
        '\u{200C}' | '\u{200D}' | '\u{200E}' | '\u{200F}' => Class::Joiner,
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => Class::Bidi,
        '\u{00AD}'
        | '\u{180E}'
        | '\u{200B}'
        | '\u{2060}'..='\u{2064}'
        | '\u{206A}'..='\u{206F}'
        | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}'
        | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0100}'..='\u{E01EF}' => Class::Invisible,
        '\u{E0000}'..='\u{E007F}' => Class::Tag,
        _ => Class::Visible,
    }
}

/// Runs of this many invisible characters are suspicious wherever they are (bits encoded as
/// zero-width characters).
const SUSPICIOUS_RUN: usize = 4;

pub(crate) fn clean(text: &str) -> Cleaned<'_> {
    // Fast path: every character that matters here is outside ASCII and starts with one of
    // these lead bytes (U+00AD: C2, U+180E: E1, U+2xxx: E2, U+FxxX: EF, planes 1 and 14: F0/F3).
    if !text.bytes().any(|b| matches!(b, 0xC2 | 0xE1 | 0xE2 | 0xEF | 0xF0 | 0xF3)) {
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
    if all(Class::Joiner) && run.len() <= 2 && non_ascii(before) && non_ascii(after) {
        return Some(run.iter().map(|(_, c)| *c).collect());
    }
    if all(Class::Tag) && before == Some('\u{1F3F4}') {
        return Some(run.iter().map(|(_, c)| *c).collect());
    }
    None
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
}

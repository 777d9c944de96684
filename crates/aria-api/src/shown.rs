//! What a person is shown when asked to approve something: the exact text, with every
//! character that could make it read differently from what runs made visible.
//!
//! A bidi control (U+202E) makes `rm` render as `mr`; a zero-width space or a tag character
//! hides text a reader never sees; a carriage return or an escape sequence rewrites the
//! terminal line. Each such character is shown as its code point, `⟨U+202E⟩`, so what the user
//! reads is what runs. Line feeds and tabs stay (a multi-line command is shown on its lines);
//! letters of every script and emoji stay as they are. The joiners and variation selectors
//! some emoji sequences are built with are shown as code points too (`❤⟨U+FE0F⟩`): the same
//! characters can hide text elsewhere, and a visible code point hides nothing.
//!
//! The output never contains a character that [`needs_escape`] flags, so escaping twice gives
//! the same text as escaping once.

use std::fmt::Write as _;

/// Whether `c` is shown as `⟨U+XXXX⟩` rather than as itself.
pub fn needs_escape(c: char) -> bool {
    let u = u32::from(c);
    match c {
        '\n' | '\t' => false,
        // C0 and C1 controls, DEL.
        _ if c.is_control() => true,
        // Bidi embeddings, overrides and isolates; directional marks; the Arabic letter mark.
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}' => {
            true
        }
        // Zero-width space, non-joiner, joiner; word joiner and the invisible operators;
        // byte-order mark; soft hyphen; Mongolian vowel separator; Hangul fillers; the
        // combining grapheme joiner; the line and paragraph separators.
        '\u{200B}'..='\u{200D}'
        | '\u{2060}'..='\u{2064}'
        | '\u{FEFF}'
        | '\u{00AD}'
        | '\u{180E}'
        | '\u{115F}'
        | '\u{1160}'
        | '\u{3164}'
        | '\u{FFA0}'
        | '\u{034F}'
        | '\u{2028}'
        | '\u{2029}'
        | '\u{206A}'..='\u{206F}'
        // Interlinear annotation marks and the object replacement characters' controls.
        | '\u{FFF9}'..='\u{FFFB}' => true,
        // Variation selectors (also the supplement) and tag characters.
        '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}' | '\u{E0000}'..='\u{E007F}' => true,
        // Unassigned default-ignorables and private use are not expected in a command either.
        _ => (0xE0080..=0xE00FF).contains(&u) || (0xE01F0..=0xE0FFF).contains(&u),
    }
}

/// `text` with every character [`needs_escape`] flags written as `⟨U+XXXX⟩` (at least four
/// hex digits, upper case). Text without such characters is returned unchanged.
pub fn escape_hidden(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if needs_escape(c) {
            // Writing to a String cannot fail.
            let _ = write!(out, "⟨U+{:04X}⟩", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// The arguments of a call a person is asked to approve, as they are shown on every channel
/// (terminal, web page, Telegram): the whole JSON, pretty-printed, every hidden character made
/// visible ([`escape_hidden`]). Never shortened; a channel that cannot show it all in one
/// message sends it another way before it lets anyone approve.
pub fn approval_arguments(arguments: &serde_json::Value) -> String {
    let text = serde_json::to_string_pretty(arguments).unwrap_or_else(|_| arguments.to_string());
    escape_hidden(&text)
}

#[cfg(test)]
mod tests;

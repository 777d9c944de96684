//! Whether a text quotes another: the test that keeps an answer quoting a private memory off
//! the channels that leave this machine.
//!
//! Both texts are normalised first (lower case, every run of characters that are not letters or
//! digits one space), so punctuation, case and line breaks do not hide a quote. A text quotes a
//! source when it holds [`QUOTE_MIN_CHARS`] consecutive characters of the normalised source —
//! about four or five words, so a shared common phrase ("the user likes") is too short to count
//! but any sentence copied from the memory does. A source shorter than that counts when the
//! text holds all of it and it is at least [`QUOTE_MIN_SHORT`] characters long; shorter sources
//! ("likes tea") are too common to tell a quote from a coincidence.

use std::collections::HashSet;

/// The shortest run of normalised characters that counts as a quote.
pub const QUOTE_MIN_CHARS: usize = 24;

/// The shortest whole source (normalised) that counts as quoted when it appears whole.
pub const QUOTE_MIN_SHORT: usize = 12;

/// `text` lower-cased, with each run of characters other than letters and digits as one space,
/// trimmed.
pub fn normalise_for_quotes(text: &str) -> Vec<char> {
    let mut out = Vec::with_capacity(text.len());
    let mut gap = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if gap && !out.is_empty() {
                out.push(' ');
            }
            gap = false;
            out.extend(c.to_lowercase());
        } else {
            gap = true;
        }
    }
    out
}

/// Whether `text` quotes `source` (see the module's rule).
pub fn quotes(text: &str, source: &str) -> bool {
    let text = normalise_for_quotes(text);
    let source = normalise_for_quotes(source);
    if source.len() < QUOTE_MIN_CHARS {
        return source.len() >= QUOTE_MIN_SHORT
            && text.windows(source.len()).any(|w| w == source.as_slice());
    }
    let seen: HashSet<&[char]> = text.windows(QUOTE_MIN_CHARS).collect();
    source.windows(QUOTE_MIN_CHARS).any(|w| seen.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copied_sentence_is_a_quote_whatever_its_case_and_punctuation() {
        let memory = "My bank PIN is 4711 and the safe code is 0815.";
        assert!(quotes("Sure! Your bank pin is 4711, and the safe code is 0815.", memory));
        assert!(quotes("noted:\nMY BANK PIN IS 4711 AND THE SAFE", memory));
    }

    #[test]
    fn a_common_phrase_or_a_paraphrase_is_not() {
        let memory = "The user is being treated for depression by Dr. Weber.";
        assert!(!quotes("The user is asking about the weather.", memory));
        assert!(!quotes("You see a doctor about your mood.", memory));
        assert!(!quotes("", memory));
    }

    #[test]
    fn short_sources_count_only_whole_and_not_too_short() {
        assert!(quotes("I know: password hint — tuba.", "Password hint: tuba"));
        assert!(!quotes("The user likes tea a lot.", "likes tea"));
    }

    #[test]
    fn the_threshold_is_exactly_the_stated_length() {
        let source = "abcdefghij klmnopqrstuvwxyz"; // 27 characters normalised
        assert!(quotes("... abcdefghij klmnopqrstuvw ...", source)); // 24 of them
        assert!(!quotes("... abcdefghij klmnopqrstuv ...", source)); // 23
    }
}

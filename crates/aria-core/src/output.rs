//! Shaping tool output before it reaches a model: secrets redacted, size capped.

use std::borrow::Cow;

use aria_api::Redact;

/// Redacts secrets, then caps `text` at `max_chars` characters (never splitting a character),
/// saying how much was cut so the model knows the output is partial.
pub fn shape_for_model(redactor: &dyn Redact, text: &str, max_chars: usize) -> Shaped {
    let clean = redactor.redact(text);
    let redacted = matches!(clean, Cow::Owned(ref s) if s != text);
    let total = clean.chars().count();
    if total <= max_chars {
        return Shaped { text: clean.into_owned(), redacted };
    }
    let cut = clean.char_indices().nth(max_chars).map_or(clean.len(), |(i, _)| i);
    let text = format!(
        "{}\n[output truncated by ARIA: showed {max_chars} of {total} characters; ask for a smaller part]",
        &clean[..cut]
    );
    Shaped { text, redacted }
}

/// Text ready for a model, and whether anything secret was removed from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shaped {
    pub text: String,
    pub redacted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use aria_api::NoRedact;

    #[derive(Debug)]
    struct HideKey;
    impl Redact for HideKey {
        fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
            Cow::Owned(text.replace("KEY123", "[REDACTED:test]"))
        }
    }

    #[test]
    fn short_output_is_untouched() {
        let shaped = shape_for_model(&NoRedact, "héllo", 5);
        assert_eq!(shaped, Shaped { text: "héllo".into(), redacted: false });
    }

    #[test]
    fn long_output_is_cut_on_a_char_boundary_and_says_so() {
        let out = shape_for_model(&NoRedact, "ééééé", 3).text;
        assert!(out.starts_with("ééé\n[output truncated"), "{out}");
        assert!(out.contains("3 of 5"), "{out}");
    }

    #[test]
    fn redaction_happens_before_the_cap() {
        let out = shape_for_model(&HideKey, "a KEY123 b", 100);
        assert_eq!(out, Shaped { text: "a [REDACTED:test] b".into(), redacted: true });
        // A secret straddling the cap must not leak a prefix.
        let out = shape_for_model(&HideKey, "KEY123", 4).text;
        assert!(out.starts_with("[RED"), "{out}");
    }
}

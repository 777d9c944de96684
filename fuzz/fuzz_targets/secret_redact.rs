//! Fuzzes the outbound secret filter with arbitrary UTF-8.
//!
//! Invariants checked besides "never crashes":
//! - the output is a fixed point: redacting it again returns it unchanged (borrowed);
//! - a borrowed result is the input itself and an owned one differs from it;
//! - a configured value placed anywhere in the text never survives;
//! - the report lists a kind for every changed text.
//!
//! `fuzz/dict/secret_redact.dict` gives libFuzzer the pieces secrets are made of (vendor
//! prefixes, assignment names, separators, hidden characters, the marker itself).

#![no_main]

use std::borrow::Cow;
use std::sync::OnceLock;

use aria_api::Redact;
use aria_tools::SecretRedactor;
use libfuzzer_sys::fuzz_target;

const KNOWN: &str = "sekrit-value-42";

fn redactor() -> &'static SecretRedactor {
    static R: OnceLock<SecretRedactor> = OnceLock::new();
    R.get_or_init(|| SecretRedactor::new(vec![KNOWN.to_owned()]))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let r = redactor();
    let report = r.redact_report(text);
    match &report.text {
        Cow::Borrowed(b) => assert_eq!(*b, text),
        Cow::Owned(o) => {
            assert_ne!(o, text);
            assert!(!report.kinds.is_empty(), "{text:?} changed with no kind reported");
        }
    }
    let again = r.redact(&report.text);
    assert!(matches!(again, Cow::Borrowed(_)), "{text:?} -> {:?} -> {again:?}", report.text);

    let mut cut = text.len() / 2;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let with_known = format!("{}{KNOWN}{}", &text[..cut], &text[cut..]);
    let out = r.redact(&with_known);
    assert!(!out.contains(KNOWN), "{with_known:?} -> {out:?}");
});

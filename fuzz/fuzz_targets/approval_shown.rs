//! Fuzzes what an approval question shows ([`aria_api::escape_hidden`]) with arbitrary UTF-8.
//!
//! Invariants checked besides "never crashes":
//! - no character that could hide or reorder text survives (bidi controls, zero-width and
//!   invisible characters, tag characters, variation selectors, controls but `\n` and `\t`);
//! - escaping again changes nothing;
//! - every other character is kept, in order (the escapes are the only additions).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let shown = aria_api::escape_hidden(text);
    assert!(!shown.chars().any(aria_api::needs_escape), "{shown:?}");
    assert_eq!(aria_api::escape_hidden(&shown), shown);
    let kept: String = text.chars().filter(|c| !aria_api::needs_escape(*c)).collect();
    let mut rest = shown.as_str();
    for c in kept.chars() {
        let at = rest.find(c).unwrap_or_else(|| panic!("{c:?} lost from {shown:?}"));
        rest = &rest[at + c.len_utf8()..];
    }
});

//! Fuzzes the shell parser and classifier with arbitrary UTF-8.
//!
//! Invariants checked besides "never crashes": a line `parse` refuses is classified
//! `blocked` (unless it is refused for a `$(…)` that ARIA runs first, whose inner lines must
//! then all be `read`), every verdict has a reason, a line whose program word is `sudo` is never
//! anything but `blocked`, and whenever the hand-written fast path accepts a line, its AST,
//! `parse` and `classify` equal the tree-sitter path's (`parse_reference`,
//! `classify_reference`): the fast path may only ever be more conservative, never different.

#![no_main]

use aria_api::Tier;
use aria_tools::shell::subst::substitutions;
use aria_tools::shell::{classify, classify_reference, parse, parse_fast, parse_reference};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else { return };
    let c = classify(line);
    assert!(!c.reason.is_empty());
    match parse(line) {
        Err(r) if r.construct == "command substitution" && c.tier != Tier::Blocked => {
            let subs = substitutions(line).expect("a line classified by its substitutions");
            assert!(!subs.is_empty());
            for s in subs {
                assert_eq!(classify(&s.inner).tier, Tier::Read, "inner {:?} of {line:?}", s.inner);
            }
        }
        Err(_) => assert_eq!(c.tier, Tier::Blocked),
        Ok(script) => {
            if script.commands().any(|cmd| cmd.program().literal_text() == Some("sudo")) {
                assert_eq!(c.tier, Tier::Blocked);
            }
        }
    }
    if let Some(fast) = parse_fast(line) {
        assert_eq!(Ok(fast), parse_reference(line), "fast path vs tree-sitter on {line:?}");
        assert_eq!(parse(line), parse_reference(line), "parse on {line:?}");
        assert_eq!(c, classify_reference(line), "classify on {line:?}");
    }
});

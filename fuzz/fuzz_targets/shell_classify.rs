//! Fuzzes the shell parser and classifier with arbitrary UTF-8.
//!
//! Invariants checked besides "never crashes": a line `parse` refuses is classified
//! `blocked`, every verdict has a reason, and a line whose program word is `sudo` is never
//! anything but `blocked`.

#![no_main]

use aria_api::Tier;
use aria_tools::shell::{classify, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else { return };
    let c = classify(line);
    assert!(!c.reason.is_empty());
    match parse(line) {
        Err(_) => assert_eq!(c.tier, Tier::Blocked),
        Ok(script) => {
            if script.commands().any(|cmd| cmd.program().literal_text() == Some("sudo")) {
                assert_eq!(c.tier, Tier::Blocked);
            }
        }
    }
});

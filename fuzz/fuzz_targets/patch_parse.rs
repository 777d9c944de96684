//! Fuzzes the unified diff parser and the hunk applier.
//!
//! Invariants checked besides "never crashes": every refusal has a message; a parsed patch
//! applies to the text its own hunks describe (or is refused with a reason), and whatever it
//! produced, a diff from the old to the new text, parsed and applied again, gives exactly the
//! same new text (checked for texts with one line-ending style: in a mixed file, added lines
//! take the file's first style by design).

#![no_main]

use aria_tools::patch::{Change, FilePatch, LineKind, apply_file, parse, unified_diff};
use libfuzzer_sys::fuzz_target;

/// The old text the hunks of `file` describe, hunks placed one after another.
fn old_text(file: &FilePatch) -> String {
    if file.change == Change::Create {
        return String::new();
    }
    let mut out = String::new();
    for line in file.hunks.iter().flat_map(|h| &h.lines) {
        if line.kind == LineKind::Add {
            continue;
        }
        out.push_str(&line.text);
        if !line.no_newline {
            out.push_str(if line.crlf { "\r\n" } else { "\n" });
        }
    }
    out
}

/// One line-ending style and no stray carriage returns.
fn uniform(text: &str) -> bool {
    let crlf = text.matches("\r\n").count();
    let cr = text.matches('\r').count();
    let lf = text.matches('\n').count();
    cr == crlf && (crlf == 0 || crlf == lf)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let patch = match parse(text) {
        Ok(p) => p,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    assert!(!patch.files.is_empty());
    for file in &patch.files {
        assert!(!file.hunks.is_empty());
        let old = old_text(file);
        let applied = match apply_file(&old, file) {
            Ok(a) => a,
            Err(e) => {
                assert!(!e.to_string().is_empty());
                continue;
            }
        };
        assert_eq!((applied.added, applied.removed), file.counts());
        if !uniform(&old) || !uniform(&applied.text) {
            continue;
        }
        let diff = unified_diff(Some(&old), Some(&applied.text), "f");
        if diff.is_empty() {
            assert_eq!(old, applied.text);
            continue;
        }
        let again = parse(&diff).unwrap_or_else(|e| panic!("own diff refused: {e}\n{diff}"));
        let re = apply_file(&old, &again.files[0])
            .unwrap_or_else(|e| panic!("own diff does not apply: {e}\n{diff}"));
        assert_eq!(re.text, applied.text, "diff:\n{diff}");
    }
});

//! Fuzzes the unified diff parser and the hunk applier.
//!
//! Inputs are parsed with and without `apply_patch`'s `path` (chosen by the first byte).
//! Invariants checked besides "never crashes": every refusal has a message; with a path, bare
//! hunks at the start are that file's; a parsed patch
//! applies to the text its own hunks describe (or is refused with a reason), and whatever it
//! produced, a diff from the old to the new text, parsed and applied again, gives exactly the
//! same new text (checked when the old and new texts share one line-ending style: in a mixed
//! file added lines take the file's first style, and in a file with no line ending yet the
//! patch's, by design).

#![no_main]

use aria_tools::patch::{Change, FilePatch, LineKind, apply_file, parse, parse_for, unified_diff};
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Lf,
    Crlf,
    /// Both, or a stray carriage return.
    Mixed,
}

/// A text's line-ending style; `None` when it has no line ending.
fn style(text: &str) -> Option<Style> {
    let crlf = text.matches("\r\n").count();
    let cr = text.matches('\r').count();
    let lf = text.matches('\n').count();
    match (cr == crlf, crlf, lf) {
        (false, _, _) => Some(Style::Mixed),
        (true, 0, 0) => None,
        (true, 0, _) => Some(Style::Lf),
        (true, c, l) if c == l => Some(Style::Crlf),
        _ => Some(Style::Mixed),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // Half the inputs are parsed as `apply_patch` with a `path` (bare `@@` hunks are its file's).
    let path = (data.first().is_some_and(|b| b % 2 == 1)).then_some("f");
    let patch = match parse_for(text, path) {
        Ok(p) => p,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    assert!(!patch.files.is_empty());
    if let (Some(path), true) = (path, text.starts_with("@@")) {
        assert_eq!(patch.files[0].path, path);
    }
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
        // One style across both: a file with no line ending yet takes the patch's style for
        // its new lines, which a diff of the result (written with `\n`) cannot carry.
        let same = match (style(&old), style(&applied.text)) {
            (Some(Style::Mixed), _) | (_, Some(Style::Mixed)) => false,
            (Some(a), Some(b)) => a == b,
            (Some(_), None) => true,
            (None, b) => b != Some(Style::Crlf),
        };
        if !same {
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

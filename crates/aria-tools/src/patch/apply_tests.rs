//! Applying hunks: exact context, unique offsets, CRLF and missing final newlines kept, and a
//! property test that a diff of any two texts applies back to exactly the new text.

use pretty_assertions::assert_eq;
use proptest::prelude::*;

use super::*;

fn one(patch: &str) -> FilePatch {
    let mut p = parse(patch).unwrap();
    assert_eq!(p.files.len(), 1);
    p.files.remove(0)
}

#[track_caller]
fn applies(old: &str, patch: &str) -> Applied {
    apply_file(old, &one(patch)).unwrap()
}

#[test]
fn a_hunk_replaces_lines_where_its_header_says() {
    let a = applies("a\nb\nc\n", "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
    assert_eq!(a, Applied { text: "a\nB\nc\n".into(), added: 1, removed: 1, offsets: vec![] });
}

#[test]
fn a_hunk_is_found_at_a_unique_shifted_place() {
    let old = "x\ny\nz\na\nb\nc\n";
    let a = applies(old, "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
    assert_eq!(a.text, "x\ny\nz\na\nB\nc\n");
    assert_eq!(a.offsets, vec![(1, 3)]);
    // The next hunk starts looking where the previous one's offset says.
    let old = "0\n1\n2\nx\n3\n4\n5\n6\n7\n8\n9\n";
    let a = applies(
        old,
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-0\n+zero\n 1\n@@ -8,2 +8,2 @@\n 7\n-8\n+eight\n",
    );
    assert_eq!(a.text, "zero\n1\n2\nx\n3\n4\n5\n6\n7\neight\n9\n");
    assert_eq!(a.offsets, vec![(2, 1)]);
}

#[test]
fn a_hunk_matching_at_several_places_is_refused_with_them() {
    let e =
        apply_file("k\nv\nk\nv\nk\nv\n", &one("--- a/f\n+++ b/f\n@@ -7,2 +7,2 @@\n k\n-v\n+V\n"))
            .unwrap_err();
    assert_eq!(
        e,
        ApplyError::Ambiguous {
            path: "f".into(),
            number: 1,
            expected: 7,
            candidates: vec![1, 3, 5]
        }
    );
    assert!(e.to_string().contains("add more context lines"), "{e}");
}

#[test]
fn a_mismatch_shows_the_hunk_and_what_the_file_has_there() {
    let e = apply_file(
        "fn a() {}\nfn b() {}\nfn c() {}\n",
        &one("--- a/src/x.rs\n+++ b/src/x.rs\n@@ -2,1 +2,1 @@\n-fn bb() {}\n+fn b2() {}\n"),
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(msg.starts_with("hunk 1 of src/x.rs does not match the file."), "{msg}");
    assert!(msg.contains("@@ -2,1 +2,1 @@\n-fn bb() {}\n+fn b2() {}"), "{msg}");
    assert!(
        msg.contains("Lines 2-3 of the file are:\n     2 | fn b() {}\n     3 | fn c() {}"),
        "{msg}"
    );
    let e = apply_file("a\n", &one("--- a/f\n+++ b/f\n@@ -9,1 +9,1 @@\n-a9\n+b\n")).unwrap_err();
    assert!(e.to_string().contains("The file has only 1 lines, so nothing is at line 9."), "{e}");
}

#[test]
fn crlf_files_stay_crlf_whatever_the_patch_uses() {
    let patch = "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n-b\n+B\n+C\n";
    assert_eq!(applies("a\r\nb\r\n", patch).text, "a\r\nB\r\nC\r\n");
    let crlf_patch = patch.replace('\n', "\r\n");
    assert_eq!(applies("a\r\nb\r\n", &crlf_patch).text, "a\r\nB\r\nC\r\n");
    assert_eq!(applies("a\nb\n", &crlf_patch).text, "a\nB\nC\n");
    // A new file takes the patch's line endings.
    let create = "--- /dev/null\r\n+++ b/n\r\n@@ -0,0 +1,2 @@\r\n+x\r\n+y\r\n";
    assert_eq!(applies("", create).text, "x\r\ny\r\n");
}

#[test]
fn missing_final_newlines_are_added_removed_and_kept() {
    let add_nl = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n";
    assert_eq!(applies("a\nb", add_nl).text, "a\nb\n");
    let drop_nl = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n";
    assert_eq!(applies("a\nb\n", drop_nl).text, "a\nb");
    let untouched_end = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n";
    assert_eq!(applies("a\nb\nc", untouched_end).text, "A\nb\nc");
    // Lines added after a last line that had no newline: that line gets one.
    let sloppy = "--- a/f\n+++ b/f\n@@ -2,1 +2,2 @@\n b\n+c\n";
    assert_eq!(applies("a\nb", sloppy).text, "a\nb\nc\n");
}

#[test]
fn creating_inserting_and_deleting() {
    assert_eq!(applies("", "--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n+x\n+y\n").text, "x\ny\n");
    let front = applies("b\n", "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+a\n");
    assert_eq!(front.text, "a\nb\n");
    let after_first = applies("a\nc\n", "--- a/f\n+++ b/f\n@@ -1,0 +2 @@\n+b\n");
    assert_eq!(after_first.text, "a\nb\nc\n");
    let gone = applies("x\ny\n", "--- a/f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n");
    assert_eq!((gone.text.as_str(), gone.removed), ("", 2));
    let e = apply_file("x\ny\nz\n", &one("--- a/f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n"))
        .unwrap_err();
    assert_eq!(e, ApplyError::DeleteIncomplete { path: "f".into(), removed: 2, lines: 3 });
}

#[test]
fn line_counts_count_changed_lines() {
    assert_eq!(line_counts("a\nb\nc\n", "a\nB\nc\nd\n"), (2, 1));
    assert_eq!(line_counts("", "x\n"), (1, 0));
    assert_eq!(line_counts("same\n", "same\n"), (0, 0));
    assert_eq!(unified_diff(Some("same\n"), Some("same\n"), "f"), "");
}

#[test]
fn scattered_changes_in_a_long_file_are_counted_exactly() {
    let old: String = (0..5000).map(|n| format!("line {n}\n")).collect();
    let new: String = (0..5000)
        .map(|n| if n % 50 == 25 { format!("changed {n}\n") } else { format!("line {n}\n") })
        .collect();
    assert_eq!(line_counts(&old, &new), (100, 100));
    let patch = parse(&unified_diff(Some(&old), Some(&new), "f")).unwrap();
    assert_eq!(patch.files[0].hunks.len(), 100);
    assert_eq!(apply_file(&old, &patch.files[0]).unwrap().text, new);
    // Beyond the edit distance searched, the changed middle counts as replaced whole.
    let lines = MAX_EDIT_DISTANCE;
    let a: String = (0..lines).map(|n| format!("a{n}\n")).collect();
    let b: String = (0..lines).map(|n| format!("b{n}\n")).collect();
    assert_eq!(line_counts(&format!("top\n{a}end\n"), &format!("top\n{b}end\n")), (lines, lines));
}

#[test]
fn unified_diff_writes_what_git_writes() {
    let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
    let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n";
    assert_eq!(
        unified_diff(Some(old), Some(new), "n.txt"),
        "--- a/n.txt\n+++ b/n.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
    );
    assert_eq!(
        unified_diff(None, Some("a\nb"), "n.txt"),
        "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n"
    );
}

/// Texts made of few distinct lines (so diffs have real context matches), in one line-ending
/// style, with or without a final newline.
fn text() -> impl Strategy<Value = String> {
    let line = prop::sample::select(vec!["a", "b", "c", "", "fn x() {", "}", "  let y = 1;"]);
    (prop::collection::vec(line, 0..40), any::<bool>(), any::<bool>()).prop_map(
        |(lines, crlf, final_nl)| {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut s = lines.join(eol);
            if final_nl && !lines.is_empty() {
                s.push_str(eol);
            }
            s
        },
    )
}

/// The new text in the old text's style, as an editor keeping line endings would write it.
fn restyle(new: &str, old: &str) -> String {
    let crlf = old.contains("\r\n") || (!old.contains('\n') && new.contains("\r\n"));
    let lf = new.replace("\r\n", "\n");
    if crlf { lf.replace('\n', "\r\n") } else { lf }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_diff_of_two_texts_applies_back_to_the_new_text(old in text(), new in text()) {
        let new = restyle(&new, &old);
        let diff = unified_diff(Some(&old), Some(&new), "f.txt");
        if diff.is_empty() {
            prop_assert_eq!(&old, &new);
        } else {
            let patch = parse(&diff).map_err(|e| TestCaseError::fail(format!("{e}\n{diff}")))?;
            let applied = apply_file(&old, &patch.files[0])
                .map_err(|e| TestCaseError::fail(format!("{e}\n{diff}")))?;
            prop_assert_eq!(&applied.text, &new, "diff:\n{}", diff);
            prop_assert_eq!((applied.added, applied.removed), line_counts(&old, &new));
            prop_assert!(applied.offsets.is_empty());
        }
    }

    #[test]
    fn a_diff_applies_to_a_file_with_lines_added_above(
        prefix in prop::collection::vec("[d-z]{1,8}", 1..5),
        old in text(),
        new in text(),
    ) {
        let new = restyle(&new, &old);
        let diff = unified_diff(Some(&old), Some(&new), "f.txt");
        prop_assume!(!diff.is_empty() && !old.is_empty());
        let eol = if old.contains("\r\n") || new.contains("\r\n") { "\r\n" } else { "\n" };
        let head: String = prefix.iter().map(|p| format!("{p}{eol}")).collect();
        let patch = parse(&diff).map_err(|e| TestCaseError::fail(e.to_string()))?;
        // Unique lines were added on top, so every hunk that matched before still matches
        // exactly once further down, or is refused as ambiguous: never applied wrongly.
        match apply_file(&format!("{head}{old}"), &patch.files[0]) {
            Ok(applied) => prop_assert_eq!(applied.text, format!("{head}{new}")),
            Err(ApplyError::Ambiguous { .. }) => {}
            Err(e) => return Err(TestCaseError::fail(format!("{e}\n{diff}"))),
        }
    }

    #[test]
    fn created_and_deleted_files_round_trip(text in text()) {
        prop_assume!(!text.is_empty());
        let create = parse(&unified_diff(None, Some(&text), "n")).unwrap();
        prop_assert_eq!(create.files[0].change, Change::Create);
        prop_assert_eq!(apply_file("", &create.files[0]).unwrap().text, text.clone());
        let delete = parse(&unified_diff(Some(&text), None, "n")).unwrap();
        prop_assert_eq!(delete.files[0].change, Change::Delete);
        prop_assert_eq!(apply_file(&text, &delete.files[0]).unwrap().text, "");
    }
}

//! Examples for the unified diff parser: what `git diff` and `diff -u` write is accepted, and
//! every malformed patch is refused with the line and the rule.

use pretty_assertions::assert_eq;

use super::*;

fn hl(kind: LineKind, text: &str) -> HunkLine {
    HunkLine { kind, text: text.to_owned(), crlf: false, no_newline: false }
}

#[track_caller]
fn err(patch: &str) -> ParseError {
    match parse(patch) {
        Err(e) => e,
        Ok(p) => panic!("expected an error, parsed {p:?}"),
    }
}

const GIT: &str = "\
diff --git a/src/lib.rs b/src/lib.rs
index 3b18e51..a5c1966 100644
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,3 +1,4 @@ fn main() {
 one
-two
+TWO
+2.5
 three
diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..e69de29
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+hello
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-bye
-now
";

#[test]
fn a_git_diff_with_three_kinds_of_change_parses() {
    let p = parse(GIT).unwrap();
    let summary: Vec<(&str, Change, (usize, usize))> =
        p.files.iter().map(|f| (f.path.as_str(), f.change, f.counts())).collect();
    assert_eq!(
        summary,
        vec![
            ("src/lib.rs", Change::Modify, (2, 1)),
            ("new.txt", Change::Create, (1, 0)),
            ("old.txt", Change::Delete, (0, 2)),
        ]
    );
    let h = &p.files[0].hunks[0];
    assert_eq!((h.old_start, h.old_len, h.new_start, h.new_len, h.patch_line), (1, 3, 1, 4, 5));
    assert_eq!(
        h.lines,
        vec![
            hl(LineKind::Context, "one"),
            hl(LineKind::Remove, "two"),
            hl(LineKind::Add, "TWO"),
            hl(LineKind::Add, "2.5"),
            hl(LineKind::Context, "three"),
        ]
    );
    // `@@ -0,0 +1 @@`: a missing count is 1.
    assert_eq!(p.files[1].hunks[0].new_len, 1);
}

#[test]
fn diff_u_output_with_timestamps_and_no_prefixes_parses() {
    let patch = "--- notes.txt\t2024-05-01 10:00:00.000000000 +0200\n+++ notes.txt\t2024-05-02 11:00:00.000000000 +0200\n@@ -2 +2 @@\n-b\n+B\n";
    let p = parse(patch).unwrap();
    assert_eq!(p.files[0].path, "notes.txt");
    assert_eq!(p.files[0].change, Change::Modify);
    // `diff -ru old new` names the two trees; the part after them is the file.
    let p = parse("--- old/dir/x.c\n+++ new/dir/x.c\n@@ -1 +1 @@\n-a\n+b\n").unwrap();
    assert_eq!(p.files[0].path, "dir/x.c");
}

#[test]
fn no_newline_markers_attach_to_the_line_before() {
    let patch = "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+c\n\\ No newline at end of file\n";
    let p = parse(patch).unwrap();
    let marks: Vec<(LineKind, bool)> =
        p.files[0].hunks[0].lines.iter().map(|l| (l.kind, l.no_newline)).collect();
    assert_eq!(
        marks,
        vec![
            (LineKind::Context, false),
            (LineKind::Remove, true),
            (LineKind::Add, false),
            (LineKind::Add, true)
        ]
    );
}

#[test]
fn crlf_patch_lines_are_read_and_remembered() {
    let patch = "--- a/w.txt\r\n+++ b/w.txt\r\n@@ -1,2 +1,2 @@\r\n x\r\n-y\r\n+z\r\n";
    let p = parse(patch).unwrap();
    assert_eq!(p.files[0].path, "w.txt");
    let lines = &p.files[0].hunks[0].lines;
    assert!(lines.iter().all(|l| l.crlf));
    assert_eq!(lines[2].text, "z");
}

#[test]
fn an_empty_context_line_trimmed_by_an_editor_still_counts() {
    let p = parse("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n\n-c\n+C\n").unwrap();
    assert_eq!(p.files[0].hunks[0].lines[1], hl(LineKind::Context, ""));
}

#[test]
fn git_quoted_paths_are_unquoted() {
    let patch = "--- \"a/t\\303\\244st \\\"x\\\".txt\"\n+++ \"b/t\\303\\244st \\\"x\\\".txt\"\n@@ -1 +1 @@\n-a\n+b\n";
    assert_eq!(parse(patch).unwrap().files[0].path, "täst \"x\".txt");
    assert!(matches!(
        err("--- \"a/x\n+++ \"b/x\"\n@@ -1 +1 @@\n-a\n+b\n"),
        ParseError::BadPath { line: 1, .. }
    ));
}

#[test]
fn removed_lines_that_look_like_headers_are_hunk_lines() {
    // "--- x" inside a hunk is the removed line "-- x", as the counts say.
    let ok = parse("--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n--- x\n+++ y\n").unwrap();
    assert_eq!(
        ok.files[0].hunks[0].lines,
        vec![hl(LineKind::Remove, "-- x"), hl(LineKind::Add, "++ y")]
    );
}

#[test]
fn text_after_the_hunks_is_ignored_unless_it_looks_like_more_hunk_lines() {
    let mail = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n-- \n2.43.0\n\nthanks\n";
    assert_eq!(parse(mail).unwrap().files[0].counts(), (1, 1));
    // More hunk lines than the header counts: the hunk is read with the counts of its lines.
    for (extra, counts) in [(" c\n", (2, 2)), ("+c\n", (1, 2)), ("-c\n", (2, 1))] {
        let patch = format!("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n{extra}");
        let hunk = &parse(&patch).unwrap().files[0].hunks[0];
        assert_eq!((hunk.old_len, hunk.new_len), counts, "{extra:?}");
        assert_eq!(hunk.lines.len(), 3, "{extra:?}");
    }
}

#[test]
fn a_hunk_whose_header_miscounts_its_lines_is_read_with_their_counts() {
    // What a 1.5B model wrote for "change the port from 8088 to 9090": two context lines, one
    // removed, one added, under a header that counts two old and two new lines.
    let model = "diff --git a/config.toml b/config.toml\n--- a/config.toml\n+++ b/config.toml\n\
                 @@ -1,2 +1,2 @@\n [server]\n host = \"127.0.0.1\"\n-port = 8088\n+port = 9090\n";
    let hunk = &parse(model).unwrap().files[0].hunks[0];
    assert_eq!((hunk.old_start, hunk.old_len, hunk.new_start, hunk.new_len), (1, 3, 1, 3));
    assert_eq!(hunk.lines[2], hl(LineKind::Remove, "port = 8088"));
    // Counts too large, with the next hunk and the next file after it; a blank separator line
    // at the end of a hunk is not a context line.
    let two = "--- a/f\n+++ b/f\n@@ -1,9 +1,9 @@\n a\n-b\n+c\n\n@@ -20,1 +20,1 @@\n-x\n+y\n\
               --- a/g\n+++ b/g\n@@ -1,5 +1,5 @@\n-p\n+q\n";
    let p = parse(two).unwrap();
    let f = &p.files[0];
    assert_eq!(
        f.hunks.iter().map(|h| (h.old_len, h.new_len)).collect::<Vec<_>>(),
        [(2, 2), (1, 1)]
    );
    assert_eq!((p.files[1].path.as_str(), p.files[1].hunks[0].old_len), ("g", 1));
    // A `\ No newline` marker still attaches to the line before it.
    let marker =
        parse("--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n-a\n+b\n\\ No newline at end of file\n").unwrap();
    assert!(marker.files[0].hunks[0].lines[1].no_newline);
    // A line that is no hunk line with more changes after it: where the hunk ends is a guess,
    // so the strict error stands (reading up to it would drop the changes after it).
    let lost_space = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\nc\n-d\n+D\n";
    assert!(matches!(err(lost_space), ParseError::HunkBody { .. }));
    let dash_item = "--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n a\n-x\n-- \n-y\n+z\n";
    assert!(matches!(err(dash_item), ParseError::HunkBody { .. }));
    // Text after the last change, with no change after it, still ends the hunk.
    let note = "--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n a\n-b\n+c\nThis renames b.\n";
    assert_eq!(parse(note).unwrap().files[0].hunks[0].lines.len(), 3);
    // A creation keeps a creation's header.
    assert!(
        err("--- /dev/null\n+++ b/f\n@@ -0,0 +1,1 @@\n a\n+b\n").to_string().contains("line 4")
    );
}

#[test]
fn a_patch_over_the_limit_is_refused_before_parsing() {
    let big = format!("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+{}\n", "x".repeat(MAX_PATCH_BYTES));
    assert!(matches!(err(&big), ParseError::TooLarge { limit: MAX_PATCH_BYTES, .. }));
}

#[test]
fn malformed_patches_name_the_line_and_the_rule() {
    let cases: Vec<(&str, &str)> = vec![
        ("", "no file changes"),
        ("just some text\n", "no file changes"),
        ("--- a/f\nhello\n", "line 1: `---` is not followed by a `+++ PATH`"),
        ("--- a/f\n+++ b/f\n", "line 1: the changes to f have no hunks"),
        ("--- a/f\n+++ b/f\n@@ -x +1 @@\n", "line 3: \"@@ -x +1 @@\" is not a hunk header"),
        ("--- a/f\n+++ b/f\n@@ -0,2 +1 @@\n", "is not a hunk header"),
        ("@@ -1 +1 @@\n-a\n+b\n", "line 1: a hunk header comes before"),
        ("@@ -1 +1 @@\n-a\n+b\n", "or give apply_patch the file as \"path\""),
        ("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n", "the patch ends with 1 old and 1 new lines"),
        // Wrong counts and no change in the lines there are: the strict reading's error.
        (
            "--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n a\n b\n",
            "line 5: in the hunk @@ -1,1 +1,1 @@ of f: \" b\" comes after the last line the header counts",
        ),
        // A bare line is context only while the header still counts context to come.
        (
            "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\nxb\n",
            "line 5: in the hunk @@ -1,3 +1,3 @@ of f: the patch ends with 1 old and 1 new lines",
        ),
        (
            "--- a/f\n+++ b/f\n@@ -2,1 +2,2 @@\n-a\nxa\n+b\n",
            "line 5: in the hunk @@ -2,1 +2,2 @@ of f: \"xa\" is not a hunk line, but the header says 0 old and 2 new",
        ),
        ("--- a/f\n+++ b/f\n@@ -1 +1 @@\n\\ No newline at end of file\n", "comes before any line"),
        ("--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n", "both `---` and `+++` are /dev/null"),
        (
            "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n--- a/f\n+++ b/f\n@@ -3 +3 @@\n-c\n+d\n",
            "changes f more than once",
        ),
        (
            "--- a/f\n+++ b/f\n@@ -5 +5 @@\n-a\n+b\n@@ -2 +2 @@\n-c\n+d\n",
            "line 6: the hunks of f overlap or are out of order",
        ),
        ("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n@@ -2 +2 @@\n-c\n+d\n", "overlap"),
        ("--- /dev/null\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n", "line 3: f is created"),
        ("--- a/f\n+++ /dev/null\n@@ -1 +1 @@\n-a\n+b\n", "line 3: f is deleted"),
        ("Binary files a/img.png and b/img.png differ\n", "line 1: binary patches"),
        ("diff --git a/i.png b/i.png\nGIT binary patch\nliteral 5\n", "line 2: binary patches"),
        (
            "diff --git a/s.sh b/s.sh\nold mode 100644\nnew mode 100755\n",
            "line 1: `diff --git a/s.sh b/s.sh` has no `---`/`+++` lines",
        ),
        (
            "diff --git a/o b/n\nsimilarity index 90%\nrename from o\nrename to n\n--- a/o\n+++ b/n\n@@ -1 +1 @@\n-a\n+b\n",
            "line 5: the patch renames o to n",
        ),
        ("--- \n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n", "line 1: \"--- \" names no file"),
    ];
    for (patch, expected) in cases {
        let message = err(patch).to_string();
        assert!(message.contains(expected), "{patch:?}\n  gave: {message}\n  expected: {expected}");
    }
}

#[test]
fn a_rendered_hunk_reads_like_the_patch() {
    let p = parse("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n")
        .unwrap();
    assert_eq!(
        p.files[0].hunks[0].render(),
        "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c"
    );
}

#[test]
fn two_different_names_patch_the_one_that_exists_like_gnu_patch() {
    // `diff -u x.from x.to`, and the header forms of other tools: Subversion's `Index:`,
    // Mercurial's `diff -r`, timestamps after a tab, trailing spaces, CRLF line endings.
    let p = parse("--- x.from\t2024-05-01 10:00:00\n+++ x.to \n@@ -1 +1 @@\n-a\n+b\n").unwrap();
    assert_eq!(p.files[0].path, "x.from");
    assert_eq!(p.files[0].alternative.as_deref(), Some("x.to"));
    assert_eq!(p.files[0].change, Change::Modify);
    for header in [
        "Index: f.txt\n===================================================================\n",
        "diff -r 0123abcd f.txt\n",
    ] {
        let text = format!(
            "{header}--- f.txt\t(revision 7)\n+++ f.txt\t(working copy)\n@@ -1 +1 @@\n-a\n+b\n"
        );
        let p = parse(&text).unwrap();
        assert_eq!(
            (p.files[0].path.as_str(), p.files[0].alternative.as_deref()),
            ("f.txt", None),
            "{header}"
        );
    }
    let crlf = parse("--- a/f\r\n+++ b/f\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n").unwrap();
    assert_eq!(crlf.files[0].path, "f");
}

#[test]
fn context_lines_that_lost_their_leading_space_count_while_the_header_expects_context() {
    // What a 1.5B model wrote for "add the line 'bread' at the end of shopping.txt".
    let model = "--- a/shopping.txt\n+++ b/shopping.txt\n@@ -1,2 +1,3 @@\nmilk\neggs\n+bread";
    let hunk = &parse(model).unwrap().files[0].hunks[0];
    assert_eq!(
        hunk.lines,
        [hl(LineKind::Context, "milk"), hl(LineKind::Context, "eggs"), hl(LineKind::Add, "bread")]
    );
    // The header's counts decide: with no context left to come, a bare line is no hunk line.
    let done = "--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n-a\n+b\nThis renames a.\n";
    assert_eq!(parse(done).unwrap().files[0].hunks[0].lines.len(), 2);
}

#[test]
fn hunks_without_file_headers_change_the_path_given_with_them() {
    let bare = "@@ -1,2 +1,3 @@\n milk\n eggs\n+bread\n";
    assert!(matches!(err(bare), ParseError::HunkOutsideFile { line: 1 }));
    for path in ["shopping.txt", "./shopping.txt"] {
        let p = parse_for(bare, Some(path)).unwrap();
        assert_eq!(p.files.len(), 1);
        let f = &p.files[0];
        assert_eq!(
            (f.path.as_str(), f.change, f.counts()),
            ("shopping.txt", Change::Modify, (1, 0))
        );
    }
    // Two hunks, in order, both for the path.
    let two = "@@ -1 +1 @@\n-a\n+A\n@@ -5 +5 @@\n-e\n+E\n";
    assert_eq!(parse_for(two, Some("f")).unwrap().files[0].hunks.len(), 2);
    // With headers, the headers name the files (whether they include the path is checked by
    // apply_patch on the resolved files).
    let headed = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n";
    assert_eq!(parse_for(headed, Some("g")).unwrap().files[0].path, "f");
    // Bare hunks first, then a file section: the bare hunks are the path's.
    let mixed = "@@ -1 +1 @@\n-a\n+b\n--- a/g\n+++ b/g\n@@ -1 +1 @@\n-c\n+d\n";
    assert_eq!(parse_for(mixed, Some("f")).unwrap().files.len(), 2);
    // Text between two bare hunks: the second is a stray hunk, not a missing file header.
    let stray = "@@ -1 +1 @@\n-a\n+b\nsome words\n@@ -5 +5 @@\n-e\n+E\n";
    assert_eq!(parse_for(stray, Some("f")), Err(ParseError::StrayHunk { line: 5 }));
    assert_eq!(parse(stray), Err(ParseError::HunkOutsideFile { line: 1 }));
    // The hunks still follow every rule (order, counts).
    let backwards = "@@ -5 +5 @@\n-a\n+b\n@@ -2 +2 @@\n-c\n+d\n";
    assert!(matches!(parse_for(backwards, Some("f")), Err(ParseError::Overlap { .. })));
}

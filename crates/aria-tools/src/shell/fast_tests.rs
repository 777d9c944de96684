//! The fast path must build exactly the AST of the tree-sitter path for every line it accepts
//! (and so the same tier and reason), and must take the common simple shapes.

use pretty_assertions::assert_eq;
use proptest::prelude::*;

use super::{classify, classify_reference, parse, parse_fast, parse_reference};

/// The bench corpus (`benches/data/shell_corpus.txt`), one command line per line.
const BENCH_CORPUS: &str = include_str!("../../benches/data/shell_corpus.txt");

/// When the fast path accepts `line`, its AST is the reference AST, and `parse` and
/// `classify` give what the tree-sitter path gives. Returns whether the fast path accepted.
pub(super) fn assert_agrees(line: &str) -> bool {
    let Some(fast) = parse_fast(line) else { return false };
    assert_eq!(Ok(fast), parse_reference(line), "fast path vs tree-sitter on {line:?}");
    assert_eq!(parse(line), parse_reference(line), "parse on {line:?}");
    assert_eq!(classify(line), classify_reference(line), "classify on {line:?}");
    true
}

#[test]
fn the_bench_corpus_agrees_and_mostly_takes_the_fast_path() {
    let lines: Vec<&str> = BENCH_CORPUS.lines().filter(|l| !l.is_empty()).collect();
    let fast: Vec<&str> = lines.iter().copied().filter(|l| assert_agrees(l)).collect();
    let slow: Vec<&str> = lines.iter().copied().filter(|l| !fast.contains(l)).collect();
    // Only the lines with `$(…)` and a loop need the grammar.
    assert_eq!(slow, vec!["echo $(whoami)", "for f in *.txt; do cat $f; done",]);
}

#[test]
fn common_shapes_take_the_fast_path() {
    for line in [
        "ls",
        "  ls -la\t",
        "cat 'a b' \"c d\" e'f'\"g\"h",
        "a | b | c | d",
        "a && b || c; d",
        "a;",
        "a ; b ;",
        "LANG=C TZ='UTC' A= B=\"x\"y date",
        "echo done in then > out.txt 2>&1",
        "make 2> err.log >> all.log < in",
        "cmd >&2",
        "cmd 1>&2 | tee log",
        "git diff HEAD~1 -- src/lib.rs",
        "ls ~/x *.rs a?b x=y --opt=v",
        "echo héllo 'ü x' \"日本\"",
        "echo '' \"\" a\"\" \"\"a",
        "sed -n '1,40p' f",
        "sudo rm -rf /",
        "find . -name '*.tmp' -exec rm -f {} +",
        "find . -exec cp {} {} x ;",
    ] {
        assert!(assert_agrees(line), "{line:?} should take the fast path");
    }
}

#[test]
fn shapes_outside_the_subset_go_to_the_grammar() {
    for line in [
        "",
        "   ",
        "echo $HOME",
        "echo \"$HOME\"",
        "echo `id`",
        "echo a\\ b",
        "echo \"a\\\"b\"",
        "echo \"hi!\"",
        "ls # comment",
        "ls &",
        "a & b",
        "a |& b",
        "(ls)",
        "{ ls; }",
        "ls {a,b}",
        "ls {}x",
        "ls x{}",
        "{} x",
        "ls {};",
        "test [ x ]",
        "a\nb",
        "a 'x\ny'",
        "if true; then ls; fi",
        "export A=1",
        "eval ls",
        "A=1",
        "A=1 > f",
        "> f ls",
        "ls 3> f",
        "ls 12> f",
        "ls a>f",
        "ls \"2\">f",
        "ls > f x",
        "ls >| f",
        "ls >& f",
        "ls >&3",
        "ls >&-",
        "ls <&0",
        "ls &> f",
        "cat <<EOF",
        "cat <<< x",
        "ls <> f",
        "diff <(a) b",
        "ls >",
        "a ||",
        "a &&",
        "| a",
        "a | | b",
        "a ;; b",
        "a ; ; b",
        "'A'=1 ls",
        "A+=1 ls",
        "1A=1 ls",
        "=x",
        "ls 'unterminated",
        "ls \"unterminated",
        "x\u{7f}",
        // Shapes tree-sitter-bash reads its own way (found by the property tests).
        "u@h",
        "a%b",
        "x | a?b",
        "ls 0<ls",
        "ls 0>x",
        "if''",
        "ls =~",
        "ls a == b",
        "- 2>&1",
        "/dev/null - 2>&1",
        "find . -exec grep x {} + | head || echo none",
        "a\"\" - 2>&1",
        "cat - >out.txt",
        "_=ff= f= _",
        "_= x",
        "!ls",
    ] {
        assert!(parse_fast(line).is_none(), "{line:?} must be left to the grammar");
    }
}

#[test]
fn too_many_commands_go_to_the_grammar() {
    let line = "ls && ".repeat(70) + "ls";
    assert!(parse_fast(&line).is_none());
    assert!(assert_agrees(&("ls | ".repeat(40) + "ls")));
}

/// A word of the subset, or (rarely) a near miss just outside it.
fn word() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        6 => prop::sample::select(&[
            "ls", "a", "-la", "--x=y", "x=y", "A=1", "~", "~/x", "*.rs", "a?b", "HEAD~1", "1",
            "2", "12", "-20", "0x1f", "1,40p", "/dev/null", "/etc/x", ".", "-", "--", "é", "日本",
            "done", "in", "then", "if", "export", "eval", "sudo", "rm", "-rf", "/", "git",
            "push", "sh", "-c", "bash", "curl", "find", "-exec", "-delete", "sed", "-i", "chmod",
            "777", "dd", "of=/dev/sda", "xargs", "env", "+", "^x", "a:b", "u@h", "%",
        ][..]).prop_map(str::to_owned),
        2 => "'[a-z |&;<>$`\\\\\"!#{}()*~=\t]{0,6}'",
        2 => "\"[a-z |&;<>'#{}()*~=\t]{0,6}\"",
        1 => prop::sample::select(&[
            "$x", "${x}", "\\", "#", "{a,b}", "{}", "[", "]", "!", "(", ")", "\"$y\"", "`id`",
            "&", "$'x'", "\n", "\r", "{1..3}", "a[1]", "{}", "{}", " {} ", "{};", "@(x)", "\"a\\\"b\"",
        ][..]).prop_map(str::to_owned),
    ];
    prop::collection::vec(piece, 1..4).prop_map(|parts| parts.concat())
}

/// Between words: blanks, operators and redirects of the subset, and near misses.
fn joint() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        8 => Just(" "),
        1 => Just("\t"),
        1 => Just("  "),
        2 => Just(" | "),
        1 => Just("|"),
        1 => Just(" && "),
        1 => Just(" || "),
        1 => Just("; "),
        1 => Just(";"),
        1 => Just(" > "),
        1 => Just(" >> "),
        1 => Just(" < "),
        1 => Just(" 2>"),
        1 => Just(" 2>&1 "),
        1 => Just(" >&2 "),
        1 => prop::sample::select(&[
            ">", " & ", " |& ", " ;; ", "\n", " &> ", " >| ", " 3> ", " <<", " >&", " 1>",
            " 0<", "2>", " <& ", " >&- ", " 2>&1", " # ", " ! ",
        ][..]),
    ]
}

fn line() -> impl Strategy<Value = String> {
    (word(), prop::collection::vec((joint(), word()), 0..6), prop::option::of(joint())).prop_map(
        |(first, rest, tail)| {
            let mut line = first;
            for (j, w) in rest {
                line.push_str(j);
                line.push_str(&w);
            }
            line.push_str(tail.unwrap_or(""));
            line
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Lines from the subset grammar and its near misses: whenever the fast path accepts one,
    /// parse and classification equal the tree-sitter path's.
    #[test]
    fn generated_lines_agree(line in line()) {
        assert_agrees(&line);
    }

    /// Arbitrary short lines over the characters that matter to the lexer.
    #[test]
    fn arbitrary_lines_agree(line in "[a-c0-3 \t'\"|&;<>=~*?{}$#\\\\!()\n-]{0,16}") {
        assert_agrees(&line);
    }
}

//! The shell constructs models write that ARIA evaluates without a shell: heredocs and
//! here-strings, `cd`, whole-line subshells, `export`/`unset`, `command -v`/`type`, `$(…)`
//! and backquotes, and `$TMPDIR`.

use aria_api::Tier::{self, Blocked, Irreversible, Read, RecoverableWrite};
use pretty_assertions::assert_eq;

use super::builtin::Builtin;
use super::subst::{Substitution, placeholder_line, quote_output, replace, substitutions};
use super::{RedirectTarget, classify, parse, parse_reference};

fn stdin_text(line: &str) -> String {
    let script = parse(line).unwrap_or_else(|r| panic!("{line}: {r}"));
    let cmd = script.commands().next().unwrap();
    cmd.redirects
        .iter()
        .find_map(|r| match &r.target {
            RedirectTarget::Text(t) if r.fd == 0 => Some(t.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{line}: no stdin text"))
}

fn tier(line: &str) -> (Tier, String) {
    let c = classify(line);
    (c.tier, c.reason)
}

#[test]
fn heredocs_become_standard_input_text() {
    assert_eq!(
        stdin_text("cat > f <<'EOF'\nhello $USER `x`\nsecond\nEOF"),
        "hello $USER `x`\nsecond\n"
    );
    assert_eq!(stdin_text("cat <<\"EOF\"\n$HOME\nEOF"), "$HOME\n");
    assert_eq!(stdin_text("cat <<EOF\nplain text\nEOF"), "plain text\n");
    assert_eq!(stdin_text("cat <<-EOF\n\tindented\n\t\tmore\n\tEOF"), "indented\nmore\n");
    assert_eq!(stdin_text("cat <<'EOF'\nEOF"), "");
    // The redirect after the heredoc and the lines after the delimiter are kept.
    let script = parse("cat <<'EOF' > out.txt\nbody\nEOF\nwc -l out.txt").unwrap();
    let argvs: Vec<Vec<&str>> = script.commands().map(|c| c.argv().collect()).collect();
    assert_eq!(argvs, vec![vec!["cat"], vec!["wc", "-l", "out.txt"]]);
    let first = script.commands().next().unwrap();
    assert_eq!(first.redirects.len(), 2);
}

#[test]
fn heredocs_that_would_need_expansion_are_refused_with_the_quoted_form() {
    for line in ["cat <<EOF\n$x\nEOF", "cat <<EOF\n$(date)\nEOF", "cat <<EOF\na\\b\nEOF"] {
        let r = parse(line).unwrap_err();
        assert!(r.message.contains("<<'EOF'"), "{line}: {}", r.message);
    }
    let r = parse("cat <<EOF | grep a\nab\nEOF").unwrap_err();
    assert!(r.message.contains("after the closing delimiter"), "{}", r.message);
}

#[test]
fn here_strings_must_be_literal() {
    assert_eq!(stdin_text("grep x <<< 'a x b'"), "a x b\n");
    assert_eq!(stdin_text("grep x <<< \"a x\""), "a x\n");
    let r = parse("grep x <<< \"$s\"").unwrap_err();
    assert!(r.message.contains("<<< 'text'"), "{}", r.message);
}

#[test]
fn heredoc_lines_are_judged_by_their_commands() {
    assert_eq!(tier("cat <<'EOF'\nrm -rf /\nEOF").0, Read);
    let (t, why) = tier("cat > notes.md <<'EOF'\n# notes\nEOF");
    assert_eq!(t, RecoverableWrite, "{why}");
    assert_eq!(classify("cat > notes.md <<'EOF'\nx\nEOF").redirects.len(), 1);
    assert_eq!(tier("grep -c a <<< 'abc'").0, Read);
}

#[test]
fn cd_is_read_and_its_forms_are_checked() {
    assert_eq!(tier("cd src && ls").0, Read);
    assert_eq!(tier("(cd src && grep -rn TODO .)").0, Read);
    assert_eq!(tier("(cd src && touch x)").0, RecoverableWrite);
    for line in ["cd && ls", "cd - && ls", "cd a b", "cd $DIR && ls", "cd ~ && ls"] {
        let (t, why) = tier(line);
        assert_eq!(t, Blocked, "{line}");
        assert!(why.contains("cd DIR"), "{line}: {why}");
    }
    let r = parse("(cd a && ls) && ls").unwrap_err();
    assert!(r.message.contains("whole line"), "{}", r.message);
}

#[test]
fn export_and_unset_set_the_lines_own_environment() {
    assert_eq!(tier("export LANG=C && sort f").0, Read);
    assert_eq!(tier("export LANG=C LC_ALL; unset LANG LC_ALL; printenv").0, Read);
    // An unknown variable is judged like `A=1 program`: ARIA cannot know what it changes.
    assert_eq!(tier("export A=1").0, Irreversible);
    for line in [
        "export PATH=/tmp/bin",
        "export GIT_DIR=/x",
        "export PYTHONPATH=.",
        "export NODE_OPTIONS=--require=x",
        "export BASH_ENV=x",
        "export PAGER=less",
        "export EDITOR=vim",
        "export GIT_SSH_COMMAND=x",
    ] {
        assert!(tier(line).0 >= Irreversible, "{line}: {:?}", tier(line));
    }
    assert!(tier("export LD_PRELOAD=/x.so && ls").0 >= Irreversible);
    assert_eq!(tier("export").0, Blocked);
    assert_eq!(tier("export -f x").0, Blocked);
    let script = parse("export A=1 B=\"two words\" C").unwrap();
    let cmd = script.commands().next().unwrap();
    assert_eq!(
        Builtin::parse(cmd),
        Some(Ok(Builtin::Export(vec![
            ("A".into(), Some("1".into())),
            ("B".into(), Some("two words".into())),
            ("C".into(), None),
        ])))
    );
}

#[test]
fn command_v_and_type_only_look_up() {
    assert_eq!(tier("command -v git").0, Read);
    assert_eq!(tier("command -V git").0, Read);
    assert_eq!(tier("type cargo").0, Read);
    assert_eq!(tier("type -t ls").0, Read);
    let (t, why) = tier("command rm -rf x");
    assert_eq!(t, Blocked);
    assert!(why.contains("command -v NAME"), "{why}");
}

#[test]
fn builtins_that_are_programs_stay_programs() {
    for line in
        ["true", "false", "echo hi", "printf '%s\\n' a", "[ -f x ]", "test -d src", "which ls"]
    {
        assert_eq!(tier(line).0, Read, "{line}");
    }
}

#[test]
fn tmpdir_is_a_known_value() {
    let script = parse("rm -rf \"$TMPDIR/x\" ${TMPDIR}/y").unwrap();
    let argv: Vec<&str> = script.commands().next().unwrap().argv().collect();
    assert_eq!(argv, vec!["rm", "-rf", "/tmp/x", "/tmp/y"]);
    assert!(tier("rm -rf \"$TMPDIR/x\"").0 < Blocked);
}

fn sub(line: &str) -> Vec<(String, bool)> {
    substitutions(line).unwrap().into_iter().map(|s| (s.inner, s.quoted)).collect()
}

#[test]
fn substitutions_are_found_at_the_top_level() {
    assert_eq!(sub("echo plain"), vec![]);
    assert_eq!(
        sub("echo $(ls src) \"n=$(wc -l < f)\" `pwd`"),
        vec![("ls src".into(), false), ("wc -l < f".into(), true), ("pwd".into(), false)]
    );
    assert_eq!(sub("echo $(echo $(pwd))"), vec![("echo $(pwd)".into(), false)]);
    assert_eq!(sub("echo '$(not)'"), vec![]);
    assert!(substitutions("echo `a\\`b`").is_err());
}

#[test]
fn substituted_output_stays_data() {
    let s = |quoted| Substitution { range: 0..0, inner: String::new(), quoted };
    assert_eq!(quote_output(&s(false), "a b\n\nc'd\n\n"), "'a' 'b' 'c'\\''d'");
    assert_eq!(quote_output(&s(true), "a \"$x\" `y` \\\n"), "a \\\"\\$x\\\" \\`y\\` \\\\");
    assert_eq!(quote_output(&s(false), "\n"), "");
    let line = "ls $(cat list) \"$(pwd)/x\"";
    let subs = substitutions(line).unwrap();
    assert_eq!(placeholder_line(line, &subs), "ls … \"…/x\"");
    let out: Vec<String> = vec!["'a' 'b'".into(), "/r o".into()];
    let replaced = replace(line, &subs, &out);
    assert_eq!(replaced, "ls 'a' 'b' \"/r o/x\"");
    let argv: Vec<String> =
        parse(&replaced).unwrap().commands().next().unwrap().argv().map(str::to_owned).collect();
    assert_eq!(argv, vec!["ls", "a", "b", "/r o/x"]);
}

#[test]
fn a_substitution_runs_first_only_when_it_only_reads() {
    assert_eq!(tier("echo \"today: $(date +%F)\"").0, Read);
    assert_eq!(tier("wc -l $(git ls-files)").0, Read);
    assert_eq!(tier("cat `ls`").0, Read);
    assert_eq!(tier("touch $(cat names.txt)").0, RecoverableWrite);
    for line in [
        "echo $(rm -rf x)",
        "echo $(curl https://example.com/x.sh)",
        "ls $(touch made)",
        "echo `sh -c 'rm -rf x'`",
        "echo $(echo $(rm x))",
    ] {
        let (t, why) = tier(line);
        assert_eq!(t, Blocked, "{line}: {why}");
        assert!(why.contains("own step"), "{line}: {why}");
    }
}

#[test]
fn new_constructs_agree_between_the_fast_path_and_the_grammar() {
    for line in ["command -v ls", "type ls", "cd src", "echo a; cd b && ls", "true", "false"] {
        super::fast_tests::assert_agrees(line);
    }
    for line in ["cat <<'EOF'\nx\nEOF", "export A=1", "(cd a && ls)", "echo $(ls)"] {
        assert_eq!(parse(line).ok(), parse_reference(line).ok(), "{line}");
    }
}

#[test]
fn for_loops_over_literal_words_are_unrolled() {
    let script =
        parse("for f in a.txt 'b c'; do wc -l \"$f\" > ${f}.n; echo $f; done; ls").unwrap();
    let argvs: Vec<Vec<&str>> = script.commands().map(|c| c.argv().collect()).collect();
    assert_eq!(
        argvs,
        vec![
            vec!["wc", "-l", "a.txt"],
            vec!["echo", "a.txt"],
            vec!["wc", "-l", "b c"],
            vec!["echo", "b c"],
            vec!["ls"],
        ]
    );
    let c = classify("for f in a b; do touch $f; done");
    assert_eq!(c.tier, RecoverableWrite);
    assert_eq!(c.writes, vec!["a".to_owned(), "b".to_owned()]);
    assert_eq!(tier("for f in a b; do rm -rf /; done").0, Blocked);
    for line in [
        "for f in *.rs; do wc -l $f; done",
        "for f in $LIST; do echo $f; done",
        "for f; do echo $f; done",
        "ls && for f in a; do echo $f; done",
        "for ((i=0;i<3;i++)); do echo $i; done",
    ] {
        let (t, why) = tier(line);
        assert_eq!(t, Blocked, "{line}");
        assert!(why.contains("for"), "{line}: {why}");
    }
    let long = format!("for f in {}; do echo $f; done", vec!["x"; 65].join(" "));
    assert_eq!(tier(&long).0, Blocked);
}

//! `if/elif/else` as a conditional step: how it parses (one line or several, nested, inside
//! `for`), how it is classified (every part, conditions included), and what stays refused.

use aria_api::Tier::{self, Blocked, Irreversible, Read, RecoverableWrite};
use pretty_assertions::assert_eq;

use super::{Body, Conditional, RunIf, Script, Step, classify, parse, parse_reference};

fn argvs(script: &Script) -> Vec<Vec<String>> {
    script.commands().map(|c| c.argv().map(str::to_owned).collect()).collect()
}

fn words(line: &str) -> Vec<String> {
    line.split(' ').map(str::to_owned).collect()
}

fn only_if(script: &Script) -> &Conditional {
    match script.steps.as_slice() {
        [Step { body: Body::If(c), .. }] => c,
        other => panic!("expected one if step, got {other:?}"),
    }
}

fn tier(line: &str) -> (Tier, String) {
    let c = classify(line);
    (c.tier, c.reason)
}

#[test]
fn if_then_else_on_one_line_is_one_conditional_step() {
    let script = parse("if [ -f x ]; then echo yes; else echo no; fi").unwrap();
    let c = only_if(&script);
    assert_eq!(c.arms.len(), 1);
    assert_eq!(argvs(&c.arms[0].condition), vec![words("[ -f x ]")]);
    assert_eq!(argvs(&c.arms[0].then), vec![words("echo yes")]);
    assert_eq!(argvs(c.otherwise.as_ref().unwrap()), vec![words("echo no")]);
    // Document order: conditions, branches, else.
    assert_eq!(argvs(&script), vec![words("[ -f x ]"), words("echo yes"), words("echo no")]);
}

#[test]
fn multi_line_elif_chains_keep_every_part_in_order() {
    let line = "if test -d src\nthen\n  ls src\n  echo listed\nelif grep -q x a.txt && test -f b\nthen\n  cat b\nelse\n  echo none\nfi\necho after";
    let script = parse(line).unwrap();
    assert_eq!(script.steps.len(), 2);
    let Body::If(c) = &script.steps[0].body else { panic!("not an if") };
    assert_eq!(c.arms.len(), 2);
    assert_eq!(argvs(&c.arms[0].then), vec![words("ls src"), words("echo listed")]);
    assert_eq!(c.arms[1].condition.steps.len(), 2);
    assert_eq!(c.arms[1].condition.steps[1].run_if, RunIf::Success);
    assert_eq!(argvs(&c.arms[1].then), vec![words("cat b")]);
    assert_eq!(argvs(c.otherwise.as_ref().unwrap()), vec![words("echo none")]);
    assert_eq!(argvs(&Script { steps: script.steps[1..].to_vec() }), vec![words("echo after")]);
    assert_eq!(parse_reference(line).unwrap(), script);
}

#[test]
fn an_if_is_gated_like_any_step() {
    let script = parse("ls && if true; then echo a; fi || echo b").unwrap();
    let gates: Vec<RunIf> = script.steps.iter().map(|s| s.run_if).collect();
    assert_eq!(gates, vec![RunIf::Always, RunIf::Success, RunIf::Failure]);
    assert!(matches!(script.steps[1].body, Body::If(_)));
}

#[test]
fn ifs_nest_and_sit_inside_for_loops() {
    let nested = parse("if true; then if false; then echo a; else echo b; fi; fi").unwrap();
    let outer = only_if(&nested);
    assert!(matches!(outer.arms[0].then.steps[0].body, Body::If(_)));
    assert_eq!(argvs(&nested).len(), 4);

    // The loop variable is bound inside the condition and both branches.
    let looped =
        parse("for f in a b; do if [ -f \"$f\" ]; then wc -l $f; else echo \"no $f\"; fi; done")
            .unwrap();
    assert_eq!(looped.steps.len(), 2);
    assert_eq!(
        argvs(&looped),
        vec![
            words("[ -f a ]"),
            words("wc -l a"),
            vec!["echo".to_owned(), "no a".to_owned()],
            words("[ -f b ]"),
            words("wc -l b"),
            vec!["echo".to_owned(), "no b".to_owned()],
        ]
    );
    // A loop inside a branch is unrolled there.
    let inner = parse("if true; then for x in 1 2; do echo $x; done; fi").unwrap();
    assert_eq!(argvs(&only_if(&inner).arms[0].then), vec![words("echo 1"), words("echo 2")]);
}

#[test]
fn the_tier_of_an_if_is_the_worst_of_all_its_parts() {
    assert_eq!(tier("if [ -f x ]; then echo yes; else echo no; fi").0, Read);
    let c = classify("if [ -f x ]; then touch y; fi");
    assert_eq!(c.tier, RecoverableWrite);
    assert_eq!(c.writes, vec!["y".to_owned()]);
    assert_eq!(c.commands.len(), 2);
    // The branch that may never run still counts, and so does the condition.
    assert_eq!(tier("if true; then ls; else rm -rf /; fi").0, Blocked);
    assert_eq!(tier("if rm -rf build; then ls; fi").0, Irreversible);
    assert_eq!(tier("if curl -s https://example.com; then ls; fi").0, Irreversible);
    assert_eq!(tier("if true; then ls; elif git push; then ls; fi").0, Irreversible);
    let (t, why) = tier("if true; then echo a > out.txt; fi");
    assert_eq!(t, RecoverableWrite, "{why}");
    assert_eq!(tier("if true; then if true; then rm -rf /; fi; fi").0, Blocked);
}

#[test]
fn loops_other_than_for_and_case_are_refused_with_the_form_that_works() {
    for line in ["while true; do ls; done", "until false; do ls; done"] {
        let (t, why) = tier(line);
        assert_eq!(t, Blocked, "{line}");
        assert!(why.contains("for x in a b c") && why.contains("if"), "{line}: {why}");
    }
    let (t, why) = tier("case x in x) ls;; esac");
    assert_eq!(t, Blocked);
    assert!(why.contains("case") && why.contains("elif"), "{why}");
}

#[test]
fn ifs_aria_cannot_run_faithfully_are_refused() {
    for (line, named) in [
        ("if true; then ls; fi > out.txt", "redirect"),
        ("if true; then ls; fi | grep x", "if"),
        ("if true; then ls; fi &", "background"),
        ("if [[ -f x ]]; then ls; fi", "[["),
        ("if ! test -f x; then ls; fi", "!"),
        ("if true; then\nfi", "needs a command"),
    ] {
        let (t, why) = tier(line);
        assert_eq!(t, Blocked, "{line}: {why}");
        assert!(why.contains(named), "{line}: {why}");
    }
}

#[test]
fn aria_check_command_reports_an_if_like_any_line() {
    // What `aria check command --jsonl` prints per input line.
    let line = "if [ -f x ]; then\n  echo yes\nelse\n  git push\nfi";
    let report = serde_json::to_value(classify(line).report()).unwrap();
    assert_eq!(report["input"], line);
    assert_eq!(report["verdict"], "irreversible");
    assert!(report["reason"].as_str().unwrap().contains("push"), "{report}");
    let refused = serde_json::to_value(classify("while true; do ls; done").report()).unwrap();
    assert_eq!(refused["verdict"], "blocked");
}

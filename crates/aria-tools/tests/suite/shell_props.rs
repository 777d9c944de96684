//! Property tests for the shell classifier: invariants that must hold for every command line,
//! not just the examples in the unit tests.

use aria_api::Tier;
use aria_tools::shell::{classify, parse};
use proptest::prelude::*;

/// Simple commands that only read.
const READS: &[&str] = &[
    "ls -la",
    "cat f",
    "grep -rn x .",
    "git status",
    "git log --oneline",
    "head -n 5 a",
    "wc -l",
    "sort",
    "uniq -c",
    "ps aux",
    "echo hi",
    "find . -name '*.rs'",
    "sed -n 1p f",
    "awk '{print $1}'",
    "jq .",
    "pwd",
    "df -h",
    "tail f",
];
/// Simple commands of every tier.
const ANY: &[&str] = &[
    "ls",
    "touch a",
    "rm b",
    "git push",
    "sudo ls",
    "cp a b",
    "curl https://x",
    "kill 1234",
    "chmod 777 f",
    "mkdir d",
    "sed -i s/a/b/ f",
    "python3 x.py",
    "frob",
    "env X=1 ls",
    "git reset --hard",
    "rm -rf /",
    "echo x > out",
    "cat f 2>/dev/null",
    "xargs rm",
];
/// Wrappers that run the command after them.
const WRAPPERS: &[&str] =
    &["", "env X=1 ", "nice -n 5 ", "timeout 10 ", "nohup ", "xargs ", "stdbuf -oL ", "time "];
const OPS: &[&str] = &[" && ", " || ", " ; ", " | ", "\n"];

fn pick(list: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    prop::sample::select(list)
}

fn line_of(parts: Vec<&str>, ops: Vec<&str>) -> String {
    let mut line = String::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            line.push_str(ops[(i - 1) % ops.len()]);
        }
        line.push_str(p);
    }
    line
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Arbitrary text never panics the parser or the classifier, and a refusal is blocked.
    #[test]
    fn arbitrary_input_never_panics(input in ".{0,200}") {
        let c = classify(&input);
        prop_assert_eq!(c.refusal.is_some(), parse(&input).is_err());
        if c.refusal.is_some() {
            prop_assert_eq!(c.tier, Tier::Blocked);
        }
        prop_assert!(!c.reason.is_empty());
    }

    /// Shell-looking noise (operators, quotes, substitutions) never panics either.
    #[test]
    fn shell_noise_never_panics(tokens in prop::collection::vec(pick(&[
        "ls", "rm", "-rf", "/", "'", "\"", "$(", ")", "`", "|", "&&", "||", ";", "&", ">", "<",
        "2>&1", "<<", "EOF", "\n", "\\", "$x", "${x:-y}", "*", "{a,b}", "~", "(", "{", "}", "!",
        "sudo", "sh", "-c", "=", "#", "<(", ">(", "$((", "))", " ",
    ]), 0..24)) {
        let line: String = tokens.concat();
        let _ = classify(&line);
        let spaced = tokens.join(" ");
        let _ = classify(&spaced);
    }

    /// `sudo` as a program word, behind any wrappers, anywhere in a list or pipeline: blocked.
    #[test]
    fn sudo_as_a_program_is_always_blocked(
        before in prop::collection::vec(pick(ANY), 0..4),
        after in prop::collection::vec(pick(ANY), 0..4),
        wrappers in prop::collection::vec(pick(WRAPPERS), 0..3),
        ops in prop::collection::vec(pick(OPS), 1..4),
        cmd in pick(&["ls", "rm -rf x", "cat /etc/shadow", "-u root id", "tee /x"]),
    ) {
        let sudo = format!("{}sudo {cmd}", wrappers.concat());
        let mut parts: Vec<&str> = before.clone();
        parts.push(&sudo);
        parts.extend(after.iter().copied());
        let line = line_of(parts, ops);
        let c = classify(&line);
        prop_assert_eq!(c.tier, Tier::Blocked, "{:?}: {}", line, c.reason);
    }

    /// A pipeline of reads is read; the same pipeline piped into a shell never is.
    #[test]
    fn piping_reads_into_a_shell_is_never_read(
        parts in prop::collection::vec(pick(READS), 1..5),
        shell in pick(&["sh", "bash", "zsh", "dash", "python3", "perl", "bash -s", "sh -"]),
    ) {
        let pipeline = parts.join(" | ");
        let read = classify(&pipeline);
        prop_assert_eq!(read.tier, Tier::Read, "{:?}: {}", pipeline, read.reason);
        let line = format!("{pipeline} | {shell}");
        let c = classify(&line);
        prop_assert_eq!(c.tier, Tier::Blocked, "{:?}: {}", line, c.reason);
    }

    /// The tier of a list is the maximum of its parts' tiers.
    #[test]
    fn a_list_is_as_dangerous_as_its_worst_part(
        parts in prop::collection::vec(pick(ANY), 1..5),
        ops in prop::collection::vec(pick(&[" && ", " || ", " ; ", "\n"]), 1..4),
    ) {
        let expected = parts.iter().map(|p| classify(p).tier).max().unwrap();
        let line = line_of(parts, ops);
        prop_assert_eq!(classify(&line).tier, expected, "{:?}", line);
    }

    /// Quoting or escaping the program name never changes the verdict.
    #[test]
    fn quoting_the_program_name_changes_nothing(cmd in pick(ANY), how in 0usize..4) {
        let (program, rest) = cmd.split_once(' ').unwrap_or((cmd, ""));
        let disguised = match how {
            0 => format!("'{program}'"),
            1 => format!("\"{program}\""),
            2 => format!("\\{program}"),
            _ => {
                let (a, b) = program.split_at(1);
                format!("{a}''{b}")
            }
        };
        let line = format!("{disguised} {rest}");
        prop_assert_eq!(classify(&line).tier, classify(cmd).tier, "{:?}", line);
    }

    /// Whatever a wrapper wraps, the wrapped command's tier is a lower bound.
    #[test]
    fn wrappers_never_lower_the_tier(cmd in pick(ANY), wrapper in pick(WRAPPERS)) {
        // `xargs` detaches stdin and `env X=1` may add an env rule; both only raise.
        let line = format!("{wrapper}{cmd}");
        let inner = classify(cmd).tier;
        prop_assert!(classify(&line).tier >= inner, "{:?}", line);
    }
}

//! The labelled shell corpora (`tests/data/shell_dangerous.txt`, `shell_harmless.txt`): no
//! command that can write, execute or reach the network is `read`, and at least 95 % of
//! harmless commands are usable (run, or asked; not blocked). Prints the figures.

use aria_api::Tier;
use aria_tools::shell::{classify, classify_reference};

const DANGEROUS: &str = include_str!("../data/shell_dangerous.txt");
const HARMLESS: &str = include_str!("../data/shell_harmless.txt");

/// The commands of a corpus: one a line, `#` lines are comments, `⏎` is a newline and `␍` a
/// carriage return inside a command.
fn commands(corpus: &str) -> Vec<String> {
    corpus
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.replace('⏎', "\n").replace('␍', "\r"))
        .collect()
}

/// Every corpus line is judged alike by the fast path and the tree-sitter path.
#[test]
fn the_fast_path_agrees_on_both_corpora() {
    for line in commands(DANGEROUS).iter().chain(&commands(HARMLESS)) {
        assert_eq!(classify(line), classify_reference(line), "{line:?}");
    }
}

#[test]
fn no_dangerous_command_is_read() {
    let lines = commands(DANGEROUS);
    let unasked: Vec<(String, String)> = lines
        .iter()
        .map(|l| (l, classify(l)))
        .filter(|(_, c)| c.tier == Tier::Read)
        .map(|(l, c)| (l.clone(), c.reason))
        .collect();
    #[allow(clippy::print_stderr)] // the figure this suite exists to report
    {
        eprintln!("dangerous commands run unasked: {} of {}", unasked.len(), lines.len());
    }
    assert!(unasked.is_empty(), "classified read: {unasked:#?}");
}

#[test]
fn harmless_commands_are_usable() {
    let lines = commands(HARMLESS);
    let blocked: Vec<(String, String)> = lines
        .iter()
        .map(|l| (l, classify(l)))
        .filter(|(_, c)| c.tier == Tier::Blocked)
        .map(|(l, c)| (l.clone(), c.reason))
        .collect();
    let usable = lines.len() - blocked.len();
    let percent = 100.0 * usable as f64 / lines.len() as f64;
    #[allow(clippy::print_stderr)] // the figure this suite exists to report
    {
        eprintln!("harmless commands usable: {usable} of {} ({percent:.1} %)", lines.len());
        for (line, reason) in &blocked {
            eprintln!("  blocked: {line:?}: {reason}");
        }
    }
    assert!(percent >= 95.0, "only {percent:.1} % usable; blocked: {blocked:#?}");
}

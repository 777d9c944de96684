//! Unit tests of the redactor's internals and of cases found by the property tests and fuzzing.

use super::*;

#[test]
fn the_rules_compile_and_every_rule_has_its_groups() {
    let mut slots = Vec::new();
    let groups = rule_groups();
    assert_eq!(groups.first().map(|g| g.start), Some(0));
    assert!(groups.windows(2).all(|w| w[0].end == w[1].start), "{groups:?}");
    for range in groups {
        let (source, names) = combined_source(range.clone());
        let re = Regex::new(&source).unwrap();
        slots.extend(slots_for(&re, &names, range));
    }
    assert_eq!(slots.len(), RULES.len());
    for s in &slots {
        if s.check == Check::EnvValue {
            assert_eq!(s.values.len(), 3, "{}", s.kind);
            assert!(s.key_quote.is_some() && s.separator.is_some());
        }
    }
}

#[test]
fn helpers() {
    assert!(is_number("4096") && is_number("-1.5") && !is_number("1a") && !is_number("."));
    assert!(is_dotted_identifier("os.environ") && is_dotted_identifier("self.api_key"));
    assert!(!is_dotted_identifier("abc") && !is_dotted_identifier("a.1b"));
    assert!(!is_dotted_identifier("x."));
}

#[test]
fn a_broken_redactor_fails_closed() {
    use aria_api::Redact;
    let r = SecretRedactor {
        known_values: vec!["x".repeat(20)],
        known: std::sync::OnceLock::from(Err(())),
    };
    assert!(!r.working());
    assert_eq!(r.redact("anything at all"), BROKEN);
    assert_eq!(r.redact(""), "");
}

#[test]
fn skipping_a_code_assignment_still_finds_a_token_inside_it() {
    use aria_api::Redact;
    let r = SecretRedactor::new(vec![]);
    let text = "fn f(token: ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8)";
    assert_eq!(r.redact(text), "fn f(token: [REDACTED:github_token])");
}

#[test]
fn a_marker_followed_by_an_assignment_is_not_an_index_assignment() {
    // Found by the fixed-point property: `[REDACTED:env_secret] =x` once read as
    // `ENV["…"] = x` on the second pass.
    use aria_api::Redact;
    let r = SecretRedactor::new(vec![]);
    let once = r.redact("KEY=0AAAAAAFKEYghp_sk- =ablABcad\u{1FACE}").into_owned();
    assert_eq!(r.redact(&once), once);
}

#[test]
fn a_value_assigned_to_a_name_that_starts_with_a_token_is_redacted_too() {
    // Found by the fixed-point property: the token took the start of the name, so the
    // assignment no longer began at a word boundary and its value was left in the text
    // until the output was redacted again.
    use aria_api::Redact;
    let r = SecretRedactor::new(vec![]);
    let text = "ghp_AAAaAAaATOKENTOKENKEYTOKENKEYTOKENghp_KEY=AAAAB001CDabEBcF";
    let once = r.redact(text).into_owned();
    assert_eq!(once, "[REDACTED:github_token]_KEY=[REDACTED:env_secret]");
    assert_eq!(r.redact(&once), once);
    let report = r.redact_report(text);
    assert_eq!(report.kinds, ["github_token", "env_secret"]);
    // The same found by fuzzing with another vendor's token.
    let once = r.redact("\u{17}xoxb-fauKnoteyJalwrdosEYt_TOKEN=lwrdosPY\u{45b}");
    assert_eq!(once, "\u{17}[REDACTED:slack_token]_TOKEN=[REDACTED:env_secret]");
}

//! The split pattern pass (token formats and `.env` rule in separate regexes, the `.env` rule
//! behind a keyword prefilter) must redact exactly like one alternation of all rules, which
//! is how the patterns are defined.

use std::sync::OnceLock;

use proptest::prelude::*;

use super::{Group, PATTERNS, RULES, SecretRedactor, build, combined_source, slots_for};

/// The definition: all rules as one regex, no prefilter.
fn reference() -> &'static [Group] {
    static REFERENCE: OnceLock<Vec<Group>> = OnceLock::new();
    REFERENCE.get_or_init(|| {
        let (source, names) = combined_source(0..RULES.len());
        let re = build(&source).unwrap();
        vec![Group {
            slots: slots_for(&re, &names, 0..RULES.len()),
            re,
            keywords: None,
            from_name: false,
        }]
    })
}

fn redactor() -> &'static SecretRedactor {
    static REDACTOR: OnceLock<SecretRedactor> = OnceLock::new();
    REDACTOR.get_or_init(|| SecretRedactor::new(Vec::new()))
}

/// Asserts the split pass gives the reference's text and kinds; returns the kinds.
fn same(text: &str) -> Vec<&'static str> {
    let r = redactor();
    let groups = PATTERNS.as_ref().unwrap();
    assert!(groups.len() > 1 && groups.iter().any(|g| g.keywords.is_some()));
    let (mut want_kinds, mut got_kinds) = (Vec::new(), Vec::new());
    let want = r.redact_patterns(reference(), text, &mut want_kinds);
    let got = r.redact_patterns(groups, text, &mut got_kinds);
    assert_eq!(got, want, "text {text:?}");
    assert_eq!(got_kinds, want_kinds, "text {text:?}");
    got_kinds
}

const GH: &str = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8";
const AWS: &str = "AKIA2OGYBAH6TQ3LWXPZ";

#[test]
fn secrets_at_the_start_and_end_of_the_input_and_of_lines() {
    assert_eq!(same(GH), vec!["github_token"]);
    assert_eq!(same(&format!("{GH}\nx\n{AWS}")), vec!["github_token", "aws_access_key_id"]);
    assert_eq!(same("API_KEY=abc123secretvalue"), vec!["env_secret"]);
    assert_eq!(same("x\nAPI_KEY=abc123secretvalue"), vec!["env_secret"]);
    assert_eq!(same("a\nb\nTOKEN: 'zz9-Qx7Lm2Vp'\n"), vec!["env_secret"]);
    // The keyword right at the end of the text, with nothing after it.
    assert_eq!(same("no secret here, just a key"), Vec::<&str>::new());
    assert_eq!(same("password"), Vec::<&str>::new());
}

#[test]
fn several_kinds_on_one_line_and_overlapping_matches() {
    let line = format!(
        "GITHUB_TOKEN={GH} aws_access_key_id={AWS} url=https://u:pw9@h/ Authorization: Bearer abc.def"
    );
    let kinds = same(&line);
    // `aws_access_key_id` names an identifier, not a secret: the key's own format finds it.
    assert_eq!(kinds, vec!["env_secret", "aws_access_key_id", "url_credentials", "bearer_token"]);
    // A token inside an assignment's name, and a name that is itself a key format.
    same(&format!("{GH}_TOKEN=hunter2x"));
    same(&format!("my_{AWS}_secret = \"v4lue\""));
    // An assignment skipped as code, then a real one later on the same line.
    same("let token = get_token(); let api_key = 'k3y-value';");
    same("PASSWORD=$PASSWORD pwd=ok1 db_pass='p4ss' compass=north");
}

#[test]
fn assignments_after_a_line_without_a_match_and_near_line_ends() {
    same("the key is\nTOKEN=abc123\n");
    same("prompt_tokens\":1520,\"completion_tokens\":88}\nSECRET=x9\r\nkey:\n  value");
    same("password:\n- hunter2\npassword: hunter2\n");
}

#[test]
fn non_ascii_case_variants_of_k_and_s_are_still_found() {
    // `(?i)` matches U+212A KELVIN SIGN as `k` and U+017F LONG S as `s`.
    // No ASCII keyword in these names: only the fallback for folded characters finds them.
    assert_eq!(same("API_\u{212A}EY=abc123value"), vec!["env_secret"]);
    assert_eq!(same("api_\u{212A}ey=abc123value"), vec!["env_secret"]);
    assert_eq!(same("my_pa\u{17F}\u{17F}word=abc123value"), vec!["env_secret"]);
    assert_eq!(same("x\nTOKEN=abc123value \u{17F}"), vec!["env_secret"]);
    same("\u{17F}ECRET=abc123value \u{17F}ecret: \"abc123value\"");
}

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(&[
            "key", "KEY", "Token", "secret", "PASS", "pwd", "credential", "password", "passwd",
            "compass", "monkey", "api_", "db.", "-", "_", "my", "\"", "'", "=", ":", " = ", ": ",
            " ", "\t", "\n", "\r\n", "\n- ", "(", ")", ";", ",", "$X", "<p>", "true", "12",
            "a.b", "abc123", "hunter2", "s3cr3t-Pa55", "\u{212A}", "\u{17F}", "é", "→",
            "https://", "u:pw@h", "Bearer ", "authorization", "sk-", "eyJ", "\\\"", "\\",
            "{", "}", " # c", "pw", "passphrase", "X-Auth-Key", "IDENTIFIED BY ", "redis-cli -a ",
            "-passin pass:", "p@ss",
        ][..]).prop_map(str::to_owned),
        1 => prop::sample::select(&[
            GH, AWS, "sk-proj-Ab3_dEf-9hIjKlMnOpQrStUvWxYz0123456789AbCdEf",
            "xoxb-1234567890-abcdefghij", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcDEF123_-xyz",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
            "123456789:AAbcdefghijklmnopqrstuvwxyz0123456789",
        ][..]).prop_map(str::to_owned),
        1 => "[a-zA-Z0-9_=: \n\"'-]{0,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any mix of keywords, separators, values, tokens and line ends: the split, prefiltered
    /// pass redacts exactly what one alternation of all rules redacts.
    #[test]
    fn the_split_pass_equals_one_alternation(parts in prop::collection::vec(fragment(), 0..14)) {
        same(&parts.concat());
    }
}

/// Found by the property test: a random key whose characters happen to spell a stand-in word
/// (`XxXx`) was taken for a placeholder and left in the text.
#[test]
fn a_random_key_containing_a_stand_in_word_is_still_redacted() {
    use aria_api::Redact;
    let r = SecretRedactor::new(Vec::new());
    for key in [
        "sk-ant-api03-__0aAXxXx-a_a-_AaA-a0aAA0A-AAA0AAaa_A0AA",
        "sk-ant-api03-Q7fK2xXxXmB9pLr4TzW8nV1cYh6DsJe3-demo-Ua5",
        "ghp_9fK2mB7pLr4TzW8nV1cYh6DsJe3Ua5Q7xxxx",
    ] {
        let text = format!("key: \"{key}\"");
        let out = r.redact(&text);
        assert!(!out.contains(&key[key.len() - 12..]), "{key} -> {out}");
    }
    // Real stand-ins stay: nothing random is left once the words are taken out.
    for placeholder in [
        "sk-ant-xxxxxxxxxxxxxxxxxxxxxxxxxxxx1",
        "sk-ant-api03-your_key_here_example_12",
        "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    ] {
        assert_eq!(r.redact(placeholder), placeholder, "{placeholder}");
    }
}

//! Property tests for `SecretRedactor`.

use std::borrow::Cow;

use aria_api::Redact;
use aria_tools::SecretRedactor;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn a_known_value_never_survives(
        prefix in "\\PC{0,40}",
        suffix in "\\PC{0,40}",
        secret in "[A-Za-z0-9_\\-\\.\\+/=]{8,40}",
    ) {
        let r = SecretRedactor::new(vec![secret.clone()]);
        let text = format!("{prefix}{secret}{suffix}");
        let out = r.redact(&text);
        prop_assert!(!out.contains(&secret), "{text:?} -> {out:?}");
    }

    #[test]
    fn borrowed_means_unchanged_and_never_panics(text in "\\PC{0,200}") {
        let r = SecretRedactor::new(vec!["sekrit-value-42".into()]);
        match r.redact(&text) {
            Cow::Borrowed(b) => prop_assert_eq!(b, text.as_str()),
            Cow::Owned(o) => prop_assert_ne!(o, text),
        }
    }

    #[test]
    fn redaction_is_a_fixed_point(text in "(\\PC|=|KEY|TOKEN| |sk-|ghp_|[A-Za-z0-9]{8}){0,30}") {
        let r = SecretRedactor::new(vec!["sekrit-value-42".into()]);
        let once = r.redact(&text).into_owned();
        let twice = r.redact(&once);
        prop_assert!(matches!(twice, Cow::Borrowed(_)), "{text:?} -> {once:?} -> {twice:?}");
    }
}

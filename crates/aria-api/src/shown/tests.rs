use serde_json::json;

use super::*;

#[test]
fn every_bidi_control_is_shown_as_its_code_point() {
    for c in ['\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}'] {
        assert_eq!(escape_hidden(&format!("a{c}b")), format!("a⟨U+{:04X}⟩b", u32::from(c)));
    }
    for c in ['\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}'] {
        assert_eq!(escape_hidden(&c.to_string()), format!("⟨U+{:04X}⟩", u32::from(c)));
    }
    // The classic trick: an override makes `rm` read backwards.
    assert_eq!(escape_hidden("echo \u{202E}mr -rf ~"), "echo ⟨U+202E⟩mr -rf ~");
}

#[test]
fn zero_width_and_invisible_characters_are_shown() {
    let cases = [
        ('\u{200B}', "200B"),
        ('\u{200C}', "200C"),
        ('\u{200D}', "200D"),
        ('\u{2060}', "2060"),
        ('\u{FEFF}', "FEFF"),
        ('\u{00AD}', "00AD"),
        ('\u{FE0F}', "FE0F"),
        ('\u{FE00}', "FE00"),
        ('\u{E0100}', "E0100"),
        ('\u{E0001}', "E0001"),
        ('\u{E0041}', "E0041"),
        ('\u{E007F}', "E007F"),
    ];
    for (c, hex) in cases {
        assert_eq!(escape_hidden(&format!("r{c}m")), format!("r⟨U+{hex}⟩m"), "{hex}");
    }
    // A tag-character payload ("rm" spelled in tags) is visible in full.
    let tags: String =
        "rm".chars().map(|c| char::from_u32(0xE0000 + u32::from(c)).unwrap()).collect();
    assert_eq!(escape_hidden(&format!("ls{tags}")), "ls⟨U+E0072⟩⟨U+E006D⟩");
}

#[test]
fn control_characters_other_than_newline_and_tab_are_shown() {
    assert_eq!(escape_hidden("a\rb"), "a⟨U+000D⟩b");
    assert_eq!(escape_hidden("\u{1b}[2Khidden"), "⟨U+001B⟩[2Khidden");
    assert_eq!(escape_hidden("x\u{0}y\u{7f}z\u{85}"), "x⟨U+0000⟩y⟨U+007F⟩z⟨U+0085⟩");
    assert_eq!(escape_hidden("line one\n\tline two"), "line one\n\tline two");
    assert_eq!(escape_hidden("a\u{2028}b"), "a⟨U+2028⟩b");
}

#[test]
fn ordinary_text_of_any_script_and_emoji_is_unchanged() {
    for text in [
        "git commit -m 'fix: naïve café'",
        "echo Grüße aus Köln; ls ~/Документы",
        "printf '日本語のテキスト' | wc -c",
        "echo مرحبا بالعالم",
        "echo שלום",
        "echo 😀 🚀 🎉",
        "",
        "cargo test -- --nocapture\n\tnext line",
    ] {
        assert_eq!(escape_hidden(text), text);
    }
}

#[test]
fn escaping_twice_changes_nothing_more() {
    let nasty = "echo \u{202E}mr\u{200B} -rf\u{E0072} \u{1b}[0m ok\u{FEFF}";
    let once = escape_hidden(nasty);
    assert_eq!(escape_hidden(&once), once);
    assert!(!once.chars().any(needs_escape), "{once}");
}

#[test]
fn approval_arguments_are_whole_and_escaped() {
    let long = format!("{}; rm -rf important", "echo a ".repeat(600));
    let shown = approval_arguments(&json!({"command": long}));
    assert!(shown.contains("; rm -rf important"), "nothing is cut off");
    assert!(shown.len() > 4_000);
    let shown = approval_arguments(&json!({"command": "echo \u{202E}fr- mr"}));
    assert_eq!(shown, "{\n  \"command\": \"echo ⟨U+202E⟩fr- mr\"\n}");
}

/// Reads every `⟨U+XXXX⟩` back as its character.
fn unescape(shown: &str) -> String {
    let mut out = String::new();
    let mut rest = shown;
    while let Some(start) = rest.find("⟨U+") {
        out.push_str(&rest[..start]);
        let after = &rest[start + "⟨U+".len()..];
        let end = after.find('⟩').unwrap();
        out.push(char::from_u32(u32::from_str_radix(&after[..end], 16).unwrap()).unwrap());
        rest = &after[end + '⟩'.len_utf8()..];
    }
    out.push_str(rest);
    out
}

proptest::proptest! {
    #[test]
    fn escaping_is_stable_hides_nothing_and_loses_nothing(
        text in "[^⟨]*|[\\u{0}-\\u{40}\\u{AD}\\u{200B}-\\u{206F}\\u{FE00}-\\u{FEFF}\\u{E0000}-\\u{E007F}a-zé😀]*"
    ) {
        let once = escape_hidden(&text);
        proptest::prop_assert_eq!(escape_hidden(&once), once.clone());
        proptest::prop_assert!(!once.chars().any(needs_escape));
        proptest::prop_assert_eq!(unescape(&once), text);
    }
}

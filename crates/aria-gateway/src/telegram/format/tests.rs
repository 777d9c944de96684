use pretty_assertions::assert_eq;

use super::*;

#[test]
fn html_escapes_what_telegram_needs_and_keeps_the_rest() {
    assert_eq!(escape("a < b && c > d \"q\""), "a &lt; b &amp;&amp; c &gt; d \"q\"");
    assert_eq!(
        to_html("Use **care** with `x<y` & <tags>"),
        "Use <b>care</b> with <code>x&lt;y</code> &amp; &lt;tags&gt;"
    );
    assert_eq!(to_html("a * b ** c ` d"), "a * b ** c ` d");
    assert_eq!(
        to_html("Run:\n```sh\nls <dir> && echo **no**\n```\ndone"),
        "Run:\n<pre><code class=\"language-sh\">ls &lt;dir&gt; &amp;&amp; echo **no**</code></pre>\ndone"
    );
    assert_eq!(to_html("```\nunclosed <"), "<pre><code>unclosed &lt;</code></pre>");
    assert_eq!(to_html("```bad lang\nx\n```"), "<pre><code>x</code></pre>");
}

#[test]
fn short_text_is_one_part() {
    assert_eq!(split("hello", MESSAGE_LIMIT), ["hello"]);
    assert_eq!(split("", MESSAGE_LIMIT), [""]);
}

#[test]
fn long_text_splits_on_paragraphs_within_the_limit() {
    let para = "word ".repeat(150).trim_end().to_owned(); // 749 chars
    let text = vec![para.clone(); 12].join("\n\n");
    let parts = split(&text, MESSAGE_LIMIT);
    assert!(parts.len() >= 2);
    for p in &parts {
        assert!(p.encode_utf16().count() <= MESSAGE_LIMIT, "{}", p.len());
        assert!(p.starts_with("word") && p.ends_with("word"), "cut mid-paragraph: {p:?}");
    }
    assert_eq!(parts.join("\n\n"), text, "nothing lost");
}

#[test]
fn a_code_block_cut_in_two_stays_valid_in_each_part() {
    let code: String = (0..400).map(|i| format!("line {i} <x>\n")).collect();
    let text = format!("Here:\n```rust\n{code}```\nEnd.");
    let parts = split(&text, MESSAGE_LIMIT);
    assert!(parts.len() >= 2, "{}", parts.len());
    for p in &parts {
        assert!(p.encode_utf16().count() <= MESSAGE_LIMIT);
        let html = to_html(p);
        assert_eq!(html.matches("<pre>").count(), html.matches("</pre>").count(), "{html}");
        aria_testkit::telegram_mock::parse_html(&html).expect("valid markup");
    }
    assert!(parts[1].starts_with("```rust\n"), "{}", &parts[1][..20]);
    let lines: usize = parts.iter().map(|p| p.matches("<x>").count()).sum();
    assert_eq!(lines, 400, "every line is somewhere");
}

#[test]
fn text_without_any_break_is_cut_on_a_character_boundary() {
    let text = "é".repeat(5000) + &"😀".repeat(3000);
    let parts = split(&text, MESSAGE_LIMIT);
    for p in &parts {
        assert!(p.encode_utf16().count() <= MESSAGE_LIMIT);
    }
    assert_eq!(parts.concat(), text);
}

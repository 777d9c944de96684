use std::borrow::Cow;

use aria_api::{NoRedact, ProviderError, Role};
use aria_testkit::scripted::{End, ScriptedProvider, Turn};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn pirate() -> Persona {
    Persona {
        name: "Captain".into(),
        style_prompt: "Talk like a cheerful pirate.".into(),
        banned_topics: vec!["politics".into(), "crypto coins".into()],
    }
}

const ANSWER: &str = "The build failed in `src/main.rs` at line 42. Run `cargo test -p aria-core` \
                      again after fixing it; see https://doc.rust-lang.org/book/ for details.";

fn refused(original: &str, rewritten: &str) -> String {
    match check_rewrite(original, rewritten, &pirate()) {
        Ok(()) => panic!("accepted: {rewritten}"),
        Err(reason) => reason,
    }
}

#[test]
fn a_faithful_rewrite_is_accepted() {
    let rewrite = "Arr, matey! The build sank in `src/main.rs` at line 42. Give \
                   `cargo test -p aria-core` another go once it be patched; the map lies at \
                   https://doc.rust-lang.org/book/ ⚓";
    assert_eq!(check_rewrite(ANSWER, rewrite, &pirate()), Ok(()));
}

#[test]
fn a_path_moved_out_of_backticks_is_still_the_same_fact() {
    let original = "I created `notes.txt` with 3 lines.";
    assert_eq!(
        check_rewrite(original, "Ahoy, I created notes.txt, 3 lines long!", &pirate()),
        Ok(())
    );
}

#[test]
fn a_dropped_path_number_or_code_span_is_refused() {
    let no_path = "The build failed at line 42. Run `cargo test -p aria-core` again; see \
                   https://doc.rust-lang.org/book/.";
    assert!(refused(ANSWER, no_path).contains("src/main.rs"), "{}", refused(ANSWER, no_path));
    let no_number = ANSWER.replace("at line 42", "somewhere");
    assert_eq!(refused(ANSWER, &no_number), "the rewrite dropped \"42\"");
    let no_code = ANSWER.replace("`cargo test -p aria-core`", "the tests");
    assert_eq!(refused(ANSWER, &no_code), "the rewrite dropped \"cargo test -p aria-core\"");
    let original = "Run this:\n```sh\nrm -rf target\n```\nthen retry.";
    assert_eq!(
        refused(original, "Run this, matey:\n```sh\nrm -r target\n```"),
        "the rewrite dropped \"rm -rf target\""
    );
}

#[test]
fn an_added_number_url_or_path_is_refused() {
    let more = format!("{ANSWER} It took 3.5 seconds.");
    assert_eq!(
        refused(ANSWER, &more),
        "the rewrite added \"3.5\", which the answer does not contain"
    );
    let url = format!("{ANSWER} Also https://evil.example/x");
    assert!(refused(ANSWER, &url).contains("https://evil.example/x"));
    let path = format!("{ANSWER} Check /etc/passwd too.");
    assert!(refused(ANSWER, &path).contains("/etc/passwd"));
}

#[test]
fn a_changed_number_is_refused_both_ways() {
    let reason = refused("Coverage is 87.5% now.", "Coverage be 85% now, arr!");
    assert_eq!(reason, "the rewrite dropped \"87.5%\"");
}

#[test]
fn list_numbering_is_layout_not_a_fact() {
    let original = "Steps:\n1. open the file\n2) save it";
    assert_eq!(check_rewrite(original, "Steps: open the file, then save it.", &pirate()), Ok(()));
}

#[test]
fn an_added_claim_of_action_is_refused() {
    let original = "The file `old.log` is no longer needed.";
    let reason = refused(original, "Arr, `old.log` be useless, so I deleted the file!");
    assert_eq!(reason, "the rewrite claims \"i deleted\", which the answer does not say");
    let reason = refused(original, "Arr, `old.log` has been removed.");
    assert!(reason.contains("been removed"), "{reason}");
    assert!(refused(original, "`old.log`: done!").contains("\"done\""));
    // A claim the answer makes may be reworded; a negated one may not become a claim.
    assert_eq!(
        check_rewrite("Deleted `old.log`.", "Arr, I've deleted `old.log`!", &pirate()),
        Ok(())
    );
    let reason = refused("I did not delete `old.log`.", "Arr, I deleted `old.log`.");
    assert!(reason.contains("i deleted"), "{reason}");
}

#[test]
fn a_banned_topic_is_refused_unless_the_answer_raised_it() {
    let reason = refused("The backup is ready.", "Arr, the backup be ready, unlike POLITICS.");
    assert_eq!(reason, "the rewrite brings up the banned topic \"politics\"");
    let original = "Your question about crypto coins: no data.";
    assert_eq!(
        check_rewrite(original, "Arr, about crypto coins: no data, matey.", &pirate()),
        Ok(())
    );
    // Whole words only: "apolitical" is not "politics".
    assert_eq!(check_rewrite("Fine.", "Fine and apolitical.", &pirate()), Ok(()));
}

#[test]
fn the_extractor_copes_with_unicode_and_long_input() {
    let original = "Ünïcödé “zitat” in `café.txt` — 😀 ".repeat(2_000);
    assert_eq!(check_rewrite(&original, &original, &pirate()), Ok(()));
    let unbalanced = "a \" b ` c ``` d \u{201c}".repeat(5_000);
    assert_eq!(check_rewrite(&unbalanced, &unbalanced, &pirate()), Ok(()));
    assert!(check_rewrite("“zitat” here", "zitat here", &pirate()).is_ok());
    assert!(check_rewrite("“zitat” here", "here", &pirate()).is_err());
}

async fn run(provider: &ScriptedProvider, answer: &str) -> Restyled {
    restyle(provider, "style-model", &pirate(), answer, &NoRedact, Duration::from_secs(5)).await
}

#[tokio::test]
async fn a_good_rewrite_replaces_the_answer() {
    let rewrite = "Arr! `notes.txt` holds 3 lines.";
    let provider = ScriptedProvider::new(vec![Turn::text(rewrite)], End::Fail);
    let restyled = run(&provider, "`notes.txt` has 3 lines.").await;
    assert_eq!(restyled, Restyled::Rewritten(rewrite.into()));
}

#[tokio::test]
async fn a_persona_that_asks_for_a_tool_changes_nothing_and_saw_only_the_answer() {
    let provider = ScriptedProvider::new(
        vec![Turn::tool("file_write", json!({"path": "x", "content": "pwned"}))],
        End::Fail,
    );
    let restyled = run(&provider, ANSWER).await;
    assert_eq!(
        restyled,
        Restyled::Kept { reason: "the persona asked for a tool; a persona has none".into() }
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert!(request.tools.is_empty());
    assert_eq!(request.model, "style-model");
    let roles: Vec<Role> = request.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, vec![Role::System, Role::User]);
    assert_eq!(request.messages[1].content, ANSWER);
    assert!(request.messages.iter().all(|m| m.tool_calls.is_empty() && m.tool_call_id.is_none()));
    let system = &request.messages[0].content;
    assert!(system.contains("Talk like a cheerful pirate."), "{system}");
    assert!(system.contains("politics, crypto coins"), "{system}");
}

#[tokio::test]
async fn provider_failure_timeout_or_empty_text_keeps_the_answer() {
    let failing = ScriptedProvider::new(
        vec![Turn::Fail(ProviderError::Http { status: 500, body: "boom".into() })],
        End::Fail,
    );
    let Restyled::Kept { reason } = run(&failing, ANSWER).await else { panic!("rewritten") };
    assert!(reason.starts_with("the persona model failed"), "{reason}");

    let hanging = ScriptedProvider::new(vec![Turn::Hang], End::Fail);
    let kept =
        restyle(&hanging, "m", &pirate(), ANSWER, &NoRedact, Duration::from_millis(20)).await;
    assert_eq!(
        kept,
        Restyled::Kept { reason: "the persona model did not answer within 1 s".into() }
    );

    let empty = ScriptedProvider::new(vec![Turn::text("  ")], End::Fail);
    let kept = run(&empty, ANSWER).await;
    assert_eq!(kept, Restyled::Kept { reason: "the persona model returned no text".into() });
}

#[tokio::test]
async fn a_rewrite_that_fails_the_check_keeps_the_answer() {
    let provider = ScriptedProvider::new(vec![Turn::text("Arr, I deleted everything!")], End::Fail);
    let Restyled::Kept { reason } = run(&provider, ANSWER).await else { panic!("rewritten") };
    assert!(reason.starts_with("the rewrite dropped"), "{reason}");
}

#[derive(Debug)]
struct HideKey;
impl Redact for HideKey {
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        Cow::Owned(text.replace("sk-SECRET", "[REDACTED]"))
    }
}

#[tokio::test]
async fn the_persona_sees_the_answer_through_the_redactor() {
    let provider =
        ScriptedProvider::new(vec![Turn::text("Arr, the key be [REDACTED].")], End::Fail);
    let restyled = restyle(
        &provider,
        "m",
        &pirate(),
        "The key is sk-SECRET.",
        &HideKey,
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(restyled, Restyled::Rewritten("Arr, the key be [REDACTED].".into()));
    assert_eq!(provider.requests()[0].messages[1].content, "The key is [REDACTED].");
}

#[test]
fn a_persona_deserializes_from_its_file_fields() {
    let persona: Persona = serde_json::from_value(json!({
        "name": "Captain", "style_prompt": "pirate"
    }))
    .unwrap();
    assert!(persona.banned_topics.is_empty());
    assert!(
        serde_json::from_value::<Persona>(json!({"name": "a", "style_prompt": "b", "tools": []}))
            .is_err()
    );
}

use aria_api::ToolCall;
use pretty_assertions::assert_eq;

use super::*;
use crate::memory::MemoryKind;

fn hit(id: &str, content: &str, confidence: f64) -> MemoryHit {
    MemoryHit {
        id: id.into(),
        content: content.into(),
        kind: MemoryKind::Preference,
        categories: vec![],
        confidence,
        score: 1.0,
        similarity: None,
        text_match: true,
        private: false,
    }
}

fn words(n: usize) -> String {
    "word ".repeat(n) // 5 ASCII characters: 1.25 tokens each in the estimate
}

fn parts<'a>(
    history: &'a [Message],
    profile: &'a [MemoryHit],
    memories: &'a [MemoryHit],
) -> Parts<'a> {
    Parts {
        model: "m",
        system_prompt: "You are ARIA.",
        profile,
        memories,
        summary: None,
        history,
        tools: &[],
    }
}

fn call(id: &str) -> ToolCall {
    ToolCall { id: id.into(), name: "file_read".into(), arguments: "{}".into() }
}

#[test]
fn the_order_is_system_profile_memories_summary_then_history() {
    let fence = UntrustedFence::random();
    let history = [Message::user("What's my favorite color?")];
    let profile = [hit("p1", "The user is called Ada.", 0.9), hit("p2", "Maybe likes jazz.", 0.5)];
    let memories = [hit("m1", "The user's favorite color is blue.", 0.8)];
    let mut p = parts(&history, &profile, &memories);
    p.summary = Some("Earlier they asked about tea.");
    let out = assemble(&p, Budget::new(Some(10_000), None), TokenCounter::default(), &fence);
    let roles: Vec<Role> = out.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::System, Role::System, Role::System, Role::System, Role::User]);
    assert_eq!(out.messages[0].content, "You are ARIA.");
    assert!(out.messages[1].content.contains("The user is called Ada."));
    assert!(!out.messages[1].content.contains("jazz"), "confidence 0.5 is not above 0.5");
    assert!(out.messages[2].content.contains("favorite color is blue"));
    assert!(out.messages[2].content.contains(&format!("<<tool_output id={}>>", fence.id())));
    assert!(out.messages[3].content.ends_with("Earlier they asked about tea."));
    assert_eq!((out.profile_used, out.memories_used, out.dropped), (1, 1, 0));
}

#[test]
fn a_memory_already_in_the_profile_is_not_repeated() {
    let history = [Message::user("hi")];
    let profile = [hit("x", "The user is called Ada.", 0.9)];
    let memories = [hit("x", "The user is called Ada.", 0.9)];
    let out = assemble(
        &parts(&history, &profile, &memories),
        Budget::new(None, None),
        TokenCounter::default(),
        &UntrustedFence::random(),
    );
    assert_eq!(out.memories_used, 0);
    assert_eq!(out.messages.len(), 3);
}

#[test]
fn memories_stop_at_two_thousand_tokens_best_first() {
    let memories: Vec<MemoryHit> = (0..100)
        .map(|i| hit(&format!("m{i}"), &format!("memory {i} {}", words(60)), 0.9))
        .collect();
    let history = [Message::user("q")];
    let out = assemble(
        &parts(&history, &[], &memories),
        Budget::new(None, None),
        TokenCounter::default(),
        &UntrustedFence::random(),
    );
    assert!(out.memories_used > 10 && out.memories_used < 100, "{}", out.memories_used);
    let block = &out.messages[1].content;
    assert!(block.contains("memory 0 ") && !block.contains("memory 99 "));
    let lines_tokens: u64 = block
        .lines()
        .filter(|l| l.starts_with("- ["))
        .map(|l| estimate_message("m", &Message::system(l)))
        .sum();
    assert!(lines_tokens <= MEMORY_TOKENS, "{lines_tokens}");
}

#[test]
fn an_unknown_window_cuts_nothing_and_never_asks_for_compaction() {
    let history: Vec<Message> = (0..50).map(|_| Message::user(words(400))).collect();
    let out = assemble(
        &parts(&history, &[], &[]),
        Budget::new(None, None),
        TokenCounter::default(),
        &UntrustedFence::random(),
    );
    assert_eq!(out.dropped, 0);
    assert_eq!(out.messages.len(), 51);
    assert!(!out.needs_compaction());
}

#[test]
fn compaction_is_asked_for_above_eighty_percent_of_the_history_budget() {
    // Budget 1000 - 100 reserve - system (4 + 4 = 8) = 892 for history; each message is 129.
    let budget = Budget::new(Some(1_000), Some(100));
    let make = |n: usize| -> Vec<Message> { (0..n).map(|_| Message::user(words(100))).collect() };
    let small = make(5); // 645 tokens: 72 %
    let large = make(6); // 774 tokens: 87 %
    let fence = UntrustedFence::random();
    let a = assemble(&parts(&small, &[], &[]), budget, TokenCounter::default(), &fence);
    let b = assemble(&parts(&large, &[], &[]), budget, TokenCounter::default(), &fence);
    assert_eq!(a.history_budget, Some(892));
    assert!(!a.needs_compaction(), "{a:?}");
    assert!(b.needs_compaction());
    assert_eq!(b.dropped, 0, "it still fits, so nothing is dropped");
}

#[test]
fn truncation_drops_whole_units_and_keeps_calls_with_their_results() {
    let history = vec![
        Message::user(words(100)),
        Message::assistant("", vec![call("a"), call("b")]),
        Message::tool_result("a", words(100)),
        Message::tool_result("b", words(100)),
        Message::assistant(words(40), vec![]),
        Message::user("and now?"),
    ];
    let out = assemble(
        &parts(&history, &[], &[]),
        Budget::new(Some(300), Some(100)),
        TokenCounter::default(),
        &UntrustedFence::random(),
    );
    assert_eq!(out.dropped, 4, "the user message, then the call with both its results");
    let kept: Vec<Role> = out.messages.iter().map(|m| m.role).collect();
    assert_eq!(kept, [Role::System, Role::Assistant, Role::User]);
    assert!(out.input_tokens + 100 <= 300);
}

#[test]
fn truncation_never_cuts_into_the_current_turn() {
    let history = vec![
        Message::user(words(10)),
        Message::user(words(400)),
        Message::assistant("", vec![call("a")]),
        Message::tool_result("a", words(400)),
    ];
    let out = assemble(
        &parts(&history, &[], &[]),
        Budget::new(Some(300), Some(100)),
        TokenCounter::default(),
        &UntrustedFence::random(),
    );
    assert_eq!(out.dropped, 1);
    assert_eq!(out.messages[1].role, Role::User);
    assert_eq!(out.messages.last().map(|m| m.role), Some(Role::Tool));
}

#[test]
fn the_compaction_cut_covers_seventy_percent_at_a_unit_boundary() {
    let history = vec![
        Message::user(words(100)),
        Message::assistant("", vec![call("a")]),
        Message::tool_result("a", words(100)),
        Message::assistant(words(100), vec![]),
        Message::user(words(100)),
        Message::assistant(words(100), vec![]),
        Message::user("now"),
    ];
    let cut = compaction_cut(&history, "m", TokenCounter::default()).unwrap();
    assert_eq!(cut, 5, "not 2 (inside the call's unit) and not past the current turn");
    let only_turn = [Message::user("first"), Message::assistant("", vec![call("a")])];
    assert_eq!(compaction_cut(&only_turn, "m", TokenCounter::default()), None);
}

#[test]
fn the_reserve_matches_the_router_planner() {
    assert_eq!(Budget::new(Some(8_000), None).reserve, 2_000);
    assert_eq!(Budget::new(Some(200_000), None).reserve, 4_096);
    assert_eq!(Budget::new(Some(8_000), Some(10)).reserve, 10);
    assert_eq!(Budget::new(None, None).reserve, 0);
}

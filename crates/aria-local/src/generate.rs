//! The decoding loop: sampling, streaming text, and switching to constrained decoding when the
//! model opens a tool call: with `<tool_call>`, or, at the very start of a reply, with a
//! ```` ```json ```` fence or a bare `{"name"` (small Qwen2.5 models write their calls that way
//! whatever the template shows; the call is then written under the grammar like any other).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use aria_api::{ChatEvent, FinishReason, ToolCall, Usage};

use crate::engine::ChatModel;
use crate::error::LocalError;
use crate::grammar::{Matcher, ToolGrammar};
use crate::prompt::{Prompt, TOOL_CALL_OPEN};

/// Sampling settings for one call.
#[derive(Debug, Clone, PartialEq)]
pub struct GenParams {
    pub max_tokens: usize,
    /// 0 = greedy.
    pub temperature: f32,
    pub top_p: f32,
    /// 1.0 = off. Applied to free text only: inside a tool call the grammar keeps the shape.
    pub repeat_penalty: f32,
    pub repeat_last_n: usize,
    pub seed: u64,
}

/// The tools on offer for one call.
#[derive(Debug, Clone)]
pub struct ToolsOffer {
    pub grammar: Arc<ToolGrammar>,
    pub names: Vec<String>,
    /// The prompt already opened a tool call: decode one right away.
    pub forced: bool,
}

/// Counts what happened, for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GenStats {
    pub prompt_tokens: usize,
    pub reused_tokens: usize,
    pub generated_tokens: usize,
    pub prompt_secs: f64,
    pub generation_secs: f64,
}

/// Candidates examined per step when picking among allowed tokens.
const CONSTRAINED_TOP: usize = 256;
/// Tokens sampled from in constrained mode when temperature > 0.
const CONSTRAINED_K: usize = 40;
/// A tool call whose last tokens are one run of tokens repeated back to back at least
/// [`LOOP_REPEATS`] times and at least [`LOOP_SPAN`] tokens in all is looping (a search
/// pattern of `parse_date.*?function.*?` written until the token budget ran out): the token
/// that would start the next copy is not allowed. Text asked for as repeated ("ok" on ten
/// lines) stays well under the span.
const LOOP_REPEATS: usize = 4;
const LOOP_SPAN: usize = 32;
/// Longest run looked for.
const LOOP_MAX_PERIOD: usize = 64;
const TOP_K: usize = 64;

/// Generates an answer for `prompt`, calling `emit` with each event. Stops early, without an
/// error, when `emit` returns false or `cancelled` returns true (the receiver went away).
pub fn generate(
    model: &mut ChatModel,
    prompt: &Prompt,
    params: &GenParams,
    tools: Option<&ToolsOffer>,
    emit: &mut dyn FnMut(ChatEvent) -> bool,
    cancelled: &dyn Fn() -> bool,
) -> Result<GenStats, LocalError> {
    let mut stats = GenStats { prompt_tokens: prompt.tokens.len(), ..GenStats::default() };
    let t0 = std::time::Instant::now();
    let mut logits = model.prepare(&prompt.tokens, prompt.stable_prefix)?;
    stats.reused_tokens = model.last_reused;
    stats.prompt_secs = t0.elapsed().as_secs_f64();
    let t1 = std::time::Instant::now();

    let budget = params.max_tokens.min(model.context().saturating_sub(prompt.tokens.len() + 1));
    let mut rng = Rng::new(params.seed);
    let mut recent: Vec<u32> =
        prompt.tokens.iter().rev().take(params.repeat_last_n).rev().copied().collect();
    let mut text = TextStream::default();
    let mut call: Option<(Matcher, String)> =
        tools.filter(|t| t.forced).map(|t| (Matcher::new(t.grammar.clone()), String::new()));
    let mut generated = 0usize;
    // The tokens of the tool call being written (for the loop check).
    let mut call_tokens: Vec<u32> = Vec::new();

    let reason = loop {
        if cancelled() {
            stats.generated_tokens = generated;
            return Ok(stats);
        }
        if let Some((matcher, fed)) = &mut call {
            let completion = matcher.completion();
            // Leave room to close the call: its shortest completion, in tokens.
            let closing = model.vocab.encode_text(&completion)?.len();
            let token = if generated + closing >= budget {
                None
            } else {
                let banned = loop_continuation(&call_tokens);
                pick_constrained(
                    &logits,
                    matcher,
                    &model.texts,
                    banned,
                    params.temperature,
                    &mut rng,
                )
            };
            let Some(token) = token else {
                for c in completion.chars() {
                    matcher.feed(c);
                }
                fed.push_str(&completion);
                break emit_call(tools, matcher, fed, emit);
            };
            let piece = model.texts[token as usize].as_deref().unwrap_or_default();
            for c in piece.chars() {
                matcher.feed(c);
            }
            fed.push_str(piece);
            call_tokens.push(token);
            generated += 1;
            if matcher.is_done() {
                break emit_call(tools, matcher, fed, emit);
            }
            logits = model.step(token)?;
            continue;
        }

        if generated >= budget {
            break FinishReason::Length;
        }
        apply_repeat_penalty(&mut logits, &recent, params.repeat_penalty);
        let token = sample(&logits, params.temperature, params.top_p, &mut rng);
        if model.vocab.stop.contains(&token)
            || model.vocab.special.get(token as usize) == Some(&true)
        {
            break FinishReason::Stop;
        }
        generated += 1;
        recent.push(token);
        if recent.len() > params.repeat_last_n {
            recent.remove(0);
        }
        text.push(model.vocab.pieces.get(token as usize).map_or(&[][..], Vec::as_slice));
        if let Some(offer) = tools
            && let Some(rest) = text.take_tool_call_open().or_else(|| text.take_reply_call_open())
        {
            let mut matcher = Matcher::new(offer.grammar.clone());
            let mut fed = String::new();
            for c in rest.chars() {
                if !matcher.feed(c) {
                    matcher = Matcher::new(offer.grammar.clone());
                    fed.clear();
                    break;
                }
                fed.push(c);
            }
            if let Some(before) = text.drain_ready(false)
                && !before.trim().is_empty()
                && !emit(ChatEvent::TextDelta { text: before.trim_end().to_owned() })
            {
                stats.generated_tokens = generated;
                return Ok(stats);
            }
            call = Some((matcher, fed));
        } else if let Some(delta) = text.drain_ready(tools.is_some())
            && !emit(ChatEvent::TextDelta { text: delta })
        {
            stats.generated_tokens = generated;
            return Ok(stats);
        }
        logits = model.step(token)?;
    };
    if call.is_none()
        && let Some(rest) = text.drain_ready(false)
        && !emit(ChatEvent::TextDelta { text: rest })
    {
        stats.generated_tokens = generated;
        return Ok(stats);
    }
    stats.generated_tokens = generated;
    stats.generation_secs = t1.elapsed().as_secs_f64();
    let usage = Usage { input_tokens: prompt.tokens.len() as u64, output_tokens: generated as u64 };
    if emit(ChatEvent::Usage { usage }) {
        emit(ChatEvent::Finished { reason });
    }
    Ok(stats)
}

fn emit_call(
    tools: Option<&ToolsOffer>,
    matcher: &Matcher,
    fed: &str,
    emit: &mut dyn FnMut(ChatEvent) -> bool,
) -> FinishReason {
    let name = matcher
        .tool()
        .and_then(|i| tools.and_then(|t| t.names.get(i)))
        .cloned()
        .unwrap_or_default();
    let (start, end) = matcher.args_chars();
    let arguments: String = fed.chars().skip(start).take(end.saturating_sub(start)).collect();
    let call = ToolCall { id: next_call_id(), name, arguments };
    emit(ChatEvent::ToolCall { call });
    FinishReason::ToolCalls
}

fn next_call_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    format!("call_{:x}{:04x}", t & 0xffff_ffff, n & 0xffff)
}

/// The token that would start another copy of the run of tokens `tokens` ends with, when
/// they end with that run repeated back to back [`LOOP_REPEATS`] times or more and
/// [`LOOP_SPAN`] tokens or more in all (the shortest such run).
fn loop_continuation(tokens: &[u32]) -> Option<u32> {
    let n = tokens.len();
    (1..=LOOP_MAX_PERIOD.min(n / LOOP_REPEATS)).find_map(|period| {
        let copies = LOOP_REPEATS.max(LOOP_SPAN.div_ceil(period));
        let span = copies * period;
        if span > n {
            return None;
        }
        let tail = &tokens[n - span..];
        let run = &tail[span - period..];
        tail.chunks_exact(period).all(|c| c == run).then(|| run[0])
    })
}

/// Picks the model's favourite token among those the grammar allows, `banned` excepted (or
/// samples among the best allowed ones when temperature > 0). `None` only if no token at all
/// is allowed.
fn pick_constrained(
    logits: &[f32],
    matcher: &Matcher,
    texts: &[Option<Box<str>>],
    banned: Option<u32>,
    temperature: f32,
    rng: &mut Rng,
) -> Option<u32> {
    let allowed = |t: u32| {
        Some(t) != banned
            && texts.get(t as usize).and_then(|s| s.as_deref()).is_some_and(|s| matcher.accepts(s))
    };
    let order = top_indices(logits, CONSTRAINED_TOP);
    let want = if temperature <= 0.0 { 1 } else { CONSTRAINED_K };
    let mut picked: Vec<u32> = Vec::new();
    for &t in &order {
        if allowed(t) {
            picked.push(t);
            if picked.len() >= want {
                break;
            }
        }
    }
    if picked.is_empty() {
        // The model's favourites are all illegal here: take the best legal token anywhere.
        picked.extend(
            (0..logits.len() as u32)
                .filter(|t| allowed(*t))
                .max_by(|a, b| logits[*a as usize].total_cmp(&logits[*b as usize])),
        );
    }
    if temperature <= 0.0 || picked.len() < 2 {
        return picked.first().copied();
    }
    let weights: Vec<f32> = picked.iter().map(|t| logits[*t as usize]).collect();
    Some(picked[sample_softmax(&weights, temperature, 1.0, rng)])
}

fn top_indices(logits: &[f32], k: usize) -> Vec<u32> {
    let mut idx: Vec<u32> = (0..logits.len() as u32).collect();
    let k = k.min(idx.len());
    if k == 0 {
        return idx;
    }
    let by_logit = |a: &u32, b: &u32| logits[*b as usize].total_cmp(&logits[*a as usize]);
    idx.select_nth_unstable_by(k - 1, by_logit);
    idx.truncate(k);
    idx.sort_by(by_logit);
    idx
}

fn apply_repeat_penalty(logits: &mut [f32], recent: &[u32], penalty: f32) {
    if penalty == 1.0 {
        return;
    }
    let mut seen = std::collections::HashSet::new();
    for &t in recent {
        if seen.insert(t)
            && let Some(l) = logits.get_mut(t as usize)
        {
            *l = if *l >= 0.0 { *l / penalty } else { *l * penalty };
        }
    }
}

fn sample(logits: &[f32], temperature: f32, top_p: f32, rng: &mut Rng) -> u32 {
    let order = top_indices(logits, if temperature <= 0.0 { 1 } else { TOP_K });
    if temperature <= 0.0 || order.len() < 2 {
        return order.first().copied().unwrap_or(0);
    }
    let weights: Vec<f32> = order.iter().map(|t| logits[*t as usize]).collect();
    order[sample_softmax(&weights, temperature, top_p, rng)]
}

/// Samples an index from `weights` (sorted best first) after temperature and nucleus cut.
fn sample_softmax(weights: &[f32], temperature: f32, top_p: f32, rng: &mut Rng) -> usize {
    let max = weights.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let probs: Vec<f32> = weights.iter().map(|w| ((w - max) / temperature).exp()).collect();
    let total: f32 = probs.iter().sum();
    let mut keep = probs.len();
    let mut acc = 0.0;
    for (i, p) in probs.iter().enumerate() {
        acc += p / total;
        if acc >= top_p {
            keep = i + 1;
            break;
        }
    }
    let kept: f32 = probs[..keep].iter().sum();
    let mut r = rng.next_f32() * kept;
    for (i, p) in probs[..keep].iter().enumerate() {
        if r < *p {
            return i;
        }
        r -= p;
    }
    keep - 1
}

/// A fence that opens a tool call when a reply starts with it.
const FENCE_OPEN: &str = "```json";
/// What a reply that is a bare call object starts with, whitespace removed.
const BARE_OPEN: &str = "{\"name\"";

/// How the start of a reply reads, when tools are on offer.
#[derive(Debug, PartialEq, Eq)]
enum ReplyStart {
    /// Could still become a fenced or bare call.
    Undecided,
    /// Text.
    Text,
    /// A call; what the matcher gets (after the fence, or the object from `{"name"` on).
    Call(String),
}

fn reply_start(reply: &str) -> ReplyStart {
    let t = reply.trim_start();
    if t.is_empty() || FENCE_OPEN.starts_with(t) {
        return ReplyStart::Undecided;
    }
    if let Some(after) = t.strip_prefix(FENCE_OPEN) {
        let after = after.trim_start_matches([' ', '\t', '\r']);
        return match after.strip_prefix('\n') {
            Some(rest) => ReplyStart::Call(rest.to_owned()),
            None if after.is_empty() => ReplyStart::Undecided,
            None => ReplyStart::Text,
        };
    }
    if t.starts_with('{') {
        let squeezed: String = t.chars().filter(|c| !c.is_whitespace()).collect();
        if BARE_OPEN.starts_with(&squeezed) {
            return ReplyStart::Undecided;
        }
        if squeezed.starts_with(BARE_OPEN)
            && let Some(at) = t.find("\"name\"")
        {
            return ReplyStart::Call(format!("{BARE_OPEN}{}", &t[at + "\"name\"".len()..]));
        }
    }
    ReplyStart::Text
}

/// Generated bytes waiting to become text deltas.
#[derive(Debug, Default)]
struct TextStream {
    bytes: Vec<u8>,
    sent: usize,
}

impl TextStream {
    fn push(&mut self, piece: &[u8]) {
        self.bytes.extend_from_slice(piece);
    }

    /// The not-yet-sent text that is complete UTF-8. With `hold_tool_prefix`, a tail that could
    /// be the start of `<tool_call>` is held back until it is known not to be.
    fn drain_ready(&mut self, hold_tool_prefix: bool) -> Option<String> {
        let pending = &self.bytes[self.sent..];
        let valid = match std::str::from_utf8(pending) {
            Ok(s) => s,
            Err(e) => std::str::from_utf8(&pending[..e.valid_up_to()]).unwrap_or_default(),
        };
        let mut len = valid.len();
        if hold_tool_prefix && self.sent == 0 && reply_start(valid) == ReplyStart::Undecided {
            return None;
        }
        if hold_tool_prefix {
            for k in (1..TOOL_CALL_OPEN.len()).rev() {
                if valid.ends_with(&TOOL_CALL_OPEN[..k]) {
                    len -= k;
                    break;
                }
            }
        }
        if len == 0 {
            return None;
        }
        let out = valid[..len].to_owned();
        self.sent += len;
        Some(out)
    }

    /// If nothing has been sent and the reply opens a call with a fence or a bare object, drops
    /// the reply so far and returns what the matcher should be fed.
    fn take_reply_call_open(&mut self) -> Option<String> {
        if self.sent != 0 {
            return None;
        }
        let reply = std::str::from_utf8(&self.bytes).ok()?;
        let ReplyStart::Call(rest) = reply_start(reply) else { return None };
        self.bytes.clear();
        Some(rest)
    }

    /// If the unsent text contains `<tool_call>`, marks everything up to and including it as
    /// consumed (text before it stays ready to drain) and returns what came after it.
    fn take_tool_call_open(&mut self) -> Option<String> {
        let open = TOOL_CALL_OPEN.as_bytes();
        let pending = &self.bytes[self.sent..];
        let pos = pending.windows(open.len()).position(|w| w == open)?;
        let after = String::from_utf8_lossy(&pending[pos + open.len()..]).into_owned();
        self.bytes.truncate(self.sent + pos);
        Some(after)
    }
}

/// xorshift64*: small, seedable, good enough for sampling.
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next_f32(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (x >> 40) as f32 / (1u64 << 24) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_that_loops_may_not_start_another_copy() {
        // `parse_date.*?function.*?` as 8 tokens, 4 copies: 32 tokens, looping.
        let run = [10, 11, 12, 13, 14, 15, 16, 17];
        let mut tokens = vec![1, 2, 3];
        for _ in 0..3 {
            tokens.extend(run);
        }
        assert_eq!(loop_continuation(&tokens), None, "3 copies are not yet a loop");
        tokens.extend(run);
        assert_eq!(loop_continuation(&tokens), Some(10));
        // Had a fifth copy started anyway, the loop is the run shifted by one token.
        tokens.push(10);
        assert_eq!(loop_continuation(&tokens), Some(11));
        // A different token breaks it.
        tokens.push(99);
        assert_eq!(loop_continuation(&tokens), None);
        // One token repeated: 32 times is a loop, 31 not.
        let same = vec![7; 31];
        assert_eq!(loop_continuation(&same), None);
        assert_eq!(loop_continuation(&[same, vec![7]].concat()), Some(7));
        // Short text asked for as repeated ("ok\n" ten times, 2 tokens each) is left alone.
        let ok: Vec<u32> = [5, 6].repeat(10);
        assert_eq!(loop_continuation(&ok), None);
        assert_eq!(loop_continuation(&[]), None);
        // Four copies of a 2-token run only count once they span 32 tokens (16 copies).
        assert_eq!(loop_continuation(&[5, 6].repeat(16)), Some(5));
    }

    #[test]
    fn text_stream_holds_back_a_possible_tool_call_and_partial_utf8() {
        let mut s = TextStream::default();
        s.push(b"Hello <tool");
        assert_eq!(s.drain_ready(true).as_deref(), Some("Hello "));
        assert_eq!(s.drain_ready(true), None);
        s.push(b"_call>\n{\"a\"");
        assert_eq!(s.take_tool_call_open().as_deref(), Some("\n{\"a\""));
        assert_eq!(s.drain_ready(false), None);

        let mut s = TextStream::default();
        s.push(&"é".as_bytes()[..1]);
        assert_eq!(s.drain_ready(false), None);
        s.push(&"é".as_bytes()[1..]);
        assert_eq!(s.drain_ready(false).as_deref(), Some("é"));
        s.push(b"a <b");
        assert_eq!(s.drain_ready(false).as_deref(), Some("a <b"));
    }

    #[test]
    fn a_reply_opening_with_a_json_fence_or_a_bare_call_object_becomes_a_call() {
        for undecided in
            ["", "\n", "`", "``", "```", "```js", "```json", "```json ", "{", "{\n  \"na"]
        {
            assert_eq!(reply_start(undecided), ReplyStart::Undecided, "{undecided:?}");
        }
        assert_eq!(reply_start("```json\n"), ReplyStart::Call(String::new()));
        assert_eq!(reply_start("\n```json \n{"), ReplyStart::Call("{".into()));
        assert_eq!(reply_start("{\n  \"name\": \"f"), ReplyStart::Call("{\"name\": \"f".into()));
        for text in ["```python\n", "```\n", "```jsonx", "{\"a\": 1}", "Sure", "{ \"names\""] {
            assert_eq!(reply_start(text), ReplyStart::Text, "{text:?}");
        }

        let mut s = TextStream::default();
        s.push(b"```");
        assert_eq!(s.drain_ready(true), None);
        assert_eq!(s.take_reply_call_open(), None);
        s.push(b"json\n");
        assert_eq!(s.take_reply_call_open().as_deref(), Some(""));
        assert_eq!(s.drain_ready(false), None);
        // Without tools nothing is held back, and text already sent is never a call.
        let mut s = TextStream::default();
        s.push(b"```");
        assert_eq!(s.drain_ready(false).as_deref(), Some("```"));
        s.push(b"json\n{");
        assert_eq!(s.take_reply_call_open(), None);
    }

    #[test]
    fn greedy_sampling_takes_the_maximum_and_penalty_lowers_repeats() {
        let mut rng = Rng::new(1);
        let mut logits = vec![0.1, 2.0, 1.9, -1.0];
        assert_eq!(sample(&logits, 0.0, 1.0, &mut rng), 1);
        apply_repeat_penalty(&mut logits, &[1, 1, 3], 1.5);
        assert_eq!(sample(&logits, 0.0, 1.0, &mut rng), 2);
        assert!((logits[3] + 1.5).abs() < 1e-6);
    }

    #[test]
    fn temperature_sampling_stays_in_the_nucleus() {
        let mut rng = Rng::new(7);
        let logits = vec![5.0, 4.9, -20.0, -20.0];
        for _ in 0..200 {
            let t = sample(&logits, 1.0, 0.9, &mut rng);
            assert!(t == 0 || t == 1, "{t}");
        }
    }
}

//! [`SecretRedactor`]: the outbound secret filter and log scrubber (`aria_api::Redact`).
//!
//! Three passes; the first two are one compiled regex each:
//! 1. **Known values** (API keys ARIA was configured with) are replaced literally. They go first
//!    and on their own so that a pattern match starting earlier can never cut one in half and
//!    leave its tail in the text.
//! 2. **Patterns** for well-known token formats, as alternatives of two `regex::Regex`es: the
//!    token formats in one, the `.env`-style assignment rule in the other. Ordinary code and
//!    logs match the assignment rule often (`let token = get_token();`, `"prompt_tokens":12`)
//!    and the token formats almost never, so each regex keeps its next match cached while the
//!    other one's matches are judged, and captures are only computed for the match that comes
//!    first (ties go to the earlier rule, exactly like one alternation of all rules). The
//!    assignment rule only runs on lines that contain one of its keywords (`key`, `token`,
//!    `pass`, ...), found with one case-insensitive Aho-Corasick scan; so do the other
//!    `name … value` forms that fit on one line (XML elements, command-line flags), in a third
//!    regex. Every match gets a second look in code (the regex crate has no look-around): a
//!    token must not be a placeholder (`xxxx`, `EXAMPLE`, `AIzaaaa…`), `.env`-style
//!    assignments must not eat ordinary source code, and a value next to a name is judged by
//!    how strongly the name says "secret" (`secrets/secret_judge.rs`: `password` more than `key`,
//!    `token_type` not at all), with an entropy floor and known placeholders refused.
//! 3. **High-entropy tokens** (see `entropy.rs`): one byte loop over what is
//!    left, judging only runs of 64+ token characters.
//!
//! **Hidden characters.** A key with a zero-width space, soft hyphen, word joiner, direction
//! mark or variation selector inside reaches a model whole (models skip such characters) but
//! matches no pattern. So after the three passes the redactor looks for hidden characters
//! (Unicode Cf and default-ignorables, see `invisible.rs`); if there are any, it runs the passes
//! again over the text with them removed and tag characters decoded ([`invisible::reveal`]).
//! When that finds more, the result is that normalised, redacted text (the hidden characters
//! are gone everywhere in it); when it does not, the first result stands with its hidden
//! characters, so text without secrets is never changed and later filters (the injection
//! filter's invisible-text check) still see it as it was. The passes run on the text as given
//! first because removing a character can also join a key to the word before it and hide its
//! start (`x\u{200B}ghp_…`). Look-alikes of ASCII are read the same way in that second
//! look: fullwidth forms, the other space characters and mathematical letters and digits
//! become the ASCII they stand for ([`invisible::folded`], what NFKC does to them), so
//! `ｇｈｐ＿…`, `DB_PASSWORD＝…` and `password： …` are judged as what a model reads.
//!
//! [`SecretRedactor::redact_report`] also says which kinds were found, for audit records and
//! `aria check secrets`; it never returns the secrets themselves.
//!
//! Text with nothing to redact is returned as `Cow::Borrowed` without allocating.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use aho_corasick::{AhoCorasick, Input, MatchKind};
use regex::{Regex, RegexBuilder};

use crate::guard::entropy::find_high_entropy;
use crate::guard::invisible;
use crate::guard::secret_rules::{Check, ENV_KEYWORDS, RULES};

mod secret_judge;
mod verdict;
use verdict::{Verdict, judge};
#[cfg(test)]
use verdict::{is_dotted_identifier, is_number};

/// Known values shorter than this are ignored: redacting `true` or `1234` everywhere would
/// destroy text and protect nothing.
pub const MIN_KNOWN_SECRET_LEN: usize = 8;

/// Group indices of one rule inside the combined regex.
#[derive(Debug, Clone)]
struct Slots {
    kind: &'static str,
    check: Check,
    whole: usize,
    /// Alternative value groups, in pattern order; the first that matched is what is replaced.
    values: Vec<usize>,
    key_quote: Option<usize>,
    separator: Option<usize>,
    /// The name a value is assigned to (`(?P<NAME>…)`), for rules that judge by it; several
    /// are alternatives, the first that matched counts.
    names: Vec<usize>,
}

impl Slots {
    /// The text of the first `NAME` group that took part in the match.
    fn name<'t>(&self, caps: &regex::Captures<'t>) -> Option<&'t str> {
        self.names.iter().find_map(|g| caps.get(*g)).map(|m| m.as_str())
    }
}

/// One compiled regex over a contiguous run of [`RULES`], with each rule's group indices.
#[derive(Debug, Clone)]
struct Group {
    re: Regex,
    slots: Vec<Slots>,
    /// For the `.env`-style rule: its keywords ([`ENV_KEYWORDS`]). Its matches lie on one line
    /// and contain one, so the regex runs only on lines with a keyword.
    keywords: Option<AhoCorasick>,
    /// Every match starts in the name before its keyword (the `.env` rule alone), so the
    /// search may start there rather than at the start of the line.
    from_name: bool,
}

impl Group {
    /// The leftmost match at or after `pos`. `folds`: the text contains `K`
    /// (U+212A) or `ſ` (U+017F), which `(?i)` matches as `k`/`s`: then the prefilter is off.
    /// `hits`: where the keywords occur in `text`, found once for every keyworded group.
    fn find(
        &self,
        text: &str,
        pos: usize,
        folds: bool,
        hits: &mut KeywordHits,
    ) -> Option<(usize, usize)> {
        let Some(keywords) = self.keywords.as_ref().filter(|_| !folds) else {
            return self.re.find_at(text, pos).map(|m| (m.start(), m.end()));
        };
        let bytes = text.as_bytes();
        let mut from = pos;
        // Where a match may start: `pos`, then the start of each next line searched. Passing
        // over a keyword (below) moves `from` but not this: the regex still starts there.
        let mut floor = pos;
        while from < text.len() {
            let at = hits.first_at(keywords, text, from)?;
            let line_start = bytes[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            floor = floor.max(line_start);
            // Every match of these rules lies on one line and contains a keyword: the first
            // match at or after `from` that contains this keyword starts on its line. A
            // `.env` match starts within the run of name characters before the keyword (no
            // match starts between `from` and that run: it would need a keyword of its own).
            let start = if self.from_name {
                let mut start = at;
                while start > floor && is_name_byte(bytes[start - 1]) {
                    start -= 1;
                }
                start
            } else {
                floor
            };
            // The name around the keyword (a run of name characters) must be followed by what
            // the rules need after a name; most keywords in code and logs are not
            // (`password policy`, `PathError>`), and then the regex need not run at all.
            let name_end =
                at + bytes[at..].iter().position(|&b| !is_name_byte(b)).unwrap_or(bytes.len() - at);
            if !self.could_follow(bytes, at, name_end) {
                from = name_end.max(at + 1);
                continue;
            }
            // Matches never cross a line end, so the rest of this line decides.
            let line_end = text[name_end..].find('\n').map_or(text.len(), |i| name_end + i);
            if let Some(m) = self.re.find_at(&text[..line_end], start) {
                return Some((m.start(), m.end()));
            }
            from = line_end + 1;
            floor = from;
        }
        None
    }

    /// Whether a rule of this group could match with a name that is the run of name characters
    /// around a keyword, `bytes[..name_end]` (the run ends there; it contains `at`). A necessary
    /// condition only, read off the patterns in `secret_rules.rs`:
    /// - `.env` (`from_name`): `NAME` then an optional quote, an optional `]`, blanks, and `:`
    ///   or `=`;
    /// - the other one-line forms: `<NAME>` / `<NAME attr…>` (XML), `"NAME"` / `'NAME'`
    ///   (`define('NAME', …)`, `key="NAME" value=…`), `-NAME` or `--NAME` then a blank (a
    ///   flag), `NAME` then blanks and `:` (a typed declaration), or `NAME` then a lookup's
    ///   fallback (`||`, `??`, `or`, after a closing `)` or `]` too).
    fn could_follow(&self, bytes: &[u8], at: usize, name_end: usize) -> bool {
        let blanks = |mut i: usize| {
            while matches!(bytes.get(i), Some(b' ' | b'\t')) {
                i += 1;
            }
            i
        };
        if self.from_name {
            let mut i = name_end;
            if matches!(bytes.get(i), Some(b'"' | b'\'')) {
                i += 1;
            }
            if bytes.get(i) == Some(&b']') {
                i += 1;
            }
            return matches!(bytes.get(blanks(i)), Some(b':' | b'='));
        }
        let mut name_start = at;
        while name_start > 0 && is_name_byte(bytes[name_start - 1]) {
            name_start -= 1;
        }
        let after_lt = name_start > 0 && bytes[name_start - 1] == b'<';
        // After `=`: a quoted or backquoted value (`password = """…"""`) or a wrapper's name
        // (`password = SecretStr("…")`), not code (`token = get_token(…)`).
        let value_after =
            |i: usize| matches!(bytes.get(blanks(i)), Some(b'"' | b'\'' | b'`' | b'A'..=b'Z'));
        match bytes.get(name_end) {
            Some(b'"' | b'\'' | b':') => true,
            Some(b'=') => value_after(name_end + 1),
            // A setter given a literal: `.password("…")`.
            Some(b'(') => matches!(bytes.get(blanks(name_end + 1)), Some(b'"' | b'\'')),
            // JSON inside a JSON string: `\"password\":`.
            Some(b'\\') => matches!(bytes.get(name_end + 1), Some(b'"' | b'\'')),
            Some(b'>') => after_lt,
            Some(b' ' | b'\t') => {
                let next = blanks(name_end);
                after_lt
                    || bytes[name_start] == b'-'
                    || matches!(bytes.get(next), Some(b':' | b'|' | b'?'))
                    || (bytes.get(next) == Some(&b'=') && value_after(next + 1))
                    || bytes[next..].starts_with(b"or ")
            }
            // A lookup's fallback: `env.DB_PASSWORD||'…'`, `env["TOKEN"]) ?? …`.
            Some(b'|' | b'?' | b')' | b']') => true,
            _ => false,
        }
    }
}

/// The keyword occurrences of one text, found with one Aho-Corasick pass the first time a
/// keyworded group asks and shared by all of them. Occurrences that overlap (`secretoken`)
/// are reported once: both lie in the same run of name characters, which is all a group
/// looks at.
#[derive(Default)]
struct KeywordHits {
    starts: Option<Vec<usize>>,
}

impl KeywordHits {
    /// The first keyword occurrence starting at or after `from`.
    fn first_at(&mut self, keywords: &AhoCorasick, text: &str, from: usize) -> Option<usize> {
        let starts = self.starts.get_or_insert_with(|| {
            keywords.find_iter(Input::new(text)).map(|m| m.start()).collect()
        });
        let i = starts.partition_point(|&s| s < from);
        starts.get(i).copied()
    }
}

/// A character of an assignment's name in the `env_secret` pattern (`[A-Za-z0-9_.-]`).
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

/// The non-ASCII characters `(?i)` matches as ASCII letters (`K` for `k`, `ſ` for `s`).
fn has_case_folds(text: &str) -> bool {
    !text.is_ascii() && text.contains(['\u{212A}', '\u{17F}'])
}

/// Compiles the built-in rules ([`PATTERNS`]).
fn build_patterns() -> Result<Vec<Group>, ()> {
    rule_groups()
        .into_iter()
        .map(|range| {
            let (source, names) = combined_source(range.clone());
            let re = build(&source)?;
            let slots = slots_for(&re, &names, range.clone());
            let env = RULES[range.clone()].iter().all(|r| r.check.keyworded());
            let keywords = if env {
                let built = AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .match_kind(MatchKind::LeftmostFirst)
                    .build(ENV_KEYWORDS)
                    .map_err(|e| {
                        tracing::error!(error = %e, "could not build the keyword prefilter");
                    })?;
                Some(built)
            } else {
                None
            };
            let from_name = RULES[range].iter().all(|r| r.check == Check::EnvValue);
            Ok(Group { re, slots, keywords, from_name })
        })
        .collect()
}

/// Rounds of redaction at most ([`SecretRedactor::redact_report`]). Each round after the first
/// replaces what the one before uncovered; two are enough for every case found so far.
const MAX_ROUNDS: usize = 8;

/// What replaces all text if a regex could not be built (fail closed).
const BROKEN: &str = "[REDACTED:redactor-unavailable]";

/// Replaces secrets with `[REDACTED:kind]`.
pub struct SecretRedactor {
    /// The known values, longest first (the regex is built from them on first use).
    known_values: Vec<String>,
    /// `Err(())` when the known-values regex could not be built: then everything is redacted.
    known: std::sync::OnceLock<Result<Option<Regex>, ()>>,
}

/// The built-in rules, in rule order (a match of an earlier group wins a tie with a later
/// one). The same for every redactor, so built once per process, on first use: a command that
/// never redacts (or answers before it does) does not pay for compiling them.
static PATTERNS: std::sync::LazyLock<Result<Vec<Group>, ()>> =
    std::sync::LazyLock::new(build_patterns);

impl fmt::Debug for SecretRedactor {
    // Never print the known values themselves.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretRedactor")
            .field("known_values", &self.known_values.len())
            .field("rules", &RULES.len())
            .finish()
    }
}

impl SecretRedactor {
    /// A redactor for the built-in patterns plus `known_values` (surrounding whitespace is
    /// trimmed; values shorter than [`MIN_KNOWN_SECRET_LEN`] characters are ignored).
    ///
    /// Cannot fail: if a regex cannot be built (an absurd number of known values), the redactor
    /// fails closed and replaces *every* non-empty text, logging an error once.
    pub fn new(known_values: Vec<String>) -> Self {
        // A value is looked for as given and as the second pass sees text: hidden characters
        // removed (a configured value should not hold any, but if one does, both forms count).
        let mut known: Vec<String> = known_values
            .into_iter()
            .flat_map(|v| {
                let v = v.trim().to_owned();
                let revealed = invisible::reveal(&v);
                std::iter::once(v).chain(revealed)
            })
            .map(|v| v.trim().to_owned())
            .filter(|v| v.chars().count() >= MIN_KNOWN_SECRET_LEN)
            .collect();
        // Longest first, so a value containing another is replaced whole.
        known.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        known.dedup();
        SecretRedactor { known_values: known, known: std::sync::OnceLock::new() }
    }

    /// The known-values regex, built on first use.
    fn known(&self) -> &Result<Option<Regex>, ()> {
        self.known.get_or_init(|| {
            if self.known_values.is_empty() {
                return Ok(None);
            }
            let alternation =
                self.known_values.iter().map(|v| regex::escape(v)).collect::<Vec<_>>().join("|");
            build(&alternation).map(Some)
        })
    }

    /// Whether every regex could be built (otherwise everything is redacted). Builds them.
    pub fn working(&self) -> bool {
        self.known().is_ok() && PATTERNS.is_ok()
    }

    /// Redacts like [`aria_api::Redact::redact`] and lists the kind of every replacement: known
    /// values (`known`) first, then pattern kinds in text order, then `high_entropy`; then, if
    /// the text holds hidden characters, the same for what only the normalised text showed.
    ///
    /// The result is a fixed point: redacting it again changes nothing. A replacement can
    /// change how the text around it reads (a token that took the start of an assignment's
    /// name leaves `]_KEY=value`, whose value only then follows a word boundary), so while a
    /// round replaces something, the output is redacted again, at most [`MAX_ROUNDS`] times.
    /// Text with nothing to redact takes one round.
    pub fn redact_report<'a>(&self, text: &'a str) -> Redacted<'a> {
        let mut done = self.redact_round(text);
        for _ in 1..MAX_ROUNDS {
            let Cow::Owned(current) = &done.text else { break };
            let again = self.redact_round(current);
            let Cow::Owned(next) = again.text else { break };
            done.kinds.extend(again.kinds);
            done.text = Cow::Owned(next);
        }
        done
    }

    /// One round: the three passes, then again over the text with hidden characters removed
    /// if it has any (module docs).
    fn redact_round<'a>(&self, text: &'a str) -> Redacted<'a> {
        let mut kinds = Vec::new();
        let (Ok(known), Ok(patterns)) = (self.known(), &*PATTERNS) else {
            if text.is_empty() {
                return Redacted { text: Cow::Borrowed(text), kinds };
            }
            kinds.push("redactor-unavailable");
            return Redacted { text: Cow::Borrowed(BROKEN), kinds };
        };
        let first = self.passes(known.as_ref(), patterns, text, &mut kinds);
        // Normalise, then judge again (module docs, "Hidden characters").
        let Some((revealed, cut_short)) = reveal_continued(&first) else {
            return Redacted { text: first, kinds };
        };
        let mut more = Vec::new();
        let second = self.passes(known.as_ref(), patterns, &revealed, &mut more);
        if more.is_empty() && !cut_short {
            return Redacted { text: first, kinds };
        }
        kinds.extend(more);
        Redacted { text: Cow::Owned(second.into_owned()), kinds }
    }

    /// The three passes (known values, patterns, high-entropy tokens) over `text` as it is.
    fn passes<'a>(
        &self,
        known: Option<&Regex>,
        patterns: &[Group],
        text: &'a str,
        kinds: &mut Vec<&'static str>,
    ) -> Cow<'a, str> {
        let first = match known {
            Some(re) => {
                let hits = re.find_iter(text).count();
                kinds.extend(std::iter::repeat_n("known", hits));
                if hits == 0 {
                    Cow::Borrowed(text)
                } else {
                    re.replace_all(text, "[REDACTED:known]")
                }
            }
            None => Cow::Borrowed(text),
        };
        let second = match first {
            Cow::Borrowed(t) => self.redact_patterns(patterns, t, kinds),
            Cow::Owned(t) => Cow::Owned(self.redact_patterns(patterns, &t, kinds).into_owned()),
        };
        match second {
            Cow::Borrowed(t) => redact_entropy(t, kinds),
            Cow::Owned(t) => Cow::Owned(redact_entropy(&t, kinds).into_owned()),
        }
    }

    fn redact_patterns<'a>(
        &self,
        groups: &[Group],
        text: &'a str,
        kinds: &mut Vec<&'static str>,
    ) -> Cow<'a, str> {
        let mut out = Output { text, buf: None, copied: 0 };
        let mut pos = 0;
        // Per group, the start of its leftmost match from some earlier `pos` (`Some(None)`: no
        // match at all). It stays the leftmost match for every later `pos` up to its start.
        let mut next: Vec<Option<Option<(usize, usize)>>> = vec![None; groups.len()];
        let folds = has_case_folds(text);
        let mut hits = KeywordHits::default();
        while pos <= text.len() {
            let mut first: Option<((usize, usize), &Group)> = None;
            for (cached, group) in next.iter_mut().zip(groups) {
                let start = match *cached {
                    Some(Some((start, _))) if start < pos => None,
                    known => known,
                }
                .unwrap_or_else(|| group.find(text, pos, folds, &mut hits));
                *cached = Some(start);
                if let Some(found) = start
                    && first.is_none_or(|((best, _), _)| found.0 < best)
                {
                    first = Some((found, group));
                }
            }
            let Some(((start, end), group)) = first else { break };
            // The same leftmost-first match, now with its groups. The keyworded rules have no
            // assertion at their end, so the text after the match cannot change it: cutting the
            // haystack there keeps the capture search as short as the match.
            let haystack = if group.keywords.is_some() { &text[..end] } else { text };
            let Some(caps) = group.re.captures_at(haystack, start) else { break };
            let Some((slots, whole)) =
                group.slots.iter().find_map(|s| caps.get(s.whole).map(|m| (s, m)))
            else {
                break;
            };
            let mut verdict = judge(text, &caps, slots, whole);
            // A value in prose that is a token of a known format goes under that format's
            // name: look again from the value, where its own rule matches.
            if let (Check::Prose, Verdict::Redact(start, end)) = (slots.check, verdict)
                && matches!(
                    self.redact_patterns(groups, &text[start..end], &mut Vec::new()),
                    Cow::Owned(_)
                )
            {
                verdict = Verdict::Skip(start);
            }
            let value_start = match verdict {
                Verdict::Redact(start, _) | Verdict::Skip(start) => start,
            };
            // A value-only rule leaves its key part (`ghp_…_TOKEN=`) in the text and the search
            // resumes after it: scan that part on its own so a token inside it is not missed.
            if value_start > whole.start() && value_start - whole.start() < text.len() {
                let key = &text[whole.start()..value_start];
                if let Cow::Owned(clean) = self.redact_patterns(groups, key, kinds) {
                    out.replace(whole.start(), value_start, &clean);
                }
            }
            match verdict {
                Verdict::Redact(start, end) => {
                    out.replace(start, end, &format!("[REDACTED:{}]", slots.kind));
                    kinds.push(slots.kind);
                    pos = whole.end().max(next_char(text, whole.start()));
                }
                // Look again just after the separator (an assignment that is really code may
                // still contain a token), or one character further.
                Verdict::Skip(resume) => pos = resume.max(next_char(text, whole.start())),
            }
        }
        out.finish()
    }
}

/// `text` with hidden characters removed ([`invisible::reveal`]) and look-alikes folded to
/// ASCII ([`invisible::folded`]), and `true` if a key was cut short by one: a redaction marker
/// followed by hidden characters and more token characters means a pattern matched the part
/// of a key before a hidden character (`sk-proj-…` is long enough on its own), and what
/// follows is the rest of that key, so it goes as well.
fn reveal_continued(text: &str) -> Option<(String, bool)> {
    let first = invisible::first_disguised(text)?;
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..first]);
    let mut cut_short = false;
    // After a marker: `Some(false)`; once a hidden character followed it: `Some(true)`.
    let mut after_marker = if ends_with_marker(&out) { Some(false) } else { None };
    for c in text[first..].chars() {
        let Some(shown) = invisible::revealed(c).map(|c| invisible::folded(c).unwrap_or(c)) else {
            after_marker = after_marker.map(|_| true);
            continue;
        };
        if after_marker == Some(true) && is_token_char(shown) {
            cut_short = true;
            continue;
        }
        out.push(shown);
        after_marker = (shown == ']' && ends_with_marker(&out)).then_some(false);
    }
    Some((out, cut_short))
}

/// `[REDACTED:kind]` at the end of `text` (only the last few bytes are looked at: kinds are
/// short, and this runs at every `]`).
fn ends_with_marker(text: &str) -> bool {
    let Some(body) = text.strip_suffix(']') else { return false };
    let mut from = body.len().saturating_sub(64);
    while !body.is_char_boundary(from) {
        from += 1;
    }
    let body = &body[from..];
    body.rfind("[REDACTED:").is_some_and(|at| {
        let kind = &body[at + "[REDACTED:".len()..];
        !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'_' || b == b'-')
    })
}

/// A character of a key, token or password as the patterns know them.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '/' | '=' | '.' | '~')
}

/// Text with its secrets replaced, and the kind of each replacement (never the secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted<'a> {
    pub text: Cow<'a, str>,
    pub kinds: Vec<&'static str>,
}

/// The third pass: high-entropy tokens.
fn redact_entropy<'a>(text: &'a str, kinds: &mut Vec<&'static str>) -> Cow<'a, str> {
    let mut out = Output { text, buf: None, copied: 0 };
    for (start, end) in find_high_entropy(text) {
        out.replace(start, end, "[REDACTED:high_entropy]");
        kinds.push("high_entropy");
    }
    out.finish()
}

/// The redacted text, built only once something is replaced.
struct Output<'a> {
    text: &'a str,
    buf: Option<String>,
    /// `text[..copied]` has been dealt with.
    copied: usize,
}

impl<'a> Output<'a> {
    /// Replaces `text[start..end]` (at or after everything replaced so far) with `with`.
    fn replace(&mut self, start: usize, end: usize, with: &str) {
        let buf = self.buf.get_or_insert_with(|| String::with_capacity(self.text.len()));
        buf.push_str(&self.text[self.copied..start]);
        buf.push_str(with);
        self.copied = end;
    }

    fn finish(self) -> Cow<'a, str> {
        match self.buf {
            None => Cow::Borrowed(self.text),
            Some(mut buf) => {
                buf.push_str(&self.text[self.copied..]);
                Cow::Owned(buf)
            }
        }
    }
}

impl aria_api::Redact for SecretRedactor {
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redact_report(text).text
    }
}

fn next_char(text: &str, at: usize) -> usize {
    at + text[at..].chars().next().map_or(1, char::len_utf8)
}

fn build(source: &str) -> Result<Regex, ()> {
    RegexBuilder::new(source).size_limit(64 << 20).dfa_size_limit(16 << 20).build().map_err(|e| {
        tracing::error!(error = %e, "could not compile a redaction regex; redacting all text");
    })
}

/// The rules split into contiguous runs, one regex each: the keyworded rules (assignments and
/// other `name … value` forms on one line, frequent in code, run behind the keyword prefilter)
/// apart from the token formats.
fn rule_groups() -> Vec<Range<usize>> {
    let mut groups: Vec<Range<usize>> = Vec::new();
    for (i, rule) in RULES.iter().enumerate() {
        match groups.last_mut() {
            // The `.env` rule matches often in code: on its own, its captures stay cheap.
            Some(last)
                if RULES[last.start].check == rule.check
                    || (!RULES[last.start].check.keyworded() && !rule.check.keyworded()) =>
            {
                last.end = i + 1;
            }
            _ => groups.push(i..i + 1),
        }
    }
    groups
}

/// Joins the rules in `range` into one alternation. Rule `i` becomes group `r{i}`; its named
/// sub-groups (`(?P<VALUE>`, `(?P<KEYQ>`, `(?P<SEP>`) are renamed `r{i}_{NAME}_{n}` to stay
/// unique. Returns the source and, per rule of the range, the renamed group names.
fn combined_source(range: Range<usize>) -> (String, Vec<Vec<String>>) {
    let mut source = String::new();
    let mut names = Vec::with_capacity(range.len());
    let first = range.start;
    for (i, rule) in RULES.iter().enumerate().take(range.end).skip(first) {
        if i > first {
            source.push('|');
        }
        let mut rule_names = Vec::new();
        let mut body = String::with_capacity(rule.pattern.len() + 32);
        let mut rest = rule.pattern;
        while let Some(at) = rest.find("(?P<") {
            body.push_str(&rest[..at + 4]);
            rest = &rest[at + 4..];
            let end = rest.find('>').unwrap_or(rest.len());
            let renamed = format!("r{i}_{}_{}", &rest[..end], rule_names.len());
            body.push_str(&renamed);
            rule_names.push(renamed);
            rest = &rest[end..];
        }
        body.push_str(rest);
        source.push_str(&format!("(?P<r{i}>{body})"));
        names.push(rule_names);
    }
    (source, names)
}

fn slots_for(re: &Regex, names: &[Vec<String>], range: Range<usize>) -> Vec<Slots> {
    let index = |name: &str| re.capture_names().position(|n| n == Some(name));
    let first = range.start;
    RULES
        .iter()
        .enumerate()
        .take(range.end)
        .skip(first)
        .filter_map(|(i, rule)| {
            let whole = index(&format!("r{i}"))?;
            let sub = names.get(i - first)?;
            let of = |tag: &str| -> Vec<usize> {
                let prefix = format!("r{i}_{tag}_");
                sub.iter().filter(|n| n.starts_with(&prefix)).filter_map(|n| index(n)).collect()
            };
            Some(Slots {
                kind: rule.kind,
                check: rule.check,
                whole,
                values: of("VALUE"),
                key_quote: of("KEYQ").first().copied(),
                separator: of("SEP").first().copied(),
                names: of("NAME"),
            })
        })
        .collect()
}

#[cfg(test)]
mod split_tests;

#[cfg(test)]
mod hidden_tests;

#[cfg(test)]
mod tests;

//! Finding the text a model means in a file: exactly first, then line by line with the
//! whitespace a small model gets wrong forgiven.
//!
//! A model copies lines from a file it read, and small ones copy them imperfectly: the
//! indentation of a method becomes none, a tab becomes four spaces, a trailing space is
//! dropped, a blank line is added around the block. Refusing every such copy is what made
//! edits fail on format rather than intent. So a place is looked for in three passes, each
//! only when the one before found nothing:
//!
//! 1. the text exactly as given (in the file's `\r\n` endings when the file has them);
//! 2. whole lines equal once trailing blanks are ignored;
//! 3. whole lines equal once all leading and trailing blanks are ignored; the replacement is
//!    then shifted by the indentation the file has and the copy lacked (or had too much of).
//!
//! Each pass must find exactly one place: more than one is an error naming their lines, so a
//! change never lands on a guess.

/// Most places an ambiguity error lists.
const MAX_PLACES: usize = 10;

/// How a place was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matched {
    Exactly,
    /// Whole lines, trailing blanks ignored.
    IgnoringTrailingSpace,
    /// Whole lines, indentation ignored (and the replacement re-indented).
    IgnoringIndentation,
    /// Whole lines the same as the copy's but for brackets, quotes and spacing; the new text's
    /// lines that repeat the copy's are written as the file has them.
    Similar,
}

impl Matched {
    /// Words for the tool's answer, or `None` for an exact match.
    pub fn note(self) -> Option<&'static str> {
        match self {
            Matched::Exactly => None,
            Matched::IgnoringTrailingSpace => Some("matched ignoring trailing spaces"),
            Matched::IgnoringIndentation => {
                Some("matched ignoring indentation; the new text was indented as the file is")
            }
            Matched::Similar => Some(
                "\"old\" was not in the file exactly; it matched the nearly identical lines \
                 shown, and the lines it kept unchanged were kept as the file has them",
            ),
        }
    }
}

/// One place found: the byte range of `text` it covers and the replacement to put there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub start: usize,
    pub end: usize,
    /// 1-based line of the place's start.
    pub line: usize,
    pub replacement: String,
    pub matched: Matched,
    /// Lines of the new text that repeated the file's lines right after (or before) the place
    /// and were not written twice.
    pub repeated_lines: usize,
}

impl Place {
    /// `text` with the place replaced.
    pub fn apply(&self, text: &str) -> String {
        format!("{}{}{}", &text[..self.start], self.replacement, &text[self.end..])
    }
}

/// Why no single place was found: the words for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missed {
    /// Not there in any pass; the message says what is nearest.
    NotFound(String),
    /// There more than once in the first pass that found it: at these 1-based lines.
    Ambiguous { count: usize, lines: Vec<usize> },
}

impl Missed {
    /// The message, with `what` naming the argument (`"old"`, `"after"`).
    pub fn message(&self, what: &str) -> String {
        match self {
            Missed::NotFound(why) => why.replace("{what}", what),
            Missed::Ambiguous { count, lines } => {
                let shown: Vec<String> = lines.iter().map(usize::to_string).collect();
                format!(
                    "\"{what}\" occurs {count} times (at lines {}); add a neighbouring line to \
                     \"{what}\" so that it occurs once",
                    shown.join(", ")
                )
            }
        }
    }
}

/// The one place in `text` where `old` is, with `new` as its replacement (see the module
/// documentation for the passes).
pub fn locate(text: &str, old: &str, new: &str) -> Result<Place, Missed> {
    let mut found = exact(text, old, new)?;
    for matched in [Matched::IgnoringTrailingSpace, Matched::IgnoringIndentation, Matched::Similar]
    {
        if found.is_none() {
            found = by_lines(text, old, new, matched)?;
        }
    }
    let mut place = found.ok_or_else(|| Missed::NotFound(not_found(text, old)))?;
    trim_repeats(text, &mut place);
    Ok(place)
}

/// Takes out of the replacement the lines a model copied from around the place into `new`
/// only: a `new` that ends with the lines that follow the place in the file (or starts with
/// those before it) would write them twice. Only whole lines with something on them count, and
/// something of the replacement must remain.
fn trim_repeats(text: &str, place: &mut Place) {
    let after = &text[place.end..];
    let before = &text[..place.start];
    let r = &place.replacement;
    // Suffixes of the replacement that start at a line break.
    let tail = r
        .match_indices('\n')
        .map(|(i, _)| i)
        .find(|&i| i > 0 && !r[i..].trim().is_empty() && after.starts_with(&r[i..]));
    if let Some(i) = tail {
        place.repeated_lines += r[i..].trim_matches('\n').lines().count();
        place.replacement.truncate(i);
        return;
    }
    // Prefixes that end at a line break.
    let head = r.match_indices('\n').map(|(i, _)| i + 1).rev().find(|&i| {
        i < r.len()
            && !r[..i].trim().is_empty()
            && before.ends_with(&r[..i])
            && (i == before.len() || before[..before.len() - i].ends_with('\n'))
    });
    if let Some(i) = head {
        place.repeated_lines += r[..i].trim_matches('\n').lines().count();
        place.replacement.drain(..i);
    }
}

/// Where `needle` starts in `text`, overlapping occurrences included (`}\n}\n` occurs twice in
/// `}\n}\n}\n`): "exactly once" has to mean it.
pub fn occurrences(text: &str, needle: &str) -> Vec<usize> {
    let mut places = Vec::new();
    let mut from = 0;
    while let Some(found) = text.get(from..).and_then(|rest| rest.find(needle)) {
        let at = from + found;
        places.push(at);
        from = at + text[at..].chars().next().map_or(1, char::len_utf8);
    }
    places
}

fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

fn ambiguous(count: usize, lines: impl Iterator<Item = usize>) -> Missed {
    Missed::Ambiguous { count, lines: lines.take(MAX_PLACES).collect() }
}

/// Pass 1: `old` as given, or in the file's `\r\n` endings when it has them.
fn exact(text: &str, old: &str, new: &str) -> Result<Option<Place>, Missed> {
    let mut places = occurrences(text, old);
    let (old, new) = if places.is_empty() && text.contains("\r\n") && !old.contains("\r\n") {
        let crlf = |s: &str| s.replace("\r\n", "\n").replace('\n', "\r\n");
        let old = crlf(old);
        places = occurrences(text, &old);
        (old, crlf(new))
    } else {
        (old.to_owned(), new.to_owned())
    };
    match places.as_slice() {
        [] => Ok(None),
        [at] => Ok(Some(Place {
            start: *at,
            end: at + old.len(),
            line: line_of(text, *at),
            replacement: new,
            matched: Matched::Exactly,
            repeated_lines: 0,
        })),
        many => Err(ambiguous(many.len(), many.iter().map(|&at| line_of(text, at)))),
    }
}

/// The file's lines with the byte offset each starts at and ends at (its line break excluded).
fn spans(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for piece in text.split_inclusive('\n') {
        let body = piece.strip_suffix('\n').unwrap_or(piece);
        let body = body.strip_suffix('\r').unwrap_or(body);
        out.push((start, start + body.len()));
        start += piece.len();
    }
    out
}

/// `s`'s lines without the blank lines at its start and end.
fn inner_lines(s: &str) -> Vec<&str> {
    let lines: Vec<&str> = s.lines().collect();
    let first = lines.iter().position(|l| !l.trim().is_empty());
    let last = lines.iter().rposition(|l| !l.trim().is_empty());
    match (first, last) {
        (Some(a), Some(b)) => lines[a..=b].to_vec(),
        _ => Vec::new(),
    }
}

fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// Passes 2 and 3: whole lines of the file equal to `old`'s (blank lines around `old`
/// dropped), compared as `matched` says.
fn by_lines(text: &str, old: &str, new: &str, matched: Matched) -> Result<Option<Place>, Missed> {
    let want = inner_lines(old);
    if want.is_empty() {
        return Ok(None);
    }
    let same = |a: &str, b: &str| match matched {
        Matched::IgnoringIndentation => a.trim() == b.trim(),
        Matched::Similar => similar(a.trim(), b.trim()),
        _ => a.trim_end() == b.trim_end(),
    };
    let spans = spans(text);
    let have: Vec<&str> = spans.iter().map(|&(a, b)| &text[a..b]).collect();
    let found: Vec<usize> = (0..have.len().saturating_sub(want.len() - 1))
        .filter(|&i| want.iter().zip(&have[i..]).all(|(w, h)| same(w, h)))
        .collect();
    let i = match found.as_slice() {
        [] => return Ok(None),
        [i] => *i,
        many => return Err(ambiguous(many.len(), many.iter().map(|i| i + 1))),
    };
    let first = i;
    let last = i + want.len() - 1;
    let replacement = match matched {
        Matched::IgnoringIndentation => reindent(&inner_lines(new), &want, &have[first..=last])?,
        Matched::Similar => {
            let lines = inner_lines(new);
            let moved = reindent(&lines, &want, &have[first..=last])
                .unwrap_or_else(|_| lines.iter().map(|l| (*l).to_owned()).collect());
            let moved: Vec<&str> = moved.iter().map(String::as_str).collect();
            as_in_file(&moved, &want, &have[first..=last])
        }
        _ => inner_lines(new).iter().map(|l| (*l).to_owned()).collect(),
    };
    let eol = if text.contains("\r\n") { "\r\n" } else { "\n" };
    // Lines replaced by nothing go with their line break.
    let end = match (replacement.is_empty(), spans.get(last + 1)) {
        (true, Some(next)) => next.0,
        _ => spans[last].1,
    };
    Ok(Some(Place {
        start: spans[first].0,
        end,
        line: first + 1,
        replacement: replacement.join(eol),
        matched,
        repeated_lines: 0,
    }))
}

/// Whether two lines are the same but for brackets, quotes and spacing, the characters a small
/// model drops or doubles when it copies a line into a JSON string (`server` for `[server]`).
/// Never letters, digits or operators: `(x, y)` for `(a, b)` or `a + b` for `a - b` is another
/// line, and an edit written against it would change what the model did not mean to.
fn similar(a: &str, b: &str) -> bool {
    let kept = |s: &str| -> String {
        s.chars().filter(|c| !c.is_whitespace() && !"[](){}<>\"'`".contains(*c)).collect()
    };
    let (a, b) = (kept(a), kept(b));
    !a.is_empty() && a == b
}

/// The new text's lines, each one that repeats a line of the copy `want` (trimmed) replaced by
/// the file's line it was matched to.
fn as_in_file(lines: &[&str], want: &[&str], have: &[&str]) -> Vec<String> {
    lines
        .iter()
        .map(|line| {
            want.iter()
                .position(|w| w.trim() == line.trim() && !w.trim().is_empty())
                .map_or_else(|| (*line).to_owned(), |j| have[j].to_owned())
        })
        .collect()
}

/// The replacement `lines` indented as the file is, for a copy `want` of the file's lines
/// `have` made with other indentation. When every copied line is off by the same amount, every
/// new line is moved by it; when the copy's lines are off by different amounts (a method copied
/// flat) and the replacement has as many lines, each new line takes the file's indentation of
/// the line it replaces. Otherwise there is no telling: an error.
fn reindent(lines: &[&str], want: &[&str], have: &[&str]) -> Result<Vec<String>, Missed> {
    let pairs: Vec<(&str, &str)> = want
        .iter()
        .zip(have)
        .filter(|(w, _)| !w.trim().is_empty())
        .map(|(w, h)| (indent(w), indent(h)))
        .collect();
    let (copied, actual) = pairs[0];
    let moved = |line: &str, copied: &str, actual: &str| -> String {
        if line.trim().is_empty() {
            return line.to_owned();
        }
        match line.strip_prefix(copied) {
            Some(rest) => format!("{actual}{rest}"),
            None => format!("{actual}{}", line.trim_start()),
        }
    };
    // Uniform: moving each copied line's indentation as the first line's moves gives the
    // file's.
    let uniform = pairs
        .iter()
        .all(|(c, a)| c.strip_prefix(copied).is_some_and(|rest| format!("{actual}{rest}") == *a));
    if uniform || lines.is_empty() {
        return Ok(lines.iter().map(|l| moved(l, copied, actual)).collect());
    }
    if lines.len() == want.len() {
        return Ok(lines
            .iter()
            .zip(want.iter().zip(have))
            .map(|(l, (w, h))| moved(l, indent(w), indent(h)))
            .collect());
    }
    Err(Missed::NotFound(
        "\"{what}\" matches lines whose indentation differs from the copy's line by line, and \
         the new text has another number of lines, so its indentation cannot be worked out; \
         copy the lines with their indentation exactly as file_read shows them"
            .to_owned(),
    ))
}

/// Why `old` is not in `text`, and what is nearest to it. `{what}` stands for the argument.
fn not_found(text: &str, old: &str) -> String {
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    if !squeeze(old).is_empty() && squeeze(text).contains(&squeeze(old)) {
        return "\"{what}\" is in the file with other line breaks; copy it exactly as \
                file_read shows it (one line per line)"
            .to_owned();
    }
    let first = old.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let words: Vec<&str> = first.split_whitespace().collect();
    let nearest = text
        .lines()
        .enumerate()
        .map(|(i, line)| (words.iter().filter(|w| line.contains(**w)).count(), i, line))
        .filter(|(shared, _, _)| *shared > 0)
        .max_by_key(|(shared, i, _)| (*shared, std::cmp::Reverse(*i)));
    match nearest {
        Some((_, i, line)) => format!(
            "\"{{what}}\" is not in the file; the nearest line is line {}: {line:?}. Copy \
             \"{{what}}\" from the file (file_read shows it)",
            i + 1
        ),
        None => "\"{what}\" is not in the file; read it with file_read and copy the text \
                 exactly"
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replace(text: &str, old: &str, new: &str) -> Result<String, String> {
        locate(text, old, new).map(|p| p.apply(text)).map_err(|m| m.message("old"))
    }

    #[test]
    fn exact_text_is_replaced_once_and_repeats_name_their_lines() {
        assert_eq!(
            replace("milk\neggs\n", "eggs\n", "eggs\nbread\n").unwrap(),
            "milk\neggs\nbread\n"
        );
        assert_eq!(replace("port = 8088\n", "8088", "9090").unwrap(), "port = 9090\n");
        let twice = replace("a = 1\nb = 2\na = 1\n", "a = 1", "a = 3").unwrap_err();
        assert!(twice.contains("occurs 2 times (at lines 1, 3)"), "{twice}");
        let braces = replace("}\n}\n}\n", "}\n}\n", "}\n").unwrap_err();
        assert!(braces.contains("occurs 2 times (at lines 1, 2)"), "{braces}");
        assert_eq!(occurrences("ééé", "éé"), vec![0, 2]);
    }

    #[test]
    fn a_crlf_file_takes_lf_text_in_its_own_line_endings() {
        let text = "one\r\ntwo\r\nthree\r\n";
        assert_eq!(replace(text, "one\ntwo\n", "one\n2\n").unwrap(), "one\r\n2\r\nthree\r\n");
        assert_eq!(replace(text, "one\n", "1\r\n").unwrap(), "1\r\ntwo\r\nthree\r\n");
        assert_eq!(replace("a\r\nb\nc\n", "b\nc", "B\nC").unwrap(), "a\r\nB\nC\n");
    }

    #[test]
    fn a_copy_without_the_indentation_is_found_and_the_new_text_indented_like_the_file() {
        let text = "class Cart:\n    def total(self):\n        return sum(self.items)\n\n";
        let old = "def total(self):\n    return sum(self.items)";
        let new = "def total(self):\n    return round(sum(self.items), 2)";
        let place = locate(text, old, new).unwrap();
        assert_eq!(place.matched, Matched::IgnoringIndentation);
        assert_eq!(place.line, 2);
        assert_eq!(
            place.apply(text),
            "class Cart:\n    def total(self):\n        return round(sum(self.items), 2)\n\n"
        );
        // Too much indentation is taken off the same way.
        let deep = "        def total(self):\n            return sum(self.items)\n";
        assert_eq!(
            replace(text, deep, deep.replace("sum", "max").as_str()).unwrap(),
            "class Cart:\n    def total(self):\n        return max(self.items)\n\n"
        );
    }

    #[test]
    fn trailing_spaces_and_blank_lines_around_the_copy_do_not_matter() {
        let text = "x = 1   \ny = 2\n";
        let place = locate(text, "\nx = 1\ny = 2\n\n", "x = 10\ny = 2\n").unwrap();
        assert_eq!(place.matched, Matched::IgnoringTrailingSpace);
        assert_eq!(place.apply(text), "x = 10\ny = 2\n");
        // A CRLF file keeps its endings when the lines are matched loosely.
        assert_eq!(replace("a  \r\nb\r\n", "a\nb", "a\nB").unwrap(), "a\r\nB\r\n");
    }

    #[test]
    fn a_loose_match_in_two_places_is_refused_with_both_lines() {
        let text = "if a:\n    go()\nif b:\n        go()\n";
        let err = replace(text, "go()", "stop()").unwrap_err();
        assert!(err.contains("occurs 2 times (at lines 2, 4)"), "{err}");
    }

    #[test]
    fn text_that_is_not_there_gets_the_nearest_line_or_the_line_break_hint() {
        let text = "def multiply(a, b):\n    return a * b\n";
        let near = replace(text, "def multiply(x, y):", "def mul(x, y):").unwrap_err();
        assert!(near.contains("line 1: \"def multiply(a, b):\""), "{near}");
        assert!(near.starts_with("\"old\" is not in the file"), "{near}");
        let joined = replace(text, "def multiply(a, b): return a * b", "x").unwrap_err();
        assert!(joined.contains("other line breaks"), "{joined}");
        let nothing = replace(text, "zzz", "y").unwrap_err();
        assert!(nothing.contains("read it with file_read"), "{nothing}");
        // Blank text is never found loosely (an empty copy would match anywhere).
        assert!(replace(text, "\n\n", "x").is_err());
    }

    #[test]
    fn lines_replaced_by_nothing_leave_no_blank_line() {
        assert_eq!(replace("a\n\tb\nc\n", "  b\n", "").unwrap(), "a\nc\n");
    }

    #[test]
    fn a_copy_with_a_character_lost_matches_and_keeps_the_files_unchanged_lines() {
        let text = "[server]\nhost = \"127.0.0.1\"\nport = 8088\n";
        let old = "server\nhost = \"127.0.0.1\"\nport = 8088\n";
        let new = "server\nhost = \"127.0.0.1\"\nport = 9090\n";
        let place = locate(text, old, new).unwrap();
        assert_eq!(place.matched, Matched::Similar);
        assert_eq!(place.apply(text), "[server]\nhost = \"127.0.0.1\"\nport = 9090\n");
        // Letters, digits and operators make another line.
        assert!(similar("[server]", "server"));
        assert!(similar("print(\"hi\")", "print('hi')"));
        for (a, b) in [("port = 8088", "host = 8088"), ("f(x, y)", "f(a, b)"), ("a - b", "a + b")] {
            assert!(!similar(a, b), "{a} / {b}");
        }
        assert!(!similar("()", "[]"), "nothing left to compare");
        // Similar in two places: refused.
        let err = replace("x = [1]\nx = (1)\n", "x = 1", "x = 2").unwrap_err();
        assert!(err.contains("occurs 2 times (at lines 1, 2)"), "{err}");
    }

    #[test]
    fn lines_of_new_that_repeat_the_text_after_or_before_the_place_are_not_written_twice() {
        let text = "def multiply(a, b):\n    return a * b\n\n\ndef add(a, b):\n    return a + b\n";
        let old = "def multiply(a, b):\n    return a * b";
        let new = "def mul(a, b):\n    return a * b\n\n\ndef add(a, b):\n    return a + b";
        let place = locate(text, old, new).unwrap();
        assert_eq!(place.repeated_lines, 2);
        assert_eq!(
            place.apply(text),
            "def mul(a, b):\n    return a * b\n\n\ndef add(a, b):\n    return a + b\n"
        );
        // The lines before, copied into new only.
        let text = "import os\nimport re\nx = 1\n";
        let place = locate(text, "import re", "import os\nimport sys").unwrap();
        assert_eq!(place.apply(text), "import os\nimport sys\nx = 1\n");
        // A real duplicate (the whole replacement is the repeat) is written.
        assert_eq!(replace("a\nb\n", "a\n", "a\na\n").unwrap(), "a\na\nb\n");
        // Blank lines alone are not a repeat.
        assert_eq!(replace("a\n\nb\n", "a", "A\n").unwrap(), "A\n\n\nb\n");
    }

    #[test]
    fn a_copy_longer_than_the_file_is_not_found() {
        assert!(replace("a\n", "a\nb\nc", "x").is_err());
        assert!(replace("", "a", "x").is_err());
    }
}

#[cfg(test)]
mod props {
    use proptest::prelude::*;

    use super::*;

    /// Text made of the pieces that matter here: lines, indentation, tabs, CRs, non-ASCII.
    fn texty() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just("\n"),
                Just("\r\n"),
                Just("  "),
                Just("\t"),
                Just("a"),
                Just("b"),
                Just("é"),
                Just("- "),
                Just("}"),
            ],
            0..24,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #[test]
        fn a_place_is_a_valid_range_and_replacing_it_keeps_the_text_around_it(
            text in texty(), old in texty(), new in texty()
        ) {
            if let Ok(place) = locate(&text, &old, &new) {
                prop_assert!(place.start <= place.end && place.end <= text.len());
                prop_assert!(text.is_char_boundary(place.start) && text.is_char_boundary(place.end));
                let out = place.apply(&text);
                prop_assert!(out.starts_with(&text[..place.start]));
                prop_assert!(out.ends_with(&text[place.end..]));
                if place.matched == Matched::Exactly {
                    // Exactly, or in the file's CRLF endings.
                    let lf = |s: &str| s.replace("\r\n", "\n");
                    prop_assert_eq!(lf(&text[place.start..place.end]), lf(&old));
                }
            }
        }
    }
}

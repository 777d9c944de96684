//! What a chat shows: the model's Markdown-ish text as Telegram HTML (only `&`, `<` and `>`
//! escaped; fenced code blocks, inline code and `**bold**` turned into tags), and long texts
//! split into messages Telegram accepts (at most 4,096 characters), on paragraph or code-block
//! boundaries where there are some. A code block cut in two is closed at the end of one part
//! and opened again at the start of the next, so each part is valid on its own.

/// Telegram's limit for one message, in UTF-16 code units of the text shown.
pub const MESSAGE_LIMIT: usize = 4096;

/// Escapes text for Telegram's HTML parse mode.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            _ => out.push(c),
        }
    }
    out
}

/// Markdown-ish text as Telegram HTML. Unclosed markers are left as they were written.
pub fn to_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 32);
    let mut in_fence = false;
    let mut lines = text.split('\n').peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if let Some(lang) = trimmed.strip_prefix("```") {
            if in_fence {
                out.push_str("</code></pre>");
            } else {
                let lang = lang.trim();
                if lang.is_empty()
                    || !lang.chars().all(|c| c.is_ascii_alphanumeric() || "+-_#".contains(c))
                {
                    out.push_str("<pre><code>");
                } else {
                    out.push_str(&format!("<pre><code class=\"language-{lang}\">"));
                }
            }
            in_fence = !in_fence;
            // The line break after an opening fence belongs to the markup, not the code.
            if !in_fence && lines.peek().is_some() {
                out.push('\n');
            }
            continue;
        }
        if in_fence {
            out.push_str(&escape(line));
        } else {
            out.push_str(&inline(line));
        }
        if lines.peek().is_some() {
            // Inside a block, a newline before the closing fence would show as an empty line.
            let closing_next =
                in_fence && lines.peek().is_some_and(|l| l.trim_start().starts_with("```"));
            if !closing_next {
                out.push('\n');
            }
        }
    }
    if in_fence {
        out.push_str("</code></pre>");
    }
    out
}

/// One line outside code blocks: `code` and **bold**, the rest escaped.
fn inline(line: &str) -> String {
    let mut out = String::with_capacity(line.len() + 16);
    let mut rest = line;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('`')
            && let Some(end) = after.find('`')
            && end > 0
        {
            out.push_str("<code>");
            out.push_str(&escape(&after[..end]));
            out.push_str("</code>");
            rest = &after[end + 1..];
            continue;
        }
        if let Some(after) = rest.strip_prefix("**")
            && let Some(end) = after.find("**")
            && end > 0
            && !after[..end].contains('`')
        {
            out.push_str("<b>");
            out.push_str(&escape(&after[..end]));
            out.push_str("</b>");
            rest = &after[end + 2..];
            continue;
        }
        let next = rest
            .char_indices()
            .skip(1)
            .find(|(_, c)| *c == '`' || *c == '*')
            .map_or(rest.len(), |(i, _)| i);
        out.push_str(&escape(&rest[..next]));
        rest = &rest[next..];
    }
    out
}

fn units(text: &str) -> usize {
    text.encode_utf16().count()
}

/// Splits `text` into parts of at most `limit` UTF-16 units each (after adding the fence lines
/// that keep a cut code block valid), cutting at a blank line, else at the end of a code block,
/// else at a line break, else at a space, else anywhere (on a character boundary).
pub fn split(text: &str, limit: usize) -> Vec<String> {
    // Room for a reopened fence (```lang\n) and a closing one (\n```).
    let limit = limit.max(64);
    let mut parts = Vec::new();
    let mut rest = text.to_owned();
    while units(&rest) > limit {
        let budget = limit - 24;
        let window_end = byte_index_at_units(&rest, budget);
        let window = &rest[..window_end];
        let cut = best_cut(window);
        let (head, tail) = rest.split_at(cut);
        let (head, tail) = (head.trim_end().to_owned(), tail.trim_start_matches('\n').to_owned());
        match open_fence(&head) {
            Some(fence) => {
                parts.push(format!("{head}\n```"));
                rest = format!("{fence}\n{tail}");
            }
            None => {
                parts.push(head);
                rest = tail;
            }
        }
    }
    if !rest.trim().is_empty() || parts.is_empty() {
        parts.push(rest);
    }
    parts
}

/// The byte index of the end of the longest prefix of at most `n` UTF-16 units.
fn byte_index_at_units(text: &str, n: usize) -> usize {
    let mut used = 0;
    for (i, c) in text.char_indices() {
        used += c.len_utf16();
        if used > n {
            return i;
        }
    }
    text.len()
}

/// Where to cut `window` (a byte index > 0).
fn best_cut(window: &str) -> usize {
    let min = window.len() / 4;
    let candidates = [
        window.rfind("\n\n").map(|i| i + 1),
        window.rfind("```\n").filter(|i| open_fence(&window[..i + 3]).is_none()).map(|i| i + 3),
        window.rfind('\n'),
        window.rfind(' '),
    ];
    candidates.into_iter().flatten().find(|&i| i > min).unwrap_or(window.len().max(1))
}

/// The fence line of a code block still open at the end of `text`.
fn open_fence(text: &str) -> Option<String> {
    let mut open: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            open = match open {
                Some(_) => None,
                None => Some(trimmed.trim_end().to_owned()),
            };
        }
    }
    open
}

#[cfg(test)]
mod tests;

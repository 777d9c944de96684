//! Quote removal: a tree-sitter word node becomes a [`Word`] of literal and expansion segments.
//!
//! Bash's rules, applied without running anything: `'…'` is literal; `"…"` keeps `$var` but
//! drops the backslash before `$`, `` ` ``, `"`, `\` and newline; an unquoted `\c` is a literal
//! `c`; `$'…'` decodes C escapes. Expansions are recorded, never performed.

use tree_sitter::Node;

use super::ast::{Segment, ShellRefusal, Word};

/// The source text of a node (tree-sitter ranges are byte offsets into `src`).
pub(super) fn text<'s>(node: Node<'_>, src: &'s str) -> Result<&'s str, ShellRefusal> {
    src.get(node.byte_range()).ok_or_else(|| {
        ShellRefusal::new("encoding", "the command line could not be split at a character boundary")
    })
}

/// Converts one word-like node.
pub(super) fn word(node: Node<'_>, src: &str) -> Result<Word, ShellRefusal> {
    let mut segments = Vec::new();
    push(node, src, &mut segments)?;
    Ok(Word::from_segments(segments))
}

fn push(node: Node<'_>, src: &str, out: &mut Vec<Segment>) -> Result<(), ShellRefusal> {
    let source = text(node, src)?;
    match node.kind() {
        "word" | "number" => unquoted(source, out),
        "raw_string" => {
            let inner = source.strip_prefix('\'').and_then(|s| s.strip_suffix('\''));
            let inner = inner.ok_or_else(|| unsupported("single-quoted string", source))?;
            out.push(Segment::Text { text: inner.to_owned(), quoted: true });
        }
        "string" => double_quoted(node, src, out)?,
        "ansi_c_string" => {
            let inner = source.strip_prefix("$'").and_then(|s| s.strip_suffix('\''));
            let inner = inner.ok_or_else(|| unsupported("$'…' string", source))?;
            out.push(Segment::Text { text: ansi_c(inner)?, quoted: true });
        }
        "concatenation" => {
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                if !child.is_named() {
                    return Err(unsupported(child.kind(), source));
                }
                push(child, src, out)?;
            }
        }
        "simple_expansion" | "expansion" => out.push(expansion(node, src, false)?),
        // `{1..3}`: kept as unquoted text so the word is flagged as a brace expansion.
        "brace_expression" => out.push(Segment::Text { text: source.to_owned(), quoted: false }),
        other => return Err(unsupported(other, source)),
    }
    Ok(())
}

fn unsupported(kind: &str, source: &str) -> ShellRefusal {
    ShellRefusal::needs_shell(
        "unsupported word syntax",
        source,
        &format!("ARIA does not understand `{kind}` here; quote the text literally"),
    )
}

/// An unquoted word: `\c` is a literal `c`, `\<newline>` disappears.
fn unquoted(source: &str, out: &mut Vec<Segment>) {
    let mut plain = String::new();
    let mut chars = source.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            plain.push(c);
            continue;
        }
        match chars.next() {
            Some('\n') | None => {}
            Some(escaped) => {
                if !plain.is_empty() {
                    out.push(Segment::Text { text: std::mem::take(&mut plain), quoted: false });
                }
                out.push(Segment::Text { text: escaped.to_string(), quoted: true });
            }
        }
    }
    if !plain.is_empty() {
        out.push(Segment::Text { text: plain, quoted: false });
    }
}

/// `"…"`: text between the children is literal (with the double-quote escapes); variables stay
/// variables (marked quoted: no word splitting); anything else was refused before we got here.
fn double_quoted(node: Node<'_>, src: &str, out: &mut Vec<Segment>) -> Result<(), ShellRefusal> {
    let source = text(node, src)?;
    let (start, end) = (node.start_byte() + 1, node.end_byte().saturating_sub(1));
    if !source.starts_with('"') || !source.ends_with('"') || end < start {
        return Err(unsupported("double-quoted string", source));
    }
    let mut at = start;
    let mut literal = String::new();
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        let gap = src.get(at..child.start_byte()).ok_or_else(|| unsupported("string", source))?;
        literal.push_str(&dq_escapes(gap));
        match child.kind() {
            "string_content" => literal.push_str(&dq_escapes(text(child, src)?)),
            "simple_expansion" | "expansion" => {
                if !literal.is_empty() {
                    out.push(Segment::Text { text: std::mem::take(&mut literal), quoted: true });
                }
                out.push(expansion(child, src, true)?);
            }
            other => return Err(unsupported(other, source)),
        }
        at = child.end_byte();
    }
    let tail = src.get(at..end).ok_or_else(|| unsupported("string", source))?;
    literal.push_str(&dq_escapes(tail));
    // An empty "" is still a (quoted, empty) word.
    if !literal.is_empty() || out.is_empty() {
        out.push(Segment::Text { text: literal, quoted: true });
    }
    Ok(())
}

fn dq_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('\n') => {
                    chars.next();
                    continue;
                }
                Some(&n @ ('$' | '`' | '"' | '\\')) => {
                    chars.next();
                    out.push(n);
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    out
}

/// `$NAME` / `${NAME}` become variables; every other form stays an opaque parameter expansion.
fn expansion(node: Node<'_>, src: &str, quoted: bool) -> Result<Segment, ShellRefusal> {
    let source = text(node, src)?;
    let mut cursor = node.walk();
    let named: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
    let plain = named.len() == 1
        && named[0].kind() == "variable_name"
        && node.child_count() == if node.kind() == "expansion" { 3 } else { 2 };
    if plain {
        let name = text(named[0], src)?;
        if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
        {
            // ARIA sets TMPDIR itself: every sandboxed child has a private `/tmp`.
            if name == "TMPDIR" {
                return Ok(Segment::Text { text: "/tmp".to_owned(), quoted: true });
            }
            return Ok(Segment::Var {
                name: name.to_owned(),
                quoted,
                braced: node.kind() == "expansion",
            });
        }
    }
    Ok(Segment::Param { source: source.to_owned() })
}

/// Decodes the body of `$'…'` like bash does.
pub(super) fn ansi_c(body: &str) -> Result<String, ShellRefusal> {
    let mut bytes: Vec<u8> = Vec::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    let mut utf8 = [0u8; 4];
    while let Some(c) = chars.next() {
        if c != '\\' {
            bytes.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
            continue;
        }
        let Some(e) = chars.next() else {
            bytes.push(b'\\');
            break;
        };
        let simple = match e {
            'a' => Some(0x07),
            'b' => Some(0x08),
            'e' | 'E' => Some(0x1b),
            'f' => Some(0x0c),
            'n' => Some(b'\n'),
            'r' => Some(b'\r'),
            't' => Some(b'\t'),
            'v' => Some(0x0b),
            '\\' => Some(b'\\'),
            '\'' => Some(b'\''),
            '"' => Some(b'"'),
            '?' => Some(b'?'),
            _ => None,
        };
        if let Some(b) = simple {
            bytes.push(b);
            continue;
        }
        match e {
            '0'..='7' => {
                let mut value = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                bytes.push((value & 0xff) as u8);
            }
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut value: u32 = 0;
                let mut digits = 0;
                while digits < max {
                    match chars.peek().and_then(|d| d.to_digit(16)) {
                        Some(d) => {
                            value = value * 16 + d;
                            digits += 1;
                            chars.next();
                        }
                        None => break,
                    }
                }
                if digits == 0 {
                    bytes.push(b'\\');
                    bytes.extend_from_slice(e.encode_utf8(&mut utf8).as_bytes());
                } else if e == 'x' {
                    bytes.push((value & 0xff) as u8);
                } else {
                    let ch = char::from_u32(value).ok_or_else(|| bad_escape(body))?;
                    bytes.extend_from_slice(ch.encode_utf8(&mut utf8).as_bytes());
                }
            }
            'c' => return Err(bad_escape(body)),
            other => {
                bytes.push(b'\\');
                bytes.extend_from_slice(other.encode_utf8(&mut utf8).as_bytes());
            }
        }
    }
    String::from_utf8(bytes).map_err(|_| {
        ShellRefusal::new(
            "non-UTF-8 argument",
            format!(
                "`$'{}'` decodes to bytes that are not UTF-8; ARIA only passes UTF-8 arguments",
                super::ast::shorten(body)
            ),
        )
    })
}

fn bad_escape(body: &str) -> ShellRefusal {
    ShellRefusal::new(
        "unsupported escape",
        format!(
            "`$'{}'` uses an escape ARIA does not decode (\\c or an invalid code point)",
            super::ast::shorten(body)
        ),
    )
}

//! Redirections of a simple command: to and from files, here-documents and here-strings, with
//! the file descriptors ARIA allows.

use tree_sitter::Node;

use super::{
    Redirect, RedirectMode, RedirectTarget, ShellRefusal, SimpleCommand, text, unexpected, word,
};

pub(super) fn redirect(
    node: Node<'_>,
    src: &str,
    cmd: &mut SimpleCommand,
) -> Result<(), ShellRefusal> {
    let source = text(node, src)?;
    let mut fd: Option<u8> = None;
    let mut op = "";
    let mut destinations = Vec::new();
    let mut cursor = node.walk();
    for (i, child) in node.children(&mut cursor).enumerate() {
        match node.field_name_for_child(i as u32) {
            Some("descriptor") => {
                let digits = text(child, src)?;
                match digits.parse::<u8>() {
                    Ok(n @ 0..=2) => fd = Some(n),
                    _ => return Err(descriptor(digits, source)),
                }
            }
            Some("destination") => destinations.push(child),
            _ if !child.is_named() => op = child.kind(),
            _ => return Err(unexpected(child, src)),
        }
    }
    let mut rest = destinations.into_iter();
    let Some(target) = rest.next() else {
        return Err(ShellRefusal::needs_shell(
            "closing a descriptor",
            source,
            "leave the descriptor open",
        ));
    };
    let file = |mode| -> Result<RedirectTarget, ShellRefusal> {
        Ok(RedirectTarget::File { mode, path: word(target, src)? })
    };
    let dup = || -> Result<u8, ShellRefusal> {
        let digits = text(target, src)?;
        match (target.kind(), digits.parse::<u8>()) {
            ("number", Ok(n @ 0..=2)) => Ok(n),
            ("number", _) => Err(descriptor(digits, source)),
            _ => Err(ShellRefusal::needs_shell(
                "`>&file`",
                source,
                "write `&>file` to send both streams to a file",
            )),
        }
    };
    match op {
        "<" => {
            cmd.redirects.push(Redirect { fd: fd.unwrap_or(0), target: file(RedirectMode::Read)? })
        }
        ">" | ">|" => {
            cmd.redirects.push(Redirect { fd: fd.unwrap_or(1), target: file(RedirectMode::Write)? })
        }
        ">>" => cmd
            .redirects
            .push(Redirect { fd: fd.unwrap_or(1), target: file(RedirectMode::Append)? }),
        "&>" | "&>>" if fd.is_none() => {
            let mode = if op == "&>" { RedirectMode::Write } else { RedirectMode::Append };
            cmd.redirects.push(Redirect { fd: 1, target: file(mode)? });
            cmd.redirects.push(Redirect { fd: 2, target: RedirectTarget::Dup(1) });
        }
        ">&" => cmd
            .redirects
            .push(Redirect { fd: fd.unwrap_or(1), target: RedirectTarget::Dup(dup()?) }),
        "<&" => cmd
            .redirects
            .push(Redirect { fd: fd.unwrap_or(0), target: RedirectTarget::Dup(dup()?) }),
        _ => {
            return Err(ShellRefusal::needs_shell(
                "redirect",
                source,
                "ARIA supports `<`, `>`, `>>`, `2>`, `2>&1`, `>&2`, `&>` and `&>>`",
            ));
        }
    }
    // `echo a > f b`: words after the target are arguments of the command (bash's rule).
    for extra in rest {
        if extra.kind() == "number" {
            return Err(ShellRefusal::needs_shell(
                "ambiguous redirect",
                source,
                "put a space between a descriptor number and the next redirect, or move the \
                 argument before the redirect",
            ));
        }
        cmd.words.push(word(extra, src)?);
    }
    Ok(())
}

/// `<<EOF … EOF`, `<<-EOF` (leading tabs removed) and `<<'EOF'`: standard input from the body.
/// With an unquoted delimiter the body must need no expansion (no `$`, backquote or `\`).
/// A heredoc followed by more of the line on its first line (`cat <<EOF | grep x`,
/// `cat <<EOF && ls`) is refused: the grammar folds the rest into the heredoc node.
pub(super) fn heredoc(
    node: Node<'_>,
    src: &str,
    cmd: &mut SimpleCommand,
) -> Result<(), ShellRefusal> {
    let source = text(node, src)?;
    let mut strip_tabs = false;
    let mut quoted = false;
    let mut fd = 0u8;
    let (mut body, mut end) = (None, None);
    let mut redirects = Vec::new();
    let mut cursor = node.walk();
    for (i, child) in node.children(&mut cursor).enumerate() {
        match (node.field_name_for_child(i as u32), child.kind()) {
            (_, "<<-") => strip_tabs = true,
            (_, "<<") => {}
            (_, "heredoc_start") => quoted = text(child, src)?.contains(['\'', '"', '\\']),
            (_, "heredoc_body") => body = Some(child),
            (_, "heredoc_end") => end = Some(child),
            (Some("descriptor"), _) => match text(child, src)? {
                "0" => fd = 0,
                other => return Err(descriptor(other, source)),
            },
            (Some("redirect"), "file_redirect") => redirects.push(child),
            _ => {
                return Err(ShellRefusal::needs_shell(
                    "heredoc followed by more commands",
                    source,
                    "end the heredoc's first line with the command (`cat > f <<'EOF'`) and put \
                     pipes or further commands on the lines after the closing delimiter, or \
                     write the text with file_write first",
                ));
            }
        }
    }
    let content = match (body, end) {
        (Some(b), Some(e)) => src.get(b.start_byte()..e.start_byte()).unwrap_or(""),
        (Some(b), None) => text(b, src)?,
        _ => "",
    };
    if let Some(b) = body {
        let mut c = b.walk();
        let expands = b.named_children(&mut c).any(|n| n.kind() != "heredoc_content");
        if !quoted && (expands || content.contains(['$', '`', '\\'])) {
            return Err(ShellRefusal::needs_shell(
                "heredoc with expansions",
                source,
                "quote the delimiter (`<<'EOF'`) so the text is taken literally, or write the \
                 values into the text",
            ));
        }
    }
    let mut content = content.to_owned();
    if strip_tabs {
        content = content.split_inclusive('\n').map(|l| l.trim_start_matches('\t')).collect();
    }
    cmd.redirects.push(Redirect { fd, target: RedirectTarget::Text(content) });
    for r in redirects {
        redirect(r, src, cmd)?;
    }
    Ok(())
}

/// `<<< word`: standard input is the word and a newline; the word must be literal.
pub(super) fn herestring(
    node: Node<'_>,
    src: &str,
    cmd: &mut SimpleCommand,
) -> Result<(), ShellRefusal> {
    let source = text(node, src)?;
    let mut cursor = node.walk();
    let mut value = None;
    for (i, child) in node.children(&mut cursor).enumerate() {
        match node.field_name_for_child(i as u32) {
            Some("descriptor") if text(child, src)? == "0" => {}
            Some("descriptor") => return Err(descriptor(text(child, src)?, source)),
            _ if child.is_named() => value = Some(word(child, src)?),
            _ => {}
        }
    }
    let value = value.ok_or_else(|| unexpected(node, src))?;
    let Some(literal) = value.literal_text() else {
        return Err(ShellRefusal::needs_shell(
            "here-string with an expansion",
            source,
            "write the text literally (`<<< 'text'`), or put it in a file and redirect from it",
        ));
    };
    cmd.redirects.push(Redirect { fd: 0, target: RedirectTarget::Text(format!("{literal}\n")) });
    Ok(())
}

fn descriptor(digits: &str, source: &str) -> ShellRefusal {
    ShellRefusal::needs_shell(
        "file descriptor",
        source,
        &format!("file descriptor {digits} is not supported; only 0, 1 and 2 can be redirected"),
    )
}

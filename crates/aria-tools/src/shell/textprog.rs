//! Analyzers for the two text-processing languages models use most: `sed` and `awk`. Both
//! can run commands (`sed`'s `e`, `awk`'s `system()` and pipes) and write files, so their
//! programs are read, conservatively: what the reader does not understand is not `read`.

use aria_api::Tier;

use super::ast::{Word, shorten};
use super::judge::{Call, Verdict};

/// `sed`: read, a recoverable write with `-i` or `w`, irreversible with `e` or `-f`.
pub(crate) fn sed(call: &Call<'_>) -> Verdict {
    let args = call.args;
    let mut v = Verdict::new(Tier::Read, format!("{}: {}", call.shown, call.entry.does));
    let mut scripts: Vec<&str> = Vec::new();
    let mut files: Vec<&Word> = Vec::new();
    let mut in_place: Option<&str> = None;
    let mut script_file = false;
    let mut sandbox = false;
    let mut only_operands = false;
    let mut operand_script = false;
    let mut unreadable = false;
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text();
        i += 1;
        if only_operands || t == "-" || !t.starts_with('-') {
            if scripts.is_empty() && !script_file && !operand_script {
                unreadable |= args[i - 1].has_variable();
                // The first operand is the script when no -e/-f was given.
                scripts.push(t);
                operand_script = true;
            } else {
                files.push(&args[i - 1]);
            }
            continue;
        }
        if t == "--" {
            only_operands = true;
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or("");
            let is = |full: &str| !name.is_empty() && full.starts_with(name);
            if is("in-place") {
                in_place = Some(t);
            } else if is("expression") {
                match long.split_once('=') {
                    Some((_, s)) => scripts.push(s),
                    None => {
                        scripts.push(args.get(i).map_or("", |w| w.text()));
                        unreadable |= args.get(i).is_some_and(Word::has_variable);
                        i += 1;
                    }
                }
            } else if is("file") {
                script_file = true;
            } else if is("sandbox") {
                sandbox = true;
            } else if is("line-length") && !long.contains('=') {
                i += 1;
            }
            continue;
        }
        for (at, c) in t[1..].char_indices() {
            let rest = &t[1 + at + 1..];
            match c {
                // `-I` is BSD sed's in-place edit.
                'i' | 'I' => {
                    in_place = Some(t);
                    break;
                }
                'e' | 'f' | 'l' => {
                    let val = if rest.is_empty() {
                        i += 1;
                        unreadable |= args.get(i - 1).is_some_and(Word::has_variable);
                        args.get(i - 1).map_or("", |w| w.text())
                    } else {
                        rest
                    };
                    match c {
                        'e' => scripts.push(val),
                        'f' => script_file = true,
                        _ => {}
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    if unreadable {
        v.raise(Tier::Irreversible, || {
            format!(
                "{}: the script depends on a variable ARIA cannot see (sed scripts can run commands)",
                call.shown
            )
        });
    }
    if script_file {
        v.raise(Tier::Irreversible, || {
            format!("{} -f: reads its script from a file ARIA cannot inspect (sed scripts can run commands)", call.shown)
        });
    }
    for s in scripts {
        match sed_script(s) {
            Ok(found) => {
                if found.exec && !sandbox {
                    v.raise(Tier::Irreversible, || {
                        format!(
                            "{} script `{}` uses e, which runs shell commands",
                            call.shown,
                            shorten(s)
                        )
                    });
                }
                if sandbox {
                    continue;
                }
                for path in found.writes {
                    v.write(&format!("{} w", call.shown), &Word::literal(&path));
                }
                if let Some(path) = found.reads {
                    v.raise(Tier::Irreversible, || {
                        format!(
                            "{} script reads {path} with r/R, a file named inside the script \
                             that ARIA's path guard does not see; it needs approval",
                            call.shown
                        )
                    });
                }
            }
            Err(()) => v.raise(Tier::Irreversible, || {
                format!(
                    "{} script `{}` could not be read, so ARIA cannot tell what it does",
                    call.shown,
                    shorten(s)
                )
            }),
        }
    }
    if let Some(opt) = in_place {
        v.raise(Tier::RecoverableWrite, || format!("{} {opt}: edits files in place", call.shown));
        for f in files {
            v.write(&format!("{} {opt}", call.shown), f);
        }
    }
    v
}

#[derive(Debug, Default)]
struct SedFound {
    exec: bool,
    writes: Vec<String>,
    /// A file read with `r` or `R`.
    reads: Option<String>,
}

/// A conservative reader of sed scripts: finds the `e` command and flag, and `w`/`W` files.
/// Anything it does not understand is an error (and the caller treats that as irreversible).
fn sed_script(script: &str) -> Result<SedFound, ()> {
    let b: Vec<char> = script.chars().collect();
    let n = b.len();
    let mut found = SedFound::default();
    let mut i = 0;
    let to_eol = |i: usize| (i..n).find(|&j| b[j] == '\n').unwrap_or(n);
    let rest_of_line =
        |i: usize| -> String { b[i..to_eol(i)].iter().collect::<String>().trim().to_owned() };
    loop {
        while i < n && (b[i].is_whitespace() || b[i] == ';') {
            i += 1;
        }
        if i >= n {
            return Ok(found);
        }
        i = sed_address(&b, i)?;
        if i < n && b[i] == ',' {
            i = sed_address(&b, i + 1)?;
        }
        while i < n && (b[i] == ' ' || b[i] == '!') {
            i += 1;
        }
        let c = *b.get(i).ok_or(())?;
        i += 1;
        match c {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' => {}
            'l' | 'L' | 'q' | 'Q' => {
                while i < n && (b[i].is_ascii_digit() || b[i] == ' ') {
                    i += 1;
                }
            }
            'r' | 'R' => {
                found.reads = Some(rest_of_line(i));
                i = to_eol(i);
            }
            '#' | 'a' | 'i' | 'c' | ':' => {
                // Text to the end of the line, with backslash-newline continuation.
                while i < n && b[i] != '\n' {
                    i += if b[i] == '\\' { 2 } else { 1 };
                }
            }
            'b' | 't' | 'T' | 'v' => {
                while i < n && !matches!(b[i], ';' | '\n' | '}') {
                    i += 1;
                }
            }
            'w' | 'W' => {
                found.writes.push(rest_of_line(i));
                i = to_eol(i);
            }
            'e' => {
                found.exec = true;
                i = to_eol(i);
            }
            's' | 'y' => {
                let delim = *b.get(i).ok_or(())?;
                if delim == '\\' || delim == '\n' {
                    return Err(());
                }
                i = sed_part(&b, i + 1, delim, c == 's')?;
                i = sed_part(&b, i, delim, false)?;
                if c == 's' {
                    while i < n {
                        match b[i] {
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                            'e' => {
                                found.exec = true;
                                i += 1;
                            }
                            'w' => {
                                found.writes.push(rest_of_line(i + 1));
                                i = to_eol(i);
                            }
                            _ => break,
                        }
                    }
                }
            }
            _ => return Err(()),
        }
    }
}

fn sed_address(b: &[char], mut i: usize) -> Result<usize, ()> {
    let n = b.len();
    while i < n && b[i] == ' ' {
        i += 1;
    }
    match b.get(i) {
        Some(c) if c.is_ascii_digit() || *c == '+' || *c == '~' => {
            i += 1;
            while i < n && (b[i].is_ascii_digit() || b[i] == '~') {
                i += 1;
            }
        }
        Some('$') => i += 1,
        Some('/') => i = sed_part(b, i + 1, '/', true)?,
        Some('\\') => {
            let delim = *b.get(i + 1).ok_or(())?;
            i = sed_part(b, i + 2, delim, true)?;
        }
        _ => return Ok(i),
    }
    while i < n && matches!(b[i], 'I' | 'M') {
        i += 1;
    }
    Ok(i)
}

/// Skips one delimited part; returns the index after the closing delimiter.
fn sed_part(b: &[char], mut i: usize, delim: char, regex: bool) -> Result<usize, ()> {
    while i < b.len() {
        match b[i] {
            '\\' => i += 2,
            '[' if regex => {
                let mut j = i + 1;
                if b.get(j) == Some(&'^') {
                    j += 1;
                }
                if b.get(j) == Some(&']') {
                    j += 1;
                }
                while j < b.len() && b[j] != ']' {
                    j += 1;
                }
                i = j + 1;
            }
            c if c == delim => return Ok(i + 1),
            _ => i += 1,
        }
    }
    Err(())
}

/// `awk`: read, unless the program runs commands (`system()`, pipes) or writes files (`>`).
pub(crate) fn awk(call: &Call<'_>) -> Verdict {
    let args = call.args;
    let mut v = Verdict::new(Tier::Read, format!("{}: {}", call.shown, call.entry.does));
    let mut programs: Vec<&str> = Vec::new();
    let mut files: Vec<&Word> = Vec::new();
    let mut in_place = false;
    let mut from_file = false;
    let mut sandbox = false;
    let mut unreadable = false;
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let t = args[i].text();
        i += 1;
        if only_operands || !t.starts_with('-') || t == "-" {
            if programs.is_empty() && !from_file {
                unreadable |= args[i - 1].has_variable();
                programs.push(t);
            } else {
                files.push(&args[i - 1]);
            }
            continue;
        }
        if t == "--" {
            only_operands = true;
            continue;
        }
        let (name, attached) = if t.starts_with("--") {
            match t.split_once('=') {
                Some((n, val)) => (n, Some(val)),
                None => (t, None),
            }
        } else {
            (&t[..2.min(t.len())], (t.len() > 2).then(|| &t[2..]))
        };
        match name {
            "-S" | "--sandbox" => sandbox = true,
            "-p" | "--profile" | "-o" | "--pretty-print" | "-d" | "--dump-variables" => {
                v.raise(Tier::RecoverableWrite, || {
                    format!(
                        "{} {name}: writes a profile, listing or variable dump file",
                        call.shown
                    )
                });
            }
            "-D" | "--debug" | "--exec" => v.raise(Tier::Irreversible, || {
                format!(
                    "{} {name}: runs a debugger or a program file ARIA cannot inspect",
                    call.shown
                )
            }),
            _ => {}
        }
        let takes = [
            "-W",
            "-F",
            "-v",
            "-f",
            "-e",
            "-i",
            "-E",
            "-l",
            "--source",
            "--file",
            "--include",
            "--load",
            "--assign",
            "--field-separator",
        ];
        if !takes.contains(&name) {
            continue;
        }
        let val = match attached {
            Some(a) => a,
            None => {
                i += 1;
                args.get(i - 1).map_or("", |w| w.text())
            }
        };
        let harmless_w = [
            "version",
            "v",
            "help",
            "usage",
            "posix",
            "traditional",
            "compat",
            "lint",
            "re-interval",
            "interactive",
            "sandbox",
            "characters-as-bytes",
            "posix_space",
        ];
        match name {
            "-W" if val == "sandbox" => sandbox = true,
            "-W" if !harmless_w.contains(&val.split('=').next().unwrap_or("")) => {
                v.raise(Tier::Irreversible, || {
                    format!(
                        "{} -W {val}: can run or load a program ARIA cannot inspect",
                        call.shown
                    )
                });
            }
            "-e" | "--source" => {
                unreadable |= attached.is_none() && args.get(i - 1).is_some_and(Word::has_variable);
                programs.push(val);
            }
            "-f" | "-E" | "--file" => from_file = true,
            "-i" | "--include" if val == "inplace" => in_place = true,
            "-i" | "-l" | "--include" | "--load" => v.raise(Tier::Irreversible, || {
                format!("{} {name} {val}: loads an awk library ARIA cannot inspect", call.shown)
            }),
            _ => {}
        }
    }
    if from_file {
        v.raise(Tier::Irreversible, || {
            format!("{} -f: reads its program from a file ARIA cannot inspect", call.shown)
        });
    }
    if unreadable {
        v.raise(Tier::Irreversible, || {
            format!(
                "{}: the program depends on a variable ARIA cannot see (awk can run commands)",
                call.shown
            )
        });
    }
    if sandbox {
        // --sandbox disables system(), pipes, redirects and loading extensions.
        return v;
    }
    for p in programs {
        let code = awk_code(p);
        if calls(&code, "system") {
            v.raise(Tier::Irreversible, || {
                format!("{} program calls system(), which runs shell commands", call.shown)
            });
        }
        if code.contains('@') {
            v.raise(Tier::Irreversible, || {
                format!(
                    "{} program uses @ (an indirect call, @include or @load), which can run \
                     any function or load code",
                    call.shown
                )
            });
        }
        if p.contains("/inet") {
            v.raise(Tier::Irreversible, || {
                format!("{} program names a /inet special file, a network connection", call.shown)
            });
        }
        if code.replace("||", "").contains('|') {
            v.raise(Tier::Irreversible, || {
                format!("{} program uses | to run a command", call.shown)
            });
        }
        if awk_print_redirect(&code) {
            v.raise(Tier::RecoverableWrite, || {
                format!("{} program uses > in print to write a file", call.shown)
            });
        }
    }
    if in_place {
        v.raise(Tier::RecoverableWrite, || {
            format!("{} -i inplace: edits files in place", call.shown)
        });
        for f in files {
            v.write(&call.shown, f);
        }
    }
    v
}

/// Whether `code` calls the function `name` (as a word followed by `(`).
fn calls(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(at, _)| {
        let before = code[..at].chars().last();
        let after = code[at + name.len()..].trim_start();
        before.is_none_or(|c| !(c.is_alphanumeric() || c == '_')) && after.starts_with('(')
    })
}

/// The program with string and regex literals emptied, so `"a|b"` and `/x|y/` are not pipes.
fn awk_code(program: &str) -> String {
    let mut out = String::with_capacity(program.len());
    let mut chars = program.chars().peekable();
    let mut prev = '\n';
    while let Some(c) = chars.next() {
        let regex_start = c == '/' && "(,{}};!~&|=<>?:\n".contains(prev)
            || (c == '/'
                && prev == ' '
                && out.trim_end().chars().last().is_none_or(|p| "(,{};!~&|=<>?:".contains(p)));
        if c == '"' || regex_start {
            let close = c;
            while let Some(d) = chars.next() {
                if d == '\\' {
                    chars.next();
                } else if d == close {
                    break;
                }
            }
            out.push(close);
            out.push(close);
            prev = close;
            continue;
        }
        out.push(c);
        if !c.is_whitespace() {
            prev = c;
        }
    }
    out
}

/// `print … > file` or `printf … >> file` (awk redirects inside a print statement).
fn awk_print_redirect(code: &str) -> bool {
    let mut rest = code;
    while let Some(at) = rest.find("print") {
        let before = rest[..at].chars().last();
        let tail = &rest[at + 5..];
        let statement_end = tail.find([';', '{', '}', '\n']).unwrap_or(tail.len());
        if before.is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
            && tail[..statement_end].contains('>')
        {
            return true;
        }
        rest = tail;
    }
    false
}

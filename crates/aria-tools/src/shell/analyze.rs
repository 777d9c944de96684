//! Analyzers for programs whose arguments need understanding, not just option rules: what `rm`
//! deletes, which mode `chmod` sets, what `find -exec` and wrappers run, and what a `sed` or
//! `awk` program does. Each is referenced from the table in `rules.rs`.

use aria_api::Tier;

use super::ast::{Segment, Word, shorten};
use super::judge::{
    Call, Ctx, Item, Verdict, apply_rules, judge_argv, judge_env, normalize, operands, option_at,
    options, system_area,
};
use super::rules::{Interp, Wrap};

fn line(call: &Call<'_>) -> String {
    let mut s = call.shown.clone();
    for a in call.args {
        s.push(' ');
        s.push_str(a.text());
    }
    shorten(&s)
}

fn too_deep(shown: &str) -> Verdict {
    Verdict::new(Tier::Irreversible, format!("{shown}: commands nested too deeply to check"))
}

/// `env`, `nice`, `timeout`, `xargs`, ...: judged by the command they run.
pub(crate) fn wrapper(call: &Call<'_>, w: &Wrap) -> Verdict {
    let entry = call.entry;
    let args = call.args;
    let mut v = Verdict::new(entry.tier, format!("{}: {}", call.shown, entry.does));
    let mut items = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text();
        if t == "--" {
            i += 1;
            break;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        i = option_at(args, i, entry, &mut items);
    }
    apply_rules(&mut v, &call.shown, entry, &items);
    if w.assignments {
        while let Some((name, _)) = args.get(i).and_then(|a| a.text().split_once('=')) {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                break;
            }
            judge_env(&mut v, name, &args[i].text()[name.len() + 1..]);
            i += 1;
        }
    }
    let rest = args.get(i + w.skip..).unwrap_or(&[]);
    let Some(first) = rest.first() else {
        return match w.default {
            Some(what) if args.len() >= i + w.skip => {
                if v.tier == entry.tier {
                    v.reason = format!("{}: with no command it {what}", call.shown);
                }
                v
            }
            _ => {
                v.raise(Tier::Irreversible, || {
                    format!("{}: no command given, so ARIA cannot tell what would run", call.shown)
                });
                v
            }
        };
    };
    let Some(ctx) = call.ctx.deeper() else { return too_deep(&call.shown) };
    let ctx = Ctx { piped: call.ctx.piped && !w.detaches_stdin, ..ctx };
    let inner = if w.script && rest.len() == 1 && first.text().contains(char::is_whitespace) {
        script(&call.shown, "runs", first.text(), ctx)
    } else {
        judge_argv(&[], rest, ctx)
    };
    if inner.tier >= v.tier {
        v.tier = inner.tier;
        v.reason = inner.reason;
    }
    v.writes.extend(inner.writes);
    v
}

/// A shell script given as text (`sh -c`, `watch`): parsed and judged like a command line; at
/// least irreversible, because a shell expands it in ways ARIA does not see.
fn script(shown: &str, verb: &str, text: &str, ctx: Ctx) -> Verdict {
    let short = shorten(text);
    match super::classify::judge_text(text, ctx) {
        Ok(inner) if inner.tier > Tier::Irreversible => {
            let mut v =
                Verdict::new(inner.tier, format!("{shown} {verb} `{short}`: {}", inner.reason));
            v.writes = inner.writes;
            v
        }
        Ok(inner) => {
            let mut v = Verdict::new(
                Tier::Irreversible,
                format!(
                    "{shown} {verb} the shell script `{short}`; a shell expands it in ways ARIA \
                     does not check, so it needs approval"
                ),
            );
            v.writes = inner.writes;
            v
        }
        Err(refusal) => Verdict::new(
            Tier::Irreversible,
            format!(
                "{shown} {verb} `{short}`, which uses a {} ARIA cannot check; it needs approval",
                refusal.construct
            ),
        ),
    }
}

/// Shells and interpreters: at least irreversible (they run arbitrary code); blocked when they
/// would run their piped standard input as a program (`curl … | sh`).
pub(crate) fn interpreter(call: &Call<'_>, interp: &Interp) -> Verdict {
    let shown = call.shown.as_str();
    let args = call.args;
    let mut dash_c = false;
    let mut stdin_script = false;
    let mut code: Option<String> = None;
    let mut operand: Option<&Word> = None;
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text();
        if t == "--" {
            operand = args.get(i + 1);
            break;
        }
        let is_opt = t.len() > 1 && (t.starts_with('-') || (interp.shell && t.starts_with('+')));
        if !is_opt {
            operand = Some(&args[i]);
            break;
        }
        if interp.values.contains(&t) {
            i += 2;
            continue;
        }
        if interp.shell {
            if !t.starts_with("--") {
                dash_c |= t[1..].contains('c');
                stdin_script |= t[1..].contains('s');
            }
            i += 1;
            continue;
        }
        if let Some(c) = interp.code.iter().find(|c| {
            t == **c || t.starts_with(&format!("{c}=")) || (c.len() == 2 && t.starts_with(**c))
        }) {
            code = Some(c.to_string());
            break;
        }
        i += 1;
    }
    if interp.shell && dash_c {
        let Some(text) = operand else {
            return Verdict::new(Tier::Irreversible, format!("{shown} -c without a script"));
        };
        let Some(ctx) = call.ctx.deeper() else { return too_deep(shown) };
        return script(&format!("{shown} -c"), "runs", text.text(), Ctx { piped: false, ..ctx });
    }
    if let Some(opt) = code {
        return Verdict::new(
            Tier::Irreversible,
            format!(
                "{shown} {opt}: runs inline code, which ARIA does not check; it needs approval"
            ),
        );
    }
    let reads_stdin = stdin_script || operand.is_none_or(|w| w.text() == "-");
    if reads_stdin && call.ctx.piped {
        return Verdict::new(
            Tier::Blocked,
            format!(
                "{shown} runs its standard input as a program: whatever the previous command \
                 prints would be executed"
            ),
        );
    }
    match operand {
        Some(file) if !reads_stdin => Verdict::new(
            Tier::Irreversible,
            format!(
                "{shown} runs the script {}; ARIA does not check scripts, so it needs approval",
                file.text()
            ),
        ),
        _ => Verdict::new(Tier::Irreversible, format!("{shown}: {}", call.entry.does)),
    }
}

/// `find`: read, unless it deletes, runs commands (judged like any command) or writes lists.
pub(crate) fn find(call: &Call<'_>) -> Verdict {
    let args = call.args;
    let mut v = Verdict::new(Tier::Read, format!("{}: {}", call.shown, call.entry.does));
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text();
        match t {
            "-delete" => v.raise(Tier::Irreversible, || {
                format!("{} -delete: deletes every file it matches", call.shown)
            }),
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let start = i + 1;
                let end = (start..args.len())
                    .find(|&j| matches!(args[j].text(), ";" | "+"))
                    .unwrap_or(args.len());
                let Some(ctx) = call.ctx.deeper() else { return too_deep(&call.shown) };
                let inner = judge_argv(&[], &args[start..end], Ctx { piped: false, ..ctx });
                if inner.tier >= v.tier {
                    v.tier = inner.tier;
                    v.reason = format!("{} {t} runs {}", call.shown, inner.reason);
                }
                v.writes.extend(inner.writes);
                i = end;
            }
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                if let Some(path) = args.get(i + 1) {
                    v.write(&format!("{} {t}", call.shown), path);
                }
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    v
}

/// `rm`: irreversible; blocked for `/`, top-level directories, home, system locations, and a
/// recursive delete whose target starts with a variable (empty means `/`).
pub(crate) fn rm(call: &Call<'_>) -> Verdict {
    let items = options(call.args, call.entry);
    let recursive = items.iter().any(|i| i.is("-r") || i.is("-R") || i.is("--recursive"));
    let mut v = Verdict::new(
        Tier::Irreversible,
        format!("{}: deletes files, which cannot be undone", call.shown),
    );
    if items.iter().any(|i| i.is("--no-preserve-root")) {
        v.raise(Tier::Blocked, || format!("{}: --no-preserve-root allows deleting /", line(call)));
    }
    for target in operands(&items) {
        if let Some(what) = dangerous_target(target, recursive) {
            v.raise(Tier::Blocked, || format!("{} would delete {what}", line(call)));
        }
        v.write(&call.shown, target);
    }
    v
}

fn dangerous_target(target: &Word, recursive: bool) -> Option<String> {
    let t = target.text();
    let trimmed = t.trim_end_matches("/*").trim_end_matches("/.");
    let trimmed = if trimmed.is_empty() { "/" } else { trimmed };
    if let Some(norm) = normalize(trimmed) {
        if norm == "/" {
            return Some(format!("{t}: the whole file system"));
        }
        if recursive && norm.matches('/').count() == 1 {
            return Some(format!("{t}: a top-level system directory"));
        }
    }
    let home_forms = ["", "/", "/*", "/."];
    if target.has_tilde() {
        let rest = t.find('/').map_or("", |at| &t[at..]);
        if home_forms.contains(&rest) {
            return Some(format!("{t}: a home directory"));
        }
    }
    for var in ["$HOME", "${HOME}"] {
        if let Some(rest) = t.strip_prefix(var)
            && home_forms.contains(&rest)
            && target.has_variable()
        {
            return Some(format!("{t}: the home directory"));
        }
    }
    if recursive
        && matches!(target.segments().first(), Some(Segment::Var { .. } | Segment::Param { .. }))
    {
        return Some(format!(
            "{t}: it starts with a variable whose value ARIA cannot see (empty, it would mean /)"
        ));
    }
    None
}

/// `chmod`: a recoverable write, blocked for world-writable or setuid/setgid modes.
pub(crate) fn chmod(call: &Call<'_>) -> Verdict {
    let mut v =
        Verdict::new(Tier::RecoverableWrite, format!("{}: {}", call.shown, call.entry.does));
    let mut mode: Option<&str> = None;
    let mut files = Vec::new();
    let mut options_done = false;
    let mut reference = false;
    for a in call.args {
        let t = a.text();
        let is_opt = !options_done
            && ((t.starts_with("--") && t.len() > 2)
                || (t.len() > 1
                    && t.starts_with('-')
                    && t[1..].chars().all(|c| "cfvR".contains(c))));
        if t == "--" && !options_done {
            options_done = true;
        } else if is_opt {
            reference |= t.starts_with("--reference");
        } else if mode.is_none() && !reference {
            mode = Some(t);
        } else {
            files.push(a);
        }
    }
    if let Some(m) = mode
        && let Some(why) = dangerous_mode(m)
    {
        v.raise(Tier::Blocked, || format!("{} {m}: {why}", call.shown));
    }
    for f in files {
        v.write(&call.shown, f);
    }
    v
}

fn dangerous_mode(mode: &str) -> Option<&'static str> {
    const WORLD: &str = "makes files writable by every user";
    const SUID: &str = "sets the setuid/setgid bit, letting others run the file as its owner";
    if !mode.is_empty() && mode.len() <= 5 && mode.chars().all(|c| c.is_digit(8)) {
        let bits = u32::from_str_radix(mode, 8).ok()?;
        if bits & 0o6000 != 0 {
            return Some(SUID);
        }
        return (bits & 0o002 != 0).then_some(WORLD);
    }
    for clause in mode.split(',') {
        let who: String = clause.chars().take_while(|c| "ugoa".contains(*c)).collect();
        let mut op = ' ';
        for c in clause[who.len()..].chars() {
            match c {
                '+' | '-' | '=' => op = c,
                _ if op == '-' => {}
                's' => return Some(SUID),
                'w' | 'u' | 'g' if who.contains(['o', 'a']) => return Some(WORLD),
                _ => {}
            }
        }
    }
    None
}

/// `dd`: reads unless `of=` names a file; blocked for devices and system locations.
pub(crate) fn dd(call: &Call<'_>) -> Verdict {
    let mut v = Verdict::new(
        Tier::Read,
        format!("{}: copies raw data to standard output (no of=)", call.shown),
    );
    for a in call.args {
        let Some(path) = a.text().strip_prefix("of=") else { continue };
        if let Some(area) = system_area(path) {
            v.raise(Tier::Blocked, || {
                format!(
                    "{} of={path} writes to {path}, {area}: a device or system location",
                    call.shown
                )
            });
        } else {
            v.raise(Tier::RecoverableWrite, || {
                format!("{} of={path}: writes the file {path}", call.shown)
            });
        }
        v.writes.push(path.to_owned());
    }
    v
}

/// `kill`: irreversible; blocked for PID -1 (every process) and 1 (init).
pub(crate) fn kill(call: &Call<'_>) -> Verdict {
    let mut v = Verdict::new(Tier::Irreversible, format!("{}: {}", call.shown, call.entry.does));
    let args = call.args;
    let mut signal_given = false;
    let mut pids: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text();
        if t == "--" {
            pids.extend(args[i + 1..].iter().map(Word::text));
            break;
        }
        if !signal_given && t.len() > 1 && t.starts_with('-') {
            match t {
                "-l" | "-L" | "--list" | "--table" => {
                    v = Verdict::new(Tier::Read, format!("{} {t}: lists signal names", call.shown));
                }
                "-s" | "-n" | "--signal" => {
                    signal_given = true;
                    i += 1;
                }
                _ => signal_given = true,
            }
            i += 1;
            continue;
        }
        pids.push(t);
        i += 1;
    }
    for p in pids {
        if p == "-1" || p == "1" {
            v.raise(Tier::Blocked, || {
                format!("{}: PID {p} means every process (or init); never", line(call))
            });
        } else {
            v.raise(Tier::Irreversible, || format!("{}: {}", call.shown, call.entry.does));
        }
    }
    v
}

/// `wget`: writes a file unless the output is `-`; request bodies are irreversible.
pub(crate) fn wget(call: &Call<'_>) -> Verdict {
    let items = options(call.args, call.entry);
    let output = items.iter().find_map(|i| match i {
        Item::Opt { name, value: Some(v) } if name == "-O" || name == "--output-document" => {
            Some(v.clone())
        }
        _ => None,
    });
    let mut v = match output.as_deref() {
        Some("-") => Verdict::new(Tier::Read, format!("{} -O -: prints the download", call.shown)),
        _ if items.iter().any(|i| i.is("--spider")) => {
            Verdict::new(Tier::Read, format!("{} --spider: only checks the URL", call.shown))
        }
        Some(path) => {
            let mut v = Verdict::new(Tier::Read, String::new());
            v.write(&call.shown, &Word::literal(path));
            v
        }
        None => {
            Verdict::new(Tier::RecoverableWrite, format!("{}: {}", call.shown, call.entry.does))
        }
    };
    apply_rules(&mut v, &call.shown, call.entry, &items);
    v
}

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
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text();
        i += 1;
        if only_operands || t == "-" || !t.starts_with('-') {
            if scripts.is_empty() && !script_file && !operand_script {
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
            let is = |full: &str| name.len() >= 2 && full.starts_with(name);
            if is("in-place") {
                in_place = Some(t);
            } else if is("expression") {
                match long.split_once('=') {
                    Some((_, s)) => scripts.push(s),
                    None => {
                        scripts.push(args.get(i).map_or("", |w| w.text()));
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
                'i' => {
                    in_place = Some(t);
                    break;
                }
                'e' | 'f' | 'l' => {
                    let val = if rest.is_empty() {
                        i += 1;
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
                for path in found.writes {
                    v.write(&format!("{} w", call.shown), &Word::literal(&path));
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
            '#' | 'a' | 'i' | 'c' | 'r' | 'R' | ':' => {
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
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let t = args[i].text();
        i += 1;
        if only_operands || !t.starts_with('-') || t == "-" {
            if programs.is_empty() && !from_file {
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
        let takes = [
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
        match name {
            "-e" | "--source" => programs.push(val),
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
    for p in programs {
        let code = awk_code(p);
        if let Some(at) = code.find("system") {
            let before = code[..at].chars().last();
            let after = code[at + 6..].trim_start();
            if before.is_none_or(|c| !(c.is_alphanumeric() || c == '_')) && after.starts_with('(') {
                v.raise(Tier::Irreversible, || {
                    format!("{} program calls system(), which runs shell commands", call.shown)
                });
            }
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

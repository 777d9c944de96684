//! Analyzers for programs whose arguments need understanding, not just option rules: what `rm`
//! deletes, which mode `chmod` sets, what `find -exec` and wrappers run, and what a `sed` or
//! `awk` program does. Each is referenced from the table in `rules.rs`.

use aria_api::Tier;

use super::ast::{Segment, Word, shorten};
use super::judge::{
    Call, Ctx, Item, Verdict, apply_rules, judge_argv, judge_env, normalize, operands, option_at,
    options, system_area,
};
use super::rules::{Interp, Kind, Wrap, Writes};

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
    let exec = items.iter().any(|i| i.is("-x") || i.is("--exec"));
    let mut inner = if w.script && !exec {
        // `watch` joins its arguments and hands them to `sh -c`.
        let text: Vec<&str> = rest.iter().map(Word::text).collect();
        script(&call.shown, "runs", &text.join(" "), ctx)
    } else {
        judge_argv(&[], rest, ctx)
    };
    if w.appends && inner.tier < Tier::Irreversible && !takes_any_arguments(first) {
        inner.raise(Tier::Irreversible, || {
            format!(
                "{} appends words from its input to {}, which has options that write files or \
                 run programs; it needs approval",
                call.shown,
                first.text()
            )
        });
    }
    if inner.tier >= v.tier {
        v.tier = inner.tier;
        v.reason = inner.reason;
    }
    v.writes.extend(inner.writes);
    v
}

/// Whether every option and operand `program` could be given is harmless: a plain read-tier
/// entry without option rules or written operands (`xargs grep`, but not `xargs sort`, whose
/// input could add `-o FILE`).
fn takes_any_arguments(program: &Word) -> bool {
    let text = program.text();
    let name = match text.rsplit_once('/') {
        Some((dir, base)) if super::judge::BIN_DIRS.contains(&dir) => base,
        Some(_) => return false,
        None => text,
    };
    super::judge::lookup(name).is_some_and(|e| {
        e.tier == Tier::Read
            && matches!(e.kind, Kind::Plain)
            && e.rules.is_empty()
            && matches!(e.writes, Writes::None)
    })
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
    if let [only] = args
        && matches!(only.text(), "--version" | "-V" | "--help" | "-h")
    {
        return Verdict::new(
            Tier::Read,
            format!("{shown} {}: prints its version or usage", only.text()),
        );
    }
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
        && let Some((tier, why)) = dangerous_mode(m)
    {
        v.raise(tier, || format!("{} {m}: {why}", call.shown));
    }
    for f in files {
        v.write(&call.shown, f);
    }
    v
}

/// World-writable modes need approval (inside the roots they are the user's call); setuid and
/// setgid bits are never set.
fn dangerous_mode(mode: &str) -> Option<(Tier, &'static str)> {
    const WORLD: (Tier, &str) =
        (Tier::Irreversible, "makes files writable by every user; it needs approval");
    const SUID: (Tier, &str) =
        (Tier::Blocked, "sets the setuid/setgid bit, letting others run the file as its owner");
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

/// `mount`, `sysctl`, `iptables`, `fdisk`, ...: blocked, except the forms that only list.
pub(crate) fn admin(call: &Call<'_>) -> Verdict {
    let args: Vec<&str> = call.args.iter().map(Word::text).collect();
    let letters_in = |a: &str, allowed: &str| {
        a.strip_prefix('-')
            .is_some_and(|l| !l.starts_with('-') && l.chars().all(|c| allowed.contains(c)))
    };
    let read = match call.shown.as_str() {
        "mount" => args.iter().all(|a| matches!(*a, "-l" | "--show-labels")),
        "sysctl" => {
            !args.is_empty()
                && args.iter().all(|a| {
                    !a.contains('=')
                        && (!a.starts_with('-')
                            || letters_in(a, "anNeqbAx")
                            || matches!(*a, "--all" | "--values" | "--names" | "--binary"))
                })
        }
        "iptables" | "ip6tables" => {
            let lists = args.iter().any(|a| {
                matches!(*a, "--list" | "--list-rules")
                    || (letters_in(a, "LSnvxt") && a.contains(['L', 'S']))
            });
            let mut ok = true;
            let mut i = 0;
            while i < args.len() {
                let a = args[i];
                if a == "-t" || a == "--table" {
                    i += 1;
                } else if a.starts_with('-') {
                    ok &= letters_in(a, "LSnvx")
                        || matches!(a, "--list" | "--list-rules" | "--numeric" | "--verbose")
                        || matches!(a, "--exact" | "--line-numbers");
                }
                i += 1;
            }
            lists && ok
        }
        "nft" => args.iter().find(|a| !a.starts_with('-')) == Some(&"list"),
        "ufw" => matches!(args.as_slice(), ["status"] | ["status", "verbose" | "numbered"]),
        "firewall-cmd" => {
            !args.is_empty()
                && args.iter().all(|a| {
                    a.starts_with("--list-")
                        || a.starts_with("--get-")
                        || a.starts_with("--query-")
                        || a.starts_with("--zone=")
                        || *a == "--state"
                })
        }
        "swapon" => {
            !args.is_empty()
                && args.iter().all(|a| matches!(*a, "--show" | "-s" | "--summary" | "--bytes"))
        }
        "fdisk" | "sfdisk" => {
            args.first().is_some_and(|a| matches!(*a, "-l" | "--list" | "-d" | "--dump"))
                && args[1..].iter().all(|a| !a.starts_with('-'))
        }
        _ => false,
    };
    if read {
        return Verdict::new(
            Tier::Read,
            format!("{}: only shows the system configuration", line(call)),
        );
    }
    Verdict::new(Tier::Blocked, format!("{}: {}", call.shown, call.entry.does))
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
    v.raise(Tier::Irreversible, || format!("{}: {}", call.shown, call.entry.does));
    v
}

/// `less`, `more`: read, unless a `+command` can run a shell or an option writes a log file.
pub(crate) fn pager(call: &Call<'_>) -> Verdict {
    let args = call.args;
    let mut v = Verdict::new(Tier::Read, format!("{}: {}", call.shown, call.entry.does));
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text();
        i += 1;
        if let Some(cmd) = t.strip_prefix('+') {
            let rest = cmd.trim_start_matches(|c: char| c.is_ascii_digit());
            let harmless = rest.starts_with(['/', '?'])
                || matches!(rest, "" | "G" | "g" | "F" | "p" | "%" | "P");
            if !harmless {
                v.raise(Tier::Irreversible, || {
                    format!(
                        "{} {t}: a start-up command can run shell commands or write files",
                        call.shown
                    )
                });
            }
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, val)) => (n, Some(val.to_owned())),
                None => (long, None),
            };
            if name.eq_ignore_ascii_case("log-file") {
                let value = value.or_else(|| {
                    i += 1;
                    args.get(i - 1).map(|w| w.text().to_owned())
                });
                v.write_text(&format!("{} --{name}", call.shown), value.as_deref().unwrap_or(""));
            }
            continue;
        }
        if t.len() < 2 || !t.starts_with('-') {
            continue;
        }
        for (at, c) in t[1..].char_indices() {
            if !"bhjkpPtTxyz#DoO".contains(c) {
                continue;
            }
            let rest = &t[1 + at + c.len_utf8()..];
            let value = if rest.is_empty() {
                i += 1;
                args.get(i - 1).map_or("", |w| w.text())
            } else {
                rest
            };
            if c == 'o' || c == 'O' {
                v.write_text(&format!("{} -{c}", call.shown), value);
            }
            break;
        }
    }
    v
}

/// `hostname`: prints the name; with an operand or `-F`/`-b` it sets it.
pub(crate) fn hostname(call: &Call<'_>) -> Verdict {
    let sets = call.args.iter().any(|a| {
        let t = a.text();
        !t.starts_with('-') || matches!(t, "-F" | "--file" | "-b" | "--boot")
    });
    if sets {
        return Verdict::new(
            Tier::Irreversible,
            format!("{}: sets the machine's host name", line(call)),
        );
    }
    Verdict::new(Tier::Read, format!("{}: {}", call.shown, call.entry.does))
}

/// The first option, for programs whose mode is an option (`dpkg -l`, `pacman -Q`).
fn mode_is(call: &Call<'_>, read: &[&str]) -> bool {
    let first = call.args.iter().map(Word::text).find(|t| t.starts_with('-'));
    first.is_some_and(|t| {
        read.iter().any(|r| t == *r || (r.len() == 2 && !t.starts_with("--") && t.starts_with(r)))
    }) && call.args.iter().all(|a| !matches!(a.text(), "-i" | "--install" | "-r" | "-P"))
}

/// `dpkg`, `dpkg-query`: its query modes only read.
pub(crate) fn dpkg(call: &Call<'_>) -> Verdict {
    const READ: &[&str] = &[
        "-l",
        "--list",
        "-L",
        "--listfiles",
        "-s",
        "--status",
        "-S",
        "--search",
        "-p",
        "--print-avail",
        "--get-selections",
        "--print-architecture",
        "--print-foreign-architectures",
        "-c",
        "--contents",
        "-I",
        "--info",
        "-f",
        "--field",
        "-W",
        "--show",
        "--version",
        "--help",
        "--compare-versions",
    ];
    if mode_is(call, READ) {
        return Verdict::new(Tier::Read, format!("{}: shows package information", line(call)));
    }
    Verdict::new(Tier::Irreversible, format!("{}: {}", call.shown, call.entry.does))
}

/// `rpm`: `-q` queries only read.
pub(crate) fn rpm(call: &Call<'_>) -> Verdict {
    if mode_is(call, &["-q", "--query", "--version", "--help"])
        && !call.args.iter().any(|a| a.text().starts_with("--dbpath"))
    {
        return Verdict::new(Tier::Read, format!("{}: queries installed packages", line(call)));
    }
    Verdict::new(Tier::Irreversible, format!("{}: {}", call.shown, call.entry.does))
}

/// `pacman -Q…`, `pacman -Ss`, `nix-env -q`: queries; everything else installs or upgrades.
pub(crate) fn pacman(call: &Call<'_>) -> Verdict {
    let first = call.args.iter().map(Word::text).find(|t| t.starts_with('-')).unwrap_or("");
    let letters = first.strip_prefix('-').filter(|l| !l.starts_with('-')).unwrap_or("");
    let read = match letters.chars().next() {
        Some('Q' | 'q' | 'T' | 'V' | 'h') => true,
        Some('S' | 'F') => {
            letters.len() > 1 && !letters.contains(['y', 'u', 'c', 'w']) && call.shown == "pacman"
        }
        _ => matches!(first, "--query" | "--version" | "--help"),
    };
    if read {
        return Verdict::new(Tier::Read, format!("{}: queries packages", line(call)));
    }
    Verdict::new(Tier::Irreversible, format!("{}: {}", call.shown, call.entry.does))
}

/// `cargo tree`, `cargo metadata`: read with `--frozen` (or `--offline --locked`).
pub(crate) fn cargo_offline(call: &Call<'_>) -> Verdict {
    let has = |o: &str| call.args.iter().any(|a| a.text() == o);
    if has("--frozen") || (has("--offline") && has("--locked")) {
        return Verdict::new(
            Tier::Read,
            format!("{} --frozen: reads the locked dependency graph", call.shown),
        );
    }
    Verdict::new(
        Tier::Irreversible,
        format!("{}: {} (add --frozen to only read)", call.shown, call.entry.does),
    )
}

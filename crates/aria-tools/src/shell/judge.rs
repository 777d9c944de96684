//! The engine that applies the table in `rules.rs` to one argv: option parsing, per-argument
//! rules, written paths, wrappers and interpreters. Programs whose arguments need real
//! understanding (rm, chmod, find, sed, awk, git, ...) have analyzers in `analyze.rs` and
//! `git.rs`, referenced from the same table.

use std::collections::HashMap;
use std::sync::OnceLock;

use aria_api::Tier;

use super::ast::{Assignment, Word};
use super::env_rules::env_rule;
use super::rules::{Arg, Entry, Kind, Writes, programs};

/// The tier of one part of a command line and the human reason that decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub tier: Tier,
    pub reason: String,
    /// Paths the command writes (operands of `touch`, `cp`'s destination, `of=` of `dd`, ...),
    /// as written; the executor checks them with the path guard.
    pub writes: Vec<String>,
}

impl Verdict {
    pub fn new(tier: Tier, reason: impl Into<String>) -> Verdict {
        Verdict { tier, reason: reason.into(), writes: Vec::new() }
    }

    /// Raises the tier; the reason changes only when the tier strictly increases, so the first
    /// cause of the highest tier is the one reported.
    pub fn raise(&mut self, tier: Tier, reason: impl FnOnce() -> String) {
        if tier > self.tier {
            self.tier = tier;
            self.reason = reason();
        }
    }

    /// Records a written path: at least a recoverable write, blocked in system locations.
    /// `/dev/null`, `/dev/stdout` and the like change nothing.
    pub fn write(&mut self, who: &str, path: &Word) {
        let text = path.text().to_owned();
        if HARMLESS_DEVICES.contains(&text.as_str()) {
            return;
        }
        if let Some(area) = system_area(&text) {
            self.raise(Tier::Blocked, || {
                format!("{who} writes {text}, {area}: a system location ARIA never changes")
            });
        } else if path.has_variable() {
            self.raise(Tier::Irreversible, || {
                format!("{who} writes {text}, a path that depends on a variable ARIA cannot see")
            });
        } else {
            self.raise(Tier::RecoverableWrite, || format!("{who} writes {text}"));
        }
        self.writes.push(text);
    }
}

impl Verdict {
    /// [`Verdict::write`] for a path known only as text (an option's value): `$` in it means
    /// an expansion ARIA did not perform.
    pub fn write_text(&mut self, who: &str, text: &str) {
        if text.contains(['$', '`']) {
            self.raise(Tier::Irreversible, || {
                format!("{who} writes {text}, a path that depends on a variable ARIA cannot see")
            });
            self.writes.push(text.to_owned());
            return;
        }
        self.write(who, &Word::literal(text));
    }
}

/// Where a judged command's standard input comes from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx {
    /// Stdin is the output of an earlier command in the pipeline.
    pub piped: bool,
    /// Nesting of wrappers and `sh -c` scripts, bounded so hostile input cannot recurse forever.
    pub depth: u8,
}

const MAX_DEPTH: u8 = 8;

impl Ctx {
    pub fn deeper(self) -> Option<Ctx> {
        (self.depth < MAX_DEPTH).then_some(Ctx { depth: self.depth + 1, ..self })
    }
}

/// The words an analyzer judges, with the name it should show.
#[derive(Debug)]
pub(crate) struct Call<'a> {
    /// How the program is named in reasons (`rm`, `git push`).
    pub shown: String,
    pub entry: &'static Entry,
    pub args: &'a [Word],
    pub ctx: Ctx,
}

/// System directories: writing inside them is blocked. `/` itself too.
const SYSTEM_DIRS: &[&str] = &[
    "/etc",
    "/boot",
    "/dev",
    "/proc",
    "/sys",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/root",
    "/var/lib",
    "/var/spool",
    "/var/log",
    "/snap",
    "/efi",
];
/// Device files that are fine to write.
const HARMLESS_DEVICES: &[&str] =
    &["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/1", "/dev/fd/2"];

/// Lexically normalises an absolute path (`//`, `/./`, `..`); relative paths stay relative.
pub(crate) fn normalize(path: &str) -> Option<String> {
    if !path.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

/// `Some("under /etc")` when `path` is `/` or inside a system directory.
pub(crate) fn system_area(path: &str) -> Option<String> {
    let norm = normalize(path)?;
    if HARMLESS_DEVICES.contains(&norm.as_str()) {
        return None;
    }
    if norm == "/" {
        return Some("the root directory".to_owned());
    }
    SYSTEM_DIRS
        .iter()
        .find(|d| norm == **d || norm.starts_with(&format!("{d}/")))
        .map(|d| format!("under {d}"))
}

/// Directories whose programs are judged by their name.
pub(crate) const BIN_DIRS: &[&str] =
    &["/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin"];

fn table() -> &'static HashMap<&'static str, &'static Entry> {
    static TABLE: OnceLock<HashMap<&'static str, &'static Entry>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut map = HashMap::new();
        for entry in programs() {
            for name in entry.names {
                map.entry(*name).or_insert(entry);
            }
        }
        map
    })
}

/// The table entry for a program name (`mkfs.ext4` finds `mkfs.*`).
pub(crate) fn lookup(name: &str) -> Option<&'static Entry> {
    if let Some(e) = table().get(name) {
        return Some(e);
    }
    let (stem, _) = name.split_once('.')?;
    table().get(format!("{stem}.*").as_str()).copied()
}

/// Judges `NAME=value ... program args...`.
pub(crate) fn judge_argv(env: &[Assignment], words: &[Word], ctx: Ctx) -> Verdict {
    let mut v = Verdict::new(Tier::Read, String::new());
    for a in env {
        judge_env(&mut v, &a.name, a.value.text());
    }
    let Some((program, args)) = words.split_first() else {
        v.raise(Tier::Irreversible, || "no program given".to_owned());
        return v;
    };
    let mut inner = judge_program(program, args, ctx);
    // Environment rules outrank the program only when strictly more dangerous.
    if v.tier > inner.tier {
        inner.tier = v.tier;
        inner.reason = v.reason;
    }
    inner
}

pub(crate) fn judge_env(v: &mut Verdict, name: &str, value: &str) {
    if let Some((tier, why)) = env_rule(name, value) {
        v.raise(tier, || format!("{name}=…: {why}"));
    }
}

fn judge_program(program: &Word, args: &[Word], ctx: Ctx) -> Verdict {
    let text = program.text();
    if program.needs_expansion() {
        return Verdict::new(
            Tier::Blocked,
            format!(
                "the program name {text} comes from an expansion, so ARIA cannot know what would run"
            ),
        );
    }
    let (name, entry) = match text.rsplit_once('/') {
        None => (text, lookup(text)),
        Some((dir, base)) => {
            let entry = lookup(base);
            let dir = if dir.is_empty() { "/" } else { dir };
            match entry {
                Some(e) if e.tier == Tier::Blocked => (base, Some(e)),
                Some(e) if BIN_DIRS.contains(&dir) => (base, Some(e)),
                _ => {
                    return Verdict::new(
                        Tier::Irreversible,
                        format!(
                            "{text} runs a program file ARIA cannot inspect; it needs approval"
                        ),
                    );
                }
            }
        }
    };
    let Some(entry) = entry else {
        return Verdict::new(
            Tier::Irreversible,
            format!("{name} is not a program ARIA knows, so it needs approval"),
        );
    };
    judge_entry(&Call { shown: name.to_owned(), entry, args, ctx })
}

/// Applies one table entry to its arguments.
pub(crate) fn judge_entry(call: &Call<'_>) -> Verdict {
    let entry = call.entry;
    let base = || Verdict::new(entry.tier, format!("{}: {}", call.shown, entry.does));
    match &entry.kind {
        Kind::Plain => {
            let mut v = base();
            let items = options(call.args, entry);
            apply_rules(&mut v, &call.shown, entry, &items);
            apply_writes(&mut v, &call.shown, entry, &items);
            v
        }
        Kind::Sub { subs, none, other } => {
            let (globals, sub) = options_until_operand(call.args, entry);
            let mut v = match sub {
                None => Verdict::new(
                    *none,
                    format!("{} without a subcommand only prints information", call.shown),
                ),
                Some((sub, rest)) => {
                    let shown = format!("{} {}", call.shown, sub.text());
                    match subs.iter().find(|s| s.names.contains(&sub.text())) {
                        Some(s) => {
                            judge_entry(&Call { shown, entry: s, args: rest, ctx: call.ctx })
                        }
                        None => Verdict::new(*other, format!("{shown}: {}", entry.does)),
                    }
                }
            };
            apply_rules(&mut v, &call.shown, entry, &globals);
            v
        }
        Kind::Special(analyze) => analyze(call),
        Kind::Wrapper(w) => super::analyze::wrapper(call, w),
        Kind::Interp(i) => super::analyze::interpreter(call, i),
    }
}

/// One parsed option or operand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item<'a> {
    /// `-x`, `--long`, with its value when the option takes one.
    Opt {
        name: String,
        value: Option<String>,
    },
    Operand(&'a Word),
}

impl Item<'_> {
    pub fn is(&self, opt: &str) -> bool {
        matches!(self, Item::Opt { name, .. } if name == opt)
    }
}

fn takes_value(entry: &Entry, name: &str) -> bool {
    entry.values.contains(&name)
        || entry.rules.iter().any(|r| r.opt == name && !matches!(r.arg, Arg::Flag))
}

/// `--in-pl` means `--in-place` to GNU getopt: an unambiguous prefix of a known long option.
fn canonical_long<'e>(entry: &'e Entry, name: &'e str) -> &'e str {
    if name.len() < 4 {
        return name;
    }
    let known = entry.rules.iter().map(|r| r.opt).chain(entry.values.iter().copied());
    let mut found = None;
    for k in known {
        if k == name {
            return k;
        }
        if k.starts_with("--") && k.starts_with(name) && found.is_none() {
            found = Some(k);
        }
    }
    found.unwrap_or(name)
}

/// Parses all options and operands (GNU style: options may follow operands; `--` ends them).
pub(crate) fn options<'a>(args: &'a [Word], entry: &Entry) -> Vec<Item<'a>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        i = option_at(args, i, entry, &mut out);
    }
    out
}

/// Options before the first operand, then that operand and the words after it.
fn options_until_operand<'a>(
    args: &'a [Word],
    entry: &Entry,
) -> (Vec<Item<'a>>, Option<(&'a Word, &'a [Word])>) {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text();
        if t == "--" {
            return (out, args.get(i + 1).map(|w| (w, &args[i + 2..])));
        }
        if !t.starts_with('-') || t == "-" {
            return (out, Some((&args[i], &args[i + 1..])));
        }
        i = option_at(args, i, entry, &mut out);
    }
    (out, None)
}

/// Parses the option at `args[i]` into `out`; returns the index of the next word.
pub(crate) fn option_at<'a>(
    args: &'a [Word],
    i: usize,
    entry: &Entry,
    out: &mut Vec<Item<'a>>,
) -> usize {
    let t = args[i].text();
    if t == "--" {
        out.extend(args[i + 1..].iter().map(Item::Operand));
        return args.len();
    }
    if let Some(long) = t.strip_prefix("--") {
        let (name, inline) = match long.split_once('=') {
            Some((n, v)) => (&t[..2 + n.len()], Some(v.to_owned())),
            None => (t, None),
        };
        let name = canonical_long(entry, name).to_owned();
        if inline.is_none() && takes_value(entry, &name) {
            let value = args.get(i + 1).map(|w| w.text().to_owned());
            out.push(Item::Opt { name, value });
            return i + 2;
        }
        out.push(Item::Opt { name, value: inline });
        return i + 1;
    }
    if t.len() > 1 && t.starts_with('-') {
        let cluster = &t[1..];
        for (at, c) in cluster.char_indices() {
            let name = format!("-{c}");
            if takes_value(entry, &name) {
                let rest = &cluster[at + c.len_utf8()..];
                if !rest.is_empty() {
                    out.push(Item::Opt { name, value: Some(rest.to_owned()) });
                    return i + 1;
                }
                out.push(Item::Opt { name, value: args.get(i + 1).map(|w| w.text().to_owned()) });
                return i + 2;
            }
            out.push(Item::Opt { name, value: None });
        }
        return i + 1;
    }
    out.push(Item::Operand(&args[i]));
    i + 1
}

pub(crate) fn apply_rules(v: &mut Verdict, shown: &str, entry: &Entry, items: &[Item<'_>]) {
    for item in items {
        let Item::Opt { name, value } = item else { continue };
        for rule in entry.rules.iter().filter(|r| r.opt == name) {
            let value_text = value.as_deref().unwrap_or("");
            let hit = match rule.arg {
                Arg::Flag | Arg::Value => true,
                Arg::NotOneOf(set) => !set.iter().any(|s| s.eq_ignore_ascii_case(value_text)),
                Arg::Path => {
                    v.write_text(&format!("{shown} {name}"), value_text);
                    !HARMLESS_DEVICES.contains(&value_text)
                }
            };
            if hit {
                let shown_opt = match value {
                    Some(val) => format!("{name} {val}"),
                    None => name.clone(),
                };
                v.raise(rule.tier, || format!("{shown} {shown_opt}: {}", rule.why));
            }
        }
    }
}

pub(crate) fn operands<'a>(items: &[Item<'a>]) -> Vec<&'a Word> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Operand(w) => Some(*w),
            Item::Opt { .. } => None,
        })
        .collect()
}

fn apply_writes(v: &mut Verdict, shown: &str, entry: &Entry, items: &[Item<'_>]) {
    let ops = operands(items);
    let target_dir = items.iter().find_map(|i| match i {
        Item::Opt { name, value: Some(val) } if name == "-t" || name == "--target-directory" => {
            Some(Word::literal(val))
        }
        _ => None,
    });
    let written: Vec<Word> = match entry.writes {
        Writes::None => Vec::new(),
        Writes::All => ops.into_iter().cloned().collect(),
        Writes::AfterFirst => ops.into_iter().skip(1).cloned().collect(),
        Writes::Last => match target_dir {
            Some(dir) => vec![dir],
            None if ops.len() >= 2 => ops.last().map(|w| (*w).clone()).into_iter().collect(),
            None => Vec::new(),
        },
    };
    for w in &written {
        v.write(shown, w);
    }
}

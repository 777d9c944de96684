//! `git`: global options (`-c`, `--config-env` and `--exec-path` can make git run programs),
//! then a table of subcommands judged like any other program.

use aria_api::Tier;

use super::ast::Word;
use super::judge::{Call, Item, Verdict, apply_rules, judge_entry, operands, options};
use super::rules::Entry;

const R: Tier = Tier::Read;
const W: Tier = Tier::RecoverableWrite;
const I: Tier = Tier::Irreversible;

const fn e(names: &'static [&'static str], tier: Tier, does: &'static str) -> Entry {
    Entry {
        names,
        tier,
        does,
        rules: &[],
        values: &[],
        writes: super::rules::Writes::None,
        kind: super::rules::Kind::Plain,
    }
}

const fn rule(opt: &'static str, tier: Tier, why: &'static str) -> super::rules::Rule {
    super::rules::Rule { opt, arg: super::rules::Arg::Flag, tier, why }
}
const fn valued(opt: &'static str, tier: Tier, why: &'static str) -> super::rules::Rule {
    super::rules::Rule { opt, arg: super::rules::Arg::Value, tier, why }
}

const LOG_RULES: &[super::rules::Rule] = &[
    valued("--output", W, "writes the output to a file"),
    rule("--ext-diff", I, "runs the external diff program from the configuration"),
];

/// Git subcommands. Several need a look at their operands; those use analyzers below.
static SUBS: &[Entry] = &[
    Entry {
        rules: LOG_RULES,
        ..e(
            &[
                "log",
                "diff",
                "show",
                "whatchanged",
                "diff-tree",
                "diff-files",
                "diff-index",
                "range-diff",
            ],
            R,
            "shows history and changes",
        )
    },
    e(
        &[
            "status",
            "blame",
            "annotate",
            "shortlog",
            "describe",
            "rev-parse",
            "rev-list",
            "ls-files",
            "ls-tree",
            "ls-remote",
            "cat-file",
            "grep",
            "name-rev",
            "merge-base",
            "count-objects",
            "fsck",
            "help",
            "version",
            "var",
            "check-ignore",
            "check-attr",
            "check-ref-format",
            "for-each-ref",
            "show-ref",
            "show-branch",
            "cherry",
            "verify-commit",
            "verify-tag",
            "get-tar-commit-id",
        ],
        R,
        "shows repository state",
    ),
    Entry {
        rules: &[
            valued("--output", W, "writes the archive to a file"),
            valued("-o", W, "writes the archive to a file"),
        ],
        ..e(&["archive"], R, "writes an archive to standard output")
    },
    e(
        &[
            "add",
            "commit",
            "mv",
            "merge",
            "rebase",
            "cherry-pick",
            "revert",
            "am",
            "apply",
            "init",
            "fetch",
            "pull",
            "clone",
            "switch",
            "notes",
            "format-patch",
            "sparse-checkout",
            "maintenance",
        ],
        W,
        "changes the repository (recoverable from its history and reflog)",
    ),
    Entry {
        rules: &[
            rule("--hard", I, "throws away uncommitted changes"),
            rule("--keep", W, "moves the branch, keeping local changes"),
        ],
        ..e(&["reset"], W, "moves the branch or unstages changes")
    },
    Entry {
        rules: &[
            rule("-f", I, "drops uncommitted changes"),
            rule("--force", I, "drops uncommitted changes"),
        ],
        ..e(&["rm"], W, "removes files from the repository (recoverable from history)")
    },
    e(&["push"], I, "publishes commits to a remote, where others can see them"),
    e(
        &[
            "gc",
            "prune",
            "filter-branch",
            "filter-repo",
            "update-ref",
            "replace",
            "difftool",
            "mergetool",
            "daemon",
            "instaweb",
            "send-email",
            "credential",
            "p4",
            "svn",
        ],
        I,
        "can lose history or run other programs",
    ),
    Entry {
        kind: super::rules::Kind::Special(clean),
        ..e(&["clean"], I, "deletes untracked files, which git cannot restore")
    },
    Entry {
        kind: super::rules::Kind::Special(checkout),
        ..e(&["checkout"], W, "switches branches")
    },
    Entry {
        kind: super::rules::Kind::Special(restore),
        ..e(&["restore"], I, "discards uncommitted changes to files")
    },
    Entry {
        kind: super::rules::Kind::Special(branch_like),
        values: &[
            "--contains",
            "--no-contains",
            "--merged",
            "--no-merged",
            "--points-at",
            "--sort",
            "--format",
            "-u",
            "--set-upstream-to",
            "-m",
            "--message",
            "-F",
            "--file",
        ],
        ..e(&["branch", "tag"], R, "lists branches or tags")
    },
    Entry { kind: super::rules::Kind::Special(config), ..e(&["config"], R, "reads configuration") },
    Entry {
        kind: super::rules::Kind::Sub { subs: STASH, none: W, other: W },
        ..e(&["stash"], W, "saves uncommitted changes on the stash")
    },
    Entry {
        kind: super::rules::Kind::Sub { subs: REMOTE, none: R, other: W },
        ..e(&["remote"], R, "lists remotes")
    },
    Entry {
        kind: super::rules::Kind::Sub { subs: REFLOG, none: R, other: R },
        ..e(&["reflog"], R, "shows the reflog")
    },
    Entry {
        kind: super::rules::Kind::Sub { subs: BISECT, none: W, other: W },
        ..e(&["bisect"], W, "searches history for a change")
    },
    Entry {
        kind: super::rules::Kind::Sub { subs: SUBMODULE, none: R, other: W },
        ..e(&["submodule"], W, "manages submodules")
    },
    Entry {
        kind: super::rules::Kind::Sub { subs: WORKTREE, none: R, other: W },
        ..e(&["worktree"], W, "manages worktrees")
    },
];

static STASH: &[Entry] = &[
    e(&["list", "show"], R, "shows stashed changes"),
    e(&["drop", "clear"], I, "deletes stashed changes for good"),
    e(
        &["push", "save", "pop", "apply", "branch", "create", "store"],
        W,
        "moves changes to or from the stash",
    ),
];
static REMOTE: &[Entry] = &[
    e(&["show", "get-url", "-v", "--verbose"], R, "shows remotes"),
    e(
        &[
            "add",
            "rename",
            "remove",
            "rm",
            "set-url",
            "set-head",
            "set-branches",
            "prune",
            "update",
        ],
        W,
        "changes the remotes",
    ),
];
static REFLOG: &[Entry] = &[
    e(&["show", "list", "exists"], R, "shows the reflog"),
    e(
        &["expire", "delete", "drop"],
        I,
        "deletes reflog entries, the record that makes history recoverable",
    ),
];
static BISECT: &[Entry] = &[
    e(&["run"], I, "runs a command on each step"),
    e(&["log", "visualize", "view"], R, "shows the bisect state"),
];
static SUBMODULE: &[Entry] = &[
    e(&["status", "summary"], R, "shows submodules"),
    e(&["foreach"], I, "runs a command in every submodule"),
];
static WORKTREE: &[Entry] = &[
    e(&["list"], R, "lists worktrees"),
    e(&["remove", "prune"], I, "deletes worktrees and their uncommitted changes"),
];

/// `-c` keys trusted to only change how output looks. Everything else might run a program
/// (`core.pager`, `core.sshCommand`, `alias.*`, `diff.*.textconv`, ...).
const TRUSTED_KEYS: &[&str] = &[
    "color.",
    "core.quotepath",
    "core.abbrev",
    "log.",
    "user.name",
    "user.email",
    "advice.",
    "init.defaultbranch",
    "column.",
    "i18n.",
    "merge.conflictstyle",
    "pull.rebase",
    "diff.renames",
    "diff.algorithm",
    "status.",
    "commit.gpgsign",
    "tag.gpgsign",
    "safe.directory",
];

fn key_trusted(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    TRUSTED_KEYS.iter().any(|t| if t.ends_with('.') { key.starts_with(t) } else { key == *t })
}

fn untrusted_key(v: &mut Verdict, how: &str, key: &str) {
    if !key_trusted(key) {
        v.raise(Tier::Irreversible, || {
            format!("git {how} {key}: this setting can make git run a program; it needs approval")
        });
    }
}

/// `git [global options] subcommand args...`
pub(crate) fn git(call: &Call<'_>) -> Verdict {
    let args = call.args;
    let mut v = Verdict::new(Tier::Read, "git without a subcommand only prints information");
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text();
        if !t.starts_with('-') || t == "-" {
            break;
        }
        let (name, inline) = match t.split_once('=') {
            Some((n, val)) if t.starts_with("--") => (n, Some(val)),
            _ => (t, None),
        };
        let takes = matches!(
            name,
            "-C" | "-c"
                | "--git-dir"
                | "--work-tree"
                | "--namespace"
                | "--super-prefix"
                | "--config-env"
                | "--list-cmds"
        );
        let value = match (inline, takes) {
            (Some(val), _) => Some(val),
            (None, true) => {
                i += 1;
                args.get(i).map(Word::text)
            }
            (None, false) => None,
        };
        match (name, value) {
            ("-c" | "--config-env", Some(val)) => {
                let key = val.split('=').next().unwrap_or(val);
                untrusted_key(&mut v, name, key);
            }
            ("--exec-path", Some(dir)) => v.raise(Tier::Irreversible, || {
                format!("git --exec-path={dir}: makes git run its commands from another directory")
            }),
            _ => {}
        }
        i += 1;
    }
    let Some(sub) = args.get(i) else { return v };
    let shown = format!("git {}", sub.text());
    let mut inner = match SUBS.iter().find(|e| e.names.contains(&sub.text())) {
        Some(entry) => judge_entry(&Call { shown, entry, args: &args[i + 1..], ctx: call.ctx }),
        None => Verdict::new(
            Tier::Irreversible,
            format!("{shown}: not a git command ARIA knows (an alias can run any program)"),
        ),
    };
    // Global-option reasons win ties: they are the surprising part.
    if v.tier >= inner.tier && v.tier > Tier::Read {
        inner.tier = v.tier;
        inner.reason = v.reason;
    }
    inner
}

fn base(call: &Call<'_>, tier: Tier, does: &str) -> Verdict {
    Verdict::new(tier, format!("{}: {does}", call.shown))
}

fn clean(call: &Call<'_>) -> Verdict {
    let items = options(call.args, call.entry);
    if items.iter().any(|i| i.is("-n") || i.is("--dry-run")) {
        return base(call, R, "only shows what would be deleted");
    }
    base(call, I, call.entry.does)
}

fn checkout(call: &Call<'_>) -> Verdict {
    let items = options(call.args, call.entry);
    let has_dashdash = call.args.iter().any(|w| w.text() == "--");
    let ops = operands(&items);
    let mut v = base(call, W, call.entry.does);
    if items.iter().any(|i| i.is("-b") || i.is("-B") || i.is("--orphan")) {
        return base(call, W, "creates and switches to a branch");
    }
    let discards = has_dashdash
        || ops.len() > 1
        || ops.iter().any(|w| w.text() == "." || w.has_glob())
        || items.iter().any(|i| i.is("-f") || i.is("--force") || i.is("-p") || i.is("--patch"));
    if discards {
        v.raise(I, || format!("{}: overwrites files, discarding uncommitted changes", call.shown));
    }
    v
}

fn restore(call: &Call<'_>) -> Verdict {
    let items = options(call.args, call.entry);
    let staged = items.iter().any(|i| i.is("--staged") || i.is("-S"));
    let worktree = items.iter().any(|i| i.is("--worktree") || i.is("-W"));
    if staged && !worktree {
        return base(call, W, "unstages changes (the files keep them)");
    }
    base(call, I, call.entry.does)
}

fn branch_like(call: &Call<'_>) -> Verdict {
    let items = options(call.args, call.entry);
    let mut v = base(call, R, call.entry.does);
    let listing = items.iter().any(|i| {
        [
            "-l",
            "--list",
            "-a",
            "--all",
            "-r",
            "--remotes",
            "--contains",
            "--merged",
            "--no-merged",
            "--show-current",
            "--points-at",
            "-v",
            "-n",
        ]
        .iter()
        .any(|o| i.is(o))
    });
    let force =
        ["-D", "-f", "--force", "-M", "-C"].into_iter().find(|o| items.iter().any(|i| i.is(o)));
    let delete = items.iter().any(|i| i.is("-d") || i.is("--delete"));
    if let Some(opt) = force {
        v.raise(I, || format!("{} {opt}: can delete or overwrite unmerged work", call.shown));
    } else if delete {
        v.raise(W, || format!("{} -d: deletes a merged branch or a tag", call.shown));
    } else if !listing && (!operands(&items).is_empty() || items.iter().any(|i| matches!(i, Item::Opt { name, .. } if name == "-m" || name == "-c" || name == "-u" || name == "--set-upstream-to"))) {
        v.raise(W, || format!("{}: creates, renames or configures a branch or tag", call.shown));
    }
    apply_rules(&mut v, &call.shown, call.entry, &items);
    v
}

/// `git config`: reads, or sets a key (irreversible when the key can make git run programs).
fn config(call: &Call<'_>) -> Verdict {
    let items = options(call.args, call.entry);
    let ops = operands(&items);
    let reading = items.iter().any(|i| {
        [
            "--get",
            "--get-all",
            "--get-regexp",
            "--get-urlmatch",
            "-l",
            "--list",
            "--show-origin",
            "--show-scope",
        ]
        .iter()
        .any(|o| i.is(o))
    });
    let changing = items.iter().any(|i| {
        [
            "--unset",
            "--unset-all",
            "--add",
            "--replace-all",
            "--rename-section",
            "--remove-section",
            "-e",
            "--edit",
        ]
        .iter()
        .any(|o| i.is(o))
    });
    // `git config get|set|unset|list ...` (git 2.46 subcommands) or the classic forms.
    let (verb, rest) = match ops.first().map(|w| w.text()) {
        Some(
            verb
            @ ("get" | "list" | "set" | "unset" | "rename-section" | "remove-section" | "edit"),
        ) => (Some(verb), &ops[1..]),
        _ => (None, &ops[..]),
    };
    let sets = match verb {
        Some("get" | "list") => false,
        Some(_) => true,
        None => changing || (!reading && rest.len() >= 2),
    };
    if !sets {
        return base(call, R, "reads configuration");
    }
    let mut v = base(call, W, "changes configuration");
    if let Some(key) = rest.first() {
        untrusted_key(&mut v, "config", key.text());
    }
    v
}

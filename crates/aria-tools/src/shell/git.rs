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
const fn path(opt: &'static str, tier: Tier, why: &'static str) -> super::rules::Rule {
    super::rules::Rule { opt, arg: super::rules::Arg::Path, tier, why }
}
const fn valued(opt: &'static str, tier: Tier, why: &'static str) -> super::rules::Rule {
    super::rules::Rule { opt, arg: super::rules::Arg::Value, tier, why }
}

const LOG_RULES: &[super::rules::Rule] = &[
    path("--output", W, "writes the output to a file"),
    rule("--ext-diff", I, "runs the external diff program from the configuration"),
    rule("--textconv", I, "runs the text conversion programs from the configuration"),
    rule("--show-signature", I, "runs gpg to check signatures"),
    rule("-G", R, "searches changes"),
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
            "shortlog",
            "describe",
            "rev-parse",
            "rev-list",
            "ls-files",
            "ls-tree",
            "name-rev",
            "merge-base",
            "count-objects",
            "version",
            "var",
            "check-ignore",
            "check-attr",
            "check-ref-format",
            "for-each-ref",
            "show-ref",
            "show-branch",
            "cherry",
            "get-tar-commit-id",
        ],
        R,
        "shows repository state",
    ),
    Entry {
        rules: &[
            rule("--textconv", I, "runs the text conversion programs from the configuration"),
            rule("--filters", I, "runs the filter programs from the configuration"),
        ],
        ..e(&["cat-file"], R, "prints repository objects")
    },
    Entry {
        rules: &[
            rule("-O", I, "opens the matching files in a pager or editor"),
            rule("--open-files-in-pager", I, "opens the matching files in a pager or editor"),
            rule("--textconv", I, "runs the text conversion programs from the configuration"),
        ],
        values: &["-e", "-f", "-A", "-B", "-C", "-m", "--max-count", "--threads"],
        ..e(&["grep"], R, "searches tracked files")
    },
    Entry {
        rules: LOG_RULES,
        values: &["-L", "-S", "--contents", "--ignore-rev", "--ignore-revs-file"],
        ..e(&["blame", "annotate"], R, "shows who changed each line")
    },
    Entry {
        rules: &[rule("--lost-found", W, "writes dangling objects into .git/lost-found")],
        ..e(&["fsck"], R, "checks the repository")
    },
    e(&["verify-commit", "verify-tag"], I, "runs gpg to check signatures"),
    e(
        &["ls-remote", "fetch", "pull", "clone"],
        I,
        "opens a network connection to a remote (data can leave the machine)",
    ),
    Entry { kind: super::rules::Kind::Special(help), ..e(&["help"], R, "prints help") },
    Entry {
        rules: &[
            path("--output", W, "writes the archive to a file"),
            path("-o", W, "writes the archive to a file"),
            valued("--remote", I, "reaches a remote repository over the network"),
            valued("--exec", I, "runs a program on the remote side"),
        ],
        ..e(&["archive"], R, "writes an archive to standard output")
    },
    e(
        &[
            "add",
            "commit",
            "mv",
            "merge",
            "cherry-pick",
            "revert",
            "am",
            "apply",
            "init",
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
    Entry {
        rules: &[
            valued("-x", I, "runs a command after each commit"),
            valued("--exec", I, "runs a command after each commit"),
            rule("-i", I, "runs the sequence editor"),
            rule("--interactive", I, "runs the sequence editor"),
        ],
        ..e(&["rebase"], W, "rewrites commits (recoverable from the reflog)")
    },
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
    e(&["get-url", "-v", "--verbose"], R, "shows remotes"),
    Entry {
        kind: super::rules::Kind::Special(remote_network),
        ..e(&["show", "update", "prune"], I, "contacts the remote over the network")
    },
    e(
        &["add", "rename", "remove", "rm", "set-url", "set-head", "set-branches"],
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
    e(&["update"], I, "clones or fetches submodules over the network"),
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
    "log.date",
    "log.decorate",
    "log.abbrevcommit",
    "log.follow",
    "log.mailmap",
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
];

/// `key` or `key=value`: trusted keys, and turning signing off.
fn key_trusted(setting: &str) -> bool {
    let (key, value) = setting.split_once('=').unwrap_or((setting, "true"));
    let key = key.to_ascii_lowercase();
    if matches!(key.as_str(), "commit.gpgsign" | "tag.gpgsign" | "log.showsignature") {
        return matches!(value.to_ascii_lowercase().as_str(), "false" | "no" | "off" | "0");
    }
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
            ("-c", Some(val)) => untrusted_key(&mut v, name, val),
            ("--config-env", Some(val)) => {
                // The value comes from an environment variable ARIA does not see.
                let key = val.split('=').next().unwrap_or(val);
                untrusted_key(&mut v, name, &format!("{key}=?"));
            }
            ("-p" | "--paginate", _) => v.raise(Tier::Irreversible, || {
                format!("git {name}: runs the configured pager program")
            }),
            ("--exec-path", Some(dir)) => v.raise(Tier::Irreversible, || {
                format!("git --exec-path={dir}: makes git run its commands from another directory")
            }),
            // Another repository's configuration (core.fsmonitor, core.pager, ...) can make
            // git run its programs; one outside the working directory is not the user's.
            ("-C" | "--git-dir", Some(dir)) if leaves_cwd(dir) => {
                v.raise(Tier::Irreversible, || {
                    format!(
                        "git {name} {dir}: uses a repository outside the working directory, \
                         whose configuration can make git run programs"
                    )
                });
            }
            _ => {}
        }
        i += 1;
    }
    let Some(sub) = args.get(i) else { return v };
    let shown = format!("git {}", sub.text());
    for a in &args[i + 1..] {
        let t = a.text();
        if t == "--help" {
            v.raise(Tier::Irreversible, || {
                format!("{shown} --help: runs man with a pager or a browser")
            });
        }
        let format = t.starts_with("--pretty") || t.starts_with("--format");
        if format && (t.contains("%G") || t.contains("%(signature")) {
            v.raise(Tier::Irreversible, || {
                format!("{shown} {t}: signature placeholders run gpg to check signatures")
            });
        }
    }
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

/// Absolute, home-relative, variable or `..` paths leave the working directory.
fn leaves_cwd(path: &str) -> bool {
    path.starts_with(['/', '~', '$']) || path.split('/').any(|p| p == "..")
}

/// `git help`: prints the command list, or runs man (a pager or browser) for a topic.
fn help(call: &Call<'_>) -> Verdict {
    let items = options(call.args, call.entry);
    let lists = items
        .iter()
        .any(|i| ["-a", "--all", "-g", "--guides", "-c", "--config"].iter().any(|o| i.is(o)));
    if operands(&items).is_empty()
        && !items
            .iter()
            .any(|i| ["-i", "-m", "-w", "--info", "--man", "--web"].iter().any(|o| i.is(o)))
        || lists
    {
        return base(call, R, "prints the list of commands");
    }
    base(call, I, "runs man with a pager or a browser")
}

/// `git remote show|update|prune`: network, except `show -n` and `prune --dry-run`… which
/// still asks the remote; only `-n` stays local.
fn remote_network(call: &Call<'_>) -> Verdict {
    if call.shown.ends_with("show") && call.args.iter().any(|a| a.text() == "-n") {
        return base(call, R, "shows the remote's local configuration");
    }
    base(call, I, call.entry.does)
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
    let signs = ["-s", "--sign", "-u", "--local-user", "--edit-description", "-e", "--edit"]
        .into_iter()
        .find(|o| items.iter().any(|i| i.is(o)));
    if let Some(opt) = signs {
        v.raise(I, || format!("{} {opt}: runs gpg or an editor", call.shown));
    }
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
        ["--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section"]
            .iter()
            .any(|o| i.is(o))
    });
    if items.iter().any(|i| i.is("-e") || i.is("--edit"))
        || ops.first().is_some_and(|w| w.text() == "edit")
    {
        return base(call, I, "runs an editor on the configuration");
    }
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
        let value = rest.get(1).map_or("true", |w| w.text());
        untrusted_key(&mut v, "config", &format!("{}={value}", key.text()));
    }
    if let Some(scope) =
        items.iter().find(|i| i.is("--global") || i.is("--system") || i.is("--file") || i.is("-f"))
    {
        let Item::Opt { name, .. } = scope else { return v };
        v.raise(I, || {
            format!("{} {name}: changes configuration outside the repository", call.shown)
        });
    }
    v
}

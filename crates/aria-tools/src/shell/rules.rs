//! The classifier as data: every program ARIA knows, its tier, and the per-argument rules that
//! raise it. This file is the one place to audit (and extend) what a shell command may do.
//!
//! A program not listed here is never `read`: it needs approval (see `judge.rs`). Programs whose
//! arguments need real understanding point to an analyzer (`analyze.rs`, `git.rs`); wrappers
//! (`env`, `nice`, `timeout`, `xargs`, ...) are judged by the program they run.

use aria_api::Tier;

use super::analyze;
use super::git;
use super::judge::{Call, Verdict};
use super::textprog;

mod system;
use system::{DOCKER, KUBECTL, SYSTEM_PROGRAMS, SYSTEMCTL};

const R: Tier = Tier::Read;
const W: Tier = Tier::RecoverableWrite;
const I: Tier = Tier::Irreversible;
const B: Tier = Tier::Blocked;

/// What an option's value must look like for a rule to apply.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg {
    /// The option takes no value; its presence is enough.
    Flag,
    /// The option takes a value; any value.
    Value,
    /// The option takes a value and the rule applies when it is none of these (any case).
    NotOneOf(&'static [&'static str]),
    /// The option takes a value that names a file the program writes (recorded like a written
    /// operand, so system locations are blocked and the path guard sees it).
    Path,
}

/// An option that raises the tier.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rule {
    pub opt: &'static str,
    pub arg: Arg,
    pub tier: Tier,
    pub why: &'static str,
}

const fn flag(opt: &'static str, tier: Tier, why: &'static str) -> Rule {
    Rule { opt, arg: Arg::Flag, tier, why }
}
const fn value(opt: &'static str, tier: Tier, why: &'static str) -> Rule {
    Rule { opt, arg: Arg::Value, tier, why }
}
const fn path(opt: &'static str, tier: Tier, why: &'static str) -> Rule {
    Rule { opt, arg: Arg::Path, tier, why }
}
const fn not_one_of(
    opt: &'static str,
    set: &'static [&'static str],
    tier: Tier,
    why: &'static str,
) -> Rule {
    Rule { opt, arg: Arg::NotOneOf(set), tier, why }
}

/// Which operands a program writes (checked against system locations and the path guard).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Writes {
    None,
    All,
    /// The destination: the last operand when there are two or more, or `-t DIR`.
    Last,
    AfterFirst,
}

/// How a wrapper finds the command it runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wrap {
    /// Operands before the command (`timeout DURATION cmd`).
    pub skip: usize,
    /// `NAME=value` words before the command are environment assignments (`env`).
    pub assignments: bool,
    /// What runs when no command is given (`xargs` runs `echo`); `None` = needs approval.
    pub default: Option<&'static str>,
    /// A single command word is a shell script (`watch 'ls | wc'` runs it through `sh -c`).
    pub script: bool,
    /// The wrapped command's stdin is not the pipe (`xargs` gives it /dev/null).
    pub detaches_stdin: bool,
    /// Words read from the input are added to the command (`xargs`).
    pub appends: bool,
}

const WRAP: Wrap = Wrap {
    skip: 0,
    assignments: false,
    default: None,
    script: false,
    detaches_stdin: false,
    appends: false,
};

/// Shells and language interpreters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Interp {
    /// A shell: `-c SCRIPT` is parsed and judged like a command line.
    pub shell: bool,
    /// Options whose value is inline code (`python -c`, `node -e`).
    pub code: &'static [&'static str],
    /// Other options that take a value.
    pub values: &'static [&'static str],
}

pub(crate) type Analyzer = fn(&Call<'_>) -> Verdict;

/// How a program's arguments are judged.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// Base tier, raised by `rules` and by written operands.
    Plain,
    /// The first operand is a subcommand looked up in `subs`; `none` applies when there is no
    /// subcommand, `other` when it is unknown.
    Sub {
        subs: &'static [Entry],
        none: Tier,
        other: Tier,
    },
    Special(Analyzer),
    Wrapper(Wrap),
    Interp(Interp),
}

/// One program (or subcommand).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub names: &'static [&'static str],
    pub tier: Tier,
    /// What it does, for reasons: "ls: lists directory contents".
    pub does: &'static str,
    pub rules: &'static [Rule],
    /// Options that take a value without changing the tier (so operands are found correctly).
    pub values: &'static [&'static str],
    pub writes: Writes,
    pub kind: Kind,
}

const fn e(names: &'static [&'static str], tier: Tier, does: &'static str) -> Entry {
    Entry { names, tier, does, rules: &[], values: &[], writes: Writes::None, kind: Kind::Plain }
}

impl Entry {
    const fn rules(self, rules: &'static [Rule]) -> Entry {
        Entry { rules, ..self }
    }
    const fn values(self, values: &'static [&'static str]) -> Entry {
        Entry { values, ..self }
    }
    const fn writes(self, writes: Writes) -> Entry {
        Entry { writes, ..self }
    }
    const fn sub(self, subs: &'static [Entry], none: Tier, other: Tier) -> Entry {
        Entry { kind: Kind::Sub { subs, none, other }, ..self }
    }
    const fn special(self, f: Analyzer) -> Entry {
        Entry { kind: Kind::Special(f), ..self }
    }
    const fn wrap(self, w: Wrap) -> Entry {
        Entry { kind: Kind::Wrapper(w), ..self }
    }
    const fn interp(self, i: Interp) -> Entry {
        Entry { kind: Kind::Interp(i), ..self }
    }
}

const SHELL: Interp =
    Interp { shell: true, code: &[], values: &["-o", "+o", "-O", "+O", "--rcfile", "--init-file"] };

/// Every program ARIA knows: [`PROGRAMS`] (files, text, the environment, changes, deletions)
/// and the network, packages, wrappers, shells and system programs (`rules/system.rs`). Order
/// does not matter; a name appears once.
pub(crate) fn programs() -> impl Iterator<Item = &'static Entry> {
    PROGRAMS.iter().chain(SYSTEM_PROGRAMS)
}

/// The programs that work on files and text, print, or change and delete files.
static PROGRAMS: &[Entry] = &[
    // ---- reading files and directories
    e(&["ls", "dir", "vdir", "exa", "eza"], R, "lists directory contents"),
    e(&["cat", "tac"], R, "prints files"),
    e(&["bat", "batcat"], R, "prints files")
        .values(&[
            "-l",
            "--language",
            "-H",
            "--highlight-line",
            "-r",
            "--line-range",
            "--style",
            "--theme",
            "--tabs",
            "--wrap",
            "-m",
            "--map-syntax",
            "--color",
            "--decorations",
            "--file-name",
            "--diff-context",
            "--terminal-width",
            "--italic-text",
        ])
        .rules(&[
            value("--pager", I, "runs another program as the pager"),
            not_one_of("--paging", &["never", "auto"], I, "runs a pager program"),
            flag("--build", W, "rebuilds the syntax cache"),
            flag("--clear", W, "removes the syntax cache"),
        ]),
    e(&["head", "tail"], R, "prints part of a file").values(&[
        "-n",
        "-c",
        "--lines",
        "--bytes",
        "--pid",
        "-s",
        "--sleep-interval",
        "--max-unchanged-stats",
    ]),
    e(&["less", "more", "most"], R, "pages through a file").special(analyze::pager),
    e(&["wc", "nl", "od", "hexdump", "hd", "strings", "stat"], R, "inspects file contents"),
    e(&["xxd"], R, "prints a hex dump")
        .values(&["-c", "-g", "-l", "-o", "-s", "-n", "-C", "-cols", "-len", "-seek", "-name"])
        .writes(Writes::AfterFirst),
    e(&["file"], R, "identifies file types")
        .rules(&[flag("-C", W, "compiles a magic file, writing a .mgc file")])
        .values(&["-m", "-f", "-F", "-e", "-P", "--magic-file", "--files-from", "--separator"]),
    e(
        &["cut", "tr", "column", "paste", "join", "fold", "fmt", "rev", "expand", "unexpand"],
        R,
        "transforms text to standard output",
    ),
    e(&["sort"], R, "sorts lines to standard output")
        .rules(&[
            path("-o", W, "writes the output to a file"),
            path("--output", W, "writes the output to a file"),
            value("--compress-program", I, "runs a program to compress temporary files"),
        ])
        .values(&[
            "-k",
            "-t",
            "-S",
            "-T",
            "--key",
            "--field-separator",
            "--buffer-size",
            "--temporary-directory",
        ]),
    e(&["uniq"], R, "filters repeated lines")
        .values(&["-f", "-s", "-w"])
        .writes(Writes::AfterFirst),
    e(&["diff", "cmp", "comm"], R, "compares files"),
    e(&["sdiff"], R, "compares files side by side")
        .rules(&[
            path("-o", W, "writes the merged result to a file"),
            path("--output", W, "writes the merged result to a file"),
            value("--diff-program", I, "runs another program to compare"),
        ])
        .values(&["-w", "--width", "-I", "--ignore-matching-lines", "--tabsize"]),
    e(
        &[
            "md5sum",
            "sha1sum",
            "sha224sum",
            "sha256sum",
            "sha384sum",
            "sha512sum",
            "b2sum",
            "cksum",
            "sum",
            "base32",
        ],
        R,
        "computes checksums or encodings",
    ),
    // BSD and macOS base64 write with -o.
    e(&["base64"], R, "encodes or decodes base64")
        .rules(&[
            path("-o", W, "writes the output to a file"),
            path("--output", W, "writes the output to a file"),
        ])
        .values(&["-w", "--wrap", "-b", "--break", "-i", "--input"]),
    e(&["jq"], R, "processes JSON").values(&[
        "-f",
        "--from-file",
        "-L",
        "--arg",
        "--argjson",
        "--slurpfile",
        "--rawfile",
        "--indent",
    ]),
    e(&["yq"], R, "processes YAML")
        .rules(&[
            flag("-i", W, "edits files in place"),
            flag("--inplace", W, "edits files in place"),
            flag("--in-place", W, "edits files in place"),
            value("-s", W, "writes each result to a file of its own"),
            value("--split-exp", W, "writes each result to a file of its own"),
        ])
        .values(&[
            "-p",
            "-o",
            "--input-format",
            "--output-format",
            "-I",
            "--indent",
            "--from-file",
            "--arg",
            "--argjson",
        ]),
    e(&["tree"], R, "lists a directory tree")
        .rules(&[
            path("-o", W, "writes the listing to a file"),
            flag("-R", W, "runs tree again in every directory, writing 00Tree.html files"),
        ])
        .values(&[
            "-L",
            "-P",
            "-I",
            "-H",
            "-T",
            "--charset",
            "--filelimit",
            "--timefmt",
            "--sort",
            "--gitfile",
            "--infofile",
            "--hintro",
            "--houtro",
        ]),
    e(&["realpath", "readlink", "basename", "dirname", "pathchk"], R, "inspects paths"),
    e(&["grep", "egrep", "fgrep"], R, "searches text").values(&[
        "-e",
        "-f",
        "-m",
        "-A",
        "-B",
        "-C",
        "-d",
        "-D",
        "--regexp",
        "--file",
        "--max-count",
        "--label",
    ]),
    e(&["ag"], R, "searches text")
        .rules(&[value("--pager", I, "runs another program as the pager")])
        .values(&["-A", "-B", "-C", "-G", "-g", "-m", "-p", "--path-to-ignore", "--ignore"]),
    e(&["ack"], R, "searches text")
        .rules(&[
            value("--pager", I, "runs another program as the pager"),
            value("--output", I, "evaluates a Perl expression for every match"),
            value("--ackrc", I, "reads options (such as a pager) from a file"),
        ])
        .values(&["-A", "-B", "-C", "-m", "-t", "--type", "-g", "--match"]),
    e(&["rg"], R, "searches text")
        .rules(&[
            value("--pre", I, "runs a preprocessor program on every file"),
            flag("-z", I, "runs decompression programs on compressed files"),
            flag("--search-zip", I, "runs decompression programs on compressed files"),
            value("--hostname-bin", I, "runs a program to find the host name"),
        ])
        .values(&[
            "-e",
            "-f",
            "-g",
            "-t",
            "-T",
            "-A",
            "-B",
            "-C",
            "-m",
            "-j",
            "-M",
            "-d",
            "-r",
            "-E",
            "--regexp",
            "--file",
            "--glob",
            "--iglob",
            "--type",
            "--type-not",
            "--type-add",
            "--type-clear",
            "--after-context",
            "--before-context",
            "--context",
            "--max-count",
            "--threads",
            "--max-columns",
            "--max-depth",
            "--max-filesize",
            "--replace",
            "--encoding",
            "--sort",
            "--sortr",
            "--color",
            "--colors",
            "--engine",
            "--path-separator",
            "--context-separator",
            "--field-match-separator",
            "--field-context-separator",
            "--ignore-file",
            "--pre-glob",
            "--dfa-size-limit",
            "--regex-size-limit",
            "--hyperlink-format",
            "--generate",
        ]),
    e(&["find"], R, "searches for files").special(analyze::find),
    e(&["sed"], R, "edits text to standard output").special(textprog::sed),
    e(&["awk", "gawk", "mawk", "nawk"], R, "processes text").special(textprog::awk),
    e(&["cd"], R, "changes the working directory of the following commands"),
    // ---- printing and the environment
    e(
        &[
            "echo", "printf", "true", "false", "test", "[", "seq", "yes", "sleep", "printenv",
            "tty", "expr", "factor", "numfmt",
        ],
        R,
        "prints or tests values",
    ),
    e(
        &["pwd", "whoami", "id", "groups", "logname", "users", "who", "w", "last"],
        R,
        "shows the current user or directory",
    ),
    e(&["ss"], R, "shows sockets")
        .rules(&[flag("-K", I, "closes sockets"), flag("--kill", I, "closes sockets")]),
    e(
        &[
            "uname", "arch", "nproc", "lscpu", "lsblk", "lsusb", "lspci", "lsmod", "locale",
            "getconf", "uptime", "free", "vmstat", "iostat", "df", "du", "ps", "pgrep", "pidof",
            "top", "htop", "lsof", "netstat", "which", "whereis", "cal", "tput",
        ],
        R,
        "shows system information",
    ),
    e(&["journalctl"], R, "shows system logs")
        .rules(&[
            flag("--vacuum-size", I, "deletes journal files"),
            flag("--vacuum-time", I, "deletes journal files"),
            flag("--vacuum-files", I, "deletes journal files"),
            flag("--rotate", I, "rotates the journal"),
            flag("--flush", I, "moves the journal to disk"),
            flag("--sync", I, "writes the journal to disk"),
            flag("--relinquish-var", I, "moves the journal"),
            flag("--smart-relinquish-var", I, "moves the journal"),
            flag("--setup-keys", I, "writes sealing keys"),
            flag("--update-catalog", I, "rewrites the message catalog"),
        ])
        .values(&[
            "-u",
            "-n",
            "-p",
            "-o",
            "-t",
            "-b",
            "-S",
            "-U",
            "-c",
            "-D",
            "-M",
            "-g",
            "-I",
            "-F",
            "--unit",
            "--user-unit",
            "--lines",
            "--priority",
            "--output",
            "--since",
            "--until",
            "--boot",
            "--cursor",
            "--directory",
            "--file",
            "--identifier",
            "--grep",
            "--facility",
            "--namespace",
        ]),
    e(&["dmesg"], R, "shows the kernel log")
        .rules(&[
            flag("-C", I, "clears the kernel ring buffer"),
            flag("--clear", I, "clears the kernel ring buffer"),
            flag("-c", I, "clears the kernel ring buffer after printing it"),
            flag("--read-clear", I, "clears the kernel ring buffer after printing it"),
            flag("-D", I, "disables printing to the console"),
            flag("--console-off", I, "disables printing to the console"),
            flag("-E", I, "enables printing to the console"),
            flag("--console-on", I, "enables printing to the console"),
            value("-n", I, "sets the console log level"),
            value("--console-level", I, "sets the console log level"),
        ])
        .values(&["-f", "-l", "-F", "-s", "--facility", "--level", "--since", "--until"]),
    e(&["date"], R, "prints the date")
        .rules(&[
            value("-s", B, "sets the system clock"),
            value("--set", B, "sets the system clock"),
        ])
        .values(&["-d", "--date", "-r", "--reference", "-I"]),
    e(&["hostname"], R, "prints the host name").special(analyze::hostname),
    // ---- creating and changing files (snapshotted first)
    e(&["touch"], W, "creates files or updates their times")
        .values(&["-d", "-t", "-r", "--date", "--reference"])
        .writes(Writes::All),
    e(&["mkdir"], W, "creates directories").values(&["-m", "--mode"]).writes(Writes::All),
    e(&["rmdir"], W, "removes empty directories").writes(Writes::All),
    e(&["cp"], W, "copies files")
        .values(&["-t", "-S", "--target-directory", "--suffix"])
        .writes(Writes::Last),
    e(&["mv"], W, "moves files")
        .values(&["-t", "-S", "--target-directory", "--suffix"])
        .writes(Writes::All),
    e(&["ln"], W, "creates links")
        .values(&["-t", "-S", "--target-directory", "--suffix"])
        .writes(Writes::Last),
    e(&["install"], W, "copies files and sets attributes")
        .values(&[
            "-m",
            "-o",
            "-g",
            "-t",
            "-S",
            "--mode",
            "--owner",
            "--group",
            "--target-directory",
        ])
        .writes(Writes::Last),
    e(&["tee"], R, "copies standard input to files")
        .writes(Writes::All)
        .values(&["--output-error"]),
    e(&["patch"], W, "applies a diff to files").values(&[
        "-p",
        "-i",
        "-o",
        "-d",
        "-r",
        "--input",
        "--output",
        "--directory",
    ]),
    e(&["tar", "bsdtar", "gtar"], W, "creates or extracts archives").special(super::archive::tar),
    e(&["zip"], W, "creates zip archives").special(super::archive::zip),
    e(&["unzip"], W, "extracts zip archives").special(super::archive::unzip),
    e(
        &["gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "lzma", "unlzma", "zstd", "unzstd"],
        W,
        "compresses or decompresses files in place",
    )
    .special(super::archive::compressor),
    e(&["7z", "7za", "7zr"], W, "creates or extracts archives"),
    e(&["chmod"], W, "changes file permissions").special(analyze::chmod),
    e(&["dd"], R, "copies raw data").special(analyze::dd),
    // ---- destructive, irreversible
    e(&["rm"], I, "deletes files").special(analyze::rm),
    e(&["unlink", "shred"], I, "deletes files").writes(Writes::All).values(&[
        "-n",
        "-s",
        "--iterations",
        "--size",
    ]),
    e(&["truncate"], I, "cuts files to a size, losing their contents")
        .values(&["-s", "-r", "--size", "--reference"])
        .writes(Writes::All),
    e(&["chown", "chgrp"], I, "changes file ownership")
        .values(&["--reference", "--from"])
        .writes(Writes::AfterFirst),
    e(&["kill"], I, "sends a signal to processes").special(analyze::kill),
    e(&["pkill", "killall", "skill", "xkill"], I, "sends a signal to processes by name"),
    e(&["crontab", "at", "batch", "atrm"], I, "changes scheduled jobs"),
    e(&["systemctl"], I, "controls system services").sub(SYSTEMCTL, R, I),
    e(&["service"], I, "controls system services"),
    e(&["docker", "podman"], I, "controls containers")
        .sub(DOCKER, R, I)
        .rules(&[
            value("-H", I, "connects to another Docker daemon, possibly over the network"),
            value("--host", I, "connects to another Docker daemon, possibly over the network"),
            value("-c", I, "uses another Docker context, possibly over the network"),
            value("--context", I, "uses another Docker context, possibly over the network"),
            value("--config", I, "reads another configuration (credential helpers run)"),
        ])
        .values(&["-l", "--log-level"]),
    e(&["kubectl"], I, "controls a Kubernetes cluster").sub(KUBECTL, R, I).values(&[
        "-n",
        "--namespace",
        "--context",
        "-o",
        "--output",
        "--kubeconfig",
    ]),
];

//! History is a read path too: git prints file contents from history
//! (`git show HEAD:.env`, `git log -p`, `git diff`, `git grep`), so a `.env` committed once
//! reaches the model through git even though every file tool refuses it.
//!
//! [`guard_git_history`] takes the argv `shell_execute` is about to run and, for a `git` command
//! that prints contents from history, returns the argv to run instead, or a refusal that tells
//! the model what to do instead:
//!
//! - **Pathspec exclusions** for every sensitive pattern are appended to `log`, `show`,
//!   `whatchanged`, `diff`, `diff-tree`, `diff-index`, `diff-files`, `grep`, `format-patch`,
//!   `range-diff` and `reflog`: `:(top,exclude,glob,icase)**/.env*` and `…/**/.env*/**` (a
//!   directory of that name), from the repository's top whatever the working directory, in any
//!   letter case, like the path guard. Without a `--` none is added (git then still tells paths
//!   from revisions itself); `range-diff` always gets one.
//! - **Object names** that name a sensitive path (`HEAD:.env`, `:.env`, `:0:a/id_rsa`) are
//!   refused anywhere in those commands and in `cat-file`, `blame`, `tag` and `notes`: an object
//!   name is not a pathspec, so no exclusion applies to it. A bare object id could be a blob
//!   (`git ls-tree` prints them), so in `show` it is peeled to a commit (`abc1234^{commit}`) and
//!   in `diff` and `grep` to a tree; git then refuses a blob instead of printing it.
//! - **Forms that cannot be made safe** are refused: `archive` and `fast-export` (whole trees),
//!   `cat-file` printing an object it cannot map to a path (`-p <id>`, `blob <id>`, `--batch`),
//!   `--full-diff` (shows all files of a commit whatever the pathspec), `--follow` (follows a
//!   file across a rename from `.env`, and takes exactly one pathspec), `--submodule=diff`,
//!   `grep --recurse-submodules`, `stash show -p`, `notes add -C <blob>`, and the global
//!   `--literal-pathspecs`/`--noglob-pathspecs` (they turn the exclusions into plain names).
//!
//! Files in the working tree (`diff --no-index`, `grep --untracked`) are the sandbox's to hide
//! (sensitive files are masked in every child); history is not, because git must read
//! `.git/objects`. The function is pure: it reads no repository. What it cannot see: a ref (a tag) that was
//! made to point at a sensitive blob by its id, or a blob copied under another name with
//! plumbing (`mktree`, `update-index --cacheinfo`); those commands ask for approval. The
//! caller must also keep `GIT_LITERAL_PATHSPECS`, `GIT_NOGLOB_PATHSPECS` and other `GIT_*`
//! variables out of the child's environment, and aliases (unknown subcommands) ask.

use crate::guard::sensitive::SensitivePatterns;

/// See the module docs. `argv[0]` is the program (`git` or a path ending in `/git`); any
/// other program, and git subcommands that print no file contents, come back unchanged.
pub fn guard_git_history(
    argv: &[String],
    sensitive: &SensitivePatterns,
) -> Result<Vec<String>, String> {
    let unchanged = || Ok(argv.to_vec());
    let Some(program) = argv.first() else { return unchanged() };
    if program.rsplit('/').next() != Some("git") {
        return unchanged();
    }
    let Some(at) = subcommand_index(argv)? else { return unchanged() };
    let args = &argv[at + 1..];
    let g = Guard { sensitive, sub: argv[at].as_str() };
    match g.sub {
        "log" | "whatchanged" | "show" | "diff" | "diff-tree" | "diff-index" | "diff-files"
        | "format-patch" | "range-diff" | "grep" => g.pathspec_command(argv, at),
        "reflog" => match args.first().map(String::as_str) {
            Some("expire" | "delete" | "exists" | "list" | "drop") => unchanged(),
            _ => g.pathspec_command(argv, at),
        },
        "blame" | "annotate" => g.blame(args).and_then(|()| unchanged()),
        "cat-file" => g.cat_file(args).and_then(|()| unchanged()),
        "stash" => g.stash(args).and_then(|()| unchanged()),
        "notes" => g.notes(args).and_then(|()| unchanged()),
        "tag" => g.tag(argv, at),
        "archive" => Err(
            "git archive copies whole trees, sensitive files (.env, keys) included, so ARIA does not run it; list files with `git ls-tree -r --name-only REV` and show one with `git show REV:path`".into(),
        ),
        "fast-export" => Err(
            "git fast-export prints every file of the history, sensitive files included, so ARIA does not run it; use `git log -p` (sensitive files are left out)".into(),
        ),
        _ => unchanged(),
    }
}

/// Why a `git` command must not run with the environment variable `name` set (a `NAME=value`
/// prefix on the command line), or `None` when it may. The pathspec switches turn the
/// exclusions [`guard_git_history`] appends into plain names (`GIT_LITERAL_PATHSPECS=1 git log
/// -p -- .` prints a committed `.env` again), and the repository switches make git read a
/// repository or object store other than the one in the working directory.
pub fn git_env_refusal(name: &str) -> Option<String> {
    const PATHSPECS: &[&str] = &[
        "GIT_LITERAL_PATHSPECS",
        "GIT_NOGLOB_PATHSPECS",
        "GIT_GLOB_PATHSPECS",
        "GIT_ICASE_PATHSPECS",
    ];
    const REPOSITORY: &[&str] = &[
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
        "GIT_REPLACE_REF_BASE",
        "GIT_CEILING_DIRECTORIES",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    ];
    if PATHSPECS.contains(&name) {
        return Some(format!(
            "{name} turns ARIA's exclusion of sensitive files from git's output into plain names, so it cannot be set; run the git command without it"
        ));
    }
    REPOSITORY.contains(&name).then(|| {
        format!(
            "{name} makes git use another repository or object store than the one in the working directory, so it cannot be set; run git in the repository's directory (or use `git -C DIR`)"
        )
    })
}

/// The index of the subcommand after git's global options, if there is one.
fn subcommand_index(argv: &[String]) -> Result<Option<usize>, String> {
    let mut i = 1;
    while let Some(arg) = argv.get(i) {
        if !arg.starts_with('-') || arg == "-" {
            return Ok(Some(i));
        }
        match arg.as_str() {
            "--literal-pathspecs" | "--noglob-pathspecs" => {
                return Err(format!(
                    "git {arg}: this turns ARIA's exclusion of sensitive files into plain names, so it is not allowed; run the command without it"
                ));
            }
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix"
            | "--config-env" | "--list-cmds" => i += 1,
            _ => {}
        }
        i += 1;
    }
    Ok(None)
}

/// Options that take their value as the next argument, for the commands that parse revisions
/// and diff options (`log`, `show`, `diff`, ...).
#[rustfmt::skip]
const REV_VALUES: &[&str] = &[
    "-n", "--max-count", "--skip", "--since", "--after", "--until", "--before", "--author",
    "--committer", "--grep", "--grep-reflog", "--min-parents", "--max-parents", "--encoding",
    "--date", "--exclude", "--since-as-filter", "--skip-to", "--rotate-to", "--output", "-L",
    "-S", "-G", "-O", "-I", "--ignore-matching-lines", "--find-object", "--anchored",
    "--diff-algorithm", "--src-prefix", "--dst-prefix", "--line-prefix", "-U", "--unified",
    "--inter-hunk-context", "--diff-filter", "-l", "--word-diff-regex", "--ws-error-highlight",
    "--stat-width", "--stat-name-width", "--stat-graph-width", "--stat-count",
    "--output-indicator-new", "--output-indicator-old", "--output-indicator-context",
    "--decorate-refs", "--decorate-refs-exclude", "--default",
];

/// `format-patch`'s own (`--cc` is a flag elsewhere: combined diffs).
#[rustfmt::skip]
const FORMAT_PATCH_VALUES: &[&str] = &[
    "--subject-prefix", "--output-directory", "-o", "--in-reply-to", "--to", "--cc",
    "--add-header", "--signature", "--signature-file", "--base", "--interdiff", "--range-diff",
    "--creation-factor", "--suffix", "--start-number", "-v", "--reroll-count",
    "--description-file", "--filename-max-length",
];

/// Values that are free text (a message, an author, a search pattern, a date), never object
/// names: they are not checked as `REV:path`.
#[rustfmt::skip]
const TEXT_VALUES: &[&str] = &[
    "--grep", "--grep-reflog", "--author", "--committer", "-S", "-G", "-e", "--since", "--after",
    "--until", "--before", "--date", "--subject-prefix", "--signature", "--add-header", "-I",
    "--ignore-matching-lines", "--word-diff-regex", "--since-as-filter",
];

/// The same for `git grep` (whose options end at the first non-option, the pattern).
#[rustfmt::skip]
const GREP_VALUES: &[&str] = &[
    "-e", "-f", "--file", "-A", "--after-context", "-B", "--before-context", "-C", "--context",
    "--max-depth", "-m", "--max-count", "--threads",
];

/// The same for `git blame`.
#[rustfmt::skip]
const BLAME_VALUES: &[&str] = &[
    "-L", "-S", "--contents", "--date", "--ignore-rev", "--ignore-revs-file", "--abbrev",
];

struct Guard<'a> {
    sensitive: &'a SensitivePatterns,
    sub: &'a str,
}

/// `--name=value` → (`--name`, `Some(value)`); `-Xvalue` → (`-X`, `Some(value)`).
fn split_option(arg: &str) -> (&str, Option<&str>) {
    if arg.starts_with("--") {
        return match arg.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (arg, None),
        };
    }
    match arg.char_indices().nth(2) {
        Some((at, _)) => (&arg[..at], Some(&arg[at..])),
        None => (arg, None),
    }
}

/// `name` is `full` or an abbreviation of it git accepts (at least `min` characters).
fn abbreviates(name: &str, full: &str, min: usize) -> bool {
    name.len() >= min && full.starts_with(name)
}

fn is_option(arg: &str) -> bool {
    arg.starts_with('-') && arg != "-"
}

impl Guard<'_> {
    /// The first sensitive pattern a path's components match, if any.
    fn sensitive_path(&self, path: &str) -> Option<&str> {
        path.split('/')
            .filter(|c| !c.is_empty() && *c != "." && *c != "..")
            .find_map(|c| self.sensitive.matching(c))
    }

    fn refuse_path(&self, shown: &str, path: &str, pattern: &str) -> String {
        format!(
            "git {}: {shown} names {path}, a sensitive file (pattern {pattern}); ARIA does not show the contents of sensitive files, in the working tree or in history. Leave it out; if the user needs it, they can look at it themselves",
            self.sub
        )
    }

    /// Refuses an object name whose path is sensitive: `REV:path`, `:path`, `:N:path`.
    fn object_name(&self, arg: &str) -> Result<(), String> {
        if let Some(path) = object_path(arg)
            && let Some(pattern) = self.sensitive_path(path)
        {
            return Err(self.refuse_path(&format!("the object {arg}"), path, pattern));
        }
        Ok(())
    }

    /// Refuses a pathspec (after `--`) that names a sensitive file.
    fn pathspec(&self, arg: &str) -> Result<(), String> {
        let path = strip_magic(arg);
        match self.sensitive_path(path) {
            Some(pattern) => Err(self.refuse_path(&format!("the path {arg}"), path, pattern)),
            None => Ok(()),
        }
    }

    /// Options of the pathspec commands that cannot be made safe, and values that are files.
    fn option(&self, name: &str, value: Option<&str>) -> Result<(), String> {
        let sub = self.sub;
        if abbreviates(name, "--full-diff", 8) {
            return Err(format!(
                "git {sub} --full-diff shows every file a commit changed, sensitive files included; run it without --full-diff"
            ));
        }
        if abbreviates(name, "--follow", 5) {
            return Err(format!(
                "git {sub} --follow follows a file across renames (from a .env too) and cannot be combined with ARIA's exclusion of sensitive files; run `git {sub} -p -- <file>` without --follow"
            ));
        }
        if abbreviates(name, "--submodule", 6) && value == Some("diff") {
            return Err(format!(
                "git {sub} --submodule=diff shows submodules' files, where ARIA's exclusions do not reach; use --submodule=log"
            ));
        }
        if sub == "grep" && abbreviates(name, "--recurse-submodules", 5) {
            return Err(
                "git grep --recurse-submodules searches submodules, where ARIA's exclusions do not reach; run it in the submodule's directory instead".into(),
            );
        }
        Ok(())
    }

    /// The value of an option: a file it names (`grep -f`, `log -L…:file`) must not be
    /// sensitive, and one that is not free text must not be a sensitive object name (if an
    /// operand was taken for a value by mistake, it is still checked).
    fn option_value(&self, name: &str, value: &str) -> Result<(), String> {
        let file = match (self.sub, name) {
            ("grep", "-f" | "--file") => Some(value),
            (_, "-L") => line_range_file(value),
            _ => None,
        };
        if let Some(file) = file
            && let Some(pattern) = self.sensitive_path(file)
        {
            return Err(self.refuse_path(&format!("the option {name} {value}"), file, pattern));
        }
        if TEXT_VALUES.contains(&name) || name == "-L" {
            return Ok(());
        }
        self.object_name(value)
    }

    fn takes_value(&self, name: &str) -> bool {
        match self.sub {
            "grep" => GREP_VALUES.contains(&name),
            "format-patch" => REV_VALUES.contains(&name) || FORMAT_PATCH_VALUES.contains(&name),
            _ => REV_VALUES.contains(&name),
        }
    }

    /// `log`, `show`, `diff`, `grep`, ...: checked, peeled, with exclusions appended.
    fn pathspec_command(&self, argv: &[String], at: usize) -> Result<Vec<String>, String> {
        let grep = self.sub == "grep";
        let mut out: Vec<String> = argv[..=at].to_vec();
        let args = &argv[at + 1..];
        let (mut dashdash, mut no_index, mut line_log) = (false, false, false);
        // grep: the pattern (first operand unless -e/-f gave one) ends its options.
        let (mut pattern_given, mut options_done) = (false, false);
        let mut i = 0;
        while i < args.len() {
            let arg = args[i].as_str();
            i += 1;
            if dashdash {
                self.pathspec(arg)?;
                out.push(arg.to_owned());
                continue;
            }
            if arg == "--" {
                dashdash = true;
                out.push(arg.to_owned());
                continue;
            }
            if !options_done && is_option(arg) {
                let (name, value) = split_option(arg);
                self.option(name, value)?;
                no_index |= name == "--no-index";
                line_log |= name == "-L";
                pattern_given |= grep && matches!(name, "-e" | "-f" | "--file");
                out.push(arg.to_owned());
                match value {
                    Some(v) => self.option_value(name, v)?,
                    None if self.takes_value(name) => {
                        if let Some(v) = args.get(i) {
                            self.option_value(name, v)?;
                            out.push(v.clone());
                            i += 1;
                        }
                    }
                    None => {}
                }
                continue;
            }
            if grep {
                options_done = true;
                if !pattern_given {
                    pattern_given = true;
                    out.push(arg.to_owned());
                    continue;
                }
            }
            if no_index {
                self.pathspec(arg)?;
            }
            self.object_name(arg)?;
            out.push(self.peel(arg));
        }
        if grep && !pattern_given {
            return Err("git grep: give a pattern to search for, e.g. `git grep -n TODO`".into());
        }
        // `diff --no-index` and `log -L` take no pathspec; their paths were checked above.
        if (no_index && !grep) || line_log {
            return Ok(out);
        }
        if self.sub == "range-diff" && !dashdash {
            out.push("--".into());
        }
        out.extend(exclusions(self.sensitive, !no_index));
        Ok(out)
    }

    /// A revision operand that could name a blob, made to fail on one: a bare object id (or
    /// a range endpoint, or `X^{}`/`X^{blob}`/`X^{object}`) is peeled to a commit for `show`
    /// and to a tree for `diff` and `grep`.
    fn peel(&self, arg: &str) -> String {
        let suffix = match self.sub {
            "show" => "^{commit}",
            "diff" | "grep" => "^{tree}",
            _ => return arg.to_owned(),
        };
        if arg.contains(':') {
            return arg.to_owned();
        }
        let (sep, parts): (&str, Vec<&str>) = if arg.contains("...") {
            ("...", arg.split("...").collect())
        } else {
            ("..", arg.split("..").collect())
        };
        parts
            .iter()
            .map(|p| if may_be_blob(p) { format!("{p}{suffix}") } else { (*p).to_owned() })
            .collect::<Vec<_>>()
            .join(sep)
    }

    /// `blame`/`annotate`: the file (any operand) and `--contents` must not be sensitive.
    fn blame(&self, args: &[String]) -> Result<(), String> {
        let mut i = 0;
        while i < args.len() {
            let arg = args[i].as_str();
            i += 1;
            if arg == "--" {
                continue;
            }
            let (name, value) = if is_option(arg) { split_option(arg) } else { ("", None) };
            let value = match value {
                Some(v) => Some(v),
                None if BLAME_VALUES.contains(&name) => {
                    i += 1;
                    args.get(i - 1).map(String::as_str)
                }
                None => None,
            };
            let named = if name.is_empty() { Some(arg) } else { value };
            let Some(named) = named else { continue };
            let file = if name == "-L" { line_range_file(named) } else { Some(named) };
            if let Some(file) = file
                && let Some(pattern) = self.sensitive_path(file)
            {
                return Err(self.refuse_path(&format!("the argument {named}"), file, pattern));
            }
            self.object_name(named)?;
        }
        Ok(())
    }

    /// `cat-file`: information (`-t`, `-s`, `-e`, `--batch-check`) passes; contents only of
    /// an object that names a non-sensitive path, or that cannot be a blob.
    fn cat_file(&self, args: &[String]) -> Result<(), String> {
        let instead = "use `git show REV:path` for a file (sensitive files are refused), `git show REV` for a commit, or `git cat-file -t OBJECT` for its type";
        let mut contents = false;
        let mut typed = None;
        let mut operands = Vec::new();
        for arg in args {
            let (name, value) = split_option(arg);
            match name {
                "--batch" | "--batch-command" => {
                    return Err(format!(
                        "git cat-file {name} prints objects named on its input, which ARIA cannot check for sensitive files; {instead}"
                    ));
                }
                _ if name.starts_with("--batch-c") && !name.starts_with("--batch-ch") => {
                    return Err(format!(
                        "git cat-file {name} prints objects named on its input, which ARIA cannot check; {instead}"
                    ));
                }
                "-p" | "--textconv" | "--filters" => contents = true,
                "--path" => {
                    if let Some(p) = value
                        && let Some(pattern) = self.sensitive_path(p)
                    {
                        return Err(self.refuse_path(&format!("--path={p}"), p, pattern));
                    }
                }
                _ if is_option(arg) => {}
                _ if typed.is_none()
                    && operands.is_empty()
                    && matches!(arg.as_str(), "blob" | "tree" | "commit" | "tag") =>
                {
                    typed = Some(arg.as_str());
                }
                _ => operands.push(arg.as_str()),
            }
        }
        for object in &operands {
            self.object_name(object)?;
        }
        // `cat-file commit|tree|tag X` fails on a blob; `blob X` and `-p X` print one.
        let prints_blob = contents || typed == Some("blob");
        if let Some(object) = operands.iter().find(|o| prints_blob && !maps_to_path_or_commit(o)) {
            return Err(format!(
                "git cat-file cannot be checked for {object}: ARIA cannot tell which file an object id is, and it might be a sensitive one; {instead}"
            ));
        }
        Ok(())
    }

    /// `stash show` with a patch prints stashed contents without taking a pathspec.
    fn stash(&self, args: &[String]) -> Result<(), String> {
        if args.first().map(String::as_str) != Some("show") {
            return Ok(());
        }
        let patch = args[1..].iter().any(|a| {
            let (name, _) = split_option(a);
            matches!(name, "-p" | "-u" | "--patch" | "--include-untracked" | "--only-untracked")
        });
        if patch {
            return Err(
                "git stash show -p cannot leave sensitive files out; use `git diff stash@{0}^1 stash@{0}` (sensitive files are left out)".into(),
            );
        }
        Ok(())
    }

    /// `notes add|append -C|-c OBJECT` copies a blob into a note that `git log` prints.
    fn notes(&self, args: &[String]) -> Result<(), String> {
        let mut i = 0;
        while i < args.len() {
            let arg = args[i].as_str();
            i += 1;
            let (name, value) = if is_option(arg) { split_option(arg) } else { ("", None) };
            let separate = || {
                let v = args.get(i).map_or("", String::as_str);
                (v, 1)
            };
            match name {
                "-m" | "--message" | "-F" | "--file" => {
                    i += usize::from(value.is_none());
                }
                "-C" | "-c" | "--reuse-message" | "--reedit-message" => {
                    let (object, skip) = value.map_or_else(separate, |v| (v, 0));
                    i += skip;
                    self.object_name(object)?;
                    if object_path(object).is_none() {
                        return Err(format!(
                            "git notes {name} {object}: ARIA cannot tell which file that object is, and notes are shown by `git log`; write the note's text with -m instead"
                        ));
                    }
                }
                "" => self.object_name(arg)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// `tag NAME OBJECT`: the object must not name a sensitive path, and a bare id is peeled
    /// to a commit (a tag pointing at a blob is shown whole by `git show TAG`).
    fn tag(&self, argv: &[String], at: usize) -> Result<Vec<String>, String> {
        let mut out = argv[..=at].to_vec();
        let mut operands = 0;
        let mut args = argv[at + 1..].iter();
        while let Some(arg) = args.next() {
            let (name, value) = split_option(arg);
            if is_option(arg) {
                out.push(arg.clone());
                if value.is_none()
                    && matches!(
                        name,
                        "-m" | "-F"
                            | "-u"
                            | "--message"
                            | "--file"
                            | "--local-user"
                            | "--contains"
                            | "--no-contains"
                            | "--points-at"
                            | "--sort"
                            | "--format"
                            | "--merged"
                            | "--no-merged"
                            | "--cleanup"
                    )
                    && let Some(v) = args.next()
                {
                    out.push(v.clone());
                }
                continue;
            }
            self.object_name(arg)?;
            operands += 1;
            out.push(if operands >= 2 && may_be_blob(arg) {
                format!("{arg}^{{commit}}")
            } else {
                arg.clone()
            });
        }
        Ok(out)
    }
}

/// The path of an object name `REV:path`, `:path` or `:N:path` (`None` for other names and
/// for `:/message` searches). The `:` is looked for outside `@{…}` and `^{…}`.
fn object_path(arg: &str) -> Option<&str> {
    if is_option(arg) || arg.starts_with(":/") || arg.starts_with(":(") {
        return None;
    }
    if let Some(rest) = arg.strip_prefix(':') {
        let mut chars = rest.chars();
        return match (chars.next(), chars.next()) {
            (Some('0'..='3'), Some(':')) => Some(&rest[2..]),
            _ => Some(rest),
        };
    }
    let mut depth = 0usize;
    for (i, c) in arg.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ':' if depth == 0 => return Some(&arg[i + 1..]),
            // Whitespace appears in a revision only inside `@{…}`: this is text, not a name.
            c if c.is_whitespace() && depth == 0 => return None,
            _ => {}
        }
    }
    None
}

/// A pathspec without its magic prefix (`:(top,icase)x`, `:!x`, `:^x`, `:/x`).
fn strip_magic(arg: &str) -> &str {
    if let Some(rest) = arg.strip_prefix(":(") {
        return rest.split_once(')').map_or(rest, |(_, path)| path);
    }
    match arg.strip_prefix(':') {
        Some(rest) => rest.trim_start_matches(['!', '^', '/']),
        None => arg,
    }
}

/// The file of a `-L` range (`1,5:file`, `:funcname:file`, `/regex/,+3:file`).
fn line_range_file(value: &str) -> Option<&str> {
    let rest = match value.strip_prefix(':') {
        Some(func) => func.split_once(':')?.1,
        None => value.split_once(':')?.1,
    };
    Some(rest)
}

/// An object id (4 to 64 hex digits), or a name peeled to "whatever it points at": either
/// may be a blob.
fn may_be_blob(name: &str) -> bool {
    let base = ["^{}", "^{blob}", "^{object}"].iter().find_map(|s| name.strip_suffix(s));
    let id = base.unwrap_or(name);
    base.is_some() && !id.is_empty()
        || ((4..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `cat-file -p` is safe for an object that names a checked path (`REV:path`), or that is a
/// commit or tree by its syntax (`HEAD`, `X~2`, `X^`, `X^{tree}`).
fn maps_to_path_or_commit(object: &str) -> bool {
    if object_path(object).is_some() || object.ends_with("^{commit}") || object.ends_with("^{tree}")
    {
        return true;
    }
    // `X~`, `X~3`, `X^`, `X^2` navigate commits: git refuses them on anything else.
    let navigation = object.trim_end_matches(|c: char| c.is_ascii_digit());
    if navigation.len() > 1 && navigation.ends_with(['~', '^']) {
        return true;
    }
    matches!(object, "HEAD" | "@" | "ORIG_HEAD" | "FETCH_HEAD" | "MERGE_HEAD")
}

/// The pathspecs that leave out every sensitive pattern: the name and everything under a
/// directory of that name, at any depth, in any case, from the repository's top (`top` is
/// left out for `--no-index`, where there is no repository).
fn exclusions(sensitive: &SensitivePatterns, top: bool) -> Vec<String> {
    let magic = if top { ":(top,exclude,glob,icase)" } else { ":(exclude,glob,icase)" };
    sensitive
        .globs()
        .flat_map(|g| {
            let body = escape_glob(g.trim_end_matches('/'));
            [format!("{magic}**/{body}"), format!("{magic}**/{body}/**")]
        })
        .collect()
}

/// A sensitive pattern as a git glob: `*` and `?` mean the same; `[`, `]` and `\` are
/// literal in sensitive patterns but special to git, so they are escaped.
fn escape_glob(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    for c in pattern.chars() {
        if matches!(c, '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests;

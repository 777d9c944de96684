use std::path::Path;
use std::process::Command;

use pretty_assertions::assert_eq;

use super::*;

fn argv(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_owned).collect()
}

fn guard(line: &str) -> Result<Vec<String>, String> {
    guard_git_history(&argv(line), &SensitivePatterns::default())
}

fn excl() -> Vec<String> {
    exclusions(&SensitivePatterns::default(), true)
}

/// `line` followed by the default exclusions.
fn with_excl(line: &str) -> Vec<String> {
    let mut v = argv(line);
    v.extend(excl());
    v
}

fn refused(line: &str, needle: &str) {
    match guard(line) {
        Err(e) => assert!(e.contains(needle), "{line}: {e}"),
        Ok(v) => panic!("{line}: expected a refusal, got {v:?}"),
    }
}

#[test]
fn other_programs_and_other_subcommands_are_unchanged() {
    for line in [
        "ls -la",
        "/usr/bin/gitk --all",
        "git",
        "git status",
        "git -C sub status --short",
        "git commit -m x",
        "git ls-tree -r HEAD",
        "git rev-parse HEAD",
        "git branch -a",
        "git reflog expire --all",
    ] {
        assert_eq!(guard(line).unwrap(), argv(line), "{line}");
    }
    assert_eq!(
        guard_git_history(&[], &SensitivePatterns::default()).unwrap(),
        Vec::<String>::new()
    );
}

#[test]
fn the_exclusions_cover_names_and_directories_at_any_depth_from_the_top() {
    let e = excl();
    assert_eq!(e.len(), 2 * SensitivePatterns::default().globs().count());
    assert!(e.contains(&":(top,exclude,glob,icase)**/.env*".to_owned()), "{e:?}");
    assert!(e.contains(&":(top,exclude,glob,icase)**/.env*/**".to_owned()), "{e:?}");
    assert!(e.contains(&":(top,exclude,glob,icase)**/.ssh".to_owned()), "{e:?}");
    assert!(e.contains(&":(top,exclude,glob,icase)**/.ssh/**".to_owned()), "{e:?}");
    let odd = SensitivePatterns::from_globs(&["secret[1].txt".into(), "a\\b".into()]).unwrap();
    assert_eq!(
        exclusions(&odd, false),
        [
            ":(exclude,glob,icase)**/secret\\[1\\].txt",
            ":(exclude,glob,icase)**/secret\\[1\\].txt/**",
            ":(exclude,glob,icase)**/a\\\\b",
            ":(exclude,glob,icase)**/a\\\\b/**",
        ]
    );
    let none = SensitivePatterns::from_globs(&[]).unwrap();
    assert_eq!(guard_git_history(&argv("git log -p"), &none).unwrap(), argv("git log -p"));
}

#[test]
fn history_commands_get_the_exclusions_after_their_own_arguments() {
    for line in [
        "git log",
        "git log -p",
        "git log --patch --all",
        "git log -p -n 5 main",
        "git -C sub log -p",
        "git -c color.ui=never log -u",
        "git whatchanged -p",
        "git show",
        "git show HEAD",
        "git show HEAD~1 --stat",
        "git show HEAD:src/main.rs",
        "git diff",
        "git diff --cached",
        "git diff HEAD~1 HEAD",
        "git diff HEAD -- src",
        "git diff-tree -p HEAD~1 HEAD",
        "git diff-index -p HEAD",
        "git diff-files -p",
        "git grep -n TODO",
        "git grep -e TODO HEAD~3",
        "git grep -n HEAD:.env",
        "git grep TODO -- src",
        "git format-patch --stdout -1",
        "git format-patch --cc a@b.c -o out -1",
        "git reflog -p",
        "git reflog show -p",
        "git range-diff A..B C..D --",
    ] {
        assert_eq!(guard(line).unwrap(), with_excl(line), "{line}");
    }
    // range-diff needs the `--` before pathspecs.
    assert_eq!(
        guard("git range-diff A..B C..D").unwrap(),
        with_excl("git range-diff A..B C..D --")
    );
}

#[test]
fn object_names_of_sensitive_paths_are_refused() {
    for line in [
        "git show HEAD:.env",
        "git show HEAD~3:config/.env.local",
        "git show main:./.env",
        "git show HEAD:src/../.env",
        "git show HEAD:.ENV",
        "git show HEAD@{2 days ago}:.env",
        "git show HEAD^{tree}:deploy/server.pem",
        "git show :.env",
        "git show :0:.ssh/id_rsa",
        "git show v1.0:home/.aws/credentials",
        "git log -p HEAD:.netrc",
        "git diff HEAD:.env HEAD~1:.env",
        "git grep TODO HEAD:.env",
        "git grep -e x HEAD~1:keys/id_ed25519",
        "git cat-file -p HEAD:.env",
        "git cat-file blob HEAD:credentials.json",
        "git cat-file -t HEAD:.git-credentials",
        "git cat-file --textconv HEAD:.env",
        "git cat-file --filters --path=.env HEAD:x",
        "git tag leak HEAD:.env",
        "git notes add -C HEAD:.env",
        "git show --cc HEAD:.env",
        "git format-patch --stdout HEAD:.env",
    ] {
        refused(line, "sensitive file");
    }
}

#[test]
fn sensitive_pathspecs_and_files_are_refused_with_the_reason() {
    refused("git log -p -- .env", "sensitive file (pattern .env*)");
    refused("git diff HEAD -- config/.env.local", "sensitive file");
    refused("git log -p -- ':!x' .ssh/known_hosts", "pattern .ssh/");
    refused("git show HEAD -- :(top)keys/a.pem", "pattern *.pem");
    refused("git blame .env", "sensitive file");
    refused("git blame HEAD~2 -- config/.env.prod", "sensitive file");
    refused("git annotate credentials.yml", "sensitive file");
    refused("git blame --contents .env app.txt", "sensitive file");
    refused("git blame -L 1,5 -- id_rsa", "sensitive file");
    refused("git log -L1,9:.env", "sensitive file");
    refused("git log -L :main:keys/server.key", "sensitive file");
    refused("git grep -f .env -- .", "sensitive file");
    refused("git diff --no-index app.txt .env", "sensitive file");
    assert_eq!(guard("git blame -L 1,5 app.txt").unwrap(), argv("git blame -L 1,5 app.txt"));
    // -L takes no pathspec: nothing is added (its file was checked).
    assert_eq!(guard("git log -L1,9:app.txt").unwrap(), argv("git log -L1,9:app.txt"));
    assert_eq!(
        guard("git diff --no-index a.txt b.txt").unwrap(),
        argv("git diff --no-index a.txt b.txt")
    );
    // grep outside a repository: the exclusions without `top`.
    let mut want = argv("git grep --no-index TODO");
    want.extend(exclusions(&SensitivePatterns::default(), false));
    assert_eq!(guard("git grep --no-index TODO").unwrap(), want);
}

#[test]
fn object_ids_that_could_be_blobs_are_peeled() {
    let ok = |line: &str, want: &str| assert_eq!(guard(line).unwrap(), with_excl(want), "{line}");
    ok("git show 1a2b3c4", "git show 1a2b3c4^{commit}");
    ok("git show 1a2b3c4 --stat", "git show 1a2b3c4^{commit} --stat");
    ok("git show v1.0^{}", "git show v1.0^{}^{commit}");
    ok("git show main HEAD~2 abc1^", "git show main HEAD~2 abc1^");
    ok("git diff 1a2b3c4 5d6e7f8", "git diff 1a2b3c4^{tree} 5d6e7f8^{tree}");
    ok("git diff 1a2b3c4..5d6e7f8", "git diff 1a2b3c4^{tree}..5d6e7f8^{tree}");
    ok("git diff HEAD...1a2b3c4", "git diff HEAD...1a2b3c4^{tree}");
    ok("git grep TODO 1a2b3c4", "git grep TODO 1a2b3c4^{tree}");
    // Option values are not operands.
    ok("git show -n 1234567 HEAD", "git show -n 1234567 HEAD");
    ok("git log -p 1a2b3c4", "git log -p 1a2b3c4");
    // The grep pattern is not a revision.
    ok("git grep deadbeef", "git grep deadbeef");
    assert_eq!(guard("git tag v1 1a2b3c4").unwrap(), argv("git tag v1 1a2b3c4^{commit}"));
    assert_eq!(
        guard("git tag -a v1 -m 1a2b3c4d HEAD").unwrap(),
        argv("git tag -a v1 -m 1a2b3c4d HEAD")
    );
}

#[test]
fn forms_that_cannot_be_made_safe_are_refused_with_what_to_do() {
    refused("git archive HEAD", "git ls-tree");
    refused("git archive --format=zip -o x.zip HEAD", "git show REV:path");
    refused("git fast-export --all", "git log -p");
    refused("git log -p --full-diff -- app.txt", "--full-diff");
    refused("git log -p --full-d -- app.txt", "--full-diff");
    refused("git log -p --follow app.txt", "without --follow");
    refused("git log -p --foll app.txt", "--follow");
    refused("git log -p --submodule=diff", "--submodule=log");
    refused("git grep --recurse-submodules TODO", "submodule");
    refused("git --literal-pathspecs log -p", "without it");
    refused("git -C x --noglob-pathspecs diff", "without it");
    refused("git grep", "give a pattern");
    refused("git cat-file -p 1a2b3c4d", "cannot tell which file");
    refused("git cat-file blob 1a2b3c4d", "git show REV:path");
    refused("git cat-file -p v1.0", "cannot tell which file");
    refused("git cat-file --batch", "its input");
    refused("git cat-file --batch=%(objectname)", "its input");
    refused("git cat-file --batch-command", "its input");
    refused("git cat-file --batch-all-objects --batch", "its input");
    refused("git stash show -p", "git diff stash@{0}^1 stash@{0}");
    refused("git stash show --include-untracked stash@{1}", "stash show -p");
    refused("git notes add -C 1a2b3c4d", "-m instead");
    refused("git notes append --reuse-message=1a2b3c4d HEAD", "-m instead");
    for line in [
        "git cat-file -t 1a2b3c4d",
        "git cat-file -s HEAD:app.txt",
        "git cat-file -e 1a2b3c4d",
        "git cat-file -p HEAD",
        "git cat-file -p HEAD~2",
        "git cat-file -p main^",
        "git cat-file -p 1a2b3c4d^{tree}",
        "git cat-file -p HEAD:src/main.rs",
        "git cat-file -p HEAD:",
        "git cat-file commit 1a2b3c4d",
        "git cat-file --batch-check",
        "git stash show",
        "git stash list",
        "git notes add -m note:.env-free",
        "git notes add -C HEAD:notes.txt",
    ] {
        assert_eq!(guard(line).unwrap(), argv(line), "{line}");
    }
}

#[test]
fn environment_switches_that_undo_the_exclusions_are_named() {
    for name in ["GIT_LITERAL_PATHSPECS", "GIT_NOGLOB_PATHSPECS", "GIT_GLOB_PATHSPECS"] {
        let why = git_env_refusal(name).unwrap();
        assert!(why.contains("plain names") && why.starts_with(name), "{why}");
    }
    for name in ["GIT_DIR", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY", "GIT_INDEX_FILE"] {
        assert!(git_env_refusal(name).unwrap().contains("another repository"), "{name}");
    }
    for name in ["GIT_AUTHOR_NAME", "LANG", "TZ", "GIT_PAGER", "git_literal_pathspecs"] {
        assert_eq!(git_env_refusal(name), None, "{name}");
    }
}

#[test]
fn object_name_parsing() {
    assert_eq!(object_path("HEAD:a/b"), Some("a/b"));
    assert_eq!(object_path(":a"), Some("a"));
    assert_eq!(object_path(":2:a"), Some("a"));
    assert_eq!(object_path(":/fix the bug"), None);
    assert_eq!(object_path(":(top)x"), None);
    assert_eq!(object_path("HEAD@{2024-01-01 10:00}:x"), Some("x"));
    assert_eq!(object_path("HEAD"), None);
    assert_eq!(object_path("see this: x"), None);
    assert_eq!(object_path("-p"), None);
    assert_eq!(strip_magic(":(top,icase).env"), ".env");
    assert_eq!(strip_magic(":!.env"), ".env");
    assert_eq!(strip_magic("a/b"), "a/b");
    assert_eq!(line_range_file("1,5:a.txt"), Some("a.txt"));
    assert_eq!(line_range_file(":main:src/x.rs"), Some("src/x.rs"));
    assert_eq!(line_range_file("1,5"), None);
    assert!(may_be_blob("abcd") && may_be_blob("x^{}") && may_be_blob("v1^{blob}"));
    assert!(!may_be_blob("abc") && !may_be_blob("main") && !may_be_blob("HEAD~1"));
}

// --- The rewritten commands run by real git --------------------------------------------

/// Secrets in the repository: none of these may ever be printed.
const SECRETS: &[&str] = &[
    "SECRET_ROOT_ENV",
    "SECRET_NESTED_ENV",
    "SECRET_PEM",
    "SECRET_SSH",
    "SECRET_CREDENTIALS",
    "SECRET_ROOT_ENV_V2",
    "SECRET_NESTED_ENV_V2",
    "SECRET_STAGED",
    "SECRET_WORKTREE",
];

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=Tester", "-c", "user.email=t@example.invalid"])
        .args(["-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .expect("git runs");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    text
}

fn put(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Two commits with sensitive files at the top and in subdirectories, then a staged and an
/// unstaged change to `.env`.
fn repository() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    git(dir, &["init", "-q"]);
    put(dir, ".env", "TOKEN=SECRET_ROOT_ENV\n");
    put(dir, "config/.env.local", "DB=SECRET_NESTED_ENV\n");
    put(dir, "keys/Server.PEM", "SECRET_PEM\n");
    put(dir, ".ssh/id_rsa", "SECRET_SSH\n");
    put(dir, "credentials.json", "{\"k\": \"SECRET_CREDENTIALS\"}\n");
    put(dir, "app.txt", "app v1\n");
    put(dir, "config/app.toml", "name = \"v1\"\n");
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "Feat: one"]);
    put(dir, ".env", "TOKEN=SECRET_ROOT_ENV_V2\n");
    put(dir, "config/.env.local", "DB=SECRET_NESTED_ENV_V2\n");
    put(dir, "app.txt", "app v2\n");
    put(dir, "config/app.toml", "name = \"v2\"\n");
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "Feat: two"]);
    put(dir, ".env", "TOKEN=SECRET_STAGED\n");
    git(dir, &["add", ".env"]);
    put(dir, ".env", "TOKEN=SECRET_WORKTREE\n");
    put(dir, "app.txt", "app v3\n");
    tmp
}

fn leaked(text: &str) -> Option<&'static str> {
    SECRETS.iter().copied().find(|s| text.contains(s))
}

#[test]
fn real_git_never_prints_a_committed_secret_after_the_rewrite() {
    if Command::new("git").arg("--version").output().is_err() {
        panic!("this test needs git on PATH");
    }
    let tmp = repository();
    let dir = tmp.path();
    let blob = git(dir, &["rev-parse", "HEAD:.env"]).trim().to_owned();
    let old_blob = git(dir, &["rev-parse", "HEAD~1:.env"]).trim().to_owned();
    let head = git(dir, &["rev-parse", "HEAD"]).trim().to_owned();
    let tree = git(dir, &["rev-parse", "HEAD^{tree}"]).trim().to_owned();
    // (command, what it must still show: the command works, it is not just failing)
    let cases: Vec<(Vec<String>, &str)> = vec![
        (argv("git show"), "+app v2"),
        (argv("git show HEAD~1"), "+app v1"),
        (argv(&format!("git show {head}")), "+app v2"),
        (argv(&format!("git show {blob}")), ""),
        (argv("git show HEAD:app.txt"), "app v2"),
        (argv("git log -p"), "+app v1"),
        (argv("git log -p --all --stat"), "+app v2"),
        (argv("git log -p -- ."), "+app v2"),
        (argv("git log -p app.txt"), "+app v2"),
        (argv("git log --patch-with-stat -U5"), "+app v2"),
        (argv("git whatchanged -p"), "+app v2"),
        (argv("git diff"), "+app v3"),
        (argv("git diff --cached"), ""),
        (argv("git diff HEAD"), "+app v3"),
        (argv("git diff HEAD~1"), "+app v3"),
        (argv("git diff HEAD~1 HEAD"), "+app v2"),
        (argv("git diff HEAD~1..HEAD -- config"), "+name = \"v2\""),
        (argv(&format!("git diff {old_blob} {blob}")), ""),
        (argv(&format!("git diff {old_blob}..{blob}")), ""),
        (argv("git diff-tree -p HEAD~1 HEAD"), "+app v2"),
        (argv("git diff-index -p HEAD"), "+app v3"),
        (argv("git diff-files -p"), "+app v3"),
        (argv("git grep -n SECRET"), ""),
        (argv("git grep -n -e SECRET -e app"), "app.txt:1:app v3"),
        (argv("git grep -e SECRET -e app HEAD~1"), "HEAD~1:app.txt:app v1"),
        (argv(&format!("git grep -e SECRET -e app {tree}")), "app v2"),
        (argv(&format!("git grep SECRET {blob}")), ""),
        (argv("git grep -i secret -- ."), ""),
        (argv("git grep --untracked -e SECRET -e app"), "app v3"),
        (argv("git format-patch --stdout -1"), "+app v2"),
        (argv("git reflog -p"), "+app v2"),
        (argv("git -C config log -p"), "+app v2"),
        (argv("git -C config grep -e SECRET -e name"), "name = \"v2\""),
        (argv("git -C config show HEAD"), "+app v2"),
    ];
    let sensitive = SensitivePatterns::default();
    for (line, expect) in &cases {
        // The test has teeth: run as given, most of these print a secret.
        let rewritten = guard_git_history(line, &sensitive)
            .unwrap_or_else(|e| panic!("{line:?} was refused: {e}"));
        let args: Vec<&str> = rewritten[1..].iter().map(String::as_str).collect();
        let out = git(dir, &args);
        assert_eq!(leaked(&out), None, "{line:?} -> {rewritten:?} printed:\n{out}");
        assert!(out.contains(expect), "{line:?} -> {rewritten:?} should show {expect:?}:\n{out}");
    }
    let raw: Vec<&str> = ["log", "-p", "--all"].to_vec();
    assert!(leaked(&git(dir, &raw)).is_some(), "unguarded `git log -p` prints the secrets");
    let raw = git(dir, &["grep", "-n", "SECRET"]);
    assert!(leaked(&raw).is_some(), "unguarded `git grep` prints them: {raw}");
    let raw = git(dir, &["show", &blob]);
    assert!(leaked(&raw).is_some(), "unguarded `git show <blob id>` prints one: {raw}");
    // With GIT_LITERAL_PATHSPECS the exclusions are plain names: hence `git_env_refusal`.
    let guarded = guard_git_history(&argv("git log -p -- ."), &sensitive).unwrap();
    let out = Command::new("git")
        .args(&guarded[1..])
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_LITERAL_PATHSPECS", "1")
        .output()
        .unwrap();
    assert!(leaked(&String::from_utf8_lossy(&out.stdout)).is_some());
    assert!(git_env_refusal("GIT_LITERAL_PATHSPECS").is_some());
    // Refused before anything runs.
    for line in ["git show HEAD:.env", "git show :.env", "git cat-file -p HEAD:.env"] {
        assert!(guard_git_history(&argv(line), &sensitive).is_err(), "{line}");
    }
    assert!(guard_git_history(&argv(&format!("git cat-file -p {blob}")), &sensitive).is_err());
}

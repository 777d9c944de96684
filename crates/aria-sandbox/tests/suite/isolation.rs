//! Sandbox v2: what a child *cannot* do, whatever it is asked to — enforced by namespaces,
//! mounts, Landlock and seccomp, not by the caller's judgement of the command.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aria_sandbox::{ExecPolicy, Sandbox, SandboxError, SpawnSpec};

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

fn root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().canonicalize().unwrap();
    (dir, real)
}

/// A read-tier spec: roots read-only, only the named program may execute.
fn read_tier(root: &Path, words: &[&str]) -> SpawnSpec {
    SpawnSpec::new(argv(words), root.to_path_buf(), vec![root.to_path_buf()])
}

fn loader() -> PathBuf {
    ["/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1", "/lib/ld-linux-x86-64.so.2"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("a dynamic loader")
}

#[test]
fn a_read_tier_program_cannot_write_anywhere() {
    let (_d, root) = root();
    fs::write(root.join("existing.txt"), "old").unwrap();
    for target in ["new.txt", "existing.txt", "/usr/aria-x", "/etc/aria-x", "/aria-x"] {
        let out = Sandbox::run(read_tier(&root, &["touch", target])).unwrap();
        assert!(!out.exit.success(), "touch {target} succeeded");
    }
    let out = Sandbox::run(read_tier(&root, &["cp", "existing.txt", "copy.txt"])).unwrap();
    assert!(!out.exit.success());
    assert!(!root.join("new.txt").exists() && !root.join("copy.txt").exists());
    assert_eq!(fs::read_to_string(root.join("existing.txt")).unwrap(), "old");
    // Its private /tmp is writable.
    let out = Sandbox::run(read_tier(&root, &["touch", "/tmp/scratch"])).unwrap();
    assert!(out.exit.success(), "{}", out.stderr.text());
}

#[test]
fn a_read_tier_program_cannot_read_outside_the_roots() {
    let (_d, root) = root();
    let (_o, outside) = self::root();
    fs::write(outside.join("secret.txt"), "outside-secret").unwrap();
    // A link inside the root that points out of it, and the model's `self -> .` trick.
    std::os::unix::fs::symlink(outside.join("secret.txt"), root.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("outdir")).unwrap();
    for path in [
        outside.join("secret.txt").to_string_lossy().into_owned(),
        "link.txt".into(),
        "outdir/secret.txt".into(),
        "/etc/shadow".into(),
        "/root/.bashrc".into(),
        "/var/log".into(),
        "/run".into(),
    ] {
        let out = Sandbox::run(read_tier(&root, &["cat", &path])).unwrap();
        assert!(!out.exit.success(), "cat {path} succeeded");
        assert!(!out.stdout.text().contains("outside-secret"), "{path}");
    }
    let out = Sandbox::run(read_tier(&root, &["grep", "-R", "outside-secret", "."])).unwrap();
    assert!(!out.stdout.text().contains("outside-secret"));
    let out = Sandbox::run(read_tier(&root, &["ls", "/"])).unwrap();
    let listed = out.stdout.text();
    for absent in ["root", "var", "run", "home", "boot"] {
        assert!(!listed.lines().any(|l| l == absent), "/{absent} is visible: {listed}");
    }
}

#[test]
fn a_read_tier_program_cannot_execute_another_program() {
    let (_d, root) = root();
    let marker = root.join("pwned");
    let sh_cmd = format!("echo pwned > {}", marker.display());
    // `env` executes its argument: /bin/sh directly, and through the dynamic loader.
    let ld = loader();
    let ld = ld.to_string_lossy();
    for words in [
        vec!["env", "/bin/sh", "-c", &sh_cmd],
        vec!["env", &ld, "/bin/sh", "-c", &sh_cmd],
        vec!["env", "true"],
    ] {
        let out = Sandbox::run(read_tier(&root, &words)).unwrap();
        assert!(!out.exit.success(), "{words:?} ran: {}", out.stdout.text());
    }
    // The same with a helper directory (no one-exec seccomp rule): Landlock and noexec mounts.
    let helpers = ExecPolicy::Only { helpers: vec![PathBuf::from("/usr/lib")] };
    for words in [vec!["env", "/bin/sh", "-c", &sh_cmd], vec!["env", &ld, "/bin/sh", "-c", &sh_cmd]]
    {
        let mut spec = read_tier(&root, &words);
        spec.exec = helpers.clone();
        let out = Sandbox::run(spec).unwrap();
        assert!(!out.exit.success(), "{words:?} ran with helpers: {}", out.stdout.text());
    }
    // A script the program wrote in a root cannot run either (noexec), even for a write tier
    // without the exec grant.
    assert!(!marker.exists());
}

// Network: `tcp_connect_is_blocked_without_the_network_grant` and
// `udp_sockets_are_refused_without_the_network_grant` in `sandbox.rs` use the same read-tier
// spec as these tests.

#[test]
fn nothing_a_program_starts_outlives_it() {
    let (_d, root) = root();
    let marker = root.join("late.txt");
    // A detached writer and a setsid'd sleeper: both must die when the shell exits.
    let script =
        format!("setsid -f sleep 45; (sleep 1; echo late >> {}) & echo started", marker.display());
    let spec = read_tier(&root, &["/bin/sh", "-c", &script]).writable();
    let out = Sandbox::run(spec).unwrap();
    assert_eq!(out.stdout.text(), "started\n", "{}", out.stderr.text());
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!marker.exists(), "a detached process wrote after the run ended");
    let sleepers = fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| fs::read_to_string(e.ok()?.path().join("cmdline")).ok())
        .filter(|c| c.starts_with("sleep\u{0}45"))
        .count();
    assert_eq!(sleepers, 0, "setsid -f sleep 45 survived the run");
}

#[test]
fn masked_paths_read_empty_and_protected_paths_stay_read_only() {
    let (_d, root) = root();
    fs::write(root.join(".env"), "API_KEY=hunter2").unwrap();
    fs::create_dir_all(root.join(".git/hooks")).unwrap();
    fs::create_dir_all(root.join(".ssh")).unwrap();
    fs::write(root.join(".ssh/id_ed25519"), "PRIVATE").unwrap();
    let mut spec = read_tier(
        &root,
        &["/bin/sh", "-c", "cat .env; ls .ssh; echo x > .git/hooks/pre-commit; echo ok > file.txt"],
    )
    .writable();
    spec.masked = vec![root.join(".env"), root.join(".ssh")];
    spec.read_only = vec![root.join(".git")];
    let out = Sandbox::run(spec).unwrap();
    assert!(!out.stdout.text().contains("hunter2"), "{}", out.stdout.text());
    assert!(!out.stdout.text().contains("id_ed25519"), "{}", out.stdout.text());
    assert!(!root.join(".git/hooks/pre-commit").exists(), "wrote a git hook");
    assert_eq!(fs::read_to_string(root.join("file.txt")).unwrap(), "ok\n");
    assert_eq!(fs::read_to_string(root.join(".env")).unwrap(), "API_KEY=hunter2");
}

#[test]
fn a_system_directory_is_refused_as_a_root() {
    for bad in ["/", "/usr", "/etc"] {
        let spec = SpawnSpec::new(argv(&["true"]), PathBuf::from(bad), vec![PathBuf::from(bad)]);
        let err = Sandbox::run(spec).unwrap_err();
        assert!(matches!(err, SandboxError::SystemRoot { .. }), "{bad}: {err}");
        assert!(err.to_string().contains("project directory"), "{err}");
    }
}

#[test]
fn a_program_outside_the_sandbox_view_fails_with_a_clear_error() {
    let (_d, root) = root();
    let (_o, outside) = self::root();
    let tool = outside.join("tool");
    fs::copy("/bin/true", &tool).unwrap();
    let spec = read_tier(&root, &[tool.to_str().unwrap()]).writable();
    let err = Sandbox::run(spec).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("inside the sandbox"), "{text}");
}

#[test]
fn spawning_stays_quick() {
    // Not a timing assertion (see the spawn bench for figures); just that a hundred runs
    // finish and every one succeeds.
    let (_d, root) = root();
    let start = Instant::now();
    for _ in 0..20 {
        assert!(Sandbox::run(read_tier(&root, &["true"])).unwrap().exit.success());
    }
    eprintln!("20 sandboxed runs of true: {:?}", start.elapsed());
}

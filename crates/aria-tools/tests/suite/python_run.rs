//! `python_run` with the real interpreter inside a temporary root, through the `Tool` contract.
//! python3 is required (CI installs it with python3-pip); a missing one fails with the reason.

use std::collections::BTreeSet;
use std::fs;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolOutput};
use aria_sandbox::Sandbox;
use aria_tools::{PYTHON_ENV_ALLOWLIST, PathGuard, PythonRun, SensitivePatterns};
use serde_json::{Value, json};

struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    tool: PythonRun,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    fs::create_dir_all(root.join("scripts")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    let guard = PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap();
    let tool = PythonRun::new(Arc::new(guard));
    assert!(
        tool.interpreter().is_some(),
        "python3 is required for these tests and was not found on PATH; install python3"
    );
    Env { _tmp: tmp, root, outside, tool }
}

async fn call(tool: &PythonRun, args: Value) -> Result<ToolOutput, ToolError> {
    tool.call(args, &ToolContext::default()).await
}

async fn code(tool: &PythonRun, source: &str) -> ToolOutput {
    call(tool, json!({ "code": source })).await.unwrap()
}

fn stdout(out: &ToolOutput) -> &str {
    let text = out.content.as_str();
    let start = text.find("--- stdout ---\n").map(|i| i + 15).unwrap_or(text.len());
    let rest = &text[start..];
    let end =
        rest.find("\n--- ").or_else(|| rest.find("\nsandbox protections")).unwrap_or(rest.len());
    &rest[..end]
}

fn protection_active(out: &ToolOutput, name: &str) -> bool {
    out.details["protections"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == json!(name) && p["active"] == json!(true))
}

#[tokio::test]
async fn inline_code_runs_and_reports_status_output_and_protections() {
    let e = env();
    let out = code(
        &e.tool,
        "import sys\nprint(sum(range(10)))\nprint('oops', file=sys.stderr)\nsys.exit(3)",
    )
    .await;
    assert!(
        out.content.starts_with("exit status: 3\n--- stdout ---\n45\n--- stderr ---\noops\n"),
        "{}",
        out.content
    );
    assert!(
        out.content
            .contains("sandbox protections active: argv, environment, namespaces, mounts, orphans"),
        "{}",
        out.content
    );
    assert_eq!(out.details["exit_status"], json!(3));
    assert_eq!(out.details["timed_out"], json!(false));
    // Runs in the first root, isolated (-I) and without bytecode writes (-B).
    let out = code(&e.tool, "import os, sys\nprint(os.getcwd())\nprint(sys.flags.isolated, sys.flags.dont_write_bytecode)").await;
    assert_eq!(stdout(&out), format!("{}\n1 1", e.root.display()));
}

#[tokio::test]
async fn a_script_runs_by_path_in_its_root_and_sensitive_or_outside_files_are_refused() {
    let e = env();
    fs::write(e.root.join("scripts/hello.py"), "import sys\nprint('hello', sys.argv[0].endswith('hello.py'))\nopen('made.txt', 'w').write('x')\n").unwrap();
    let out = call(&e.tool, json!({"path": "scripts/hello.py"})).await.unwrap();
    assert_eq!(stdout(&out), "hello True", "{}", out.content);
    assert!(e.root.join("made.txt").exists(), "the script ran in its root");
    assert_eq!(out.details["script"], json!(e.root.join("scripts/hello.py").to_str().unwrap()));

    fs::write(e.root.join(".env"), "print('leak')\n").unwrap();
    fs::write(e.outside.join("evil.py"), "print('outside')\n").unwrap();
    fs::write(e.root.join("bin.py"), b"print(1)\0\0").unwrap();
    for (path, kind) in [
        (".env", "refused"),
        ("../outside/evil.py", "refused"),
        (e.outside.join("evil.py").to_str().unwrap(), "refused"),
        ("bin.py", "refused"),
        ("missing.py", "failed"),
        ("scripts", "failed"),
    ] {
        let err = call(&e.tool, json!({ "path": path })).await.unwrap_err();
        assert_eq!(err.kind(), kind, "{path}: {err}");
    }
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let e = env();
    let tool = PythonRun::new(Arc::new(
        PathGuard::new(std::slice::from_ref(&e.root), SensitivePatterns::default()).unwrap(),
    ))
    .with_timeout(Duration::from_secs(3));
    let src = "import subprocess, time\n\
               p = subprocess.Popen(['sleep', '59.4242'])\n\
               open('child.pid', 'w').write(str(p.pid))\n\
               print('started', flush=True)\n\
               time.sleep(60)\n";
    let out = code(&tool, src).await;
    assert!(
        out.content.starts_with("exit status: 137 (timed out: the process group was killed)"),
        "{}",
        out.content
    );
    assert_eq!(out.details["timed_out"], json!(true));
    assert_eq!(stdout(&out), "started");
    let pid = fs::read_to_string(e.root.join("child.pid")).unwrap();
    // The grandchild is gone (or a zombie waiting for init to reap it), not sleeping on. Its
    // pid may already name another process: the unusual argument tells them apart.
    let ours = fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == b"sleep\x0059.4242\x00");
    let state = fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.chars().next().unwrap_or('?')));
    assert!(!ours || state == Some('Z'), "the child {pid} survived: state {state:?}");
}

#[tokio::test]
async fn the_environment_is_empty_but_for_the_allowlist() {
    let e = env();
    let out = code(&e.tool, "import os\nprint('\\n'.join(sorted(os.environ)))").await;
    let seen: BTreeSet<&str> = stdout(&out).lines().filter(|l| !l.is_empty()).collect();
    // What the sandbox sets, the locale allowlist, and LC_CTYPE (Python's own locale coercion).
    let allowed: BTreeSet<&str> = ["PATH", "TMPDIR", "HOME", "LC_CTYPE"]
        .into_iter()
        .chain(PYTHON_ENV_ALLOWLIST.iter().copied())
        .collect();
    assert!(
        seen.is_subset(&allowed),
        "unexpected variables: {:?}",
        seen.difference(&allowed).collect::<Vec<_>>()
    );
    assert!(seen.contains("PATH") && seen.contains("TMPDIR"), "{seen:?}");
    // HOME is the private /tmp, not ours.
    assert_eq!(stdout(&code(&e.tool, "import os\nprint(os.environ['HOME'])").await), "/tmp");
    // Variables of this test process (CARGO_*, ...) are not visible.
    let ours: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| !allowed.contains(k.as_str()))
        .collect();
    assert!(!ours.is_empty(), "the test process should have variables of its own");
    for name in &ours {
        assert!(!seen.contains(name.as_str()), "{name} leaked into Python");
    }
}

#[tokio::test]
async fn writes_outside_the_roots_are_blocked_when_the_kernel_enforces_it() {
    let e = env();
    let target = e.outside.join("escaped.txt");
    let src = format!(
        "import os, tempfile\n\
         open('inside.txt', 'w').write('ok')\n\
         with tempfile.NamedTemporaryFile(dir=os.environ['TMPDIR']) as t: t.write(b'tmp')\n\
         try:\n    open({:?}, 'w').write('x')\n    print('wrote outside')\n\
         except OSError as err:\n    print('blocked', err.errno)\n",
        target.to_str().unwrap()
    );
    let out = code(&e.tool, &src).await;
    assert!(e.root.join("inside.txt").exists(), "{}", out.content);
    if protection_active(&out, "filesystem") {
        // The outside directory does not exist in the sandbox's view (ENOENT), or Landlock
        // refuses the write (EACCES).
        let said = stdout(&out);
        assert!(said == "blocked 2" || said == "blocked 13", "{}", out.content);
        assert!(!target.exists());
    } else {
        // No Landlock on this kernel: the tool must say so rather than pretend.
        assert!(!Sandbox::kernel().filesystem());
        assert!(
            out.content.contains("sandbox protections NOT active: ")
                && out.content.contains("filesystem"),
            "{}",
            out.content
        );
        eprintln!("skipped the write-blocking assertion: this kernel has no Landlock");
    }
}

#[tokio::test]
async fn there_is_no_network() {
    let e = env();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let src = format!(
        "import socket\n\
         try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=5)\n    print('connected')\n\
         except OSError as err:\n    print('no network', type(err).__name__)\n"
    );
    let out = code(&e.tool, &src).await;
    if protection_active(&out, "network") {
        assert!(stdout(&out).starts_with("no network "), "{}", out.content);
        assert!(listener.accept().is_err(), "a connection reached the listener");
    } else {
        assert!(
            out.content.contains("sandbox protections NOT active: ")
                && out.content.contains("network"),
            "{}",
            out.content
        );
        eprintln!("skipped the network assertion: this kernel cannot block sockets here");
    }
}

#[tokio::test]
async fn dry_run_shows_what_would_run_and_runs_nothing() {
    let e = env();
    let ctx = ToolContext { dry_run: true, ..ToolContext::default() };
    let out = e.tool.call(json!({"code": "open('x.txt','w').write('1')"}), &ctx).await.unwrap();
    assert!(
        out.content.starts_with("dry run (tier irreversible): nothing was run\nwould run: "),
        "{}",
        out.content
    );
    assert!(out.content.contains(" -I -B -c <28 bytes of code>"), "{}", out.content);
    assert!(!e.root.join("x.txt").exists());
    // A dry run still applies the path guard.
    let err = e.tool.call(json!({"path": ".env"}), &ctx).await.unwrap_err();
    assert!(matches!(err, ToolError::Failed { .. } | ToolError::Refused { .. }), "{err}");
}

#[tokio::test]
async fn tier_is_irreversible_and_bad_calls_are_explained() {
    let e = env();
    assert_eq!(e.tool.tier(&json!({"code": "print(1)"})), Tier::Irreversible);
    assert_eq!(e.tool.tier(&json!({"path": "a.py"})), Tier::Irreversible);
    assert_eq!(e.tool.tier(&json!({"code": "1", "path": "a.py"})), Tier::Blocked);
    let err = call(&e.tool, json!({"code": "x = 1\0"})).await.unwrap_err();
    assert!(err.to_string().contains("NUL"), "{err}");
    let err = call(&e.tool, json!({"code": "#".repeat(200 * 1024)})).await.unwrap_err();
    assert!(err.to_string().contains("run it with \"path\""), "{err}");
    // No interpreter: a clear instruction.
    let guard =
        PathGuard::new(std::slice::from_ref(&e.root), SensitivePatterns::default()).unwrap();
    let none = PythonRun::with_interpreter(Arc::new(guard), None);
    let err = call(&none, json!({"code": "print(1)"})).await.unwrap_err();
    assert!(
        err.to_string().contains("python3 is not installed") && err.to_string().contains("install"),
        "{err}"
    );
}

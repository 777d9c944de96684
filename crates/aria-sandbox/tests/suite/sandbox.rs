//! Real programs under the sandbox: environment, roots, limits, timeouts, capture, Landlock.

use std::fs::{self, File};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use aria_sandbox::{Input, Limits, Output, Sandbox, SandboxError, SpawnSpec};
use pretty_assertions::assert_eq;

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

fn spec_in(root: &Path, words: &[&str]) -> SpawnSpec {
    SpawnSpec::new(argv(words), root.to_path_buf(), vec![root.to_path_buf()])
}

/// A write-tier spec: roots writable, any program may run.
fn spec_rw(root: &Path, words: &[&str]) -> SpawnSpec {
    spec_in(root, words).writable()
}

fn root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().canonicalize().unwrap();
    (dir, real)
}

#[test]
fn captures_stdout_stderr_and_exit_code() {
    let (_d, root) = root();
    let out =
        Sandbox::run(spec_in(&root, &["/bin/sh", "-c", "echo out; echo err >&2; exit 3"])).unwrap();
    assert_eq!(out.stdout.text(), "out\n");
    assert_eq!(out.stderr.text(), "err\n");
    assert_eq!(out.exit.code, Some(3));
    assert!(!out.timed_out);
}

#[test]
fn the_environment_is_empty_except_the_allowlist() {
    let (_d, root) = root();
    let mut spec = spec_in(&root, &["/usr/bin/env"]);
    spec.env = vec![("LANG".into(), "C".into())];
    let out = Sandbox::run(spec).unwrap();
    let text = out.stdout.text();
    let names: Vec<&str> = text.lines().filter_map(|l| l.split('=').next()).collect();
    for name in &names {
        assert!(
            ["PATH", "TMPDIR", "HOME", "LANG", "LC_ALL", "TERM"].contains(name),
            "unexpected variable {name} in {text}"
        );
    }
    assert!(text.contains("PATH=/usr/local/bin:/usr/bin:/bin\n"), "{text}");
    assert!(text.contains("LANG=C\n"), "{text}");
    let tmpdir = text.lines().find_map(|l| l.strip_prefix("TMPDIR=")).unwrap();
    assert_eq!(tmpdir, "/tmp", "the private /tmp");
}

#[test]
fn dangerous_variables_are_refused() {
    let (_d, root) = root();
    for name in ["LD_PRELOAD", "PATH", "TMPDIR"] {
        let mut spec = spec_in(&root, &["true"]);
        spec.env = vec![(name.into(), "/x".into())];
        let err = Sandbox::run(spec).unwrap_err();
        assert!(matches!(err, SandboxError::EnvNotAllowed { .. }), "{name}: {err}");
    }
}

#[test]
fn a_working_directory_outside_the_roots_is_refused() {
    let (_d, root) = root();
    let (_e, other) = self::root();
    let spec = SpawnSpec::new(argv(&["true"]), other, vec![root]);
    let err = Sandbox::run(spec).unwrap_err();
    assert!(matches!(err, SandboxError::CwdOutsideRoots { .. }), "{err}");
}

#[test]
fn programs_are_looked_up_in_the_safe_path_only() {
    let (_d, root) = root();
    let err = Sandbox::run(spec_in(&root, &["no-such-program-aria"])).unwrap_err();
    assert!(matches!(err, SandboxError::ProgramNotFound { .. }), "{err}");
}

#[test]
fn a_timeout_kills_the_whole_process_group_including_grandchildren() {
    let (_d, root) = root();
    // The child starts a grandchild `sleep` with a recognisable argument and waits for it.
    let script = "sleep 61.25 & wait";
    let mut spec = spec_rw(&root, &["/bin/sh", "-c", script]);
    spec.timeout = Duration::from_millis(500);
    let out = Sandbox::run(spec).unwrap();
    assert!(out.timed_out);
    assert_eq!(out.exit.signal, Some(libc::SIGKILL));
    // SIGKILL is delivered asynchronously: give the kernel a bounded moment to finish the
    // grandchild's exit.
    let mut alive = usize::MAX;
    for _ in 0..100 {
        alive = fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| fs::read_to_string(e.ok()?.path().join("cmdline")).ok())
            .filter(|c| c.starts_with("sleep\u{0}61.25"))
            .count();
        if alive == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(alive, 0, "the grandchild sleep survived the timeout");
}

#[test]
fn output_is_capped_and_says_so() {
    let (_d, root) = root();
    let mut spec = spec_rw(&root, &["/bin/sh", "-c", "head -c 300000 /dev/zero"]);
    spec.output_cap = 100 * 1024;
    let out = Sandbox::run(spec).unwrap();
    assert_eq!(out.stdout.bytes.len(), 100 * 1024);
    assert_eq!(out.stdout.total, 300_000);
    assert!(out.stdout.truncated);
    assert!(!out.stderr.truncated);
}

#[test]
fn the_file_size_limit_makes_a_large_write_fail() {
    let (_d, root) = root();
    let mut spec = spec_rw(&root, &["/bin/sh", "-c", "head -c 100000 /dev/zero > big.bin"]);
    spec.limits = Limits { max_file_bytes: Some(4096), ..Limits::default() };
    let out = Sandbox::run(spec).unwrap();
    assert!(!out.exit.success(), "{out:?}");
    let len = fs::metadata(root.join("big.bin")).map(|m| m.len()).unwrap_or(0);
    assert!(len <= 4096, "wrote {len} bytes past RLIMIT_FSIZE");
    assert!(out.protections.is_active("rlimits"));
}

#[test]
fn stdin_bytes_and_descriptors_are_wired() {
    let (_d, root) = root();
    let mut spec = spec_in(&root, &["wc", "-c"]);
    spec.stdin = Input::Bytes(b"hello".to_vec());
    assert_eq!(Sandbox::run(spec).unwrap().stdout.text().trim(), "5");

    let target = root.join("out.txt");
    let file = File::create(&target).unwrap();
    let mut spec = spec_in(&root, &["/bin/sh", "-c", "echo to-file; echo also >&2"]);
    spec.stdout = Output::Fd(OwnedFd::from(file));
    spec.stderr = Output::Merge;
    let out = Sandbox::run(spec).unwrap();
    assert_eq!(out.stdout.bytes, b"");
    assert_eq!(fs::read_to_string(&target).unwrap(), "to-file\nalso\n");
}

#[test]
fn a_pipeline_of_two_started_programs_streams_through_a_pipe() {
    let (_d, root) = root();
    let (r, w) = std::io::pipe().unwrap();
    let mut first = spec_in(&root, &["printf", "b\\na\\nc\\n"]);
    first.stdout = Output::Fd(OwnedFd::from(w));
    let mut second = spec_in(&root, &["sort"]);
    second.stdin = Input::Fd(OwnedFd::from(r));
    let a = Sandbox::start(first).unwrap();
    let b = Sandbox::start(second).unwrap();
    assert!(a.wait().exit.success());
    assert_eq!(b.wait().stdout.text(), "a\nb\nc\n");
}

#[test]
fn the_kernel_report_matches_what_runs_get() {
    let kernel = Sandbox::kernel();
    let report = Sandbox::planned_protections(false);
    assert_eq!(report.landlock_abi, kernel.landlock_abi);
    assert_eq!(report.is_active("filesystem"), kernel.filesystem());
    let seccomp = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));
    assert_eq!(report.is_active("network"), kernel.tcp() || seccomp);
    // A grant goes through the egress proxy: still a protection, with a different detail.
    let granted = Sandbox::planned_protections(true);
    assert!(granted.is_active("network"));
    assert!(granted.get("network").unwrap().detail.contains("egress proxy"));
    let shown = report.to_string();
    assert!(shown.contains("filesystem"), "{shown}");
}

#[test]
fn writes_outside_the_roots_are_denied_by_landlock() {
    let (_d, root) = root();
    let (_o, outside) = self::root();
    let victim = outside.join("escaped.txt");
    let script = format!("echo inside > in.txt; echo x > {}; echo $?", victim.display());
    let out = Sandbox::run(spec_rw(&root, &["/bin/sh", "-c", &script])).unwrap();
    if Sandbox::kernel().landlock_abi.is_none() {
        // Said, not pretended: the report must admit it.
        assert!(!out.protections.is_active("filesystem"));
        eprintln!("skipped: this kernel has no Landlock, so writes cannot be confined");
        return;
    }
    assert!(out.protections.is_active("filesystem"));
    assert!(!victim.exists(), "the child wrote outside the roots");
    assert_eq!(fs::read_to_string(root.join("in.txt")).unwrap(), "inside\n");
    // The outside directory does not even exist in the child's view.
    let err = out.stderr.text();
    assert!(
        ["ermission denied", "No such file", "nonexistent"].iter().any(|m| err.contains(m)),
        "{err}"
    );
    // Its private temp dir is writable.
    let out = Sandbox::run(spec_rw(
        &root,
        &["/bin/sh", "-c", "echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\""],
    ))
    .unwrap();
    assert_eq!(out.stdout.text(), "t\n", "{}", out.stderr.text());
}

#[test]
fn tcp_connect_is_blocked_without_the_network_grant() {
    let kernel = Sandbox::kernel();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (_d, root) = root();
    let Some(python) =
        ["/usr/bin/python3", "/usr/local/bin/python3"].into_iter().find(|p| Path::new(p).exists())
    else {
        eprintln!("skipped: no python3 to open a socket with");
        return;
    };
    let code = format!(
        "import socket\ntry:\n socket.create_connection(('127.0.0.1', {port}), 2); print('connected')\nexcept OSError as e:\n print('blocked', e.errno)"
    );
    let out = Sandbox::run(spec_in(&root, &[python, "-c", &code])).unwrap();
    if !kernel.tcp() {
        assert!(!out.protections.is_active("network"));
        eprintln!("skipped: this kernel's Landlock has no TCP rules");
        return;
    }
    assert!(out.stdout.text().starts_with("blocked"), "{:?}", out);
    // Granted, it is in a network namespace of its own: 127.0.0.1 there is not this machine's.
    let mut granted = spec_in(&root, &[python, "-c", &code]);
    granted.network = true;
    let out = Sandbox::run(granted).unwrap();
    assert_eq!(
        out.stdout.text(),
        format!("blocked {}\n", libc::ECONNREFUSED),
        "{}",
        out.stderr.text()
    );
}

#[test]
fn a_run_dropped_without_waiting_is_killed() {
    let (_d, root) = root();
    let running = Sandbox::start(spec_in(&root, &["sleep", "60"])).unwrap();
    let pid = running.pid();
    drop(running);
    // Reaped by the drop: the pid no longer names our child.
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(!stat.contains("(sleep)"), "{stat}");
}

#[test]
fn udp_sockets_are_refused_without_the_network_grant() {
    let (_d, root) = root();
    let Some(python) =
        ["/usr/bin/python3", "/usr/local/bin/python3"].into_iter().find(|p| Path::new(p).exists())
    else {
        eprintln!("skipped: no python3 to open a socket with");
        return;
    };
    let receiver = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = receiver.local_addr().unwrap().port();
    let code = format!(
        "import socket\ntry:\n s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('127.0.0.1', {port})); print('sent')\nexcept OSError as e:\n print('blocked', e.errno)"
    );
    let out = Sandbox::run(spec_in(&root, &[python, "-c", &code])).unwrap();
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        eprintln!("skipped: no seccomp filter for this architecture");
        return;
    }
    assert!(out.protections.is_active("network"));
    assert_eq!(out.stdout.text(), format!("blocked {}\n", libc::EACCES), "{}", out.stderr.text());
    // Unix sockets stay usable (many tools talk to local helpers through them).
    let unix =
        "import socket\na, b = socket.socketpair(); a.send(b'ok'); print(b.recv(2).decode())";
    let out = Sandbox::run(spec_in(&root, &[python, "-c", unix])).unwrap();
    assert_eq!(out.stdout.text(), "ok\n", "{}", out.stderr.text());
    // Granted, UDP sockets may be made, but the datagram stays in the child's own namespace.
    let mut granted = spec_in(&root, &[python, "-c", &code]);
    granted.network = true;
    let out = Sandbox::run(granted).unwrap();
    assert_eq!(out.stdout.text(), "sent\n", "{}", out.stderr.text());
    receiver.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 8];
    assert!(receiver.recv(&mut buf).is_err(), "a datagram reached this machine's loopback");
}

#[test]
fn the_parents_environment_cannot_be_read_through_proc() {
    let (_d, root) = root();
    let environ = format!("/proc/{}/environ", std::process::id());
    let out = Sandbox::run(spec_in(&root, &["cat", &environ])).unwrap();
    assert!(out.protections.is_active("parent-memory"));
    assert!(!out.exit.success(), "read the parent's environment: {:?}", out.stdout.text());
    assert_eq!(out.stdout.total, 0);
}

#[test]
fn a_child_of_root_has_no_capabilities() {
    let (_d, root) = root();
    let out = Sandbox::run(spec_in(&root, &["grep", "^Cap", "/proc/self/status"])).unwrap();
    if !Sandbox::kernel().root {
        assert!(out.protections.get("capabilities").is_none());
        eprintln!("skipped: ARIA is not root, there are no capabilities to drop");
        return;
    }
    assert!(out.protections.is_active("capabilities"));
    let text = out.stdout.text();
    for field in ["CapEff", "CapPrm", "CapBnd", "CapAmb"] {
        assert!(text.contains(&format!("{field}:\t0000000000000000")), "{field}: {text}");
    }
}

//! Nothing outlives ARIA: when the process that started a sandboxed program is killed
//! (`kill -9` of the daemon), the keeper, the sandbox's init and the program die with it. A
//! helper process (this test binary again, running one ignored test) stands in for the daemon.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use aria_sandbox::{Sandbox, SpawnSpec};

const HELPER_MARK: &str = "ARIA_SANDBOX_TEST_HELPER_MARK";
const HELPER_ROOT: &str = "ARIA_SANDBOX_TEST_HELPER_ROOT";

/// Processes (not zombies) whose command line is exactly `sleep <mark>`.
fn sleeps(mark: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let words: Vec<&[u8]> = cmdline.split(|b| *b == 0).filter(|w| !w.is_empty()).collect();
        if words == [b"sleep".as_slice(), mark.as_bytes()] && alive(pid) {
            found.push(pid);
        }
    }
    found
}

/// Whether `pid` exists and is not a zombie.
fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next());
    matches!(state, Some(s) if s != 'Z' && s != 'X')
}

fn poll(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if done() {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    done()
}

#[test]
#[ignore = "the helper process of sandboxed_programs_die_with_the_process_that_started_them"]
fn helper_holds_a_sandboxed_sleep() {
    let (Ok(mark), Ok(root)) = (std::env::var(HELPER_MARK), std::env::var(HELPER_ROOT)) else {
        return;
    };
    let root = PathBuf::from(root);
    let mut spec = SpawnSpec::new(vec!["sleep".into(), mark], root.clone(), vec![root]);
    spec.timeout = Duration::from_secs(300);
    // Started from a thread that ends at once: the run must not die with that thread.
    let running = thread::spawn(move || Sandbox::start(spec).unwrap()).join().unwrap();
    // The test harness prints the test's name on the same line first.
    #[allow(clippy::print_stdout)]
    {
        println!("ready {}", running.pid());
    }
    thread::sleep(Duration::from_secs(120));
    drop(running);
}

#[test]
fn sandboxed_programs_die_with_the_process_that_started_them() {
    let dir = tempfile::tempdir().unwrap();
    let mark = format!("100.{}", std::process::id());
    let mut helper = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "suite::lifetime::helper_holds_a_sandboxed_sleep", "--ignored"])
        .args(["--nocapture", "--test-threads=1"])
        .env(HELPER_MARK, &mark)
        .env(HELPER_ROOT, dir.path().canonicalize().unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(helper.stdout.take().unwrap());
    let keeper: i32 = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.split_once("ready ").and_then(|(_, p)| p.trim().parse().ok()))
        .expect("the helper started its sandboxed sleep");
    let running = poll(Duration::from_secs(5), || !sleeps(&mark).is_empty());
    // Still there a moment later: the thread that started it has ended, the helper has not.
    thread::sleep(Duration::from_millis(300));
    let still = sleeps(&mark);
    helper.kill().unwrap();
    helper.wait().unwrap();
    let gone = poll(Duration::from_secs(2), || sleeps(&mark).is_empty() && !alive(keeper));
    let left = sleeps(&mark);
    for pid in &left {
        // SAFETY: signalling a leftover test process by pid.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert!(running && !still.is_empty(), "the sandboxed sleep never ran or died early");
    assert!(gone, "still running after the helper was killed: sleep {left:?}, keeper {keeper}");
}

#[test]
fn a_run_started_from_a_thread_that_ended_runs_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let spec = SpawnSpec::new(vec!["sleep".into(), "0.3".into()], root.clone(), vec![root]);
    let running = thread::spawn(move || Sandbox::start(spec).unwrap()).join().unwrap();
    let out = running.wait();
    assert_eq!((out.exit.code, out.exit.signal), (Some(0), None), "{out:?}");
}

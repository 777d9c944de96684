//! `aria serve` as a process: started, used over HTTP, killed with SIGKILL mid-run and started
//! again, stopped with SIGTERM mid-run, refused twice on one home, refused off loopback, and
//! locked by a token.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use aria_testkit::openai_mock::{MockOpenAi, MockTurn};
use serde_json::{Value, json};

use super::harness::{Aria, code, json_of, text};

/// A running daemon and the address it printed.
struct Daemon {
    child: Child,
    address: String,
    stderr: std::sync::mpsc::Receiver<String>,
}

impl Daemon {
    fn start(aria: &Aria, base_url: &str, extra: &[&str]) -> Daemon {
        let mut child = aria
            .cmd(base_url)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let line = rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("the daemon says where it serves");
            if let Some(rest) = line.split("serving on http://").nth(1) {
                let address = rest.split('/').next().unwrap().to_owned();
                return Daemon { child, address, stderr: rx };
            }
        }
    }

    /// One HTTP/1.1 request; the status and the body.
    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.address).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.address,
            body.len()
        );
        if !body.is_empty() {
            head.push_str("Content-Type: application/json\r\n");
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        stream.write_all(format!("{head}\r\n{body}").as_bytes()).unwrap();
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let status = raw.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let body = raw.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
        (status, body)
    }

    fn json(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let (status, body) = self.request(method, path, body, &[]);
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    fn signal(&self, name: &str) {
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    fn said(&self) -> String {
        self.stderr.try_iter().collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn new_conversation(daemon: &Daemon) -> String {
    let (status, c) = daemon.json("POST", "/api/v1/conversations", Some(&json!({})));
    assert_eq!(status, 201, "{c}");
    c["id"].as_str().unwrap().to_owned()
}

/// Starts a message in the background, streaming, and returns the thread that collects the
/// event names it hears.
fn stream_message(
    daemon: &Daemon,
    conversation: &str,
    content: &str,
) -> std::thread::JoinHandle<String> {
    let address = daemon.address.clone();
    let path = format!("/api/v1/conversations/{conversation}/messages");
    let body = json!({ "content": content, "stream": true }).to_string();
    std::thread::spawn(move || {
        let mut stream = TcpStream::connect(&address).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Type: \
             application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut raw = String::new();
        let _ = stream.read_to_string(&mut raw);
        raw
    })
}

#[test]
fn kill_9_mid_run_then_restart_marks_it_interrupted_and_it_resumes_over_http() {
    let aria = Aria::new();
    let stalled = MockOpenAi::new(vec![
        MockTurn::tool_call("file_read", r#"{"path":"notes.txt"}"#),
        MockTurn::Stall,
    ])
    .serve();
    let mut daemon = Daemon::start(&aria, &stalled.base_url(), &[]);
    let conversation = new_conversation(&daemon);
    let _follower = stream_message(&daemon, &conversation, "read notes.txt and tell me the code");
    assert!(
        stalled.wait_for_hits_blocking(2, Duration::from_secs(20)),
        "the run reached its second call"
    );
    std::thread::sleep(Duration::from_millis(100));
    // While it runs, the CLI works beside it and sees the run as running.
    let listed = json_of(&aria.run(&stalled.base_url(), &["sessions", "list", "--json"]));
    assert_eq!(listed[0]["interrupted"], false, "{listed}");
    assert!(listed[0]["status"].as_str().unwrap().starts_with("running"), "{listed}");
    daemon.child.kill().unwrap(); // SIGKILL
    daemon.child.wait().unwrap();

    let fresh = MockOpenAi::new(vec![MockTurn::text("The code is 4242.")]).serve();
    let daemon = Daemon::start(&aria, &fresh.base_url(), &[]);
    let (status, runs) = daemon.json("GET", "/api/v1/runs", None);
    assert_eq!(status, 200);
    let run = &runs["items"][0];
    assert_eq!(
        (run["interrupted"].clone(), run["running"].clone()),
        (json!(true), json!(false)),
        "{run}"
    );
    let id = run["id"].as_str().unwrap().to_owned();
    let listed = json_of(&aria.run(&fresh.base_url(), &["sessions", "list", "--json"]));
    assert_eq!(listed[0]["interrupted"], true, "the CLI agrees: {listed}");

    let (status, reply) =
        daemon.json("POST", &format!("/api/v1/runs/{id}/resume"), Some(&json!({})));
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["state"], "done", "{reply}");
    assert_eq!(reply["answer"], "The code is 4242.");
    let (_, again) = daemon.json("POST", &format!("/api/v1/runs/{id}/resume"), Some(&json!({})));
    assert_eq!(again["error"]["code"], "conflict", "a finished run is not resumed twice: {again}");
    drop(daemon);
    let verify = aria.run(&fresh.base_url(), &["audit", "verify"]);
    assert_eq!(code(&verify), 0, "the chain verifies: {}", text(&verify.stdout));
}

#[test]
fn sigterm_mid_run_stops_within_the_grace_and_leaves_the_run_resumable() {
    let aria = Aria::new();
    std::fs::create_dir_all(aria.dir.path().join("config/aria")).unwrap();
    std::fs::write(
        aria.dir.path().join("config/aria/aria.toml"),
        "[server]\nshutdown_grace_secs = 1\n",
    )
    .unwrap();
    let stalled = MockOpenAi::new(vec![MockTurn::Stall]).serve();
    let mut daemon = Daemon::start(&aria, &stalled.base_url(), &[]);
    let conversation = new_conversation(&daemon);
    let follower = stream_message(&daemon, &conversation, "hello");
    assert!(stalled.wait_for_hits_blocking(1, Duration::from_secs(20)));
    daemon.signal("TERM");
    let status = daemon.wait_exit(Duration::from_secs(15)).expect("the daemon stops");
    assert!(status.success(), "{status:?}: {}", daemon.said());
    let heard = follower.join().unwrap();
    assert!(heard.contains("event: error") && heard.contains("interrupted"), "{heard}");
    assert!(!heard.contains("event: done"), "{heard}");
    let listed = json_of(&aria.run(&stalled.base_url(), &["sessions", "list", "--json"]));
    assert_eq!(listed[0]["interrupted"], true, "{listed}");
}

#[test]
fn one_daemon_per_home_and_none_off_loopback_without_token_and_insecure() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![]).serve();
    let daemon = Daemon::start(&aria, &mock.base_url(), &[]);
    let second = aria.run(&mock.base_url(), &["serve", "--listen", "127.0.0.1:0"]);
    assert_eq!(code(&second), 2);
    assert!(text(&second.stderr).contains("already running"), "{}", text(&second.stderr));
    drop(daemon);

    let public = aria.run(&mock.base_url(), &["serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(code(&public), 2);
    assert!(text(&public.stderr).contains("--new-token"), "{}", text(&public.stderr));
    let token = aria.run(&mock.base_url(), &["serve", "--new-token"]);
    assert_eq!(code(&token), 0, "{}", text(&token.stderr));
    let still = aria.run(&mock.base_url(), &["serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(code(&still), 2);
    assert!(text(&still.stderr).contains("--insecure"), "{}", text(&still.stderr));
    let bad = aria.run(&mock.base_url(), &["serve", "--listen", "localhost"]);
    assert_eq!(code(&bad), 2);
    assert!(text(&bad.stderr).contains("ADDR:PORT"), "{}", text(&bad.stderr));
}

#[test]
fn a_new_token_is_private_and_then_required() {
    use std::os::unix::fs::PermissionsExt;
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![MockTurn::text("hi")]).serve();
    let made = aria.run(&mock.base_url(), &["serve", "--new-token"]);
    assert_eq!(code(&made), 0);
    let token = text(&made.stdout).trim().to_owned();
    let file = aria.home().join("api-token");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), token);
    let daemon = Daemon::start(&aria, &mock.base_url(), &[]);
    assert_eq!(daemon.request("GET", "/api/v1/health", None, &[]).0, 200, "health needs no token");
    assert_eq!(daemon.request("GET", "/api/v1/conversations", None, &[]).0, 401);
    let wrong =
        daemon.request("GET", "/api/v1/conversations", None, &[("Authorization", "Bearer nope")]);
    assert_eq!(wrong.0, 401);
    let bearer = format!("Bearer {token}");
    let right = daemon.request("GET", "/api/v1/conversations", None, &[("Authorization", &bearer)]);
    assert_eq!(right.0, 200, "{}", right.1);
}

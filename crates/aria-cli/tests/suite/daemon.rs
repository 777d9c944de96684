//! A running `aria serve` for the process tests: started on a free loopback port, spoken to
//! over plain HTTP/1.1, its SSE streams read as they come.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::harness::Aria;

/// A running daemon and the address it printed.
pub struct Daemon {
    pub child: Child,
    pub address: String,
    /// The daemon's own token (`$ARIA_HOME/api-token`), sent with every
    /// request that does not bring its own `Authorization` (or `Cookie`); `None` for a daemon
    /// that asks for none.
    pub token: Option<String>,
    /// What the daemon printed while starting (its login link among it).
    pub started: Vec<String>,
    stderr: std::sync::mpsc::Receiver<String>,
}

impl Daemon {
    pub fn start(aria: &Aria, base_url: &str, extra: &[&str]) -> Daemon {
        Daemon::start_from(aria, aria.cmd(base_url), extra)
    }

    /// Like [`Daemon::start`], with the command as the caller prepared it (its environment,
    /// its working directory).
    pub fn start_from(aria: &Aria, mut cmd: std::process::Command, extra: &[&str]) -> Daemon {
        let mut child = cmd
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
        // Built before waiting, so a daemon that never says where it serves is still killed.
        let mut daemon =
            Daemon { child, address: String::new(), token: None, started: Vec::new(), stderr: rx };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let line = daemon
                .stderr
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("the daemon says where it serves");
            daemon.started.push(line.clone());
            if let Some(rest) = line.split("serving on http://").nth(1) {
                daemon.address = rest.split('/').next().unwrap().to_owned();
                daemon.token = std::fs::read_to_string(aria.home().join("api-token"))
                    .ok()
                    .map(|t| t.trim().to_owned());
                if !line.contains("NO credentials") {
                    assert!(daemon.token.is_some(), "a daemon with credentials has its token");
                }
                // The login link comes after the address: wait for it.
                while let Ok(line) = daemon.stderr.recv_timeout(Duration::from_secs(5)) {
                    let done = line.contains("/login?code=");
                    daemon.started.push(line);
                    if done {
                        break;
                    }
                }
                return daemon;
            }
        }
    }

    /// [`Daemon::start`] with memory extraction off in the home's aria.toml: an extraction
    /// after a turn would take the script's next turn.
    pub fn start_without_extraction(aria: &Aria, base_url: &str) -> Daemon {
        std::fs::create_dir_all(aria.dir.path().join("config/aria")).unwrap();
        std::fs::write(
            aria.dir.path().join("config/aria/aria.toml"),
            "[memory]\nextract = false\n",
        )
        .unwrap();
        Daemon::start(aria, base_url, &[])
    }

    /// One HTTP/1.1 request; the status and the body.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> (u16, String) {
        let body = body.map(Value::to_string);
        let mut all = headers.to_vec();
        if body.is_some() {
            all.push(("Content-Type", "application/json"));
        }
        self.request_raw(method, path, body.as_deref(), &all)
    }

    /// A request with exactly this body and these headers (`Host` defaults to the daemon's
    /// address unless given).
    pub fn request_raw(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.address).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let body = body.unwrap_or_default();
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("Host: {}\r\n", self.address));
        }
        let own_credentials = headers.iter().any(|(k, _)| {
            k.eq_ignore_ascii_case("authorization") || k.eq_ignore_ascii_case("cookie")
        });
        if let Some(token) = self.token.as_ref().filter(|_| !own_credentials) {
            head.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        // A server that refuses early may close before reading everything: not an error here.
        let _ = stream.write_all(format!("{head}\r\n{body}").as_bytes());
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let status = raw.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let body = raw.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
        (status, body)
    }

    pub fn json(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let (status, body) = self.request(method, path, body, &[]);
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    pub fn signal(&self, name: &str) {
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// The one-time login link the daemon printed at start.
    pub fn login_link(&self) -> String {
        let line = self.started.iter().find(|l| l.contains("/login?code=")).expect("a login link");
        line[line.find("http://").unwrap()..].trim().to_owned()
    }

    /// Logs in like a browser through a one-time link (`aria ui`'s, or the one printed at
    /// start): the `Cookie` header value and the CSRF token, for requests of a person's web
    /// session.
    pub fn web_login(&self, link: &str) -> (String, String) {
        let path = &link[link.find("/login").unwrap()..];
        let mut stream = TcpStream::connect(&self.address).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", self.address);
        stream.write_all(request.as_bytes()).unwrap();
        let mut raw = String::new();
        let _ = stream.read_to_string(&mut raw);
        assert!(raw.starts_with("HTTP/1.1 303"), "the link logs in: {raw}");
        let cookie = |name: &str| {
            raw.lines()
                .filter_map(|l| l.strip_prefix("set-cookie: ").or(l.strip_prefix("Set-Cookie: ")))
                .find_map(|c| c.strip_prefix(&format!("{name}=")))
                .map(|c| c.split(';').next().unwrap().to_owned())
                .expect("the login sets its cookies")
        };
        let (session, csrf) = (cookie("aria_session"), cookie("aria_csrf"));
        (format!("aria_session={session}; aria_csrf={csrf}"), csrf)
    }

    /// Answers approval question `id` as a person in the web UI would (a fresh web login made
    /// with the daemon's token): the status and the body.
    pub fn answer_as_person(&self, id: &str, decision: &str) -> (u16, Value) {
        let (status, made) = self.json("POST", "/api/v1/login-codes", Some(&json!({})));
        assert_eq!(status, 201, "{made}");
        let (cookie, csrf) = self.web_login(made["url"].as_str().unwrap());
        let (status, body) = self.request(
            "POST",
            &format!("/api/v1/approvals/{id}"),
            Some(&json!({ "decision": decision })),
            &[("Cookie", cookie.as_str()), ("X-CSRF-Token", csrf.as_str())],
        );
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    /// The `Authorization` line for hand-made requests.
    pub fn auth_line(&self) -> String {
        self.token.as_ref().map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default()
    }

    pub fn said(&self) -> String {
        self.stderr.try_iter().collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn new_conversation(daemon: &Daemon) -> String {
    let (status, c) = daemon.json("POST", "/api/v1/conversations", Some(&json!({})));
    assert_eq!(status, 201, "{c}");
    c["id"].as_str().unwrap().to_owned()
}

/// Starts a message in the background, streaming, and returns the thread that collects the
/// event names it hears.
pub fn stream_message(
    daemon: &Daemon,
    conversation: &str,
    content: &str,
) -> std::thread::JoinHandle<String> {
    let address = daemon.address.clone();
    let auth = daemon.auth_line();
    let path = format!("/api/v1/conversations/{conversation}/messages");
    let body = json!({ "content": content, "stream": true }).to_string();
    std::thread::spawn(move || {
        let mut stream = TcpStream::connect(&address).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {address}\r\n{auth}Connection: close\r\nContent-Type: \
             application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut raw = String::new();
        let _ = stream.read_to_string(&mut raw);
        raw
    })
}

/// An SSE response read as it comes: `(event name, data)` in order.
pub struct Events {
    rx: std::sync::mpsc::Receiver<(String, Value)>,
    pub seen: Vec<(String, Value)>,
}

impl Events {
    /// Sends `body` with `stream: true` and follows the answer.
    pub fn post(daemon: &Daemon, path: &str, body: &Value) -> Events {
        let mut stream = TcpStream::connect(&daemon.address).unwrap();
        let body = body.to_string();
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\n{}Connection: close\r\nContent-Type: \
             application/json\r\nContent-Length: {}\r\n\r\n{body}",
            daemon.address,
            daemon.auth_line(),
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        Events::read(stream)
    }

    /// Follows `GET path`.
    pub fn get(daemon: &Daemon, path: &str) -> Events {
        let mut stream = TcpStream::connect(&daemon.address).unwrap();
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\n{}Connection: close\r\n\r\n",
            daemon.address,
            daemon.auth_line()
        );
        stream.write_all(request.as_bytes()).unwrap();
        Events::read(stream)
    }

    fn read(stream: TcpStream) -> Events {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut name = String::new();
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                // Chunked transfer: size lines are skipped, the event lines read.
                if let Some(n) = line.strip_prefix("event: ") {
                    name = n.to_owned();
                } else if let Some(data) = line.strip_prefix("data: ") {
                    let value = serde_json::from_str(data).unwrap_or(Value::Null);
                    if tx.send((std::mem::take(&mut name), value)).is_err() {
                        break;
                    }
                }
            }
        });
        Events { rx, seen: Vec::new() }
    }

    /// The next event called `name` (the others before it are kept in `seen`).
    pub fn next_named(&mut self, name: &str) -> Value {
        loop {
            let (n, data) = self
                .rx
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no `{name}` event; heard {:?}", self.names()));
            self.seen.push((n.clone(), data.clone()));
            if n == name {
                return data;
            }
        }
    }

    /// Everything until the stream ends.
    pub fn rest(&mut self) -> &[(String, Value)] {
        while let Ok(event) = self.rx.recv_timeout(Duration::from_secs(30)) {
            self.seen.push(event);
        }
        &self.seen
    }

    pub fn names(&self) -> Vec<&str> {
        self.seen.iter().map(|(n, _)| n.as_str()).collect()
    }
}

/// `{"content": …, "stream": true}` to a conversation, followed.
pub fn message_events(daemon: &Daemon, conversation: &str, content: &str) -> Events {
    Events::post(
        daemon,
        &format!("/api/v1/conversations/{conversation}/messages"),
        &json!({ "content": content, "stream": true }),
    )
}

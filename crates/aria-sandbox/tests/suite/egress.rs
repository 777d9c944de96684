//! A network grant is the internet, never this machine: a granted child reaches the outside
//! only through ARIA's egress proxy, which refuses loopback, private ranges and this machine's
//! own addresses. Everything here stays on loopback: a listener on 127.0.0.1 stands in for a
//! public server (the policy's test hook marks its port public) and another for the daemon.

use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use aria_sandbox::{EgressRecord, Outcome, Sandbox, SpawnSpec};

fn python() -> Option<&'static str> {
    ["/usr/bin/python3", "/usr/local/bin/python3"].into_iter().find(|p| Path::new(p).exists())
}

fn root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().canonicalize().unwrap();
    (dir, real)
}

/// A granted python run of `code`, with `public` loopback ports standing in for the internet.
fn granted(root: &Path, python: &str, code: &str, public: &[u16]) -> SpawnSpec {
    let mut spec = SpawnSpec::new(
        vec![python.into(), "-c".into(), code.into()],
        root.into(),
        vec![root.into()],
    );
    spec.network = true;
    spec.egress.loopback_ports_as_public = public.to_vec();
    spec
}

/// A stand-in for a public web server: answers every request with `public` and keeps the
/// request heads it received.
struct StandIn {
    port: u16,
    requests: Arc<Mutex<Vec<String>>>,
}

fn stand_in() -> StandIn {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            seen.lock().unwrap().push(String::from_utf8_lossy(&head).into_owned());
            let _ = conn.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\npublic",
            );
        }
    });
    StandIn { port, requests }
}

/// A listener standing in for ARIA's daemon: counts connections that reach it.
fn daemon() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let count = hits.clone();
    thread::spawn(move || {
        for conn in listener.incoming() {
            if conn.is_ok() {
                count.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    // The same port on ::1 where this machine has IPv6 loopback.
    if let Ok(v6) = TcpListener::bind(("::1", port)) {
        let count = hits.clone();
        thread::spawn(move || {
            for conn in v6.incoming() {
                if conn.is_ok() {
                    count.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
    }
    (port, hits)
}

/// Python that sends `CONNECT target` to the proxy and prints the status line of the answer,
/// one line per target.
fn connect_script(targets: &[String]) -> String {
    let list = targets.iter().map(|t| format!("{t:?}")).collect::<Vec<_>>().join(", ");
    format!(
        "import os, socket\n\
         proxy = os.environ['HTTPS_PROXY'].rsplit(':', 1)\n\
         for t in [{list}]:\n \
          s = socket.create_connection((proxy[0][len('http://'):], int(proxy[1])), 5)\n \
          s.sendall(('CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n' % (t, t)).encode())\n \
          print(t, s.recv(4096).decode().split('\\r\\n')[0])\n"
    )
}

fn show(out: &Outcome) -> String {
    format!(
        "stdout: {}\nstderr: {}\negress: {:?}",
        out.stdout.text(),
        out.stderr.text(),
        out.egress
    )
}

#[test]
fn a_granted_child_cannot_connect_to_this_machine_directly() {
    let Some(python) = python() else { return eprintln!("skipped: no python3") };
    let (_d, root) = root();
    let (port, hits) = daemon();
    let code = format!(
        "import socket\n\
         for host in ['127.0.0.1', '::1', 'localhost']:\n \
          try:\n  socket.create_connection((host, {port}), 2); print(host, 'connected')\n \
          except OSError as e:\n  print(host, 'refused')\n"
    );
    let out = Sandbox::run(granted(&root, python, &code, &[])).unwrap();
    assert_eq!(
        out.stdout.text(),
        "127.0.0.1 refused\n::1 refused\nlocalhost refused\n",
        "{}",
        show(&out)
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the daemon stand-in was reached");
    assert!(out.protections.is_active("network"));
    assert!(out.protections.get("network").unwrap().detail.contains("egress proxy"));
}

#[test]
fn a_granted_child_reaches_a_public_server_through_the_proxy() {
    let Some(python) = python() else { return eprintln!("skipped: no python3") };
    let (_d, root) = root();
    let server = stand_in();
    let code = format!(
        "import urllib.request\n\
         print(urllib.request.urlopen('http://127.0.0.1:{}/hello?x=1', timeout=5).read().decode())",
        server.port
    );
    let seen = Arc::new(Mutex::new(Vec::<EgressRecord>::new()));
    let mut spec = granted(&root, python, &code, &[server.port]);
    let sink = seen.clone();
    spec.egress.on_record =
        Some(Arc::new(move |r: &EgressRecord| sink.lock().unwrap().push(r.clone())));
    let out = Sandbox::run(spec).unwrap();
    assert_eq!(out.stdout.text(), "public\n", "{}", show(&out));
    // The server got an origin-form request, told to close.
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert!(requests[0].starts_with("GET /hello?x=1 HTTP/1.1\r\n"), "{requests:?}");
    assert!(requests[0].contains("Connection: close\r\n"), "{requests:?}");
    // One record, on the outcome and through the hook alike.
    assert_eq!(out.egress.len(), 1, "{}", show(&out));
    let r = &out.egress[0];
    assert_eq!((r.method.as_str(), r.host.as_str(), r.port), ("GET", "127.0.0.1", server.port));
    assert_eq!(r.addr, Some("127.0.0.1".parse().unwrap()));
    assert!(r.allowed && r.reason.is_none(), "{r:?}");
    assert_eq!(r.bytes_up, requests[0].len() as u64);
    assert!(r.bytes_down > "public".len() as u64, "{r:?}");
    assert_eq!(*seen.lock().unwrap(), out.egress);
}

#[test]
fn connect_tunnels_to_an_allowed_destination() {
    let Some(python) = python() else { return eprintln!("skipped: no python3") };
    let (_d, root) = root();
    let server = stand_in();
    let code = format!(
        "import os, socket\n\
         s = socket.create_connection(('127.0.0.1', {}), 5)\n\
         s.sendall(b'CONNECT 127.0.0.1:{} HTTP/1.1\\r\\n\\r\\n')\n\
         print(s.recv(4096).decode().split('\\r\\n')[0])\n\
         s.sendall(b'GET /tunnel HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n\
         data = b''\n\
         while True:\n \
          chunk = s.recv(4096)\n \
          if not chunk: break\n \
          data += chunk\n\
         print(data.decode().split('\\r\\n\\r\\n')[1])\n",
        aria_sandbox::EGRESS_PORT,
        server.port
    );
    let out = Sandbox::run(granted(&root, python, &code, &[server.port])).unwrap();
    assert_eq!(
        out.stdout.text(),
        "HTTP/1.1 200 Connection established\npublic\n",
        "{}",
        show(&out)
    );
    assert!(server.requests.lock().unwrap()[0].starts_with("GET /tunnel HTTP/1.1"));
    assert_eq!(out.egress.len(), 1);
    assert_eq!(out.egress[0].method, "CONNECT");
    assert!(out.egress[0].allowed && out.egress[0].bytes_down > 0);
}

#[test]
fn the_proxy_refuses_this_machine_and_private_ranges() {
    let Some(python) = python() else { return eprintln!("skipped: no python3") };
    let (_d, root) = root();
    let (port, hits) = daemon();
    let public = stand_in();
    let mut targets = vec![
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        format!("localhost:{port}"),
        format!("[::ffff:127.0.0.1]:{port}"),
        "10.0.0.1:80".to_owned(),
        "192.168.1.1:443".to_owned(),
        "169.254.169.254:80".to_owned(),
        "0.0.0.0:80".to_owned(),
    ];
    // This machine's own address on its default route, found without sending a packet.
    let own = UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect("192.0.2.1:9").map(|()| s))
        .and_then(|s| s.local_addr())
        .map(|a| a.ip());
    if let Ok(ip) = own {
        targets.push(format!("{ip}:{}", public.port));
    }
    // The stand-in's port marked public does not open the daemon's port.
    let out =
        Sandbox::run(granted(&root, python, &connect_script(&targets), &[public.port])).unwrap();
    let text = out.stdout.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), targets.len(), "{}", show(&out));
    for (line, target) in lines.iter().zip(&targets) {
        assert_eq!(*line, format!("{target} HTTP/1.1 403 Forbidden"), "{}", show(&out));
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the daemon stand-in was reached");
    assert!(public.requests.lock().unwrap().is_empty(), "this machine's address was reached");
    assert_eq!(out.egress.len(), targets.len());
    for r in &out.egress {
        assert!(!r.allowed && r.bytes_up == 0 && r.bytes_down == 0, "{r:?}");
        let why = r.reason.as_deref().unwrap_or_default();
        assert!(why.contains("public addresses only"), "{r:?}");
    }
}

#[test]
fn a_host_list_refuses_other_hosts() {
    let Some(python) = python() else { return eprintln!("skipped: no python3") };
    let (_d, root) = root();
    let server = stand_in();
    let code = format!(
        "import urllib.request, urllib.error\n\
         try:\n urllib.request.urlopen('http://127.0.0.1:{}/', timeout=5); print('fetched')\n\
         except urllib.error.HTTPError as e:\n print(e.code, e.read().decode().strip())\n",
        server.port
    );
    let mut spec = granted(&root, python, &code, &[server.port]);
    spec.egress.hosts = Some(vec!["pypi.org".into(), "*.pythonhosted.org".into()]);
    let out = Sandbox::run(spec).unwrap();
    assert_eq!(
        out.stdout.text(),
        "403 127.0.0.1 is not among this grant's hosts (pypi.org, *.pythonhosted.org)\n",
        "{}",
        show(&out)
    );
    assert!(server.requests.lock().unwrap().is_empty());
    assert_eq!(out.egress.len(), 1);
    assert!(!out.egress[0].allowed);
    assert_eq!(out.egress[0].addr, None, "refused before resolving");
}

#[test]
fn an_ungranted_child_gets_no_proxy() {
    let (_d, root) = root();
    let spec = SpawnSpec::new(vec!["env".into()], root.clone(), vec![root.clone()]);
    let out = Sandbox::run(spec).unwrap();
    assert!(!out.stdout.text().contains("PROXY"), "{}", out.stdout.text());
    assert!(out.egress.is_empty());
    let mut spec = SpawnSpec::new(vec!["env".into()], root.clone(), vec![root]);
    spec.network = true;
    spec.env.push(("HTTPS_PROXY".into(), "http://elsewhere:1".into()));
    let out = Sandbox::run(spec).unwrap();
    let env = out.stdout.text();
    let url = format!("http://127.0.0.1:{}", aria_sandbox::EGRESS_PORT);
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"] {
        assert!(env.lines().any(|l| l == format!("{name}={url}")), "{name}: {env}");
    }
    assert!(env.lines().any(|l| l == "NO_PROXY="), "{env}");
}

#[test]
fn nothing_is_recorded_when_a_granted_child_makes_no_request() {
    let (_d, root) = root();
    let mut spec = SpawnSpec::new(vec!["true".into()], root.clone(), vec![root]);
    spec.network = true;
    let out = Sandbox::run(spec).unwrap();
    assert!(out.exit.success(), "{}", show(&out));
    assert!(out.egress.is_empty());
}

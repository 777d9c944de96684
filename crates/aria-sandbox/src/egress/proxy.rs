//! The egress proxy of one run: accepts on the listener from the child's namespace, reads one
//! request per connection (`CONNECT host:port`, or an absolute-form `http://` request), decides
//! by [`EgressPolicy`], connects from ARIA's namespace to the checked address and relays bytes.
//! Every refusal is decided before any connection is attempted.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use super::{EgressPolicy, EgressRecord};

/// The most a request head may take.
const MAX_HEAD: usize = 16 * 1024;
/// How long the program has to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a connection to a destination may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most records one run keeps for its [`crate::Outcome`] (a long-lived MCP server makes
/// many); the hook and `tracing` still see every one.
const MAX_RECORDS: usize = 10_000;

/// A running proxy; [`Proxy::finish`] stops it and returns its records.
#[derive(Debug)]
pub(crate) struct Proxy {
    stop: Option<OwnedFd>,
    accept: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    policy: EgressPolicy,
    records: Mutex<Vec<EgressRecord>>,
    /// Open connections (program side, destination side), shut down when the run ends.
    live: Mutex<HashMap<u64, (TcpStream, Option<TcpStream>)>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Proxy {
    pub(crate) fn start(listener: OwnedFd, policy: EgressPolicy) -> io::Result<Proxy> {
        let listener = TcpListener::from(listener);
        listener.set_nonblocking(true)?;
        let (stop_read, stop_write) = std::io::pipe()?;
        let shared = Arc::new(Shared { policy, ..Shared::default() });
        let sh = shared.clone();
        let accept = thread::Builder::new()
            .name("aria-egress".into())
            .spawn(move || accept_loop(&listener, &OwnedFd::from(stop_read), &sh))?;
        Ok(Proxy { stop: Some(OwnedFd::from(stop_write)), accept: Some(accept), shared })
    }

    /// Stops accepting, ends the connections still open (the program is gone) and returns
    /// every record.
    pub(crate) fn finish(mut self) -> Vec<EgressRecord> {
        self.stop_accepting();
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
        self.shutdown_live();
        let threads: Vec<_> = lock(&self.shared.threads).drain(..).collect();
        for t in threads {
            let _ = t.join();
        }
        std::mem::take(&mut *lock(&self.shared.records))
    }

    fn stop_accepting(&mut self) {
        // Closing the write end wakes the accept loop's poll.
        self.stop.take();
    }

    fn shutdown_live(&self) {
        for (client, upstream) in lock(&self.shared.live).values() {
            let _ = client.shutdown(Shutdown::Both);
            if let Some(u) = upstream {
                let _ = u.shutdown(Shutdown::Both);
            }
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop_accepting();
        self.shutdown_live();
    }
}

fn accept_loop(listener: &TcpListener, stop: &OwnedFd, shared: &Arc<Shared>) {
    let mut next_id: u64 = 0;
    loop {
        let mut fds = [
            libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: stop.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: `fds` is a valid array of two pollfd for the kernel to fill.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if r < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if fds[1].revents != 0 {
            return;
        }
        let client = match listener.accept() {
            Ok((c, _)) => c,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        let id = next_id;
        next_id += 1;
        let Ok(clone) = client.try_clone() else { continue };
        lock(&shared.live).insert(id, (clone, None));
        let sh = shared.clone();
        let spawned = thread::Builder::new().name("aria-egress-conn".into()).spawn(move || {
            let record = serve(client, id, &sh);
            lock(&sh.live).remove(&id);
            emit(&sh, record);
        });
        match spawned {
            Ok(t) => {
                let mut threads = lock(&shared.threads);
                threads.retain(|t| !t.is_finished());
                threads.push(t);
            }
            Err(_) => {
                lock(&shared.live).remove(&id);
            }
        }
    }
}

fn emit(shared: &Shared, record: EgressRecord) {
    tracing::info!(
        method = %record.method,
        host = %record.host,
        port = record.port,
        addr = ?record.addr,
        bytes_up = record.bytes_up,
        bytes_down = record.bytes_down,
        allowed = record.allowed,
        reason = record.reason.as_deref().unwrap_or(""),
        "sandbox egress"
    );
    if let Some(hook) = &shared.policy.on_record {
        hook(&record);
    }
    let mut records = lock(&shared.records);
    if records.len() < MAX_RECORDS {
        records.push(record);
    }
}

/// What the program asked for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) host: String,
    pub(crate) port: u16,
    /// For plain HTTP: the head to send to the destination (origin-form, `Connection: close`).
    pub(crate) forward_head: Option<Vec<u8>>,
}

/// Parses a request head (up to and including the blank line). The error is the answer's
/// status and reason.
pub(crate) fn parse_head(head: &[u8]) -> Result<Request, (u16, String)> {
    let text = std::str::from_utf8(head).map_err(|_| (400, "the request is not text".into()))?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err((400, format!("cannot read the request line {first:?}")));
    };
    if !version.starts_with("HTTP/1.") {
        return Err((400, format!("unsupported protocol {version:?}")));
    }
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_authority(target, None)
            .ok_or_else(|| (400, format!("CONNECT needs host:port, not {target:?}")))?;
        return Ok(Request { method: "CONNECT".into(), host, port, forward_head: None });
    }
    let Some(rest) = target.strip_prefix("http://") else {
        let hint = if target.starts_with("https://") {
            "use CONNECT for https:// (set HTTPS_PROXY)"
        } else {
            "send absolute-form http:// requests or CONNECT"
        };
        return Err((400, format!("this is an egress proxy: {hint}")));
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let path = if path.is_empty() {
        "/".to_owned()
    } else if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    let (host, port) = split_authority(authority, Some(80))
        .ok_or_else(|| (400, format!("cannot read the host of {target:?}")))?;
    let mut out = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim().to_ascii_lowercase();
        if !matches!(
            name.as_str(),
            "connection" | "proxy-connection" | "proxy-authorization" | "keep-alive"
        ) {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    Ok(Request { method: method.to_owned(), host, port, forward_head: Some(out.into_bytes()) })
}

/// `host:port`, `[v6]:port`, or a host alone when `default` gives the port. No user info.
fn split_authority(text: &str, default: Option<u16>) -> Option<(String, u16)> {
    if text.is_empty() || text.contains('@') {
        return None;
    }
    let (host, port) = if let Some(v6) = text.strip_prefix('[') {
        let (h, after) = v6.split_once(']')?;
        h.parse::<std::net::Ipv6Addr>().ok()?;
        match after.strip_prefix(':') {
            Some(p) => (h, Some(p)),
            None if after.is_empty() => (h, None),
            None => return None,
        }
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (text, None),
        }
    };
    let port = match port {
        Some(p) => p.parse::<u16>().ok().filter(|p| *p != 0)?,
        None => default?,
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty() || host.contains(['/', ' ', '[', ']']) {
        return None;
    }
    Some((host, port))
}

/// Handles one connection from the program and returns its record.
fn serve(mut client: TcpStream, id: u64, shared: &Shared) -> EgressRecord {
    let mut record = EgressRecord {
        method: String::new(),
        host: String::new(),
        port: 0,
        addr: None,
        bytes_up: 0,
        bytes_down: 0,
        allowed: false,
        reason: None,
    };
    let (head, rest) = match read_head(&mut client) {
        Ok(x) => x,
        Err(reason) => {
            answer(&mut client, 400, &reason);
            record.reason = Some(reason);
            return record;
        }
    };
    let request = match parse_head(&head) {
        Ok(r) => r,
        Err((status, reason)) => {
            answer(&mut client, status, &reason);
            record.reason = Some(reason);
            return record;
        }
    };
    record.method = request.method.clone();
    record.host = request.host.clone();
    record.port = request.port;
    let addrs = match decide(&shared.policy, &request.host, request.port) {
        Ok(a) => a,
        Err((status, addr, reason)) => {
            answer(&mut client, status, &reason);
            record.addr = addr;
            record.reason = Some(reason);
            return record;
        }
    };
    let upstream = match connect(&addrs) {
        Ok(u) => u,
        Err(e) => {
            let reason = format!("could not connect to {}:{}: {e}", request.host, request.port);
            answer(&mut client, 502, &reason);
            record.addr = addrs.first().map(SocketAddr::ip);
            record.reason = Some(reason);
            return record;
        }
    };
    record.addr = upstream.peer_addr().ok().map(|a| a.ip());
    record.allowed = true;
    if let (Ok(clone), Some(slot)) = (upstream.try_clone(), lock(&shared.live).get_mut(&id)) {
        slot.1 = Some(clone);
    }
    let _ = client.set_read_timeout(None);
    let mut first_up = Vec::new();
    match &request.forward_head {
        Some(head) => first_up.extend_from_slice(head),
        None => {
            if client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").is_err() {
                return record;
            }
        }
    }
    first_up.extend_from_slice(&rest);
    let (up, down) = relay(client, upstream, &first_up);
    record.bytes_up = up;
    record.bytes_down = down;
    record
}

/// Where the request may go: the checked addresses, or `(status, refused address, reason)`.
fn decide(
    policy: &EgressPolicy,
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, (u16, Option<IpAddr>, String)> {
    if !policy.host_allowed(host) {
        let list = policy.hosts.as_deref().unwrap_or_default().join(", ");
        return Err((403, None, format!("{host} is not among this grant's hosts ({list})")));
    }
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => match (host, port).to_socket_addrs() {
            Ok(a) => a.collect(),
            Err(e) => return Err((502, None, format!("could not resolve {host}: {e}"))),
        },
    };
    if addrs.is_empty() {
        return Err((502, None, format!("{host} did not resolve to any address")));
    }
    let own = super::own_addresses();
    // Every answer must pass: one private answer among public ones is how DNS rebinding starts.
    for a in &addrs {
        if let Some(why) = policy.address_refusal(a.ip(), port, &own) {
            let reason =
                format!("{host} resolves to {why}; a network grant reaches public addresses only");
            return Err((403, Some(a.ip()), reason));
        }
    }
    Ok(addrs)
}

fn connect(addrs: &[SocketAddr]) -> io::Result<TcpStream> {
    let mut last = io::Error::other("no address");
    for a in addrs {
        match TcpStream::connect_timeout(a, CONNECT_TIMEOUT) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Reads up to the end of the request head; returns the head and whatever followed it.
fn read_head(client: &mut TcpStream) -> Result<(Vec<u8>, Vec<u8>), String> {
    client.set_read_timeout(Some(HEAD_TIMEOUT)).map_err(|e| e.to_string())?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(format!("the request head is longer than {MAX_HEAD} bytes"));
        }
        match client.read(&mut chunk) {
            Ok(0) => return Err("the connection closed before a request arrived".into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("reading the request failed: {e}")),
        }
    }
}

fn answer(client: &mut TcpStream, status: u16, reason: &str) {
    let text = match status {
        403 => "Forbidden",
        502 => "Bad Gateway",
        _ => "Bad Request",
    };
    let body = format!("{reason}\n");
    let head = format!(
        "HTTP/1.1 {status} {text}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \
         {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = client.write_all(head.as_bytes()).and_then(|()| client.write_all(body.as_bytes()));
    let _ = client.shutdown(Shutdown::Write);
}

/// Copies both ways until both sides are done; returns the bytes (up, down).
fn relay(client: TcpStream, upstream: TcpStream, first_up: &[u8]) -> (u64, u64) {
    let (Ok(client_r), Ok(upstream_w)) = (client.try_clone(), upstream.try_clone()) else {
        return (0, 0);
    };
    let down = thread::spawn(move || copy(upstream, client, &[]));
    let up = copy(client_r, upstream_w, first_up);
    let down = down.join().unwrap_or(0);
    (up, down)
}

/// Copies `from` to `to` until end of file, then shuts down `to`'s writing side (or both
/// sides on an error, so the other direction ends too).
fn copy(mut from: TcpStream, mut to: TcpStream, first: &[u8]) -> u64 {
    let mut total = 0u64;
    let mut ok = to.write_all(first).is_ok();
    if ok {
        total += first.len() as u64;
    }
    let mut buf = [0u8; 16 * 1024];
    while ok {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                ok = to.write_all(&buf[..n]).is_ok();
                if ok {
                    total += n as u64;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => ok = false,
        }
    }
    if ok {
        let _ = to.shutdown(Shutdown::Write);
    } else {
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    }
    total
}

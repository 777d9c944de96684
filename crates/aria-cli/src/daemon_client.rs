//! Finding and asking a running `aria serve`: the daemon writes
//! `$ARIA_HOME/serve.json` (its address, pid and token file) once it listens, and removes it
//! when it stops; commands that gain from the daemon's warm state (`aria memories search`: the
//! embedder stays loaded, the vectors in memory) ask it instead of loading everything again,
//! and work directly when there is none. A daemon is only believed while it holds its lock
//! (`run/serve.lock`): a `serve.json` left by a killed daemon is ignored.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What `serve.json` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServeFile {
    pub address: String,
    pub pid: u32,
    /// Where the API token is kept (`null`: none, or it came from `ARIA_API_TOKEN`).
    pub token_file: Option<PathBuf>,
    pub version: String,
}

fn path(data_dir: &Path) -> PathBuf {
    data_dir.join("serve.json")
}

/// Records where the daemon listens (mode 0600, replaced atomically).
pub fn write(
    data_dir: &Path,
    address: SocketAddr,
    token_file: Option<&Path>,
) -> std::io::Result<()> {
    let file = ServeFile {
        address: address.to_string(),
        pid: std::process::id(),
        token_file: token_file.map(Path::to_path_buf),
        version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let target = path(data_dir);
    let tmp = target.with_extension("json.tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut out = options.open(&tmp)?;
    out.write_all(serde_json::to_string_pretty(&file)?.as_bytes())?;
    out.sync_all()?;
    std::fs::rename(&tmp, &target)
}

/// Removes `serve.json` (when the daemon stops).
pub fn remove(data_dir: &Path) {
    let _ = std::fs::remove_file(path(data_dir));
}

/// A daemon that is running, and how to talk to it.
#[derive(Debug, Clone)]
pub struct Running {
    pub address: String,
    token: Option<String>,
}

/// The daemon serving `data_dir`, if one runs: its lock is held and `serve.json` names it.
pub fn find(data_dir: &Path) -> Option<Running> {
    if !aria_store::runlock::daemon_running(data_dir) {
        return None;
    }
    let text = std::fs::read_to_string(path(data_dir)).ok()?;
    let file: ServeFile = serde_json::from_str(&text).ok()?;
    let from_env = std::env::var("ARIA_API_TOKEN").ok().filter(|t| !t.trim().is_empty());
    let token = from_env.or_else(|| {
        let path = file.token_file.as_ref()?;
        std::fs::read_to_string(path).ok().map(|t| t.trim().to_owned())
    });
    Some(Running { address: file.address, token })
}

/// Why a request to the daemon did not give an answer to use.
#[derive(Debug)]
pub enum AskError {
    /// It could not be reached or answered garbage: work directly.
    Unreachable(String),
    /// It answered with an error (`status`, its message).
    Refused(u16, String),
}

impl Running {
    /// `GET path` (with its query), the JSON answer of a 200.
    pub fn get_json(&self, path_and_query: &str) -> Result<Value, AskError> {
        self.request_json("GET", path_and_query, None)
    }

    /// `POST path` with a JSON body, the JSON answer of a 2xx.
    pub fn post_json(&self, path: &str, body: &Value) -> Result<Value, AskError> {
        self.request_json("POST", path, Some(body))
    }

    fn request_json(
        &self,
        method: &str,
        path_and_query: &str,
        body: Option<&Value>,
    ) -> Result<Value, AskError> {
        let unreachable = |e: std::io::Error| AskError::Unreachable(e.to_string());
        let address: SocketAddr =
            self.address.parse().map_err(|_| AskError::Unreachable("bad address".into()))?;
        let mut stream =
            TcpStream::connect_timeout(&address, Duration::from_secs(1)).map_err(unreachable)?;
        stream.set_read_timeout(Some(Duration::from_secs(30))).map_err(unreachable)?;
        let auth = self
            .token
            .as_ref()
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        let body = body.map(Value::to_string);
        let content = body.as_ref().map_or_else(String::new, |b| {
            format!("Content-Type: application/json\r\nContent-Length: {}\r\n", b.len())
        });
        let request = format!(
            "{method} {path_and_query} HTTP/1.1\r\nHost: {}\r\n{auth}{content}Accept: \
             application/json\r\nConnection: close\r\n\r\n{}",
            self.address,
            body.as_deref().unwrap_or("")
        );
        stream.write_all(request.as_bytes()).map_err(unreachable)?;
        let mut reader = BufReader::new(stream);
        let mut status_line = String::new();
        reader.read_line(&mut status_line).map_err(unreachable)?;
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| AskError::Unreachable(format!("not HTTP: {status_line:?}")))?;
        let (mut length, mut chunked) = (None, false);
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).map_err(unreachable)?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                let value = value.trim();
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.parse::<usize>().ok();
                } else if name.eq_ignore_ascii_case("transfer-encoding") {
                    chunked = value.eq_ignore_ascii_case("chunked");
                }
            }
        }
        let body = if chunked {
            read_chunked(&mut reader).map_err(unreachable)?
        } else {
            let mut body = Vec::new();
            match length {
                Some(n) => {
                    body.resize(n, 0);
                    reader.read_exact(&mut body).map_err(unreachable)?;
                }
                None => {
                    reader.read_to_end(&mut body).map_err(unreachable)?;
                }
            }
            body
        };
        let value: Value = serde_json::from_slice(&body)
            .map_err(|e| AskError::Unreachable(format!("not JSON: {e}")))?;
        if !(200..300).contains(&status) {
            let message = value["error"]["message"].as_str().unwrap_or_default().to_owned();
            return Err(AskError::Refused(status, message));
        }
        Ok(value)
    }
}

fn read_chunked(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size)?;
        let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk)?;
        if size == 0 {
            return Ok(body);
        }
        body.extend_from_slice(&chunk[..size]);
    }
}

/// `text` for a URL's query string.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char);
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_serve_file_without_a_running_daemon_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "127.0.0.1:9".parse().unwrap(), None).unwrap();
        assert!(find(dir.path()).is_none(), "no lock held: not running");
        let lock = aria_store::runlock::DaemonLock::acquire(dir.path(), "127.0.0.1:9").unwrap();
        let running = find(dir.path()).expect("the lock is held");
        assert_eq!(running.address, "127.0.0.1:9");
        assert!(matches!(running.get_json("/x"), Err(AskError::Unreachable(_))));
        drop(lock);
        remove(dir.path());
        assert!(!path(dir.path()).exists());
    }

    #[test]
    fn queries_are_percent_encoded() {
        assert_eq!(encode("green tea & café?"), "green%20tea%20%26%20caf%C3%A9%3F");
    }
}

//! A private ARIA home, a root with files, and a way to run the binary in them with a clean
//! environment (nothing from the developer's own setup leaks in).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use tempfile::TempDir;

pub const API_KEY: &str = "sk-test-e2e-0123456789abcdefghijklmnop";

pub struct Aria {
    pub dir: TempDir,
}

impl Aria {
    pub fn new() -> Aria {
        let aria = Aria { dir: tempfile::tempdir().unwrap() };
        std::fs::create_dir_all(aria.root()).unwrap();
        std::fs::write(aria.root().join("notes.txt"), "The launch code is 4242.\n").unwrap();
        aria
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    pub fn db(&self) -> PathBuf {
        self.home().join("aria.db")
    }

    /// `aria` with a clean environment pointing at `base_url`.
    pub fn cmd(&self, base_url: &str) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_aria"));
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("ARIA_HOME", self.home())
            .env("ARIA_ROOTS", self.root())
            .env("OPENAI_BASE_URL", base_url)
            .env("OPENAI_API_KEY", API_KEY)
            .env("ARIA_MODEL", "mock-model")
            .current_dir(self.dir.path());
        cmd
    }

    pub fn run(&self, base_url: &str, args: &[&str]) -> Output {
        self.cmd(base_url).args(args).output().unwrap()
    }
}

pub fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("stdout is not JSON ({e}):\n{}\nstderr:\n{}", text(&out.stdout), text(&out.stderr))
    })
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// Every file under `dir`, as bytes.
pub fn all_bytes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    out
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

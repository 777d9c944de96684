//! A scratch tree shared by the path-guard and file-tool tests:
//!
//! ```text
//! base/
//!   root/                      <- the allowed root
//!     a/b.txt                  "hello"
//!     a/c/                     (empty dir)
//!     notes.txt                "notes"
//!     .env                     "SECRET=1"
//!     .env.local               "X=1"
//!     config/.ssh/known_hosts  "host"
//!     server.PEM               "pem"
//!     link_in -> a             (relative, stays inside)
//!     link_file_in -> notes.txt
//!     link_abs_in -> <root>/a  (absolute, stays inside)
//!     link_out -> ../outside   (directory escape)
//!     link_file_out -> ../outside/secret.txt
//!     link_to_env -> .env      (inside, but sensitive)
//!     sneaky.txt -> <base>/home/.ssh/id_rsa
//!     loop1 -> loop2, loop2 -> loop1
//!     dangling -> ../outside/nope
//!     dangling_in -> a/nope
//!   outside/secret.txt         "top secret"
//!   home/.ssh/id_rsa           "PRIVATE"
//!   root_link -> root          (the root reached through a symlink)
//! ```

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use aria_tools::{PathGuard, SensitivePatterns};
use tempfile::TempDir;

pub struct Fixture {
    _tmp: TempDir,
    pub base: PathBuf,
    pub root: PathBuf,
    pub outside: PathBuf,
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

pub fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    write(&root.join("a/b.txt"), "hello");
    fs::create_dir_all(root.join("a/c")).unwrap();
    write(&root.join("notes.txt"), "notes");
    write(&root.join(".env"), "SECRET=1");
    write(&root.join(".env.local"), "X=1");
    write(&root.join("config/.ssh/known_hosts"), "host");
    write(&root.join("server.PEM"), "pem");
    write(&outside.join("secret.txt"), "top secret");
    write(&base.join("home/.ssh/id_rsa"), "PRIVATE");
    symlink("a", root.join("link_in")).unwrap();
    symlink("notes.txt", root.join("link_file_in")).unwrap();
    symlink(root.join("a"), root.join("link_abs_in")).unwrap();
    symlink("../outside", root.join("link_out")).unwrap();
    symlink("../outside/secret.txt", root.join("link_file_out")).unwrap();
    symlink(".env", root.join("link_to_env")).unwrap();
    symlink(base.join("home/.ssh/id_rsa"), root.join("sneaky.txt")).unwrap();
    symlink("loop2", root.join("loop1")).unwrap();
    symlink("loop1", root.join("loop2")).unwrap();
    symlink("../outside/nope", root.join("dangling")).unwrap();
    symlink("a/nope", root.join("dangling_in")).unwrap();
    symlink("root", base.join("root_link")).unwrap();
    Fixture { _tmp: tmp, base, root, outside }
}

impl Fixture {
    pub fn guard(&self) -> PathGuard {
        PathGuard::new(std::slice::from_ref(&self.root), SensitivePatterns::default()).unwrap()
    }

    /// `root` joined with `rel`, as a string (for absolute-path inputs).
    pub fn abs(&self, rel: &str) -> String {
        self.root.join(rel).to_str().unwrap().to_owned()
    }
}

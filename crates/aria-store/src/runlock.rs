//! Which sessions are running right now. A run holds an exclusive lock on
//! `$ARIA_HOME/run/<session>.lock` for as long as its process lives; the operating system
//! releases it when the process dies, however it dies. A session whose state is not terminal
//! and whose lock nobody holds was interrupted.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct SessionLock {
    _file: File,
    path: PathBuf,
}

fn lock_path(data_dir: &Path, session_id: &str) -> PathBuf {
    data_dir.join("run").join(format!("{session_id}.lock"))
}

impl SessionLock {
    /// Takes the lock; fails if another live process holds it.
    pub fn acquire(data_dir: &Path, session_id: &str) -> std::io::Result<SessionLock> {
        let path = lock_path(data_dir, session_id);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).truncate(false).write(true).open(&path)?;
        match file.try_lock() {
            Ok(()) => Ok(SessionLock { _file: file, path }),
            Err(std::fs::TryLockError::WouldBlock) => Err(std::io::Error::other(format!(
                "session {session_id} is being run by another aria process"
            ))),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }
}

impl Drop for SessionLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether a live process is running this session.
pub fn is_running(data_dir: &Path, session_id: &str) -> bool {
    let Ok(file) = File::open(lock_path(data_dir, session_id)) else { return false };
    matches!(file.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock))
}

/// Whether an `aria serve` is running on `data_dir` (it holds the daemon lock).
pub fn daemon_running(data_dir: &Path) -> bool {
    let Ok(file) = File::open(daemon_path(data_dir)) else { return false };
    matches!(file.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock))
}

/// The lock of the one `aria serve` allowed per `$ARIA_HOME`, held while it lives. The file
/// says which process holds it and where it listens.
#[derive(Debug)]
pub struct DaemonLock {
    _file: File,
}

fn daemon_path(data_dir: &Path) -> PathBuf {
    data_dir.join("run").join("serve.lock")
}

impl DaemonLock {
    /// Takes the lock and records `address` in it; when another daemon holds it, the error
    /// says its pid and address.
    pub fn acquire(data_dir: &Path, address: &str) -> std::io::Result<DaemonLock> {
        use std::io::Write;
        let path = daemon_path(data_dir);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file =
            OpenOptions::new().create(true).truncate(false).read(true).write(true).open(&path)?;
        match file.try_lock() {
            Ok(()) => {
                file.set_len(0)?;
                writeln!(file, "pid {}\nlisten {address}", std::process::id())?;
                Ok(DaemonLock { _file: file })
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let held = std::fs::read_to_string(&path).unwrap_or_default();
                let who = held.lines().collect::<Vec<_>>().join(", ");
                Err(std::io::Error::new(
                    std::io::ErrorKind::AddrInUse,
                    format!(
                        "another `aria serve` is already running on {} ({who}); stop it first, \
                         or give this one its own ARIA_HOME",
                        data_dir.display()
                    ),
                ))
            }
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_is_seen_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_running(dir.path(), "s1"));
        let lock = SessionLock::acquire(dir.path(), "s1").unwrap();
        assert!(is_running(dir.path(), "s1"));
        assert!(SessionLock::acquire(dir.path(), "s1").is_err());
        drop(lock);
        assert!(!is_running(dir.path(), "s1"));
    }

    #[test]
    fn one_daemon_per_data_directory_and_the_refusal_names_it() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!daemon_running(dir.path()));
        let first = DaemonLock::acquire(dir.path(), "127.0.0.1:8080").unwrap();
        assert!(daemon_running(dir.path()));
        let second = DaemonLock::acquire(dir.path(), "127.0.0.1:9090").unwrap_err();
        let message = second.to_string();
        assert!(
            message.contains("already running") && message.contains("127.0.0.1:8080"),
            "{message}"
        );
        assert!(message.contains(&format!("pid {}", std::process::id())), "{message}");
        drop(first);
        DaemonLock::acquire(dir.path(), "127.0.0.1:9090").unwrap();
    }
}

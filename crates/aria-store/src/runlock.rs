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
}

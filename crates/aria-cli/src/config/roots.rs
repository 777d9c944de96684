//! Where ARIA works when nobody said: the directory it was started in.
//!
//! `--root`, `ARIA_ROOTS` and `[scope] roots` win, in that order. Without any of them, a person
//! who types `aria run "…"` inside a project means that project, so the current directory is
//! the root. Two directories are never taken implicitly: the home directory and `/` (or any
//! system directory) would hand the model everything. Started there, the commands that work on
//! files refuse with the fix ([`RootsOrigin::require_work_root`]), while `aria serve` (often
//! started by systemd from `/` or `$HOME`) and the commands that only read ARIA's own records
//! fall back to the private workspace under the data directory.

use std::path::{Path, PathBuf};

/// Why the roots are what they are.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RootsOrigin {
    /// `--root`.
    Flag,
    /// `ARIA_ROOTS`.
    Env,
    /// `[scope] roots`.
    File,
    /// Nothing named a root: the directory ARIA was started in.
    CurrentDir,
    /// Nothing named a root and the current directory could not be read: the workspace under
    /// the data directory.
    #[default]
    Workspace,
    /// Nothing named a root and the current directory is no place to work implicitly (the
    /// home directory, `/`, a system directory): the workspace under the data directory stands
    /// in. `refused` is that current directory.
    WorkspaceInsteadOf { refused: PathBuf },
}

impl RootsOrigin {
    /// For a command that works on files (`run`, `chat`, `schedule add`): an error when the
    /// only root it would have is one refused as implicit, saying how to fix it.
    pub fn require_work_root(&self) -> Result<(), String> {
        match self {
            RootsOrigin::WorkspaceInsteadOf { refused } => Err(format!(
                "ARIA works in the directory it is started in, and {} is {}: too much to hand a \
                 model implicitly. cd into a project directory first, or pass --root DIR \
                 explicitly (or set ARIA_ROOTS or [scope] roots)",
                refused.display(),
                describe(refused)
            )),
            _ => Ok(()),
        }
    }

    /// The line said once on stderr when the root is the current directory.
    pub fn announcement(&self, roots: &[PathBuf]) -> Option<String> {
        match (self, roots) {
            (RootsOrigin::CurrentDir, [root]) => Some(format!(
                "working in {} (the current directory; --root or [scope] roots to change)",
                root.display()
            )),
            _ => None,
        }
    }

    /// The note `aria serve` gives when it works in the workspace because the current
    /// directory was refused.
    pub fn serve_fallback(&self, roots: &[PathBuf]) -> Option<String> {
        match (self, roots) {
            (RootsOrigin::WorkspaceInsteadOf { refused }, [root]) => Some(format!(
                "working in {} (the current directory {} is {}; --root or [scope] roots to \
                 change)",
                root.display(),
                refused.display(),
                describe(refused)
            )),
            _ => None,
        }
    }
}

fn describe(dir: &Path) -> &'static str {
    if dir == Path::new("/") {
        "the filesystem root"
    } else if aria_sandbox::is_system_path(dir) {
        "a system directory"
    } else {
        "your home directory"
    }
}

/// The root when nothing named one: `cwd`, unless it is `home`, `/`, a system directory or an
/// ancestor of `home`; then the workspace under `data_dir`. Paths are compared as they really
/// are when they exist (a link to the home directory is the home directory).
pub fn implicit_root(cwd: &Path, home: &Path, data_dir: &Path) -> (PathBuf, RootsOrigin) {
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.components().collect());
    let (here, home) = (real(cwd), real(home));
    let too_wide = here == home
        || home.starts_with(&here)
        || aria_sandbox::is_system_path(&here)
        || aria_sandbox::is_system_path(cwd);
    if too_wide {
        (data_dir.join("workspace"), RootsOrigin::WorkspaceInsteadOf { refused: here })
    } else {
        (cwd.to_path_buf(), RootsOrigin::CurrentDir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_directory_is_the_root() {
        let (root, origin) =
            implicit_root(Path::new("/no/such/proj"), Path::new("/no/such"), Path::new("/d"));
        assert_eq!(root, PathBuf::from("/no/such/proj"));
        assert_eq!(origin, RootsOrigin::CurrentDir);
        assert!(origin.require_work_root().is_ok());
        let said = origin.announcement(&[root]).unwrap();
        assert!(said.starts_with("working in /no/such/proj (the current directory"), "{said}");
    }

    #[test]
    fn home_slash_and_ancestors_of_home_are_refused_as_implicit_roots() {
        for (cwd, what) in [
            ("/no/such/home", "your home directory"),
            ("/", "the filesystem root"),
            ("/no/such", "your home directory"),
            ("/etc", "a system directory"),
        ] {
            let (root, origin) =
                implicit_root(Path::new(cwd), Path::new("/no/such/home"), Path::new("/d"));
            assert_eq!(root, PathBuf::from("/d/workspace"), "{cwd}");
            let err = origin.require_work_root().unwrap_err();
            assert!(err.contains(what) && err.contains("--root") && err.contains("cd "), "{err}");
            assert!(origin.announcement(std::slice::from_ref(&root)).is_none());
            let note = origin.serve_fallback(&[root]).unwrap();
            assert!(note.starts_with("working in /d/workspace"), "{note}");
        }
    }

    #[test]
    fn a_link_to_home_is_home() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&home, &link).unwrap();
        let (_, origin) = implicit_root(&link, &home, Path::new("/d"));
        assert!(matches!(origin, RootsOrigin::WorkspaceInsteadOf { .. }));
    }
}

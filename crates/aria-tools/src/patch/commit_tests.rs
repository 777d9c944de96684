//! The all-or-nothing commit: a failure at any rename or removal puts every file back, and a
//! target changed or swapped for a link after it was observed is never written.

use std::fs;
use std::io;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use pretty_assertions::assert_eq;

use super::commit::{Planned, WriteError, commit, commit_with, observe};
use crate::guard::path::PathGuard;
use crate::guard::sensitive::SensitivePatterns;

const MAX: u64 = 1 << 20;

fn setup() -> (tempfile::TempDir, std::path::PathBuf, PathGuard) {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("root");
    fs::create_dir_all(root.join("sub")).unwrap();
    fs::write(root.join("a.txt"), "a1\n").unwrap();
    fs::write(root.join("sub/b.txt"), "b1\n").unwrap();
    fs::write(root.join("gone.txt"), "bye\n").unwrap();
    let guard = PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap();
    (tmp, root, guard)
}

fn plan(guard: &PathGuard, path: &str, after: Option<&str>) -> Planned {
    let target = guard.resolve_for_create(path).unwrap();
    let before = observe(guard, &target, MAX).unwrap();
    Planned { target, before, after: after.map(str::to_owned) }
}

/// Every file under `dir` with its content, temp files included.
fn tree(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, fs::read_to_string(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

fn four(guard: &PathGuard) -> Vec<Planned> {
    vec![
        plan(guard, "a.txt", Some("a2\n")),
        plan(guard, "new/dir/c.txt", Some("c\n")),
        plan(guard, "sub/b.txt", Some("b2\n")),
        plan(guard, "gone.txt", None),
    ]
}

#[test]
fn a_commit_writes_creates_and_deletes() {
    let (_t, root, guard) = setup();
    commit(&four(&guard)).unwrap();
    assert_eq!(
        tree(&root),
        vec![
            ("a.txt".into(), "a2\n".into()),
            ("new/dir/c.txt".into(), "c\n".into()),
            ("sub/b.txt".into(), "b2\n".into()),
        ]
    );
}

#[test]
fn a_failure_at_any_step_puts_everything_back() {
    for fail_at in 0..4 {
        let (_t, root, guard) = setup();
        let before = tree(&root);
        let plans = four(&guard);
        let err = commit_with(&plans, &mut |step| {
            if step == fail_at { Err(io::Error::other("disk on fire")) } else { Ok(()) }
        })
        .unwrap_err();
        assert!(matches!(err, WriteError::RolledBack { .. }), "step {fail_at}: {err}");
        assert!(err.to_string().contains("nothing was changed"), "{err}");
        // Same files, same content, no temp files left behind (the created directory stays).
        assert_eq!(tree(&root), before, "step {fail_at}");
    }
}

#[test]
fn permissions_are_kept_on_replace() {
    let (_t, root, guard) = setup();
    fs::set_permissions(root.join("a.txt"), fs::Permissions::from_mode(0o751)).unwrap();
    commit(&[plan(&guard, "a.txt", Some("x\n"))]).unwrap();
    let mode = fs::metadata(root.join("a.txt")).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o751);
}

#[test]
fn a_file_edited_after_it_was_observed_is_not_overwritten() {
    let (_t, root, guard) = setup();
    let plans =
        vec![plan(&guard, "sub/b.txt", Some("mine\n")), plan(&guard, "a.txt", Some("mine\n"))];
    fs::write(root.join("a.txt"), "someone else's edit, longer\n").unwrap();
    let err = commit(&plans).unwrap_err();
    assert!(matches!(err, WriteError::Changed { .. }), "{err}");
    assert_eq!(fs::read_to_string(root.join("sub/b.txt")).unwrap(), "b1\n");
    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "someone else's edit, longer\n");
    // A file created where a new one was planned is not overwritten either.
    let plans = vec![plan(&guard, "fresh.txt", Some("mine\n"))];
    fs::write(root.join("fresh.txt"), "theirs\n").unwrap();
    assert!(matches!(commit(&plans), Err(WriteError::Changed { .. })));
    assert_eq!(fs::read_to_string(root.join("fresh.txt")).unwrap(), "theirs\n");
}

#[test]
fn a_directory_swapped_for_a_link_out_of_the_root_is_never_written_through() {
    let (tmp, root, guard) = setup();
    let outside = fs::canonicalize(tmp.path()).unwrap().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("b.txt"), "b1\n").unwrap();
    let plans =
        vec![plan(&guard, "sub/b.txt", Some("pwned\n")), plan(&guard, "sub/new.txt", Some("x\n"))];
    fs::rename(root.join("sub"), root.join("sub_moved")).unwrap();
    symlink(&outside, root.join("sub")).unwrap();
    let err = commit(&plans).unwrap_err();
    assert!(matches!(err, WriteError::Changed { .. }), "{err}");
    assert_eq!(tree(&outside), vec![("b.txt".into(), "b1\n".into())]);
    // The same for a file planned as new under a directory that did not exist yet.
    let plans = vec![plan(&guard, "later/x.txt", Some("x\n"))];
    symlink(&outside, root.join("later")).unwrap();
    assert!(commit(&plans).is_err());
    assert_eq!(tree(&outside), vec![("b.txt".into(), "b1\n".into())]);
}

#[test]
fn observe_refuses_directories_and_links() {
    let (_t, root, guard) = setup();
    let dir = guard.resolve_existing("sub").unwrap();
    assert!(matches!(observe(&guard, &dir, MAX), Err(WriteError::IsADirectory { .. })));
    let root_itself = guard.resolve_existing(".").unwrap();
    assert!(matches!(observe(&guard, &root_itself, MAX), Err(WriteError::IsADirectory { .. })));
    fs::write(root.join("bin.dat"), b"a\0b").unwrap();
    let before = observe(&guard, &guard.resolve_existing("bin.dat").unwrap(), MAX).unwrap();
    assert_eq!(before.text, None);
    assert!(before.unreadable.unwrap().contains("binary"));
}

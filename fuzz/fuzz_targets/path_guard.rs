//! Fuzzes the path guard with arbitrary path strings against a fixed tree full of traps.
//!
//! Invariants checked besides "never crashes": any path `resolve_existing` or
//! `resolve_for_create` allows is absolute, inside the root, free of `.`/`..` components and
//! sensitive names below the root; an existing one is its own canonical path (no symlink left)
//! and one created would be made under a real directory inside the root.

#![no_main]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use aria_tools::{PathGuard, SensitivePatterns};
use libfuzzer_sys::fuzz_target;

struct Tree {
    root: PathBuf,
    guard: PathGuard,
}

/// base/root (the allowed root) with links inside and out, and base/outside, base/home/.ssh.
fn tree() -> &'static Tree {
    static TREE: OnceLock<Tree> = OnceLock::new();
    TREE.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("aria-fuzz-path-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let root = base.join("root");
        for dir in ["a/c", "deep/er"] {
            fs::create_dir_all(root.join(dir)).unwrap();
        }
        fs::create_dir_all(base.join("outside")).unwrap();
        fs::create_dir_all(base.join("home/.ssh")).unwrap();
        for (file, text) in [
            ("root/a/b.txt", "hello"),
            ("root/.env", "SECRET=1"),
            ("root/notes.txt", "n"),
            ("outside/secret.txt", "top secret"),
            ("home/.ssh/id_rsa", "PRIVATE"),
        ] {
            fs::write(base.join(file), text).unwrap();
        }
        for (target, link) in [
            ("a", "root/link_in"),
            ("../outside", "root/link_out"),
            ("../outside/secret.txt", "root/link_file_out"),
            (".env", "root/link_env"),
            ("../home/.ssh/id_rsa", "root/sneaky"),
            ("loop2", "root/loop1"),
            ("loop1", "root/loop2"),
            ("../outside/nope", "root/dangling"),
            ("..", "root/deep/up"),
            ("root", "root_link"),
        ] {
            symlink(target, base.join(link)).unwrap();
        }
        let root = fs::canonicalize(&root).unwrap();
        let guard =
            PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap();
        Tree { root, guard }
    })
}

fn check_allowed(t: &Tree, input: &str, path: &Path, existing: bool) {
    assert!(path.is_absolute(), "{input:?} -> {path:?}");
    assert!(path.starts_with(&t.root), "{input:?} escaped the root: {path:?}");
    assert!(
        !path.components().any(|c| matches!(c, Component::ParentDir | Component::CurDir)),
        "{input:?} -> {path:?}"
    );
    let below = path.strip_prefix(&t.root).unwrap();
    for c in below.components() {
        let name = c.as_os_str().to_string_lossy();
        assert!(t.guard.sensitive().matching(&name).is_none(), "{input:?} -> sensitive {path:?}");
    }
    if existing {
        assert_eq!(fs::canonicalize(path).unwrap(), path, "{input:?}: not a real path");
    } else if let Some(real) = path.ancestors().find(|p| fs::symlink_metadata(p).is_ok()) {
        // The deepest existing ancestor is a real directory inside the root.
        assert_eq!(fs::canonicalize(real).unwrap(), real, "{input:?}: {real:?} is a link");
        assert!(real.starts_with(&t.root), "{input:?}: would be created under {real:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else { return };
    let t = tree();
    // Half the inputs are made absolute under the root, to reach past the lexical checks.
    let inputs = [input.to_owned(), format!("{}/{input}", t.root.display())];
    for input in &inputs {
        if let Ok(r) = t.guard.resolve_existing(input) {
            check_allowed(t, input, r.path(), true);
        }
        if let Ok(r) = t.guard.resolve_for_create(input) {
            check_allowed(t, input, r.path(), r.exists());
        }
    }
});

//! Example tests for `PathGuard::new` and `PathGuard::resolve_existing`.

use std::path::PathBuf;

use aria_tools::{GuardError, PathError, PathGuard, PathRefusal, SensitivePatterns};
use pretty_assertions::assert_eq;

use super::fixture::fixture;

fn refusal(result: Result<aria_tools::Resolved, PathError>) -> PathRefusal {
    match result {
        Err(PathError::Refused(r)) => r,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

// ---------------------------------------------------------------- construction

#[test]
fn new_rejects_a_missing_root_and_names_it() {
    let fx = fixture();
    let missing = fx.base.join("no-such-dir");
    let err = PathGuard::new(&[fx.root.clone(), missing.clone()], SensitivePatterns::default())
        .unwrap_err();
    assert!(matches!(err, GuardError::RootUnavailable { .. }), "{err:?}");
    assert!(err.to_string().contains(missing.to_str().unwrap()), "{err}");
}

#[test]
fn new_rejects_a_file_as_root_and_no_roots() {
    let fx = fixture();
    let file = fx.root.join("notes.txt");
    let err =
        PathGuard::new(std::slice::from_ref(&file), SensitivePatterns::default()).unwrap_err();
    assert!(matches!(err, GuardError::RootNotDirectory { .. }), "{err:?}");
    assert!(err.to_string().contains(file.to_str().unwrap()), "{err}");
    let err = PathGuard::new(&[], SensitivePatterns::default()).unwrap_err();
    assert!(matches!(err, GuardError::NoRoots), "{err:?}");
}

#[test]
fn roots_are_canonicalised() {
    let fx = fixture();
    let guard =
        PathGuard::new(&[fx.base.join("root_link/../root_link")], SensitivePatterns::default())
            .unwrap();
    assert_eq!(guard.roots(), std::slice::from_ref(&fx.root));
}

// ---------------------------------------------------------------- allowed

#[test]
fn relative_paths_resolve_against_the_first_root() {
    let fx = fixture();
    let r = fx.guard().resolve_existing("a/b.txt").unwrap();
    assert_eq!(r.path(), fx.root.join("a/b.txt"));
    assert_eq!(r.root(), fx.root.as_path());
    assert_eq!(r.relative(), PathBuf::from("a/b.txt"));
    assert_eq!(r.requested(), "a/b.txt");
    assert!(r.exists());
    assert_eq!(r.size(), Some(5));
}

#[test]
fn dot_is_the_root_and_dotdot_inside_is_fine() {
    let fx = fixture();
    let g = fx.guard();
    assert_eq!(g.resolve_existing(".").unwrap().path(), fx.root);
    assert_eq!(g.resolve_existing("./a/").unwrap().path(), fx.root.join("a"));
    assert_eq!(g.resolve_existing("a/../notes.txt").unwrap().path(), fx.root.join("notes.txt"));
    assert_eq!(g.resolve_existing("a//c/./..//b.txt").unwrap().path(), fx.root.join("a/b.txt"));
}

#[test]
fn absolute_paths_inside_a_root_are_allowed() {
    let fx = fixture();
    let r = fx.guard().resolve_existing(&fx.abs("a/b.txt")).unwrap();
    assert_eq!(r.path(), fx.root.join("a/b.txt"));
    assert_eq!(fx.guard().resolve_existing(&fx.abs("")).unwrap().path(), fx.root);
}

#[test]
fn symlinks_that_stay_inside_are_followed() {
    let fx = fixture();
    let g = fx.guard();
    assert_eq!(g.resolve_existing("link_in/b.txt").unwrap().path(), fx.root.join("a/b.txt"));
    assert_eq!(g.resolve_existing("link_in").unwrap().path(), fx.root.join("a"));
    assert_eq!(g.resolve_existing("link_file_in").unwrap().path(), fx.root.join("notes.txt"));
    assert_eq!(g.resolve_existing("link_abs_in/b.txt").unwrap().path(), fx.root.join("a/b.txt"));
    // `..` after a symlink goes to the parent of the *target*, as the kernel does.
    assert_eq!(g.resolve_existing("link_in/c/../b.txt").unwrap().path(), fx.root.join("a/b.txt"));
    assert_eq!(
        g.resolve_existing("link_in/../notes.txt").unwrap().path(),
        fx.root.join("notes.txt")
    );
}

#[test]
fn a_root_reached_through_a_symlink_works_by_both_names() {
    let fx = fixture();
    let via_link = fx.base.join("root_link");
    let g = PathGuard::new(std::slice::from_ref(&via_link), SensitivePatterns::default()).unwrap();
    assert_eq!(g.resolve_existing("a/b.txt").unwrap().path(), fx.root.join("a/b.txt"));
    let through_link = format!("{}/a/b.txt", via_link.display());
    assert_eq!(g.resolve_existing(&through_link).unwrap().path(), fx.root.join("a/b.txt"));
    assert_eq!(g.resolve_existing(&fx.abs("a/b.txt")).unwrap().path(), fx.root.join("a/b.txt"));
    // ...but climbing out of it is still an escape.
    let out = format!("{}/../outside/secret.txt", via_link.display());
    assert!(matches!(refusal(g.resolve_existing(&out)), PathRefusal::EscapesRoot { .. }));
}

#[test]
fn a_missing_file_is_not_found_not_a_refusal() {
    let fx = fixture();
    match fx.guard().resolve_existing("a/missing.txt") {
        Err(PathError::NotFound { path, .. }) => assert_eq!(path, fx.root.join("a/missing.txt")),
        other => panic!("expected NotFound, got {other:?}"),
    }
    match fx.guard().resolve_existing("dangling_in") {
        Err(PathError::NotFound { .. }) => {}
        other => panic!("expected NotFound for a dangling in-root link, got {other:?}"),
    }
}

#[test]
fn a_file_used_as_a_directory_is_reported() {
    let fx = fixture();
    let err = fx.guard().resolve_existing("notes.txt/x").unwrap_err();
    assert!(matches!(err, PathError::NotADirectory { .. }), "{err:?}");
    assert!(err.to_string().contains("notes.txt"), "{err}");
}

// ---------------------------------------------------------------- refused: escapes

#[test]
fn dotdot_escapes_are_refused() {
    let fx = fixture();
    let g = fx.guard();
    for input in ["../../etc/passwd", "a/../../x", "..", "a/c/../../../outside/secret.txt"] {
        let r = refusal(g.resolve_existing(input));
        assert!(matches!(r, PathRefusal::EscapesRoot { .. }), "{input}: {r:?}");
        let reason = r.reason();
        assert!(reason.contains(fx.root.to_str().unwrap()) && reason.contains(".."), "{reason}");
    }
}

#[test]
fn absolute_paths_outside_every_root_are_refused_with_a_fix() {
    let fx = fixture();
    let r = refusal(fx.guard().resolve_existing("/etc/passwd"));
    assert!(matches!(r, PathRefusal::OutsideRoots { .. }), "{r:?}");
    let reason = r.reason();
    assert!(reason.contains("/etc/passwd"), "{reason}");
    assert!(reason.contains("outside the allowed roots"), "{reason}");
    assert!(reason.contains(fx.root.to_str().unwrap()), "{reason}");
    assert!(reason.contains("--root") && reason.contains("ARIA_ROOTS"), "{reason}");
    let secret = fx.outside.join("secret.txt");
    let r = refusal(fx.guard().resolve_existing(secret.to_str().unwrap()));
    assert!(matches!(r, PathRefusal::OutsideRoots { .. }), "{r:?}");
}

#[test]
fn missing_files_outside_the_roots_are_refused_not_reported_missing() {
    // NotFound would tell the model what exists outside the roots.
    let fx = fixture();
    let r = refusal(fx.guard().resolve_existing("/etc/definitely-not-here-aria"));
    assert!(matches!(r, PathRefusal::OutsideRoots { .. }), "{r:?}");
    let r = refusal(fx.guard().resolve_existing("/no-such-top-level-dir/x"));
    assert!(matches!(r, PathRefusal::OutsideRoots { .. }), "{r:?}");
}

#[test]
fn symlinked_directories_that_escape_are_refused() {
    let fx = fixture();
    let g = fx.guard();
    for input in ["link_out", "link_out/secret.txt", "link_out/../root/notes.txt"] {
        let r = refusal(g.resolve_existing(input));
        assert!(matches!(r, PathRefusal::SymlinkEscape { .. }), "{input}: {r:?}");
        let reason = r.reason();
        assert!(reason.contains("link_out") && reason.contains("symlink"), "{reason}");
    }
}

#[test]
fn symlinked_files_that_escape_are_refused() {
    let fx = fixture();
    let g = fx.guard();
    let r = refusal(g.resolve_existing("link_file_out"));
    assert!(matches!(r, PathRefusal::SymlinkEscape { .. }), "{r:?}");
    assert!(r.reason().contains(fx.outside.join("secret.txt").to_str().unwrap()), "{r}");
    // notes.txt -> ~/.ssh/id_rsa style: refused whichever rule fires first.
    let r = refusal(g.resolve_existing("sneaky.txt"));
    assert!(
        matches!(r, PathRefusal::SymlinkEscape { .. } | PathRefusal::Sensitive { .. }),
        "{r:?}"
    );
    // A dangling link that points outside must not be reported as "not found".
    let r = refusal(g.resolve_existing("dangling"));
    assert!(matches!(r, PathRefusal::SymlinkEscape { .. }), "{r:?}");
}

#[test]
fn symlink_loops_are_refused() {
    let fx = fixture();
    let r = refusal(fx.guard().resolve_existing("loop1"));
    assert!(matches!(r, PathRefusal::SymlinkLoop { .. }), "{r:?}");
}

// ---------------------------------------------------------------- refused: sensitive

#[test]
fn sensitive_files_are_refused_even_inside_a_root() {
    let fx = fixture();
    let g = fx.guard();
    for input in [
        ".env",
        ".env.local",
        ".ENV",
        "config/.ssh/known_hosts",
        "config/.ssh",
        "server.PEM",
        "link_to_env",
        "a/../.env",
    ] {
        let r = refusal(g.resolve_existing(input));
        assert!(matches!(r, PathRefusal::Sensitive { .. }), "{input}: {r:?}");
        assert!(r.reason().contains("sensitive"), "{}", r.reason());
    }
}

#[test]
fn sensitive_names_are_refused_before_looking_at_the_disk() {
    // These do not exist: a NotFound would still confirm or deny their existence.
    let fx = fixture();
    let g = fx.guard();
    for input in [
        "id_rsa",
        "keys/id_ed25519.pub",
        "id_ecdsa",
        "credentials.json",
        ".aws/config",
        ".netrc",
        ".git-credentials",
        "tls/server.key",
        "Credentials",
    ] {
        let r = refusal(g.resolve_existing(input));
        assert!(matches!(r, PathRefusal::Sensitive { .. }), "{input}: {r:?}");
    }
}

#[test]
fn ordinary_names_that_resemble_sensitive_ones_are_not_refused() {
    let fx = fixture();
    let g = fx.guard();
    for input in ["environment.md", "keys.txt", "a/monkey", "ssh/config", "my.ssh.txt", "pem"] {
        match g.resolve_existing(input) {
            Err(PathError::NotFound { .. }) => {}
            other => panic!("{input}: expected NotFound, got {other:?}"),
        }
    }
}

#[test]
fn the_root_path_itself_is_not_matched_against_sensitive_patterns() {
    // A root that happens to be named like a pattern is the user's explicit choice.
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap().join("credentials_project");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("readme.md"), "hi").unwrap();
    let g = PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap();
    assert!(g.resolve_existing("readme.md").is_ok());
    assert!(g.resolve_existing(root.join("readme.md").to_str().unwrap()).is_ok());
}

#[test]
fn custom_patterns_replace_the_defaults() {
    let fx = fixture();
    let pats = SensitivePatterns::from_globs(&["*.txt".into(), "secret?/".into()]).unwrap();
    let g = PathGuard::new(std::slice::from_ref(&fx.root), pats).unwrap();
    assert!(matches!(refusal(g.resolve_existing("notes.txt")), PathRefusal::Sensitive { .. }));
    assert!(matches!(refusal(g.resolve_existing("x/SECRETS/y")), PathRefusal::Sensitive { .. }));
    assert!(g.resolve_existing(".env").is_ok());
}

#[test]
fn bad_custom_patterns_are_rejected() {
    for bad in ["", "a/b", "/", "x\0"] {
        let err = SensitivePatterns::from_globs(&[bad.to_owned()]).unwrap_err();
        assert!(matches!(err, GuardError::BadPattern { .. }), "{bad:?}: {err:?}");
    }
}

// ---------------------------------------------------------------- refused: lexical

#[test]
fn empty_and_blank_paths_are_refused() {
    let fx = fixture();
    for input in ["", "   "] {
        let r = refusal(fx.guard().resolve_existing(input));
        assert!(matches!(r, PathRefusal::Empty), "{input:?}: {r:?}");
    }
}

#[test]
fn control_characters_are_refused() {
    let fx = fixture();
    for input in ["a\0b", "a/b.txt\0", "a\nb", "a\rb", "\x1b[31m", "a\u{7f}", "a\u{85}b"] {
        let r = refusal(fx.guard().resolve_existing(input));
        assert!(matches!(r, PathRefusal::ControlCharacter { .. }), "{input:?}: {r:?}");
    }
}

#[test]
fn percent_encoded_traversal_and_odd_encodings_are_refused() {
    let fx = fixture();
    for input in [
        "%2e%2e/%2e%2e/etc/passwd",
        "%2E%2E%2Fetc%2Fpasswd",
        "..%2f..%2fetc",
        "..%5c..%5cetc",
        "a%5Cb",
        "%252e%252e/x",
        "%c0%ae%c0%ae/x",
        "%C0%AF",
        "%e0%80%ae",
        "%u002e%u002e/x",
        "%U002F",
        "%00",
    ] {
        let r = refusal(fx.guard().resolve_existing(input));
        assert!(matches!(r, PathRefusal::EncodedSequence { .. }), "{input:?}: {r:?}");
        assert!(r.reason().contains("never URL-decoded"), "{}", r.reason());
    }
}

#[test]
fn harmless_percent_signs_are_literal() {
    let fx = fixture();
    for input in ["100%.txt", "my%20file.txt", "%zz"] {
        match fx.guard().resolve_existing(input) {
            Err(PathError::NotFound { .. }) => {}
            other => panic!("{input:?}: expected NotFound, got {other:?}"),
        }
    }
}

#[test]
fn windows_paths_are_refused_with_a_reason() {
    let fx = fixture();
    let g = fx.guard();
    for input in [
        "..\\..\\etc\\passwd",
        "a\\b",
        "C:/Windows/System32",
        "c:notes.txt",
        "C:\\Users\\me\\.ssh\\id_rsa",
        "\\\\server\\share\\f.txt",
        "\\\\?\\C:\\x",
        "D:",
    ] {
        for result in [g.resolve_existing(input), g.resolve_for_create(input)] {
            let r = refusal(result);
            assert!(matches!(r, PathRefusal::WindowsPath { .. }), "{input:?}: {r:?}");
            assert_eq!(r.rule(), "windows-path");
            assert!(r.reason().contains("Windows path") && r.reason().contains("'/'"), "{r}");
        }
    }
}

#[test]
fn lookalike_separators_are_refused() {
    let fx = fixture();
    for input in ["\u{ff0e}\u{ff0e}\u{ff0f}etc", "a\u{2215}b", "x\u{202e}txt.exe"] {
        let r = refusal(fx.guard().resolve_existing(input));
        assert!(matches!(r, PathRefusal::OddCharacter { .. }), "{input:?}: {r:?}");
    }
}

#[test]
fn tilde_is_not_expanded() {
    let fx = fixture();
    for input in ["~", "~/notes.txt", "~root/.bashrc", "~root"] {
        let r = refusal(fx.guard().resolve_existing(input));
        assert!(matches!(r, PathRefusal::Tilde { .. }), "{input:?}: {r:?}");
        assert!(r.reason().contains("absolute path"), "{}", r.reason());
    }
    // A tilde elsewhere, or before what cannot be a user name, is just a character in a name.
    for input in ["a/backup~", "~$report.docx"] {
        assert!(
            matches!(fx.guard().resolve_existing(input), Err(PathError::NotFound { .. })),
            "{input}"
        );
    }
}

#[test]
fn overlong_paths_are_refused() {
    let fx = fixture();
    let long_name = "x".repeat(300);
    let r = refusal(fx.guard().resolve_existing(&long_name));
    assert!(matches!(r, PathRefusal::TooLong { .. }), "{r:?}");
    let long_path = vec!["a"; 3000].join("/");
    let r = refusal(fx.guard().resolve_existing(&long_path));
    assert!(matches!(r, PathRefusal::TooLong { .. }), "{r:?}");
}

#[test]
fn every_refusal_has_a_rule_and_a_reason_that_says_what_to_do() {
    let fx = fixture();
    let g = fx.guard();
    for input in ["", "a\0", "%2e", "~", "..", "/etc/passwd", "link_out", "loop1", ".env", "a\\b"] {
        let r = refusal(g.resolve_existing(input));
        assert!(!r.rule().is_empty());
        let reason = r.reason();
        assert!(reason.len() > 30, "{input:?}: too terse: {reason}");
        assert!(reason.contains(';'), "{input:?}: no advice after ';': {reason}");
        assert_eq!(reason, r.to_string());
    }
}

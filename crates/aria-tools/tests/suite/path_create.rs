//! Example tests for `PathGuard::resolve_for_create` (paths that may not exist yet).

use aria_tools::{PathError, PathRefusal, Resolved};
use pretty_assertions::assert_eq;

use super::fixture::fixture;

fn refusal(result: Result<Resolved, PathError>) -> PathRefusal {
    match result {
        Err(PathError::Refused(r)) => r,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_new_file_in_the_root_resolves() {
    let fx = fixture();
    let r = fx.guard().resolve_for_create("new.txt").unwrap();
    assert_eq!(r.path(), fx.root.join("new.txt"));
    assert!(!r.exists());
    assert_eq!(r.size(), None);
}

#[test]
fn missing_intermediate_directories_are_allowed() {
    let fx = fixture();
    let r = fx.guard().resolve_for_create("a/new/deeper/file.txt").unwrap();
    assert_eq!(r.path(), fx.root.join("a/new/deeper/file.txt"));
    let r = fx.guard().resolve_for_create("link_in/new.txt").unwrap();
    assert_eq!(r.path(), fx.root.join("a/new.txt"));
    let r = fx.guard().resolve_for_create(&fx.abs("a/./n.txt")).unwrap();
    assert_eq!(r.path(), fx.root.join("a/n.txt"));
}

#[test]
fn an_existing_file_resolves_as_existing() {
    let fx = fixture();
    let r = fx.guard().resolve_for_create("a/b.txt").unwrap();
    assert_eq!(r.path(), fx.root.join("a/b.txt"));
    assert!(r.exists());
}

#[test]
fn dots_after_the_deepest_existing_directory_are_judged_by_the_text() {
    // Nothing below a directory that does not exist can be a symlink, so `.` and `..` there
    // mean what they say.
    let fx = fixture();
    let g = fx.guard();
    for (input, want, exists) in [
        ("new/../x", "x", false),
        ("new/./x", "new/x", false),
        ("a/new/../../x", "x", false),
        ("a/new/..", "a", true),
        ("new/../a/b.txt", "a/b.txt", true),
        ("new/../a/new2/./deeper/../f.txt", "a/new2/f.txt", false),
        ("./new/sub/../../new/x", "new/x", false),
        ("new/../link_in/n.txt", "a/n.txt", false),
        ("new/a/b/c/../../../x", "new/x", false),
    ] {
        let r = g.resolve_for_create(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(r.path(), fx.root.join(want), "{input}");
        assert_eq!(r.exists(), exists, "{input}");
    }
    let r = g.resolve_for_create(&fx.abs("new/../a/./n.txt")).unwrap();
    assert_eq!(r.path(), fx.root.join("a/n.txt"));
}

#[test]
fn dots_in_the_new_part_still_cannot_leave_the_root() {
    let fx = fixture();
    let g = fx.guard();
    for input in ["new/../../x", "new/x/../../../etc/passwd", "a/new/../../../x", "n/.././../x"] {
        let r = refusal(g.resolve_for_create(input));
        assert!(matches!(r, PathRefusal::EscapesRoot { .. }), "{input}: {r:?}");
    }
    // Climbing back into existing directories meets their symlinks again.
    let r = refusal(g.resolve_for_create("new/../link_out/x"));
    assert!(matches!(r, PathRefusal::SymlinkEscape { .. }), "{r:?}");
    // Sensitive names count wherever they are written, even if `..` takes them away again.
    let r = refusal(g.resolve_for_create("new/.ssh/../x"));
    assert!(matches!(r, PathRefusal::Sensitive { .. }), "{r:?}");
    let r = refusal(g.resolve_for_create("new/../.env.local"));
    assert!(matches!(r, PathRefusal::Sensitive { .. }), "{r:?}");
}

#[test]
fn escapes_are_refused_for_create_too() {
    let fx = fixture();
    let g = fx.guard();
    assert!(matches!(refusal(g.resolve_for_create("../x")), PathRefusal::EscapesRoot { .. }));
    assert!(matches!(refusal(g.resolve_for_create("/etc/x")), PathRefusal::OutsideRoots { .. }));
    assert!(matches!(
        refusal(g.resolve_for_create("/no-such-dir-aria/x")),
        PathRefusal::OutsideRoots { .. }
    ));
    assert!(matches!(
        refusal(g.resolve_for_create("link_out/new.txt")),
        PathRefusal::SymlinkEscape { .. }
    ));
    let outside = fx.outside.join("new.txt");
    assert!(matches!(
        refusal(g.resolve_for_create(outside.to_str().unwrap())),
        PathRefusal::OutsideRoots { .. }
    ));
}

#[test]
fn writing_through_a_dangling_symlink_is_refused() {
    let fx = fixture();
    let g = fx.guard();
    let r = refusal(g.resolve_for_create("dangling"));
    assert!(matches!(r, PathRefusal::SymlinkEscape { .. }), "{r:?}");
    // Even when the dangling target would be inside the root: creating through a link is how
    // a planted link redirects a write.
    let r = refusal(g.resolve_for_create("dangling_in"));
    assert!(matches!(r, PathRefusal::DanglingSymlink { .. }), "{r:?}");
    assert!(r.reason().contains("dangling_in"), "{r}");
}

#[test]
fn sensitive_targets_are_refused_for_create() {
    let fx = fixture();
    for input in [".env.production", "deploy/.ssh/authorized_keys", "new/id_rsa", "x.KEY"] {
        let r = refusal(fx.guard().resolve_for_create(input));
        assert!(matches!(r, PathRefusal::Sensitive { .. }), "{input}: {r:?}");
    }
}

#[test]
fn lexical_rules_apply_to_create() {
    let fx = fixture();
    let g = fx.guard();
    assert!(matches!(refusal(g.resolve_for_create("")), PathRefusal::Empty));
    assert!(matches!(refusal(g.resolve_for_create("~/x")), PathRefusal::Tilde { .. }));
    assert!(matches!(
        refusal(g.resolve_for_create("new%2f..%2fx")),
        PathRefusal::EncodedSequence { .. }
    ));
    assert!(matches!(
        refusal(g.resolve_for_create("new\nname")),
        PathRefusal::ControlCharacter { .. }
    ));
}

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
fn tricks_after_the_deepest_existing_directory_are_refused() {
    let fx = fixture();
    for input in ["new/../x", "a/new/../../x", "new/./x", "a/new/.."] {
        let r = refusal(fx.guard().resolve_for_create(input));
        assert!(matches!(r, PathRefusal::UnsafeRemainder { .. }), "{input}: {r:?}");
    }
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

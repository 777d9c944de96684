//! Property tests: whatever path the model makes up from traversal-prone pieces, the guard either
//! refuses it or returns a real path inside the root — never one outside.

use std::fs;
use std::path::{Component, Path};

use aria_tools::PathGuard;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use super::fixture::{Fixture, fixture};

const SEGMENTS: &[&str] = &[
    "a",
    "b.txt",
    "c",
    "..",
    ".",
    "",
    "link_in",
    "link_abs_in",
    "link_out",
    "link_file_out",
    "link_file_in",
    "dangling",
    "dangling_in",
    "loop1",
    "notes.txt",
    "root",
    "outside",
    "secret.txt",
    "root_link",
    ".env",
    "%2e%2e",
    "%2f",
    "~",
    "x",
];

fn input_strategy(fx: &Fixture) -> impl Strategy<Value = String> {
    let prefixes = vec![
        String::new(),
        "/".to_owned(),
        format!("{}/", fx.root.display()),
        format!("{}/", fx.base.display()),
        format!("{}/root_link/", fx.base.display()),
    ];
    (prop::sample::select(prefixes), prop::collection::vec(prop::sample::select(SEGMENTS), 0..8))
        .prop_map(|(prefix, segs)| format!("{prefix}{}", segs.join("/")))
}

fn has_dot_components(p: &Path) -> bool {
    p.components().any(|c| matches!(c, Component::ParentDir | Component::CurDir))
}

/// What the kernel makes of `input` (relative inputs start at the root).
fn kernel(fx: &Fixture, input: &str) -> Option<std::path::PathBuf> {
    fs::canonicalize(fx.root.join(input)).ok()
}

fn check_existing(fx: &Fixture, g: &PathGuard, input: &str) -> Result<(), TestCaseError> {
    let kernel_view = kernel(fx, input);
    if let Ok(r) = g.resolve_existing(input) {
        prop_assert!(r.path().starts_with(&fx.root), "{input:?} -> {:?} escaped", r.path());
        prop_assert!(!has_dot_components(r.path()), "{input:?} -> {:?}", r.path());
        let real = fs::canonicalize(r.path()).unwrap();
        prop_assert_eq!(&real, r.path(), "{:?}: result is not a real path", input);
        prop_assert!(!real.components().any(|c| c.as_os_str() == ".env"), "{input:?}");
        if let Some(k) = kernel_view {
            prop_assert_eq!(&k, r.path(), "{:?}: guard and kernel disagree", input);
        }
    }
    if let Some(k) = kernel(fx, input)
        && !k.starts_with(&fx.root)
    {
        prop_assert!(g.resolve_existing(input).is_err(), "{input:?} reaches {k:?} but was allowed");
    }
    Ok(())
}

fn check_create(fx: &Fixture, g: &PathGuard, input: &str) -> Result<(), TestCaseError> {
    if let Ok(r) = g.resolve_for_create(input) {
        prop_assert!(r.path().starts_with(&fx.root), "{input:?} -> {:?} escaped", r.path());
        prop_assert!(!has_dot_components(r.path()), "{input:?} -> {:?}", r.path());
        // The deepest existing ancestor is a real path (no symlink left to redirect the write).
        let existing = r.path().ancestors().find(|p| fs::symlink_metadata(p).is_ok()).unwrap();
        prop_assert_eq!(fs::canonicalize(existing).unwrap(), existing, "{:?}", input);
    }
    Ok(())
}

#[test]
fn generated_paths_never_resolve_outside_the_root() {
    let fx = fixture();
    let guard = fx.guard();
    let mut runner = TestRunner::new(Config { cases: 2000, ..Config::default() });
    runner
        .run(&input_strategy(&fx), |input| {
            check_existing(&fx, &guard, &input)?;
            check_create(&fx, &guard, &input)
        })
        .unwrap();
}

#[test]
fn the_generator_does_reach_both_outcomes() {
    // Guards against a property that passes because everything is refused.
    let fx = fixture();
    let g = fx.guard();
    assert!(g.resolve_existing("link_in/../a/./b.txt").is_ok());
    assert!(g.resolve_existing("a/../link_out/secret.txt").is_err());
    assert!(fs::canonicalize(fx.root.join("a/../link_out/secret.txt")).is_ok());
}

/// Where `segs` lead by their text alone, from the root; `None` if a `..` climbs above it.
fn lexical(segs: &[&str]) -> Option<Vec<String>> {
    let mut names: Vec<String> = Vec::new();
    for s in segs {
        match *s {
            "" | "." => {}
            ".." => {
                names.pop()?;
            }
            name => names.push(name.to_owned()),
        }
    }
    Some(names)
}

/// Over plain directories and names that do not exist (no symlinks anywhere), a path to create
/// is judged by its text: allowed, at its lexical meaning, when it stays in the root;
/// refused as an escape when it does not.
#[test]
fn paths_through_plain_and_missing_directories_are_judged_by_their_text() {
    let fx = fixture();
    let g = fx.guard();
    let segs = prop::collection::vec(
        prop::sample::select(&["a", "c", "new", "x", "..", ".", ""][..]),
        1..9,
    );
    let mut runner = TestRunner::new(Config { cases: 2000, ..Config::default() });
    runner
        .run(&(segs, any::<bool>()), |(segs, absolute)| {
            let rel = format!("./{}", segs.join("/"));
            let input = if absolute { fx.abs(&rel) } else { rel };
            match (lexical(&segs), g.resolve_for_create(&input)) {
                (Some(names), Ok(r)) => {
                    let want = names.iter().fold(fx.root.clone(), |p, n| p.join(n));
                    prop_assert_eq!(r.path(), want.as_path(), "{:?}", input);
                }
                (None, Err(e)) => {
                    let rule = e.refusal().map(|r| r.rule());
                    prop_assert!(
                        matches!(rule, Some("escapes-root" | "outside-roots")),
                        "{:?}: {:?}",
                        input,
                        e
                    );
                }
                (want, got) => {
                    prop_assert!(false, "{:?}: expected {:?}, got {:?}", input, want, got)
                }
            }
            Ok(())
        })
        .unwrap();
}

//! Property tests: whatever path a `file_write` or `apply_patch` call names, nothing outside
//! the root is ever created or changed, and a refused call changes nothing at all.

use std::collections::BTreeMap;
use std::sync::Arc;

use aria_api::{Tool, ToolContext};
use aria_tools::{ApplyPatch, FileWrite};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::json;

use super::fixture::{Fixture, fixture};
use super::write_snapshot::tree;

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
    "~",
    "new",
    "x.txt",
    "home",
    ".ssh",
    "id_rsa",
];

fn input_strategy(fx: &Fixture) -> impl Strategy<Value = String> {
    let prefixes = vec![
        String::new(),
        "/".to_owned(),
        format!("{}/", fx.root.display()),
        format!("{}/", fx.base.display()),
        format!("{}/root_link/", fx.base.display()),
    ];
    (prop::sample::select(prefixes), prop::collection::vec(prop::sample::select(SEGMENTS), 1..6))
        .prop_map(|(prefix, segs)| format!("{prefix}{}", segs.join("/")))
}

/// Runs one call and checks the property on the tree under the fixture's base.
fn check(
    fx: &Fixture,
    rt: &tokio::runtime::Runtime,
    tool: &dyn Tool,
    args: serde_json::Value,
) -> Result<bool, TestCaseError> {
    let before: BTreeMap<_, _> = tree(&fx.base).into_iter().collect();
    let result = rt.block_on(tool.call(args.clone(), &ToolContext::default()));
    let after: BTreeMap<_, _> = tree(&fx.base).into_iter().collect();
    let root_rel = "root";
    let changed: Vec<&String> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, _)| k)
        .chain(before.keys().filter(|k| !after.contains_key(*k)))
        .collect();
    for path in &changed {
        prop_assert!(
            path.starts_with(&format!("{root_rel}/")),
            "{args}: {path} outside the root changed ({result:?})"
        );
        prop_assert!(!path.contains(".env") && !path.contains(".ssh"), "{args}: {path}");
    }
    if result.is_err() {
        prop_assert!(changed.is_empty(), "{args} failed ({result:?}) but changed {changed:?}");
    }
    Ok(result.is_ok())
}

#[test]
fn file_write_never_writes_outside_the_root() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let fx = fixture();
    let tool = FileWrite::new(Arc::new(fx.guard()));
    let mut runner = TestRunner::new(Config { cases: 300, ..Config::default() });
    let ok = std::cell::Cell::new(0usize);
    runner
        .run(&input_strategy(&fx), |path| {
            ok.set(
                ok.get()
                    + usize::from(check(
                        &fx,
                        &rt,
                        &tool,
                        json!({"path": path, "content": "pwned\n"}),
                    )?),
            );
            Ok(())
        })
        .unwrap();
    // Guards against a property that passes because everything is refused.
    assert!(ok.get() > 0, "no generated path was ever written");
}

#[test]
fn apply_patch_never_writes_outside_the_root() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let fx = fixture();
    let tool = ApplyPatch::new(Arc::new(fx.guard()));
    let mut runner = TestRunner::new(Config { cases: 300, ..Config::default() });
    let existing = prop_oneof![
        Just("notes.txt".to_owned()),
        Just("link_file_in".to_owned()),
        input_strategy(&fx)
    ];
    let strategy = (input_strategy(&fx), existing, any::<bool>());
    let ok = std::cell::Cell::new(0usize);
    runner
        .run(&strategy, |(first, second, delete)| {
            // A creation, then a change or deletion of an existing one-line file.
            let second_part = if delete {
                format!("--- a/{second}\n+++ /dev/null\n@@ -1 +0,0 @@\n-notes\n\\ No newline at end of file\n")
            } else {
                format!("--- a/{second}\n+++ b/{second}\n@@ -1 +1 @@\n-notes\n\\ No newline at end of file\n+pwned\n")
            };
            let patch = format!("--- /dev/null\n+++ b/{first}\n@@ -0,0 +1 @@\n+pwned\n{second_part}");
            ok.set(ok.get() + usize::from(check(&fx, &rt, &tool, json!({ "patch": patch }))?));
            Ok(())
        })
        .unwrap();
    assert!(ok.get() > 0, "no generated patch was ever applied");
}

//! Property: whatever path a redirect names, `shell_execute` either refuses it or writes a
//! file inside the root; nothing outside the root is ever created.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;

use aria_api::{Tool, ToolContext};
use aria_tools::{PathGuard, SensitivePatterns, ShellExecute};
use proptest::prelude::*;
use serde_json::json;

const SEGMENTS: &[&str] =
    &["..", ".", "a", "b", "x.txt", "link_out", "outside", "root", "", "%2e%2e"];

fn path_strategy() -> impl Strategy<Value = (bool, Vec<usize>)> {
    (any::<bool>(), prop::collection::vec(0..SEGMENTS.len(), 1..6))
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            out.push(p.display().to_string());
            if p.is_dir() && !p.is_symlink() {
                out.extend(files_under(&p));
            }
        }
    }
    out.sort();
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn redirects_never_write_outside_the_root((absolute, segs) in path_strategy()) {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("root");
        let outside = base.join("outside");
        fs::create_dir_all(root.join("a")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        symlink("../outside", root.join("link_out")).unwrap();
        let before = files_under(&outside);

        let rel: Vec<&str> = segs.iter().map(|i| SEGMENTS[*i]).collect();
        let rel = rel.join("/");
        let target = if absolute { format!("{}/{rel}", root.display()) } else { rel };
        let guard = PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap();
        let tool = ShellExecute::new(Arc::new(guard));
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let command = format!("echo hi > '{target}'");
        let result = rt.block_on(tool.call(json!({ "command": command }), &ToolContext::default()));

        prop_assert_eq!(files_under(&outside), before, "{} wrote outside the root", command);
        prop_assert!(!base.join("x.txt").exists(), "{}", command);
        if let Ok(out) = result
            && out.content.starts_with("exit status: 0")
        {
            let written = files_under(&root).iter().any(|f| fs::read_to_string(f).is_ok_and(|t| t == "hi\n"));
            prop_assert!(written, "{} succeeded but wrote nothing inside the root", command);
        }
    }
}

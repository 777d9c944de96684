//! The one list of what the model can do with the built-in tools.
//!
//! Adding a tool means adding one line to `BUILTINS` and one row to the tier table in the
//! tests below; nothing else registers tools.

use std::sync::Arc;

use aria_api::Tool;

use crate::guard::path::PathGuard;
use crate::guard::ssrf::SsrfPolicy;
use crate::profiles::Profiles;
use crate::tools::apply_patch::ApplyPatch;
use crate::tools::file_edit::FileEdit;
use crate::tools::file_insert::FileInsert;
use crate::tools::file_list::FileList;
use crate::tools::file_read::FileRead;
use crate::tools::file_search::FileSearch;
use crate::tools::file_write::FileWrite;
use crate::tools::git_commit::GitCommit;
use crate::tools::git_diff::GitDiff;
use crate::tools::git_log::GitLog;
use crate::tools::git_status::GitStatus;
use crate::tools::python_run::PythonRun;
use crate::tools::shell_execute::ShellExecute;
use crate::tools::system_info::SystemInfo;
use crate::tools::web_fetch::WebFetch;

type Make = fn(&Arc<PathGuard>) -> Arc<dyn Tool>;

/// Every built-in tool: its public name and how to build it.
const BUILTINS: &[(&str, Make)] = &[
    (FileRead::NAME, |g| Arc::new(FileRead::new(Arc::clone(g)))),
    (FileList::NAME, |g| Arc::new(FileList::new(Arc::clone(g)))),
    (FileSearch::NAME, |g| Arc::new(FileSearch::new(Arc::clone(g)))),
    (FileWrite::NAME, |g| Arc::new(FileWrite::new(Arc::clone(g)))),
    (FileEdit::NAME, |g| Arc::new(FileEdit::new(Arc::clone(g)))),
    (FileInsert::NAME, |g| Arc::new(FileInsert::new(Arc::clone(g)))),
    (ApplyPatch::NAME, |g| Arc::new(ApplyPatch::new(Arc::clone(g)))),
    (ShellExecute::NAME, |g| Arc::new(ShellExecute::new(Arc::clone(g)))),
    (SystemInfo::NAME, |g| Arc::new(SystemInfo::new(Arc::clone(g)))),
    (PythonRun::NAME, |g| Arc::new(PythonRun::new(Arc::clone(g)))),
    (WebFetch::NAME, |_| Arc::new(WebFetch::new(SsrfPolicy::public_only()))),
    (GitStatus::NAME, |g| Arc::new(GitStatus::new(Arc::clone(g)))),
    (GitDiff::NAME, |g| Arc::new(GitDiff::new(Arc::clone(g)))),
    (GitLog::NAME, |g| Arc::new(GitLog::new(Arc::clone(g)))),
    (GitCommit::NAME, |g| Arc::new(GitCommit::new(Arc::clone(g)))),
];

/// The built-in tools, all confined by `guard`, in a stable order.
pub fn builtin_tools(guard: Arc<PathGuard>) -> Vec<Arc<dyn Tool>> {
    BUILTINS.iter().map(|(_, make)| make(&guard)).collect()
}

/// Settings of built-in tools beyond the path guard. The defaults are the safe ones, and what
/// [`builtin_tools`] uses.
#[derive(Debug, Clone, Default)]
pub struct ToolSettings {
    /// Which hosts `web_fetch` may reach (public addresses only by default).
    pub web: SsrfPolicy,
}

/// [`builtin_tools`] with `settings` applied to the tools that take them.
pub fn builtin_tools_with(guard: Arc<PathGuard>, settings: &ToolSettings) -> Vec<Arc<dyn Tool>> {
    BUILTINS
        .iter()
        .map(|(name, make)| match *name {
            WebFetch::NAME => Arc::new(WebFetch::new(settings.web.clone())) as Arc<dyn Tool>,
            _ => make(&guard),
        })
        .collect()
}

/// The built-in tools followed by one tool per command profile (`lint_project`,
/// `build_project`, `run_tests`, `ripgrep_search`, then any configured extras): what the agent
/// is given. The profile tools share `profiles`' run budget.
pub fn tools_with_profiles(guard: Arc<PathGuard>, profiles: &Arc<Profiles>) -> Vec<Arc<dyn Tool>> {
    let mut tools = builtin_tools(guard);
    tools.extend(profiles.tools());
    tools
}

/// The names of the built-in tools, in the same order as [`builtin_tools`].
pub fn builtin_tool_names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|(name, _)| *name)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use aria_api::Tier;
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    use super::*;
    use crate::guard::sensitive::SensitivePatterns;

    /// Name, an example call, and the tier it must have. A tool missing here fails the test.
    const EXPECTED: &[(&str, &str, Tier)] = &[
        ("file_read", r#"{"path": "a.txt"}"#, Tier::Read),
        ("file_list", r#"{"path": "."}"#, Tier::Read),
        ("file_search", r#"{"pattern": "fn main", "path": "."}"#, Tier::Read),
        ("file_write", r#"{"path": "a.txt", "content": "x"}"#, Tier::RecoverableWrite),
        ("file_edit", r#"{"path": "a.txt", "old": "x", "new": "y"}"#, Tier::RecoverableWrite),
        ("file_insert", r#"{"path": "a.txt", "text": "x"}"#, Tier::RecoverableWrite),
        ("apply_patch", r#"{"patch": "--- a/a\n+++ b/a\n"}"#, Tier::RecoverableWrite),
        ("shell_execute", r#"{"command": "ls -la"}"#, Tier::Read),
        ("system_info", r#"{}"#, Tier::Read),
        ("python_run", r#"{"code": "print(1)"}"#, Tier::Irreversible),
        ("web_fetch", r#"{"url": "https://example.org/"}"#, Tier::Read),
        ("git_status", r#"{"path": "."}"#, Tier::Read),
        ("git_diff", r#"{"path": ".", "staged": true}"#, Tier::Read),
        ("git_log", r#"{"path": ".", "limit": 5}"#, Tier::Read),
        ("git_commit", r#"{"path": ".", "message": "Fix: x"}"#, Tier::RecoverableWrite),
    ];

    fn tools() -> (tempfile::TempDir, Vec<Arc<dyn Tool>>) {
        let dir = tempfile::tempdir().unwrap();
        let guard =
            PathGuard::new(&[dir.path().to_path_buf()], SensitivePatterns::default()).unwrap();
        (dir, builtin_tools(Arc::new(guard)))
    }

    #[test]
    fn the_list_is_exactly_the_reviewed_set_with_declared_tiers() {
        let (_dir, tools) = tools();
        let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
        let expected: Vec<&str> = EXPECTED.iter().map(|(n, _, _)| *n).collect();
        assert_eq!(names, expected);
        assert_eq!(builtin_tool_names().collect::<Vec<_>>(), expected);
        for (tool, (name, args, tier)) in tools.iter().zip(EXPECTED) {
            let args: Value = serde_json::from_str(args).unwrap();
            assert_eq!(tool.tier(&args), *tier, "{name}");
        }
    }

    /// The command-profile tools: name, an example call, and the tier each must have.
    const PROFILE_EXPECTED: &[(&str, &str, Tier)] = &[
        ("lint_project", r#"{"path": "."}"#, Tier::Read),
        ("build_project", r#"{"path": "."}"#, Tier::RecoverableWrite),
        ("run_tests", r#"{"path": "."}"#, Tier::RecoverableWrite),
        ("ripgrep_search", r#"{"path": ".", "pattern": "x"}"#, Tier::Read),
    ];

    #[test]
    fn profile_tools_follow_the_builtins_with_declared_tiers() {
        let dir = tempfile::tempdir().unwrap();
        let guard = Arc::new(
            PathGuard::new(&[dir.path().to_path_buf()], SensitivePatterns::default()).unwrap(),
        );
        let profiles = Arc::new(Profiles::new(Arc::clone(&guard), &Default::default()).unwrap());
        let all = tools_with_profiles(Arc::clone(&guard), &profiles);
        let builtins = builtin_tools(guard).len();
        let names: Vec<&str> = all[builtins..].iter().map(|t| t.spec().name.as_str()).collect();
        let expected: Vec<&str> = PROFILE_EXPECTED.iter().map(|(n, _, _)| *n).collect();
        assert_eq!(names, expected);
        for (tool, (name, args, tier)) in all[builtins..].iter().zip(PROFILE_EXPECTED) {
            let args: Value = serde_json::from_str(args).unwrap();
            assert_eq!(tool.tier(&args), *tier, "{name}");
            let p = &tool.spec().parameters;
            assert_eq!(p["additionalProperties"], json!(false), "{name}");
        }
    }

    #[test]
    fn settings_reach_the_tools_that_take_them() {
        let dir = tempfile::tempdir().unwrap();
        let guard = Arc::new(
            PathGuard::new(&[dir.path().to_path_buf()], SensitivePatterns::default()).unwrap(),
        );
        let web = |tools: &[Arc<dyn Tool>]| {
            let tool = tools.iter().find(|t| t.spec().name == "web_fetch").unwrap();
            tool.spec().description.clone()
        };
        let default = builtin_tools(Arc::clone(&guard));
        assert!(web(&default).contains("public web pages only"), "{}", web(&default));
        let settings = ToolSettings { web: SsrfPolicy::public_only().allow_private(true) };
        let lan = builtin_tools_with(guard, &settings);
        assert!(web(&lan).contains("local hosts the user allowed"), "{}", web(&lan));
        let names =
            |t: &[Arc<dyn Tool>]| t.iter().map(|t| t.spec().name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&default), names(&lan));
    }

    #[test]
    fn names_are_unique_and_schemas_are_closed_objects() {
        let (_dir, tools) = tools();
        let mut seen = BTreeSet::new();
        for tool in &tools {
            let spec = tool.spec();
            assert!(seen.insert(spec.name.clone()), "duplicate {}", spec.name);
            assert!(!spec.description.is_empty(), "{}", spec.name);
            let p = &spec.parameters;
            assert_eq!(p["type"], json!("object"), "{}", spec.name);
            assert_eq!(p["additionalProperties"], json!(false), "{}", spec.name);
            let props = p["properties"].as_object().unwrap();
            for req in p["required"].as_array().unwrap() {
                assert!(props.contains_key(req.as_str().unwrap()), "{}: {req}", spec.name);
            }
        }
    }
}

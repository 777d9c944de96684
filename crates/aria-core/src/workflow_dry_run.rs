//! `--dry-run` for the governed workflow: what a run *would* have done — each
//! change with the text it would write, the restore point it would get, then per repository the
//! exact lint/build/test commands, the commit and the automatic restore — described and
//! audited, with nothing written, snapshotted, run or committed.

use serde::Serialize;
use serde_json::Value;

use crate::snapshot::PlannedPoint;
use crate::workflow::PlannedCheck;

/// How much of one change's text the report shows.
const MAX_SHOWN_CHARS: usize = 10_000;

/// One change the model asked for that the dry run did not make. Serialised (in the audit log)
/// with `snapshots` always a list and `snapshot_error` the reason none could be planned, or
/// null, as `tool.dry_run` records them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DryWrite {
    pub tool: String,
    /// The tier's name (`recoverable_write`, `irreversible`).
    pub tier: String,
    /// What it would write: `file_write`'s path and content, `apply_patch`'s patch, the
    /// command line of `shell_execute`, else the arguments.
    pub shown: String,
    /// The restore points it would get first, or why none could be planned. Empty when the
    /// call is not snapshotted (an irreversible action).
    pub snapshots: Result<Vec<PlannedPoint>, String>,
}

impl Serialize for DryWrite {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let (points, error) = self.snapshot_fields();
        let mut st = serializer.serialize_struct("DryWrite", 5)?;
        st.serialize_field("tool", &self.tool)?;
        st.serialize_field("tier", &self.tier)?;
        st.serialize_field("shown", &self.shown)?;
        st.serialize_field("snapshots", points)?;
        st.serialize_field("snapshot_error", &error)?;
        st.end()
    }
}

impl DryWrite {
    /// `snapshots` as recorded: the planned points (none after an error) and the error.
    pub fn snapshot_fields(&self) -> (&[PlannedPoint], Option<&str>) {
        match &self.snapshots {
            Ok(points) => (points, None),
            Err(e) => (&[], Some(e)),
        }
    }

    pub fn new(tool: &str, tier: &str, args: &Value) -> Self {
        DryWrite {
            tool: tool.to_owned(),
            tier: tier.to_owned(),
            shown: shown(tool, args),
            snapshots: Ok(Vec::new()),
        }
    }
}

/// The governed workflow for one repository the changes would have touched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepositoryPlan {
    pub repository: String,
    /// The first restore point in this repository (the one a failed check restores).
    pub snapshot: String,
    /// In order; empty when no project checks are detected (then nothing is committed).
    pub checks: Vec<PlannedCheck>,
    /// The commit message used when every check passes.
    pub commit_message: String,
}

/// Everything one dry run would have done; audited as `workflow.dry_run`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DryRunPlan {
    pub writes: Vec<DryWrite>,
    /// `None` when the governed workflow is off (supervised mode, or `governed_workflow =
    /// false`): the changes would be made and nothing checked or committed.
    pub workflow: Option<Vec<RepositoryPlan>>,
}

/// The text appended to the answer of a dry run.
pub fn dry_run_report(plan: &DryRunPlan) -> String {
    let mut text = String::from(
        "🔍 Dry run: nothing was changed (no file written, no snapshot taken, no check run, no \
         commit made).\n",
    );
    text.push_str(&format!("Would make {} change(s):\n", plan.writes.len()));
    for (n, w) in plan.writes.iter().enumerate() {
        text.push_str(&format!("{}. {} ({})\n", n + 1, w.tool, w.tier));
        for line in w.shown.lines() {
            text.push_str(&format!("   | {line}\n"));
        }
        match &w.snapshots {
            Ok(points) => {
                for p in points {
                    let init = if p.initialise {
                        " (not a git repository yet: it would be initialised first)"
                    } else {
                        ""
                    };
                    text.push_str(&format!(
                        "   Snapshot first: {} in {}{init}\n",
                        p.branch, p.repository
                    ));
                }
            }
            Err(e) => text.push_str(&format!("   Snapshot first: cannot be planned ({e})\n")),
        }
    }
    match &plan.workflow {
        None => text.push_str(
            "The governed workflow is off: the changes would be made without checks or a commit.\n",
        ),
        Some(repositories) => {
            for r in repositories {
                repository_report(r, &mut text);
            }
        }
    }
    text
}

fn repository_report(r: &RepositoryPlan, text: &mut String) {
    text.push_str(&format!("Then, in {} (governed workflow):\n", r.repository));
    if r.checks.is_empty() {
        text.push_str(
            "   No lint/build/test checks detected: nothing would be committed or restored \
             automatically.\n",
        );
        return;
    }
    for (n, c) in r.checks.iter().enumerate() {
        text.push_str(&format!(
            "   {}. {}: `{}` in {} (timeout {} s, network {})\n",
            n + 1,
            c.profile,
            c.command,
            c.cwd,
            c.timeout_secs,
            if c.network { "on" } else { "off" }
        ));
    }
    text.push_str(
        "   Each check also runs on the tree before the change (a result for the same tree from \
         the last 10 minutes is reused)\n",
    );
    text.push_str(&format!("   All pass → commit \"{}\"\n", r.commit_message));
    text.push_str(&format!(
        "   One that passed before fails → restore {} automatically, let the model try one \
         different fix, then report\n",
        r.snapshot
    ));
    text.push_str(
        "   One already failing before, or that cannot run (program missing) → reported, \
         nothing restored or committed\n",
    );
}

/// What a call would write, for the person reading the dry run.
fn shown(tool: &str, args: &Value) -> String {
    let field = |k: &str| args.get(k).and_then(Value::as_str);
    let text = match (tool, field("path"), field("content"), field("patch"), field("command")) {
        ("file_write", Some(path), Some(content), _, _) => {
            format!("write {path} ({} bytes):\n{content}", content.len())
        }
        ("apply_patch", _, _, Some(patch), _) => format!("apply this patch:\n{patch}"),
        ("file_edit", Some(path), _, _, _) if field("old").is_some() => format!(
            "in {path}, replace:\n{}\nwith:\n{}",
            field("old").unwrap_or_default(),
            field("new").unwrap_or_default()
        ),
        ("file_insert", Some(path), _, _, _) if field("text").is_some() => {
            let place = match (field("after"), field("before")) {
                (Some(line), _) => format!("after the line with {line:?}"),
                (None, Some(line)) => format!("before the line with {line:?}"),
                (None, None) => "at the end".to_owned(),
            };
            format!("in {path}, add {place}:\n{}", field("text").unwrap_or_default())
        }
        ("shell_execute", _, _, _, Some(command)) => format!("run: {command}"),
        _ => serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string()),
    };
    cap(&text, MAX_SHOWN_CHARS)
}

fn cap(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push_str(&format!("\n… ({} more characters not shown)", total - max));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan() -> DryRunPlan {
        let mut write = DryWrite::new(
            "file_write",
            "recoverable_write",
            &json!({"path": "app.txt", "content": "good v2\nline 2\n"}),
        );
        write.snapshots = Ok(vec![PlannedPoint {
            repository: "/r".into(),
            initialise: false,
            branch: "snapshot/file_write-<YYYY-MM-DD-HHMMSS>".into(),
        }]);
        DryRunPlan {
            writes: vec![write],
            workflow: Some(vec![RepositoryPlan {
                repository: "/r".into(),
                snapshot: "snapshot/file_write-<YYYY-MM-DD-HHMMSS>".into(),
                checks: vec![PlannedCheck {
                    profile: "lint_project".into(),
                    command: "cargo clippy --all-targets".into(),
                    cwd: "/r".into(),
                    timeout_secs: 300,
                    network: false,
                }],
                commit_message: "Fix: Bump".into(),
            }]),
        }
    }

    #[test]
    fn the_report_shows_the_content_the_snapshot_the_commands_and_the_commit() {
        let text = dry_run_report(&plan());
        pretty_assertions::assert_eq!(
            text,
            "🔍 Dry run: nothing was changed (no file written, no snapshot taken, no check run, \
             no commit made).\n\
             Would make 1 change(s):\n\
             1. file_write (recoverable_write)\n   \
             | write app.txt (15 bytes):\n   \
             | good v2\n   \
             | line 2\n   \
             Snapshot first: snapshot/file_write-<YYYY-MM-DD-HHMMSS> in /r\n\
             Then, in /r (governed workflow):\n   \
             1. lint_project: `cargo clippy --all-targets` in /r (timeout 300 s, network off)\n   \
             Each check also runs on the tree before the change (a result for the same tree \
             from the last 10 minutes is reused)\n   \
             All pass → commit \"Fix: Bump\"\n   \
             One that passed before fails → restore snapshot/file_write-<YYYY-MM-DD-HHMMSS> \
             automatically, let the model try one different fix, then report\n   \
             One already failing before, or that cannot run (program missing) → reported, \
             nothing restored or committed\n"
        );
    }

    #[test]
    fn without_checks_or_workflow_the_report_says_nothing_would_be_committed() {
        let mut p = plan();
        if let Some(repos) = p.workflow.as_mut() {
            repos[0].checks.clear();
        }
        assert!(dry_run_report(&p).contains("No lint/build/test checks detected"));
        p.workflow = None;
        assert!(dry_run_report(&p).contains("The governed workflow is off"));
        p.writes[0].snapshots = Err("outside the roots".into());
        assert!(dry_run_report(&p).contains("cannot be planned (outside the roots)"));
    }

    #[test]
    fn the_audited_plan_lists_snapshots_and_names_a_planning_error() {
        let mut p = plan();
        let audited = serde_json::to_value(&p).unwrap();
        assert_eq!(
            audited["writes"][0],
            json!({"tool": "file_write", "tier": "recoverable_write", "shown": p.writes[0].shown,
                   "snapshots": [{"repository": "/r", "initialise": false,
                                  "branch": "snapshot/file_write-<YYYY-MM-DD-HHMMSS>"}],
                   "snapshot_error": null})
        );
        p.writes[0].snapshots = Err("outside the roots".into());
        let audited = serde_json::to_value(&p).unwrap();
        assert_eq!(audited["writes"][0]["snapshots"], json!([]));
        assert_eq!(audited["writes"][0]["snapshot_error"], "outside the roots");
    }

    #[test]
    fn patches_and_commands_are_shown_and_long_text_is_capped() {
        let patch = "*** Begin Patch\n*** Update File: a\n-x\n+y\n*** End Patch";
        assert!(shown("apply_patch", &json!({"patch": patch})).ends_with(patch));
        assert_eq!(shown("shell_execute", &json!({"command": "touch a"})), "run: touch a");
        assert!(shown("other", &json!({"k": 1})).contains("\"k\": 1"));
        assert_eq!(
            shown("file_insert", &json!({"path": "a.md", "text": "- c", "after": "- b"})),
            "in a.md, add after the line with \"- b\":\n- c"
        );
        let long = shown("file_write", &json!({"path": "a", "content": "é".repeat(20_000)}));
        assert!(long.ends_with("more characters not shown)"), "{}", &long[long.len() - 60..]);
        assert!(long.chars().count() < 10_100);
    }
}

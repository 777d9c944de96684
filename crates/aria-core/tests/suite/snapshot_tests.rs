//! The snapshot hook in the loop: a recoverable write is snapshotted before it runs (and runs
//! without asking in governed mode); a failed snapshot means the call does not run.

use std::sync::{Arc, Mutex};

use aria_api::{ApprovalMode, Tier};
use aria_core::{RestorePoint, SnapshotFailed, Snapshotter};
use aria_testkit::scripted::{End, Turn};
use serde_json::{Value, json};

use super::harness::{Behaviour, TestTool, rig};

/// Records each call and, when it runs, how many times the tool had run before it.
#[derive(Debug)]
struct Fake {
    tool: Arc<TestTool>,
    fail: Option<String>,
    seen: Mutex<Vec<(String, Value, String, usize)>>,
}

impl Snapshotter for Fake {
    fn before_write(
        &self,
        tool: &str,
        args: &Value,
        session_id: &str,
    ) -> Result<Vec<RestorePoint>, SnapshotFailed> {
        self.seen.lock().unwrap().push((
            tool.to_owned(),
            args.clone(),
            session_id.to_owned(),
            self.tool.count(),
        ));
        match &self.fail {
            Some(why) => Err(SnapshotFailed(why.clone())),
            None => Ok(vec![RestorePoint {
                id: format!("snapshot/{tool}-1"),
                repository: "/repo".into(),
            }]),
        }
    }
}

fn fake(tool: &Arc<TestTool>, fail: Option<&str>) -> Arc<Fake> {
    Arc::new(Fake { tool: tool.clone(), fail: fail.map(str::to_owned), seen: Mutex::new(vec![]) })
}

fn turns() -> Vec<Turn> {
    vec![Turn::tool("write", json!({"path": "a.txt"})), Turn::text("done")]
}

#[tokio::test]
async fn a_recoverable_write_is_snapshotted_first_then_runs_without_asking() {
    let tool = TestTool::new("write", Tier::RecoverableWrite, Behaviour::Echo);
    let snap = fake(&tool, None);
    let s2 = snap.clone();
    let r = rig(turns(), End::Fail, vec![tool.clone()], move |c| {
        c.mode = ApprovalMode::Governed;
        *c = c.clone().with_snapshotter(s2);
    });
    let session = r.run("write a.txt").await.0.unwrap();
    assert_eq!(tool.count(), 1, "governed mode ran the snapshotted write without an approver");
    let seen = snap.seen.lock().unwrap().clone();
    assert_eq!(seen, [("write".into(), json!({"path": "a.txt"}), session.id.clone(), 0)]);
    let events = r.journal.audit_events();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    let snap_at = kinds.iter().position(|k| *k == "tool.snapshot").unwrap();
    let start_at = kinds.iter().position(|k| *k == "tool.start").unwrap();
    assert!(snap_at < start_at, "{kinds:?}");
    let payload = events[snap_at].payload.to_string();
    assert!(payload.contains("snapshot/write-1"), "{payload}");
}

#[tokio::test]
async fn a_failed_snapshot_means_the_call_does_not_run_and_the_model_is_told() {
    let tool = TestTool::new("write", Tier::RecoverableWrite, Behaviour::Echo);
    let snap = fake(&tool, Some("the disk is full"));
    let s2 = snap.clone();
    let r = rig(turns(), End::Fail, vec![tool.clone()], move |c| {
        *c = c.clone().with_snapshotter(s2);
    });
    r.run("write a.txt").await.0.unwrap();
    assert_eq!(tool.count(), 0);
    let seen = r.provider.requests()[1].messages.last().unwrap().content.clone();
    assert!(seen.contains("not run") && seen.contains("the disk is full"), "{seen}");
    let kinds = r.journal.audit_kinds();
    assert!(kinds.contains(&"tool.snapshot_failed".to_owned()), "{kinds:?}");
    assert!(!kinds.contains(&"tool.start".to_owned()), "{kinds:?}");
}

#[tokio::test]
async fn reads_and_dry_runs_take_no_snapshot_and_snapshots_on_without_a_snapshotter_fail_closed() {
    let read = TestTool::new("write", Tier::Read, Behaviour::Echo);
    let snap = fake(&read, None);
    let s2 = snap.clone();
    let r = rig(turns(), End::Fail, vec![read.clone()], move |c| {
        *c = c.clone().with_snapshotter(s2);
    });
    r.run("read").await.0.unwrap();
    assert_eq!(read.count(), 1);
    assert!(snap.seen.lock().unwrap().is_empty());

    let write = TestTool::new("write", Tier::RecoverableWrite, Behaviour::Echo);
    let snap = fake(&write, None);
    let s2 = snap.clone();
    let r = rig(turns(), End::Fail, vec![write.clone()], move |c| {
        *c = c.clone().with_snapshotter(s2);
        c.dry_run = true;
    });
    r.run("dry").await.0.unwrap();
    assert!(
        snap.seen.lock().unwrap().is_empty(),
        "a dry run changes nothing, so needs no snapshot"
    );

    let r = rig(turns(), End::Fail, vec![write.clone()], |c| c.snapshots = true);
    r.run("write").await.0.unwrap();
    assert_eq!(write.count(), 0, "a write claimed to be snapshotted ran without a snapshot");
}

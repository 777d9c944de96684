//! Which tools a run offers a model shown a selection of them: never one that could only be
//! denied, and for a question only those that read.

use aria_api::Tier;
use aria_testkit::scripted::{End, Turn};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::harness::{Behaviour, TestTool, rig};

/// With no one to ask (`aria run`), a tool whose every call needs approval could
/// only be denied; shown to a small model it was picked to edit a file (`python_run`) and the
/// task failed. It is withheld from the selection (audited), unless approved in advance.
#[tokio::test]
async fn a_tool_that_could_only_be_denied_is_not_offered_when_no_one_can_approve() {
    let tools = || {
        vec![
            TestTool::new("file_read", Tier::Read, Behaviour::Echo),
            TestTool::new("python_run", Tier::Irreversible, Behaviour::Echo),
            TestTool::new("git_log", Tier::Read, Behaviour::Echo),
        ]
    };
    let selection = || Some(std::sync::Arc::new(aria_core::ToolSelection::new(2, None)));
    let r = rig(vec![Turn::text("Done.")], End::Fail, tools(), |c| c.tool_selection = selection());
    r.run("run python on calc.py").await.0.unwrap();
    let offered: Vec<String> =
        r.provider.requests()[0].tools.iter().map(|t| t.name.clone()).collect();
    assert_eq!(offered, ["file_read", "git_log"]);
    let selected = r.journal.audit_events().into_iter().find(|e| e.kind == "tools.selected");
    assert_eq!(selected.unwrap().payload["withheld"], json!(["python_run"]));

    // Approved in advance: offered.
    let r = rig(vec![Turn::text("Done.")], End::Fail, tools(), |c| {
        c.tool_selection = selection();
        c.preapproval = aria_core::Preapproval::new(&["python_run".to_owned()], false).unwrap();
    });
    r.run("run python on calc.py").await.0.unwrap();
    let offered: Vec<String> =
        r.provider.requests()[0].tools.iter().map(|t| t.name.clone()).collect();
    assert!(offered.contains(&"python_run".to_owned()), "{offered:?}");
}

/// A question is offered the tools that read: "What did the last commit change?" shares a word
/// with `git_commit`'s name, and a small model shown it committed instead of reading the log.
#[tokio::test]
async fn a_question_is_offered_the_tools_that_read() {
    let tools = vec![
        TestTool::new("git_commit", Tier::RecoverableWrite, Behaviour::Echo),
        TestTool::new("git_log", Tier::Read, Behaviour::Echo),
        TestTool::new("file_read", Tier::Read, Behaviour::Echo),
    ];
    let selection = Some(std::sync::Arc::new(aria_core::ToolSelection::new(2, None)));
    let r = rig(vec![Turn::text("It added a report.")], End::Fail, tools, |c| {
        c.tool_selection = selection;
    });
    r.run("What did the last commit change?").await.0.unwrap();
    let offered: Vec<String> =
        r.provider.requests()[0].tools.iter().map(|t| t.name.clone()).collect();
    assert!(offered.contains(&"git_log".to_owned()), "{offered:?}");
    assert!(!offered.contains(&"git_commit".to_owned()), "{offered:?}");
}

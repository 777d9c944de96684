//! Command profiles through the `aria_api::Tool` contract: configured profiles running real
//! programs (`/bin/sh`) in the sandbox, the argument schema, the timeout, the output cap, the
//! five-run limit, the network switch, and detection from project files.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::sync::Arc;

use aria_api::{Tool, ToolContext, ToolError, ToolOutput};
use aria_tools::profiles::ArgConfig;
use aria_tools::{PathGuard, ProfileConfig, Profiles, SensitivePatterns};
use serde_json::{Value, json};
use tempfile::TempDir;

struct Rig {
    _tmp: TempDir,
    root: PathBuf,
    profiles: Arc<Profiles>,
}

fn sh(script: &str) -> ProfileConfig {
    ProfileConfig {
        program: Some("/bin/sh".into()),
        args: Some(vec!["-c".into(), script.into(), "sh".into(), "{word}".into()]),
        arguments: Some(
            [(
                "word".to_owned(),
                ArgConfig { pattern: "[a-z]{1,10}".into(), ..ArgConfig::default() },
            )]
            .into(),
        ),
        tier: Some("read".into()),
        ..ProfileConfig::default()
    }
}

fn rig(configs: BTreeMap<String, ProfileConfig>) -> Rig {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("root");
    fs::create_dir_all(&root).unwrap();
    let guard = Arc::new(
        PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap(),
    );
    let profiles = Arc::new(Profiles::new(guard, &configs).unwrap());
    Rig { _tmp: tmp, root, profiles }
}

fn tool(r: &Rig, name: &str) -> Arc<dyn Tool> {
    r.profiles.tools().into_iter().find(|t| t.spec().name == name).unwrap()
}

async fn call(t: &Arc<dyn Tool>, args: Value, session: &str) -> Result<ToolOutput, ToolError> {
    let ctx = ToolContext { session_id: session.into(), dry_run: false };
    t.call(args, &ctx).await
}

#[tokio::test]
async fn a_configured_profile_runs_its_program_with_checked_arguments() {
    let r = rig([("say".to_owned(), sh("echo said:$1; pwd"))].into());
    let t = tool(&r, "say");
    assert_eq!(t.spec().parameters["required"], json!(["path"]));
    let out = call(&t, json!({"path": ".", "word": "hello"}), "s").await.unwrap();
    assert!(out.content.starts_with("say: passed (exit status 0"), "{}", out.content);
    assert!(out.content.contains("said:hello\n"), "{}", out.content);
    assert!(
        out.content.contains(&format!("{}\n", r.root.display())),
        "runs in the root: {}",
        out.content
    );
    assert_eq!(out.details["passed"], json!(true));
}

#[tokio::test]
async fn arguments_outside_the_schema_are_refused_before_anything_runs() {
    let r = rig([("say".to_owned(), sh("touch ran; echo $1"))].into());
    let t = tool(&r, "say");
    for (args, says) in [
        (json!({"path": ".", "word": "UPPER"}), "is not allowed"),
        (json!({"path": ".", "word": "hello; rm -rf /"}), "is not allowed"),
        (json!({"path": ".", "extra": "x"}), "takes no argument \"extra\""),
        (json!({"path": "../..", "word": "x"}), "climbs out"),
    ] {
        let err = call(&t, args.clone(), "s").await.unwrap_err();
        assert!(matches!(err, ToolError::Refused { .. }), "{args}: {err}");
        assert!(err.to_string().contains(says), "{args}: {err}");
    }
    assert!(!r.root.join("ran").exists(), "nothing ran");
}

#[tokio::test]
async fn a_value_that_would_be_an_option_is_refused() {
    let mut cfg = sh("echo $1");
    cfg.arguments = Some(
        [("word".to_owned(), ArgConfig { pattern: "[a-z-]{1,10}".into(), ..ArgConfig::default() })]
            .into(),
    );
    let r = rig([("say".to_owned(), cfg)].into());
    let err = call(&tool(&r, "say"), json!({"path": ".", "word": "-rf"}), "s").await.unwrap_err();
    assert!(err.to_string().contains("starts with '-'"), "{err}");
}

#[tokio::test]
async fn a_profile_past_its_timeout_is_killed_and_reported_failed() {
    let mut cfg = sh("echo start; sleep 30; echo never");
    cfg.timeout_secs = Some(1);
    let r = rig([("slow".to_owned(), cfg)].into());
    let out = call(&tool(&r, "slow"), json!({"path": "."}), "s").await.unwrap();
    assert!(out.content.contains("FAILED") && out.content.contains("timed out"), "{}", out.content);
    assert!(out.content.ends_with("--- stdout ---\nstart\n"), "{}", out.content);
    assert_eq!(out.details["timed_out"], json!(true));
}

#[tokio::test]
async fn output_is_capped_at_the_profile_cap() {
    let mut cfg = sh(
        "i=0; while [ $i -lt 3000 ]; do echo 0123456789012345678901234567890123456789; i=$((i+1)); done",
    );
    cfg.output_cap_bytes = Some(4096);
    let r = rig([("loud".to_owned(), cfg)].into());
    let out = call(&tool(&r, "loud"), json!({"path": "."}), "s").await.unwrap();
    let body = out.content.split("--- stdout ---\n").nth(1).unwrap();
    let kept = body.split("[stdout truncated").next().unwrap();
    assert_eq!(kept.strip_suffix('\n').unwrap().len(), 4096, "kept exactly the cap");
    assert!(out.content.contains("[stdout truncated at the profile's output cap]"));
}

#[tokio::test]
async fn at_most_five_profile_runs_per_request_across_profiles() {
    let r = rig([("a".to_owned(), sh("echo a")), ("b".to_owned(), sh("echo b"))].into());
    let (a, b) = (tool(&r, "a"), tool(&r, "b"));
    for i in 0..5 {
        let t = if i % 2 == 0 { &a } else { &b };
        call(t, json!({"path": "."}), "run-1").await.unwrap();
    }
    let err = call(&b, json!({"path": "."}), "run-1").await.unwrap_err();
    assert!(err.to_string().contains("Profile execution limit reached"), "{err}");
    call(&a, json!({"path": "."}), "run-2").await.unwrap();
}

/// Whether this kernel lets the sandbox block sockets (Landlock TCP rules or seccomp).
fn network_blockable() -> bool {
    aria_sandbox::Sandbox::planned_protections(false)
        .items
        .iter()
        .any(|p| p.name == "network" && p.active)
}

#[tokio::test]
#[allow(clippy::print_stdout)] // the printed reason for a skipped half
async fn network_is_off_unless_the_profile_grants_it() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let mut cfg = ProfileConfig { program: Some("/bin/bash".into()), ..sh("") };
    cfg.args = Some(vec!["-c".into(), script]);
    cfg.arguments = None;
    let mut granted = cfg.clone();
    granted.network = Some(aria_sandbox::NetworkGrant::Flag(true));
    // Granted, it reaches the internet through the egress proxy, never this machine.
    let probe = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected; echo $HTTPS_PROXY");
    granted.args = Some(vec!["-c".into(), probe]);
    let r = rig([("closed".to_owned(), cfg), ("open".to_owned(), granted)].into());
    let open = call(&tool(&r, "open"), json!({"path": "."}), "s").await.unwrap();
    let proxy = format!("--- stdout ---\nhttp://127.0.0.1:{}\n", aria_sandbox::EGRESS_PORT);
    assert!(open.content.contains(&proxy), "{}", open.content);
    assert!(!open.content.contains("--- stdout ---\nconnected"), "{}", open.content);
    if !network_blockable() {
        println!(
            "skipped the blocked half: this kernel offers neither Landlock TCP rules nor seccomp"
        );
        return;
    }
    let closed = call(&tool(&r, "closed"), json!({"path": "."}), "s").await.unwrap();
    assert!(!closed.content.contains("--- stdout ---"), "{}", closed.content);
    assert!(closed.content.contains("FAILED"), "{}", closed.content);
}

#[tokio::test]
async fn a_profile_limited_to_some_roots_refuses_others() {
    let mut cfg = sh("echo ok");
    let r0 = rig(BTreeMap::new());
    fs::create_dir_all(r0.root.join("allowed")).unwrap();
    fs::create_dir_all(r0.root.join("other")).unwrap();
    cfg.roots = Some(vec![r0.root.join("allowed")]);
    let guard = r0.profiles.guard().clone();
    let profiles = Arc::new(Profiles::new(guard, &[("only".to_owned(), cfg)].into()).unwrap());
    let t = profiles.tools().into_iter().find(|t| t.spec().name == "only").unwrap();
    call(&t, json!({"path": "allowed"}), "s").await.unwrap();
    let err = call(&t, json!({"path": "other"}), "s").await.unwrap_err();
    assert!(err.to_string().contains("may only run in"), "{err}");
}

#[tokio::test]
#[allow(clippy::print_stdout)] // the printed reason for a skipped half
async fn detected_profiles_run_in_the_project_and_a_dry_run_only_shows_the_command() {
    let r = rig(BTreeMap::new());
    fs::create_dir_all(r.root.join("proj/src")).unwrap();
    fs::write(
        r.root.join("proj/Makefile"),
        "all:\n\t@echo built > out.txt\ntest:\n\t@echo tests-ok\n",
    )
    .unwrap();
    let ctx = ToolContext { session_id: "s".into(), dry_run: true };
    let dry = tool(&r, "run_tests").call(json!({"path": "proj/src"}), &ctx).await.unwrap();
    assert!(dry.content.starts_with("dry run: would run `make test`"), "{}", dry.content);
    assert!(dry.content.contains(&r.root.join("proj").display().to_string()), "{}", dry.content);
    assert_eq!(r.profiles.budget().used("s"), 0, "a dry run uses no budget");
    if aria_tools::profiles::find_program("make").is_none() {
        println!("skipped running make: it is not installed (CI installs it)");
        return;
    }
    let out = call(&tool(&r, "run_tests"), json!({"path": "proj/src"}), "s").await.unwrap();
    assert!(out.content.contains("tests-ok"), "{}", out.content);
    let built = call(&tool(&r, "build_project"), json!({"path": "proj"}), "s").await.unwrap();
    assert!(built.content.contains("passed"), "{}", built.content);
    assert_eq!(fs::read_to_string(r.root.join("proj/out.txt")).unwrap(), "built\n");
    let none = call(&tool(&r, "lint_project"), json!({"path": "proj"}), "s").await.unwrap_err();
    assert!(none.to_string().contains("no \"lint\" target"), "{none}");
    fs::create_dir_all(r.root.join("plain")).unwrap();
    let err = call(&tool(&r, "run_tests"), json!({"path": "plain"}), "s").await.unwrap_err();
    assert!(err.to_string().contains("no project found"), "{err}");
}

#[test]
fn each_profile_tool_tells_the_loop_its_own_timeout() {
    let mut cfg = sh("true");
    cfg.timeout_secs = Some(900);
    let r = rig([("slow".to_owned(), cfg)].into());
    assert_eq!(tool(&r, "slow").timeout(), Some(std::time::Duration::from_secs(900)));
    assert_eq!(tool(&r, "run_tests").timeout(), Some(std::time::Duration::from_secs(600)));
    assert_eq!(tool(&r, "build_project").timeout(), Some(std::time::Duration::from_secs(300)));
}

#[test]
fn a_profile_network_grant_is_a_bool_or_a_host_list() {
    use aria_tools::profiles::ProfileSpec;
    let parse = |text: &str| {
        let cfg: ProfileConfig = toml::from_str(&format!("program = \"/bin/true\"\n{text}"))?;
        Ok::<_, toml::de::Error>(ProfileSpec::from_config("p", &cfg))
    };
    let spec = parse(r#"network = ["pypi.org", "*.pythonhosted.org"]"#).unwrap().unwrap();
    assert!(spec.network);
    assert_eq!(spec.network_hosts, Some(vec!["pypi.org".into(), "*.pythonhosted.org".into()]));
    let spec = parse("network = true").unwrap().unwrap();
    assert!(spec.network && spec.network_hosts.is_none());
    let spec = parse("").unwrap().unwrap();
    assert!(!spec.network && spec.network_hosts.is_none());
    let err = parse("network = []").unwrap().unwrap_err().to_string();
    assert!(err.contains("network = []"), "{err}");
    assert!(parse("network = \"yes\"").is_err());
}

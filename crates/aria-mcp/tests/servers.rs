//! aria-mcp against MCP servers over stdio, in the sandbox: the real
//! `@modelcontextprotocol/server-filesystem` from npm (installed by `.ci/run` into
//! `target/tmp/mcp-servers`; `ARIA_REQUIRE_MCP=1` makes its absence a failure), and a small
//! server of this crate's tests for the failures: a crash mid-call (and the restart after it),
//! a call that hangs (timeout), an oversized answer, an error answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use aria_api::{Tier, ToolContext};
use aria_mcp::{Server, ServerConfig, tools};
use aria_tools::{PathGuard, SensitivePatterns};
use serde_json::json;

fn rig() -> (tempfile::TempDir, PathBuf, Arc<PathGuard>) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let guard = Arc::new(
        PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap(),
    );
    (dir, root, guard)
}

fn config(name: &str, command: &str, args: Vec<String>, read: Vec<PathBuf>) -> ServerConfig {
    ServerConfig {
        url: None,
        headers: Vec::new(),
        name: name.into(),
        command: command.into(),
        args,
        env: vec![],
        timeout: Duration::from_secs(20),
        tools: None,
        tier: Tier::Irreversible,
        tool_tiers: BTreeMap::new(),
        read_paths: read,
        network: false,
        network_hosts: None,
    }
}

fn filesystem_server() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/tmp/mcp-servers/node_modules/@modelcontextprotocol/server-filesystem");
    let script = dir.join("dist/index.js");
    if script.is_file() {
        return Some(dir.canonicalize().unwrap());
    }
    assert!(
        std::env::var_os("ARIA_REQUIRE_MCP").is_none(),
        "ARIA_REQUIRE_MCP is set but {} is missing: npm install --prefix target/tmp/mcp-servers \
         @modelcontextprotocol/server-filesystem",
        script.display()
    );
    None
}

#[tokio::test]
async fn the_npm_filesystem_server_lists_and_reads_inside_the_sandbox() {
    let Some(package) = filesystem_server() else {
        eprintln!("skipped: @modelcontextprotocol/server-filesystem is not installed");
        return;
    };
    let (_dir, root, guard) = rig();
    std::fs::write(root.join("notes.md"), "buy milk\n").unwrap();
    let modules = package.parent().unwrap().parent().unwrap().to_path_buf();
    let script = package.join("dist/index.js").display().to_string();
    let mut cfg = config("fs", "node", vec![script, root.display().to_string()], vec![modules]);
    cfg.tier = Tier::Read;
    let server = Server::new(cfg, guard);
    let listed = server.list_tools().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"read_text_file") && names.contains(&"list_directory"), "{names:?}");
    let tools = tools(&[(server.clone(), listed)]).unwrap();
    let read = tools.iter().find(|t| t.spec().name == "fs__read_text_file").unwrap();
    assert_eq!(read.tier(&json!({})), Tier::Read);
    let ctx = ToolContext { session_id: "s".into(), dry_run: false };
    let path = root.join("notes.md").display().to_string();
    let out = read.call(json!({"path": path}), &ctx).await.unwrap();
    assert!(out.content.contains("buy milk"), "{}", out.content);
    // Outside the directory the server was given: its own refusal, as a failure.
    let outside = read.call(json!({"path": "/etc/hostname"}), &ctx).await.unwrap_err();
    assert!(
        outside.to_string().to_lowercase().contains("denied")
            || outside.to_string().contains("outside"),
        "{outside}"
    );
    server.stop().await;
}

fn fake(guard: Arc<PathGuard>, timeout: Duration) -> Arc<Server> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake_server.py");
    let dir = script.parent().unwrap().canonicalize().unwrap();
    let mut cfg =
        config("fake", "python3", vec!["-u".into(), script.display().to_string()], vec![dir]);
    cfg.timeout = timeout;
    cfg.tool_tiers.insert("echo".into(), Tier::Read);
    Server::new(cfg, guard)
}

#[tokio::test]
async fn crashes_hangs_big_and_error_answers_are_handled() {
    let (_dir, _root, guard) = rig();
    let server = fake(guard, Duration::from_secs(3));
    let listed = server.list_tools().await.unwrap();
    assert_eq!(listed.iter().find(|t| t.name == "echo").unwrap().read_only_hint, Some(true));
    let tools = tools(&[(server.clone(), listed)]).unwrap();
    let by = |name: &str| tools.iter().find(|t| t.spec().name == name).unwrap().clone();
    assert_eq!(by("fake__echo").tier(&json!({})), Tier::Read, "the user's tier");
    assert_eq!(by("fake__crash").tier(&json!({})), Tier::Irreversible, "never the server's hint");
    let ctx = ToolContext { session_id: "s".into(), dry_run: false };

    let out = by("fake__echo").call(json!({"text": "hi"}), &ctx).await.unwrap();
    assert_eq!(out.content.trim(), "hi");
    let failed = by("fake__fails").call(json!({}), &ctx).await.unwrap_err();
    assert!(failed.to_string().contains("it went wrong"), "{failed}");
    let big = by("fake__big").call(json!({}), &ctx).await.unwrap();
    assert!(big.content.len() < 200_000 && big.content.contains("[cut:"), "{}", big.content.len());

    let crashed = by("fake__crash").call(json!({}), &ctx).await.unwrap_err();
    assert!(crashed.to_string().contains("MCP server fake"), "{crashed}");
    // The next call starts the server again.
    let again = by("fake__echo").call(json!({"text": "back"}), &ctx).await.unwrap();
    assert_eq!(again.content.trim(), "back");

    let started = std::time::Instant::now();
    let hung = by("fake__hang").call(json!({}), &ctx).await.unwrap_err();
    assert!(hung.to_string().contains("took longer than 3 s"), "{hung}");
    assert!(started.elapsed() < Duration::from_secs(15));
    server.stop().await;
}

#[tokio::test]
async fn an_allow_list_keeps_other_tools_out_and_collisions_are_refused() {
    let (_dir, _root, guard) = rig();
    let server = fake(guard.clone(), Duration::from_secs(5));
    let mut cfg = server.config.clone();
    cfg.tools = Some(vec!["echo".into()]);
    let only = Server::new(cfg, guard);
    let listed = only.list_tools().await.unwrap();
    assert_eq!(listed.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["echo"]);
    let twice = tools(&[(only.clone(), listed.clone()), (only.clone(), listed)]).unwrap_err();
    assert!(twice.contains("fake__echo"), "{twice}");
    only.stop().await;
}

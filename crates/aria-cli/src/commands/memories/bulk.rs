//! `aria memories import|reindex`: loading many memories, and embedding them again.

use std::collections::HashSet;
use std::path::Path;

use anyhow::{Context, anyhow};
use aria_api::passage_texts;
use aria_store::{NewMemory, Writer};
use serde_json::Value;

use super::{CHUNK, Ctx, parse_kind};
use crate::exit::{CliError, CliResult, OK};

/// One parsed line of an import file.
pub(super) struct Line {
    pub number: usize,
    pub id: String,
    pub text: String,
}

/// Reads and checks every line first; any bad line stops the import before anything is stored.
pub(super) fn parse_import(path: &Path) -> CliResult<Vec<Line>> {
    let content = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read {}", path.display()))
        .map_err(CliError::config)?;
    let mut lines = Vec::new();
    let mut errors = Vec::new();
    let mut seen = HashSet::new();
    for (i, raw) in content.lines().enumerate() {
        let number = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let value: Value = match serde_json::from_str(raw) {
            Ok(v) => v,
            Err(e) => {
                errors.push(format!("line {number}: not JSON ({e})"));
                continue;
            }
        };
        let id = match &value["id"] {
            Value::String(s) if !s.trim().is_empty() => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => {
                errors.push(format!("line {number}: `id` must be a non-empty string or a number"));
                continue;
            }
        };
        let Some(text) = value["text"].as_str().filter(|t| !t.trim().is_empty()) else {
            errors.push(format!("line {number}: `text` must be a non-empty string"));
            continue;
        };
        if !seen.insert(id.clone()) {
            errors.push(format!("line {number}: id `{id}` appears twice in the file"));
            continue;
        }
        lines.push(Line { number, id, text: text.to_owned() });
    }
    if !errors.is_empty() {
        for e in &errors {
            eprintln!("{}: {e}", path.display());
        }
        return Err(CliError::config(anyhow!(
            "{} bad line(s) in {}; nothing was imported. Fix them and run the import again",
            errors.len(),
            path.display()
        )));
    }
    Ok(lines)
}

pub(super) fn import(
    ctx: &Ctx,
    path: &Path,
    kind: &str,
    private: bool,
    roots: &[std::path::PathBuf],
) -> CliResult<u8> {
    let kind = parse_kind(kind)?;
    let lines = parse_import(path)?;
    // A file from a project the agent works in stays on this machine.
    let under_root = std::fs::canonicalize(path).ok().and_then(|file| {
        roots.iter().find(|r| std::fs::canonicalize(r).is_ok_and(|r| file.starts_with(r))).cloned()
    });
    let private = private || under_root.is_some();
    // Ids already stored: the same text is skipped (a rerun after an interruption), another
    // text is an error (nothing is overwritten silently).
    let mut todo: Vec<Line> = Vec::new();
    let mut conflicts = Vec::new();
    let mut present = 0usize;
    for line in lines {
        match ctx.store.memory_get(&line.id)? {
            Some(m) if m.content == line.text => present += 1,
            Some(_) => conflicts.push(format!(
                "line {}: id `{}` is already stored with another text (`aria memories show {}`)",
                line.number, line.id, line.id
            )),
            None => todo.push(line),
        }
    }
    if !conflicts.is_empty() {
        for c in &conflicts {
            eprintln!("{}: {c}", path.display());
        }
        return Err(CliError::config(anyhow!(
            "{} id(s) in {} clash with stored memories; nothing was imported",
            conflicts.len(),
            path.display()
        )));
    }
    let total = todo.len();
    let mut done = 0;
    // Embedded shortest first: a chunk then holds texts of about one length, so the embedder's
    // batches pad little. Each chunk is committed on its own; a rerun skips what is stored.
    todo.sort_by_key(|l| l.text.len());
    let mut progress = ImportProgress::new(total);
    for chunk in todo.chunks(CHUNK) {
        let texts: Vec<String> = chunk.iter().map(|l| l.text.clone()).collect();
        // Private memories go to an embedder on this machine only.
        let vectors = match ctx.may_embed(private) {
            true => ctx.embed_passages(&texts).map_err(|e| interrupted(e, done, total))?,
            false => None,
        };
        let memories: Vec<NewMemory> = chunk
            .iter()
            .map(|l| {
                let mut m = NewMemory::new(l.text.clone());
                m.id = Some(l.id.clone());
                m.kind = kind;
                m.private = private;
                m
            })
            .collect();
        ctx.store
            .memory_insert_batch(
                &memories,
                ctx.model(),
                |i| vectors.as_ref().map(|v| v[i].as_slice()),
                Writer::USER,
            )
            .map_err(|e| interrupted(CliError::failed(e), done, total))?;
        done += chunk.len();
        progress.update(done);
    }
    progress.finish();
    if done > 0 && private {
        match &under_root {
            Some(root) => eprintln!(
                "the new memories are private (the file is under the root {}): they are never \
                 sent to a model off this machine; `aria memories edit ID --public` changes that",
                root.display()
            ),
            None => {
                eprintln!("the new memories are private: never sent to a model off this machine")
            }
        }
    }
    println!(
        "{done} new, {present} already present, from {}{}",
        path.display(),
        if done > 0 {
            ctx.model().map(|m| format!(" (embedded with {m})")).unwrap_or_default()
        } else {
            String::new()
        }
    );
    Ok(OK)
}

/// The import's progress on stderr: redrawn in place on a terminal, else one line per chunk,
/// once the import is longer than one chunk.
struct ImportProgress {
    total: usize,
    start: std::time::Instant,
    terminal: bool,
}

impl ImportProgress {
    fn new(total: usize) -> ImportProgress {
        use std::io::IsTerminal;
        let terminal =
            std::io::stderr().is_terminal() && std::env::var("TERM").map_or(true, |t| t != "dumb");
        ImportProgress { total, start: std::time::Instant::now(), terminal }
    }

    fn update(&mut self, done: usize) {
        if self.total <= CHUNK {
            return;
        }
        let line = progress_line(done, self.total, self.start.elapsed().as_secs_f64());
        if self.terminal {
            eprint!("\r\x1b[2K{line}");
        } else {
            eprintln!("{line}");
        }
    }

    fn finish(&self) {
        if self.terminal && self.total > CHUNK {
            eprintln!();
        }
    }
}

/// `imported 128/1398 (9 %) · 7.9/s · about 2 min 41 s left · Ctrl-C stops, a rerun resumes`.
fn progress_line(done: usize, total: usize, seconds: f64) -> String {
    let percent = done * 100 / total.max(1);
    let rate = if seconds > 0.0 { done as f64 / seconds } else { 0.0 };
    let left = if rate > 0.0 && done < total {
        let secs = ((total - done) as f64 / rate).round() as u64;
        if secs >= 60 {
            format!(" · about {} min {} s left", secs / 60, secs % 60)
        } else {
            format!(" · about {secs} s left")
        }
    } else {
        String::new()
    };
    let resume = if done < total { " · Ctrl-C stops, a rerun resumes" } else { "" };
    format!("imported {done}/{total} ({percent} %) · {rate:.1}/s{left}{resume}")
}

fn interrupted(e: CliError, done: usize, total: usize) -> CliError {
    CliError {
        code: e.code,
        error: e.error.context(format!(
            "the import stopped after {done} of {total} memories (those are stored); run the \
             same import again to add the rest"
        )),
    }
}

pub(super) fn reindex(ctx: &Ctx) -> CliResult<u8> {
    let Some(embedder) = ctx.embedder.clone() else {
        return Err(CliError::config(anyhow!(
            "[memory] embedder is `none`: there is nothing to embed with; choose local, ollama \
             or openai"
        )));
    };
    let model = embedder.model_id().to_owned();
    // An embedder off this machine never gets a private memory: those stay found by words.
    let private_too = embedder.on_this_machine();
    if !private_too {
        eprintln!(
            "private memories are not sent to {model} (it is not on this machine); they are \
             found by their words only"
        );
    }
    let mut total = 0;
    loop {
        let todo = ctx.store.memory_missing_embeddings_of(&model, CHUNK, private_too)?;
        if todo.is_empty() {
            break;
        }
        let stored = embed_and_store(ctx, &model, todo)?;
        if stored == 0 {
            break; // everything listed was forgotten meanwhile
        }
        total += stored;
        eprintln!("embedded {total} so far");
    }
    // Memories whose text now cuts into another number of passages than they have vectors
    // (embedded whole before long texts were cut into passages) are embedded again.
    // Cutting by tokens needs the model: loaded now, so that a model that cannot load is
    // reported once here rather than tried again for every memory.
    ctx.embed_passages(&[])?;
    let mut recut = 0;
    let mut after = 0;
    loop {
        let page = ctx.store.memory_passage_counts(&model, after, RECUT_PAGE)?;
        let Some(last) = page.last() else { break };
        after = last.0;
        let stale: Vec<(String, String)> = page
            .into_iter()
            .filter(|(_, id, text, n)| {
                *n > 0
                    && passage_texts(text, embedder.passages(text)).len() as u64 != *n
                    && (private_too
                        || !ctx.store.memory_get(id).ok().flatten().is_some_and(|m| m.private))
            })
            .map(|(_, id, text, _)| (id, text))
            .collect();
        for chunk in stale.chunks(CHUNK) {
            recut += embed_and_store(ctx, &model, chunk.to_vec())?;
            eprintln!("embedded {recut} long memories again, by passages, so far");
        }
    }
    let again = if recut > 0 {
        format!(" ({recut} long ones again, one vector per passage)")
    } else {
        String::new()
    };
    println!("reindexed {} memories with {model}{again}", total + recut);
    Ok(OK)
}

/// Memories read per page when a reindex looks for ones to cut into passages anew.
const RECUT_PAGE: usize = 512;

/// Embeds (id, text) pairs by passages and stores their vectors; how many were stored.
fn embed_and_store(ctx: &Ctx, model: &str, todo: Vec<(String, String)>) -> CliResult<usize> {
    let texts: Vec<String> = todo.iter().map(|(_, t)| t.clone()).collect();
    let vectors = ctx.embed_passages(&texts)?.unwrap_or_default();
    let pairs: Vec<(String, Vec<Vec<f32>>)> =
        todo.into_iter().map(|(id, _)| id).zip(vectors).collect();
    Ok(ctx.store.memory_put_embeddings(model, &pairs, Writer::USER)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_line_gives_the_share_the_rate_and_what_is_left() {
        assert_eq!(
            progress_line(128, 1398, 16.0),
            "imported 128/1398 (9 %) · 8.0/s · about 2 min 39 s left · Ctrl-C stops, a rerun \
             resumes"
        );
        assert_eq!(
            progress_line(64, 100, 8.0),
            "imported 64/100 (64 %) · 8.0/s · about 5 s left · Ctrl-C stops, a rerun resumes"
        );
        assert_eq!(progress_line(100, 100, 10.0), "imported 100/100 (100 %) · 10.0/s");
        assert_eq!(
            progress_line(0, 100, 0.0),
            "imported 0/100 (0 %) · 0.0/s · Ctrl-C stops, a rerun resumes"
        );
    }
}

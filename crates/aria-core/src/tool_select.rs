//! Offering a small model only the tools that fit the request.
//!
//! Every tool's name, description and JSON Schema go into the prompt of every model call. A
//! large model reads seventeen tools at little cost; the embedded 135M model spends most of its
//! time on them (about 4,000 prompt tokens) and, shown all of them, often picks one that has
//! nothing to do with the question. [`ToolSelection`] ranks the tools against the user's
//! message — by meaning with the memory embedder when there is one, else by shared words — and
//! the run offers the best `max` of them for its whole length (plus any tool it has already
//! called). Every tool stays callable by validation: this only changes what the model is shown.
//!
//! Meaning alone misses the obvious ("Read calc.py and summarise it" was offered
//! `system_info, python_run, run_tests, lint_project`), so the core file tools are always
//! offered ([`CORE_TOOLS`]; [`CHANGE_TOOLS`] too when the message asks for a change), and with
//! an embedder the words the message shares with a tool add to its similarity.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use aria_api::{Embedder, ToolSpec, cosine};

/// Offered whatever the message says: most tasks read or find files first.
pub const CORE_TOOLS: [&str; 3] = ["file_read", "file_list", "file_search"];
/// Offered as well when the message asks for a change to files.
pub use aria_api::CHANGE_TOOLS;
/// Each word a message shares with a tool adds this much to its cosine similarity.
const WORD_WEIGHT: f32 = 0.05;

/// Ranks tools against a request and keeps the best few.
#[derive(Debug)]
pub struct ToolSelection {
    max: usize,
    embedder: Option<Arc<dyn Embedder>>,
    /// Tool text → its vector, so each tool is embedded once per process.
    vectors: Mutex<HashMap<String, Vec<f32>>>,
}

/// What one selection chose and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Selected {
    pub tools: Vec<ToolSpec>,
    /// `embedding`, `words`, or `all` (no selection was needed).
    pub ranked_by: &'static str,
}

impl ToolSelection {
    /// Offers at most `max` tools (at least one), ranked with `embedder` when given.
    pub fn new(max: usize, embedder: Option<Arc<dyn Embedder>>) -> Self {
        ToolSelection { max: max.max(1), embedder, vectors: Mutex::new(HashMap::new()) }
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// The tools to offer for `query`: the core file tools (and the change tools when the
    /// query asks for a change) in a fixed order, then the best-ranked others up to `max` in all
    /// (at least one), best first, then every tool named in `keep` (always). An embedder that
    /// fails falls back to words.
    pub async fn select(&self, query: &str, tools: &[ToolSpec], keep: &[String]) -> Selected {
        if tools.len() <= self.max {
            return Selected { tools: tools.to_vec(), ranked_by: "all" };
        }
        let words = by_words(query, tools);
        let (scores, ranked_by) = match self.by_meaning(query, tools).await {
            Some(meaning) => {
                let scores = meaning.iter().zip(&words).map(|(m, w)| m + WORD_WEIGHT * w);
                (scores.collect::<Vec<f32>>(), "embedding")
            }
            None => (words, "words"),
        };
        let mut order: Vec<usize> = (0..tools.len()).collect();
        // Highest score first; ties keep the registry's order.
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        let change = asks_for_change(query);
        let core =
            |name: &str| CORE_TOOLS.contains(&name) || (change && CHANGE_TOOLS.contains(&name));
        let kept: Vec<usize> = (0..tools.len())
            .filter(|&i| keep.contains(&tools[i].name) && !core(&tools[i].name))
            .collect();
        // The core tools first, always in the same order, so that the prompt's tool list (and
        // the model state cached after it) is the same from one request to the next as far as
        // possible; then the best-ranked others, best first; then the tools already called.
        let mut chosen: Vec<usize> = CORE_TOOLS
            .iter()
            .chain(&CHANGE_TOOLS)
            .filter_map(|name| (0..tools.len()).find(|&i| tools[i].name == *name && core(name)))
            .collect();
        let room = self.max.saturating_sub(kept.len() + chosen.len()).max(1);
        chosen.extend(
            order.into_iter().filter(|&i| !core(&tools[i].name) && !kept.contains(&i)).take(room),
        );
        chosen.extend(kept);
        Selected { tools: chosen.into_iter().map(|i| tools[i].clone()).collect(), ranked_by }
    }

    /// Cosine similarity of each tool's text to the query, or `None` without a working
    /// embedder.
    async fn by_meaning(&self, query: &str, tools: &[ToolSpec]) -> Option<Vec<f32>> {
        let embedder = self.embedder.as_ref()?;
        let texts: Vec<String> = tools.iter().map(tool_text).collect();
        let missing: Vec<String> = {
            let known = self.vectors.lock().unwrap_or_else(|p| p.into_inner());
            texts.iter().filter(|t| !known.contains_key(*t)).cloned().collect()
        };
        let mut batch = missing.clone();
        batch.push(query.to_owned());
        let mut vectors = match embedder.embed(&batch).await {
            Ok(v) if v.len() == batch.len() => v,
            Ok(_) => return None,
            Err(e) => {
                tracing::debug!("tool selection falls back to words: {e}");
                return None;
            }
        };
        let q = vectors.pop()?;
        let mut known = self.vectors.lock().unwrap_or_else(|p| p.into_inner());
        known.extend(missing.into_iter().zip(vectors));
        Some(texts.iter().map(|t| known.get(t).map_or(f32::MIN, |v| cosine(&q, v))).collect())
    }
}

/// Whether `query` asks for files to change, by the form of its sentences (an imperative verb
/// of change starting a clause: "rename multiply to mul", "can you fix the typo?"), never by a
/// word alone ("what does the add function return?" is a question).
fn asks_for_change(query: &str) -> bool {
    aria_api::asks_for_change(query)
}

/// Whether `query` asks for a change to files: a change request ([`asks_for_change`]) that
/// names a file (a path or a name with an extension, or the word "file"). "Write me a poem" is
/// not one; "rename multiply to mul in calc.py" is; "what does add in calc.py return?" is not.
pub(crate) fn asks_for_file_change(query: &str) -> bool {
    aria_api::refers_to_files(query) && asks_for_change(query)
}

/// What a tool is matched on: its name in words and its description's first sentence (the
/// rest names roots and limits, which say nothing about what it is for).
fn tool_text(tool: &ToolSpec) -> String {
    let first = tool.description.split(". ").next().unwrap_or(&tool.description);
    format!("{}: {first}", tool.name.replace('_', " "))
}

/// Lower-case words of three letters or more, with a plural or verb `s` taken off, less the
/// commonest English words.
fn words(text: &str) -> HashSet<String> {
    const STOP: &[&str] = &[
        "the", "and", "for", "with", "what", "this", "that", "are", "you", "your", "from", "into",
        "its", "can", "how", "all", "any", "not", "one", "has", "have", "was", "were", "which",
        "who", "why", "when", "where", "there", "their", "them", "then", "than", "does", "did",
        "please", "inside", "allowed", "roots",
    ];
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 3 && !STOP.contains(&w.as_str()))
        .map(|w| match w.strip_suffix('s') {
            Some(stem) if stem.chars().count() >= 3 && !stem.ends_with('s') => stem.to_owned(),
            _ => w,
        })
        .collect()
}

/// The share of the query's words each tool's name and description contain.
fn by_words(query: &str, tools: &[ToolSpec]) -> Vec<f32> {
    let q = words(query);
    tools
        .iter()
        .map(|t| {
            let name = words(&t.name.replace('_', " "));
            let text = words(&tool_text(t));
            q.iter()
                .map(|w| {
                    if name.contains(w) {
                        2.0
                    } else if text.contains(w) {
                        1.0
                    } else {
                        0.0
                    }
                })
                .sum::<f32>()
        })
        .collect()
}

#[cfg(test)]
mod tests;
